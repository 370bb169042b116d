// COPY/ADD from the build context without unpacking it: sources resolved in the context's index (globs, symlinks
// scoped to the context), their checksum from the hashes taken at ingest, and the layer tar written entry by entry
// with the file data read straight from the stored context. The sources are laid over each other as dockerd copies
// them one after the other (entry-tree.ts: a later source's entry replaces an earlier one's, a directory replaced by
// a symlink takes its contents along); the layer's tar and its directory are both written from that one tree.
import { createHash } from 'node:crypto'
import { posix } from 'node:path'
import { Readable } from 'node:stream'
import { invalidArgument, notFound } from '../errors.js'
import type { BuildContext, ContextEntry } from './build-context.js'
import { segmentRe, WILDCARD } from './copy-sources.js'
import { resolveInImage } from './copy-layer.js'
import { statInLayers, destinationDirs } from './layer-lookup.js'
import { encodeHeader, padding, BLOCK, type TarHeader } from './tar-codec.js'
import { EntryTree, type TreeNode } from './entry-tree.js'
import { writeTree } from './tree-writer.js'

export interface ContextSource {
  /** Path in the context ('' for its root). */
  path: string
  name: string
  isDir: boolean
  entry: ContextEntry | undefined
}

function glob (ctx: BuildContext, rel: string): string[] {
  let cur = ['']
  for (const seg of rel.split('/').filter((s) => s !== '')) {
    const next: string[] = []
    for (const base of cur) {
      if (!WILDCARD.test(seg)) { next.push(base === '' ? seg : `${base}/${seg}`); continue }
      const re = segmentRe(seg)
      for (const n of ctx.list(base)) if (re.test(n)) next.push(base === '' ? n : `${base}/${n}`)
    }
    cur = next
  }
  return cur.filter((p) => ctx.resolve(p) !== undefined)
}

export function resolveContextSources (ctx: BuildContext, srcs: readonly string[], cmdName: string): ContextSource[] {
  const out: ContextSource[] = []
  for (const src of srcs) {
    const rel = posix.normalize(src.replace(/\\/g, '/')).replace(/^\/+/, '')
    if (rel === '..' || rel.startsWith('../')) throw invalidArgument(`${cmdName} failed: forbidden path outside the build context: ${src} ()`)
    const matches = WILDCARD.test(rel) ? glob(ctx, rel) : [rel === '.' ? '' : rel]
    if (matches.length === 0) throw invalidArgument(`${cmdName} failed: no source files were specified`)
    for (const m of matches) {
      const r = ctx.resolve(m)
      if (r === undefined) throw notFound(`${cmdName} failed: file not found in build context or excluded by .dockerignore: stat ${m === '' ? '.' : m}: file does not exist`)
      out.push({ path: r.path, name: posix.basename(m), isDir: r.isDir && r.entry?.type !== 'file', entry: r.entry })
    }
  }
  return out
}

/** The cache string for the sources (dockerd's `file:`, `dir:` or `multi:` forms). */
export function contextSourcesHash (ctx: BuildContext, sources: readonly ContextSource[]): string {
  const one = (s: ContextSource): string => {
    if (!s.isDir) {
      const e = s.entry as ContextEntry
      return 'file:' + createHash('sha256').update(`${e.mode} ${e.sha256}`).digest('hex')
    }
    const h = createHash('sha256')
    for (const { rel, entry } of ctx.under(s.path)) {
      if (entry === undefined || entry.type === 'directory') h.update(`d ${rel} ${entry?.mode ?? 0o755}\n`)
      else if (entry.type === 'symlink') h.update(`l ${rel} ${entry.linkname}\n`)
      else h.update(`f ${rel} ${entry.mode} ${entry.sha256}\n`)
    }
    return 'dir:' + h.digest('hex')
  }
  if (sources.length === 1) return one(sources[0] as ContextSource)
  return 'multi:' + createHash('sha256').update(sources.map(one).join(',')).digest('hex')
}

export interface ContextCopyOptions {
  cmdName: string
  dest: string
  workdir: string
  layers: string[]
  chown?: { uid: number, gid: number }
  chmod?: number
}

interface LayerEntry { header: TarHeader, data?: ContextEntry }

/** The layer of a COPY/ADD from the context: its tar, and the same tree written straight into a directory. */
export async function contextLayer (ctx: BuildContext, sources: readonly ContextSource[], o: ContextCopyOptions): Promise<{ tar: Readable, fill: (dir: string) => Promise<void> }> {
  let dest = o.dest.replace(/\\/g, '/')
  const endsInSlash = dest.endsWith('/') || dest.endsWith('/.') || dest === '.'
  if (!dest.startsWith('/')) dest = posix.join('/', o.workdir === '' ? '/' : o.workdir, dest)
  dest = posix.normalize(dest)
  const many = sources.length > 1
  if (many && !endsInSlash) throw invalidArgument(`When using ${o.cmdName} with more than one source file, the destination must be a directory and end with a /`)
  const realDest = await resolveInImage(o.layers, dest)
  const destIsDir = endsInSlash || many || (await statInLayers(o.layers, realDest))?.isDirectory() === true
  const owner = o.chown ?? { uid: 0, gid: 0 }
  const tree = new EntryTree<LayerEntry>('failed to copy files: ')
  const add = (e: LayerEntry): void => {
    const h = e.header
    tree.add(h.name, h.type === 'directory' ? 'directory' : h.type === 'symlink' ? 'symlink' : 'other', e, h.linkname)
  }
  const made = new Set<string>()
  const now = Math.floor(Date.now() / 1000)
  const ensureDir = async (abs: string): Promise<void> => {
    for await (const { path: p, st } of destinationDirs(o.layers, o.cmdName, abs, made)) {
      add({ header: st !== undefined
        ? { name: p.slice(1), mode: st.mode & 0o7777, uid: st.uid, gid: st.gid, size: 0, mtime: Math.floor(st.mtimeMs / 1000), type: 'directory', linkname: '' }
        : { name: p.slice(1), mode: 0o755, uid: owner.uid, gid: owner.gid, size: 0, mtime: now, type: 'directory', linkname: '' } })
    }
  }
  const fileEntry = (target: string, e: ContextEntry): LayerEntry => {
    const name = target.slice(1)
    if (e.type === 'symlink') return { header: { name, mode: 0o777, uid: owner.uid, gid: owner.gid, size: 0, mtime: e.mtime, type: 'symlink', linkname: e.linkname } }
    return { header: { name, mode: o.chmod ?? e.mode, uid: owner.uid, gid: owner.gid, size: e.size, mtime: e.mtime, type: 'file', linkname: '' }, data: e }
  }
  for (const s of sources) {
    if (s.isDir) {
      await ensureDir(realDest)
      for (const { rel, entry } of ctx.under(s.path)) {
        const target = posix.join(realDest, rel)
        if (entry === undefined || entry.type === 'directory') {
          made.add(target)
          add({ header: { name: target.slice(1), mode: o.chmod ?? entry?.mode ?? 0o755, uid: owner.uid, gid: owner.gid, size: 0, mtime: entry?.mtime ?? now, type: 'directory', linkname: '' } })
        } else add(fileEntry(target, entry))
      }
      continue
    }
    const target = destIsDir ? posix.join(realDest, s.name) : realDest
    await ensureDir(posix.dirname(target))
    add(fileEntry(target, s.entry as ContextEntry))
  }
  const nodes = tree.live()
  // a directory the entries only imply (none expected: each entry's parents come first) is made as ensureDir makes one
  for (const n of nodes) n.value ??= { header: { name: n.path, mode: 0o755, uid: owner.uid, gid: owner.gid, size: 0, mtime: now, type: 'directory', linkname: '' } }
  return { tar: Readable.from(writeEntries(ctx, nodes)), fill: async (dir) => { await fillLayer(ctx, tree, dir) } }
}

/** The layer's tree written into its (empty) directory. */
async function fillLayer (ctx: BuildContext, tree: EntryTree<LayerEntry>, dir: string): Promise<void> {
  const data = ctx.data()
  try {
    await writeTree(dir, tree, {
      attrs: (e) => (e as LayerEntry).header,
      isFile: () => true,
      size: (e) => e.data?.size ?? 0,
      bytes: (e) => data.bytes(e.data as ContextEntry),
      chunks: (e) => data.chunks(e.data as ContextEntry)
    })
  } finally { await data.close() }
}

const BATCH = 1024 * 1024

/** The layer's bytes, gathered into ~1 MiB chunks (many small files would otherwise be many tiny writes). */
async function * writeEntries (ctx: BuildContext, nodes: ReadonlyArray<TreeNode<LayerEntry>>): AsyncGenerator<Buffer> {
  const r = await ctx.open()
  let parts: Buffer[] = []
  let size = 0
  const add = (b: Buffer): void => { parts.push(b); size += b.length }
  const take = (): Buffer => { const out = Buffer.concat(parts, size); parts = []; size = 0; return out }
  try {
    for (const n of nodes) {
      const e = n.value as LayerEntry
      add(encodeHeader({ ...e.header, name: n.path }))
      const data = e.data
      if (data !== undefined && data.size > 0) {
        for await (const chunk of r.range(data.offset, data.size)) {
          add(chunk)
          if (size >= BATCH) yield take()
        }
        const pad = padding(data.size)
        if (pad > 0) add(Buffer.alloc(pad))
      }
      if (size >= BATCH) yield take()
    }
    add(Buffer.alloc(2 * BLOCK))
    yield take()
  } finally {
    await r.close()
  }
}
