// COPY/ADD as a layer written directly (no container): the files are laid out under a staging directory exactly as
// they must appear in the image (destination parents carrying the image's own owner and mode, symlinked parents
// followed in the image), owned by root or --chown, --chmod applied, local tar archives unpacked for ADD (keeping
// their own owners, as dockerd does); the staging tree is then packed as the layer tar. The sources are laid over
// each other as dockerd copies them one after the other (entry-tree.ts), and the staging tree is written through
// directory descriptors (tree-writer.ts): nothing a source holds can send a write out of it.
import { lstat, open, readdir, readlink } from 'node:fs/promises'
import { closeSync, createReadStream, openSync, readSync, constants as fsc, type Stats } from 'node:fs'
import { join, posix } from 'node:path'
import { extractTar } from '../stream/tar.js'
import { createSpecialFiles, isSpecialType, type SpecialEntry } from '../stream/special-files.js'
import { headerFor } from '../stream/tar-tree.js'
import { decompressed } from '../stream/decompressed.js'
import { invalidArgument } from '../errors.js'
import { statInLayers, lookupInLayers, destinationDirs } from './layer-lookup.js'
import { archiveKind, type CopySource } from './copy-sources.js'
import { readRange } from './context-store.js'
import { EntryTree, type EntryKind, type TreeNode } from './entry-tree.js'
import { writeTree, type WriteAttrs } from './tree-writer.js'

export interface StageCopy {
  cmdName: string
  sources: CopySource[]
  /** The destination as written (relative ones are under the working directory). */
  dest: string
  workdir: string
  /** The current image's layer directories, lowest first. */
  layers: string[]
  /** An empty directory of the build's own: the layer's tree. */
  staging: string
  /** A new scratch directory of the build's own (archives are unpacked there first). */
  scratchDir: () => Promise<string>
  chown?: { uid: number, gid: number }
  chmod?: number
  /** ADD: unpack local archives. */
  unpackArchives: boolean
}

/** Follows symlinks in the image for every parent of `abs` (max 32 hops); returns the real path. */
export async function resolveInImage (layers: string[], abs: string): Promise<string> {
  let parts = posix.normalize(abs).split('/').filter((p) => p !== '')
  let hops = 0
  for (let i = 0; i < parts.length; i++) {
    const prefix = '/' + parts.slice(0, i + 1).join('/')
    const found = await lookupInLayers(layers, prefix)
    if (found?.st.isSymbolicLink() !== true) continue
    if (++hops > 32) throw invalidArgument(`too many levels of symbolic links: ${abs}`)
    // the link of the layer that shows it (its parents there are real directories)
    const target = await readlink(join(found.layer, prefix))
    const resolved = target.startsWith('/') ? target : posix.join(posix.dirname(prefix), target)
    parts = [...posix.normalize(resolved).split('/').filter((p) => p !== ''), ...parts.slice(i + 1)]
    i = -1
  }
  return '/' + parts.join('/')
}

/** One entry of the staging tree: its attributes, and where a file's bytes or a device's numbers come from. */
interface StageEntry extends WriteAttrs {
  /** A regular file's source on the host (read with O_NOFOLLOW). */
  src?: string
  size: number
  special?: SpecialEntry
}

const O_READ = fsc.O_RDONLY | fsc.O_NOFOLLOW

function readWhole (path: string, size: number): Buffer {
  const fd = openSync(path, O_READ)
  try {
    const buf = Buffer.alloc(size)
    for (let got = 0; got < size;) {
      const n = readSync(fd, buf, got, size - got, got)
      if (n === 0) break
      got += n
    }
    return buf
  } finally { closeSync(fd) }
}

class StageTree {
  readonly tree = new EntryTree<StageEntry>('failed to copy files: ')
  private readonly made = new Set<string>()
  private readonly o: StageCopy
  constructor (o: StageCopy) { this.o = o }

  add (path: string, kind: EntryKind, e: StageEntry, linkname = ''): TreeNode<StageEntry> {
    return this.tree.add(path.replace(/^\/+/, ''), kind, e, linkname)
  }

  /** `abs` and its parents with the image's attributes (or 0755 and `owner`). */
  async ensureDir (abs: string, owner: { uid: number, gid: number }): Promise<void> {
    for await (const { path: p, st } of destinationDirs(this.o.layers, this.o.cmdName, abs, this.made)) {
      this.add(p, 'directory', st !== undefined
        ? { mode: st.mode & 0o7777, uid: st.uid, gid: st.gid, mtime: Math.floor(st.mtimeMs / 1000), size: 0 }
        : { mode: 0o755, ...owner, mtime: Math.floor(Date.now() / 1000), size: 0 })
    }
  }

  /**
   * One source node on the host (lstat'ed as `st`) at `target`: owned by root or --chown and --chmod applied to all
   * but symlinks (`fileMode` for a file without --chmod), or with its own owner and mode when `keep` (an archive's).
   */
  async addPath (path: string, st: Stats, target: string, keep: boolean, fileMode = st.mode & 0o7777): Promise<void> {
    const owner = keep ? { uid: st.uid, gid: st.gid } : (this.o.chown ?? { uid: 0, gid: 0 })
    const mode = keep || st.isSymbolicLink() ? st.mode & 0o7777 : this.o.chmod ?? (st.isFile() ? fileMode : st.mode & 0o7777)
    const e: StageEntry = { mode, ...owner, mtime: Math.floor(st.mtimeMs / 1000), size: 0 }
    if (st.isDirectory()) { this.made.add(target); this.add(target, 'directory', e); return }
    if (st.isSymbolicLink()) { this.add(target, 'symlink', e, await readlink(path)); return }
    if (st.isFile()) { this.add(target, 'other', { ...e, src: path, size: st.size }); return }
    // devices and FIFOs are made by the caller once the tree is written; sockets have no tar type (dockerd skips them)
    const h = headerFor(target, st)
    if (!isSpecialType(h.type)) return
    const special: SpecialEntry = { name: '', type: h.type, mode, ...owner, devmajor: h.devmajor ?? 0, devminor: h.devminor ?? 0, mtime: st.mtime }
    special.name = this.add(target, 'other', { ...e, special }).path
  }

  /**
   * Everything below the host directory `dir`, at `target` (names in byte order, as a tar of it lists them).
   * `explicit`: for an unpacked archive, the directories it had entries for; the others were implied by their
   * contents and are not entries of their own (what is below them follows the tree's links, as in dockerd's unpack).
   */
  async addTree (dir: string, target: string, keep: boolean, explicit?: ReadonlySet<string>, rel = ''): Promise<void> {
    const names = (await readdir(dir)).sort((a, b) => a < b ? -1 : a > b ? 1 : 0)
    for (const n of names) {
      const st = await lstat(join(dir, n))
      const childRel = rel === '' ? n : `${rel}/${n}`
      if (!st.isDirectory() || explicit === undefined || explicit.has(childRel)) await this.addPath(join(dir, n), st, posix.join(target, n), keep)
      if (st.isDirectory()) await this.addTree(join(dir, n), posix.join(target, n), keep, explicit, childRel)
    }
  }

  async write (): Promise<void> {
    const specials: SpecialEntry[] = []
    await writeTree(this.o.staging, this.tree, {
      attrs: (e) => e ?? { mode: 0o755, uid: 0, gid: 0, mtime: Math.floor(Date.now() / 1000) },
      isFile: (e) => { if (e.special !== undefined) specials.push(e.special); return e.src !== undefined },
      size: (e) => e.size,
      bytes: (e) => readWhole(e.src as string, e.size),
      chunks: (e) => (async function * () {
        const fh = await open(e.src as string, O_READ)
        try { yield * readRange(fh, 0, e.size) } finally { await fh.close() }
      })()
    })
    if (specials.length > 0) await createSpecialFiles(this.o.staging, specials, { chown: true })
  }
}

export async function stageCopy (o: StageCopy): Promise<void> {
  let dest = o.dest.replace(/\\/g, '/')
  const endsInSlash = dest.endsWith('/') || dest.endsWith('/.') || dest === '.'
  if (!dest.startsWith('/')) dest = posix.join('/', o.workdir === '' ? '/' : o.workdir, dest)
  dest = posix.normalize(dest)
  const many = o.sources.length > 1
  if (many && !endsInSlash) throw invalidArgument(`When using ${o.cmdName} with more than one source file, the destination must be a directory and end with a /`)
  const realDest = await resolveInImage(o.layers, dest)
  const destStat = await statInLayers(o.layers, realDest)
  const destIsDir = endsInSlash || many || destStat?.isDirectory() === true
  const owner = o.chown ?? { uid: 0, gid: 0 }
  const t = new StageTree(o)
  for (const s of o.sources) {
    if (s.kind === 'dir') {
      await t.ensureDir(realDest, owner)
      await t.addTree(s.path, realDest, false)
      continue
    }
    if (o.unpackArchives && s.url === undefined && await archiveKind(s.path) !== null) {
      // unpacked on its own first (the guarded extractor), then laid over the others keeping its owners and modes
      const scratch = await o.scratchDir()
      const explicit = new Set<string>()
      await extractTar(await decompressed(createReadStream(s.path)), scratch, { chown: true, skip: (name, h) => { if (h.type === 'directory') explicit.add(name); return false } })
      await t.ensureDir(realDest, { uid: 0, gid: 0 })
      await t.addTree(scratch, realDest, true, explicit)
      continue
    }
    const target = destIsDir ? posix.join(realDest, s.name) : realDest
    await t.ensureDir(posix.dirname(target), owner)
    const st = await lstat(s.path)
    // a download is private to the image's root until a step says otherwise (dockerd's mode for ADD of a URL)
    await t.addPath(s.path, st, target, false, s.url !== undefined ? 0o600 : st.mode & 0o7777)
  }
  await t.write()
}
