// What a container changed, read from its overlayfs upper directory: the walk behind `GET /containers/{id}/changes`
// and behind the layer tar that commit stores (whiteouts as `.wh.<name>`, opaque directories as `.wh..wh..opq`).
//
// The upper directory holds every added or modified entry (with its parent directories copied up), a character
// device 0/0 for every deleted one, and directories that replaced a lower one marked opaque. Node cannot read the
// `trusted.overlay.opaque` xattr, so opacity is recognised from what it does: a directory is opaque when a name that
// the image has under it is neither in the upper directory (as an entry or a whiteout) nor in the mounted view.
// A container can change its files while this runs; the upper tree is read through directory handles only
// (util/scoped-fs.ts), so a directory swapped for a symlink is never followed out of it.
import { lstat, readdir, type FileHandle } from 'node:fs/promises'
import type { Stats } from 'node:fs'
import { join, posix } from 'node:path'
import type { Readable } from 'node:stream'
import { ScopedRoot, listDir, lstatAt, openDirAt } from '../util/scoped-fs.js'
import { addEntry, addFromDir, tarStreamOf, type LinkTable, type TarPack } from '../stream/tar-tree.js'

export const WHITEOUT_PREFIX = '.wh.'
export const WHITEOUT_OPAQUE = '.wh..wh..opq'

export interface DiffSource {
  /** The container's writable layer (overlay upperdir). */
  upper: string
  /** The image's layer directories, lowest first (as ImageProvider.layerPaths returns them). */
  lowers: string[]
  /** The mounted root filesystem (overlay merged dir); used to recognise opaque directories. */
  merged: string
  /**
   * Paths the runtime itself creates as mount points (`/etc/hosts`, bind mount targets); left out of the walk unless
   * the image has them, and their parent directories do not count as changed for that alone. dockerd keeps these in
   * an init layer below the container's own.
   */
  mountPoints?: readonly string[]
}

/** One entry of the upper directory, in walk order (depth first, names in byte order, parents before children). */
export interface UpperEntry {
  /** Path inside the container, e.g. `/etc/passwd`. */
  path: string
  /** The upper directory that holds the entry (valid during the visit only), and its name there. */
  dir: FileHandle
  name: string
  stat: Stats
  /** A deletion marker (character device 0/0). */
  whiteout: boolean
  /** A directory that replaced the image's directory of the same name, hiding everything the image had below it. */
  opaque: boolean
  /** The same path in the image (the topmost layer that has it), or undefined when the image does not have it. */
  lower: Stats | undefined
}

export type ChangeKind = 'modify' | 'add' | 'delete'
export interface Change { path: string, kind: ChangeKind }

function isWhiteout (st: Stats): boolean {
  return st.isCharacterDevice() && st.rdev === 0
}

async function lstatOrUndefined (path: string): Promise<Stats | undefined> {
  try { return await lstat(path) } catch { return undefined }
}

/** The entry `name` in the image's view of a directory (present as a directory in `lowerDirs`, topmost first). */
async function lowerLookup (lowerDirs: string[], name: string): Promise<Stats | undefined> {
  for (const d of lowerDirs) {
    const st = await lstatOrUndefined(join(d, name))
    if (st !== undefined) return isWhiteout(st) ? undefined : st
    if (await lstatOrUndefined(join(d, WHITEOUT_PREFIX + name)) !== undefined) return undefined
  }
  return undefined
}

/** The directories that make up `name` in the image's view, topmost first; a non-directory or whiteout hides the rest. */
async function lowerChildDirs (lowerDirs: string[], name: string): Promise<string[]> {
  const out: string[] = []
  for (const d of lowerDirs) {
    const p = join(d, name)
    const st = await lstatOrUndefined(p)
    if (st === undefined) {
      if (await lstatOrUndefined(join(d, WHITEOUT_PREFIX + name)) !== undefined) break
      continue
    }
    if (!st.isDirectory()) break
    out.push(p)
    if (await lstatOrUndefined(join(p, WHITEOUT_OPAQUE)) !== undefined) break
  }
  return out
}

class Walk {
  private readonly merged: ScopedRoot | null
  private readonly visit: (e: UpperEntry) => Promise<void>
  private readonly mountPoints: ReadonlySet<string>
  constructor (merged: ScopedRoot | null, visit: (e: UpperEntry) => Promise<void>, mountPoints: ReadonlySet<string>) {
    this.merged = merged
    this.visit = visit
    this.mountPoints = mountPoints
  }

  private async isOpaque (upperSub: FileHandle, path: string, lowerDirs: string[]): Promise<boolean> {
    if (this.merged === null) return false
    const upperNames = new Set(await listDir(upperSub))
    const missing = new Set<string>()
    for (const d of lowerDirs) {
      for (const n of await readdir(d).catch(() => [] as string[])) {
        if (!n.startsWith(WHITEOUT_PREFIX) && !upperNames.has(n)) missing.add(n)
      }
    }
    if (missing.size === 0) return false
    let mergedNames: Set<string>
    try {
      const loc = await this.merged.locate(path)
      try {
        const dir = await openDirAt(loc.dir, loc.name)
        try { mergedNames = new Set(await listDir(dir)) } finally { await dir.close() }
      } finally { await loc.dir.close() }
    } catch { return false }
    for (const n of missing) if (!mergedNames.has(n)) return true
    return false
  }

  async dir (upperDir: FileHandle, path: string, lowerDirs: string[]): Promise<void> {
    for (const name of await listDir(upperDir)) {
      const childPath = path === '/' ? `/${name}` : `${path}/${name}`
      const st = await lstatAt(upperDir, name)
      if (st === undefined) continue
      const whiteout = isWhiteout(st)
      const lower = whiteout ? undefined : await lowerLookup(lowerDirs, name)
      if (lower === undefined && !whiteout && this.mountPoints.has(childPath)) continue
      if (!st.isDirectory()) {
        await this.visit({ path: childPath, dir: upperDir, name, stat: st, whiteout, opaque: false, lower })
        continue
      }
      let sub: FileHandle
      try { sub = await openDirAt(upperDir, name) } catch { continue }
      try {
        let childLowers = lower?.isDirectory() === true ? await lowerChildDirs(lowerDirs, name) : []
        const opaque = childLowers.length > 0 && await this.isOpaque(sub, childPath, childLowers)
        if (opaque) childLowers = []
        await this.visit({ path: childPath, dir: upperDir, name, stat: st, whiteout: false, opaque, lower })
        await this.dir(sub, childPath, childLowers)
      } finally { await sub.close() }
    }
  }
}

/** Visits every entry of the upper directory (see UpperEntry). */
export async function walkUpper (src: DiffSource, visit: (e: UpperEntry) => Promise<void>): Promise<void> {
  const upper = await ScopedRoot.open(src.upper)
  const merged = await ScopedRoot.open(src.merged).catch(() => null)
  try {
    const top = await upper.openRoot()
    try {
      await new Walk(merged, visit, new Set(src.mountPoints ?? [])).dir(top, '/', [...src.lowers].reverse())
    } finally { await top.close() }
  } finally {
    await upper.close()
    await merged?.close()
  }
}

/** Go's sameFsTime: equal seconds, and equal nanoseconds unless one side lacks them. */
function sameTime (a: Stats, b: Stats): boolean {
  const sa = Math.floor(a.mtimeMs / 1000)
  const sb = Math.floor(b.mtimeMs / 1000)
  if (sa !== sb) return false
  const na = a.mtimeMs - sa * 1000
  const nb = b.mtimeMs - sb * 1000
  return na === nb || na === 0 || nb === 0
}

/**
 * The changes dockerd's overlay driver reports (pkg/archive changes()): added, modified and deleted paths in walk
 * order; a directory that only holds changes is listed as modified when its own attributes changed or when an entry
 * was added to or deleted from it. A directory that replaced the image's one (opaque) is reported as modified.
 */
export async function containerChanges (src: DiffSource): Promise<Change[]> {
  const changes: Change[] = []
  const changedDirs = new Set<string>()
  // parents of runtime mount points: their mtime and size changed when the mount point was made
  const mountParents = new Set<string>()
  for (const m of src.mountPoints ?? []) for (let p = posix.dirname(m); p !== '/'; p = posix.dirname(p)) mountParents.add(p)
  await walkUpper(src, async (e) => {
    let kind: ChangeKind
    if (e.whiteout) kind = 'delete'
    else if (e.lower === undefined) kind = 'add'
    else {
      if (!e.opaque && e.stat.isDirectory() && e.lower.isDirectory() && e.stat.mode === e.lower.mode &&
        (mountParents.has(e.path) || (e.stat.size === e.lower.size && sameTime(e.stat, e.lower)))) return
      kind = 'modify'
    }
    if (!e.whiteout && e.stat.isDirectory()) changedDirs.add(e.path)
    if (kind !== 'modify') {
      const parent = posix.dirname(e.path)
      if (parent !== '/' && !changedDirs.has(parent)) {
        changes.push({ path: parent, kind: 'modify' })
        changedDirs.add(parent)
      }
    }
    changes.push({ path: e.path, kind })
  })
  return changes
}

/**
 * The container's changes as an uncompressed layer tar in the image layer format: every upper entry as it is,
 * deletions as empty `.wh.<name>` files, opaque directories followed by a `.wh..wh..opq` entry. `size.content`
 * counts, while the tar is read, what the layer's files hold as dockerd sizes a layer (util/du.ts contentSize).
 */
export function layerTar (src: DiffSource, size: { content: number } = { content: 0 }): Readable {
  return tarStreamOf(async (pack: TarPack) => {
    const links: LinkTable = new Map()
    const inodes = new Set<number>()
    await walkUpper(src, async (e) => {
      if (!e.whiteout && !e.stat.isDirectory() && e.stat.size > 0 && !inodes.has(e.stat.ino)) {
        inodes.add(e.stat.ino)
        size.content += e.stat.size
      }
      const rel = e.path.slice(1)
      if (e.whiteout) {
        const dir = posix.dirname(rel)
        const name = (dir === '.' ? '' : dir + '/') + WHITEOUT_PREFIX + e.name
        await addEntry(pack, { name, type: 'file', size: 0, mode: 0o600, uid: e.stat.uid, gid: e.stat.gid, mtime: e.stat.mtime })
        return
      }
      await addFromDir(pack, e.dir, e.name, e.stat, rel, links)
      if (e.opaque) {
        await addEntry(pack, { name: `${rel}/${WHITEOUT_OPAQUE}`, type: 'file', size: 0, mode: e.stat.mode & 0o777, uid: e.stat.uid, gid: e.stat.gid, mtime: e.stat.mtime })
      }
    })
  })
}
