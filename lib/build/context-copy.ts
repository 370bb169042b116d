// COPY/ADD from the build context without unpacking it: sources resolved in the context's index (globs, symlinks
// scoped to the context), their checksum from the hashes taken at ingest, and the layer tar written entry by entry
// with the file data read straight from the stored context.
import { createHash } from 'node:crypto'
import { join, posix } from 'node:path'
import { createWriteStream, chmodSync, lchownSync, mkdirSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs'
import { chmod, lchown, mkdir, symlink, utimes, writeFile } from 'node:fs/promises'
import { setImmediate as nextTurn } from 'node:timers/promises'
import { pipeline } from 'node:stream/promises'
import { Readable } from 'node:stream'
import { invalidArgument, notFound } from '../errors.js'
import type { BuildContext, ContextEntry } from './build-context.js'
import { segmentRe, WILDCARD } from './copy-sources.js'
import { resolveInImage } from './copy-layer.js'
import { statInLayers, destinationDirs } from './layer-lookup.js'
import { encodeHeader, padding, BLOCK, type TarHeader } from './tar-codec.js'

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

/** The data entry of a hard link's target, or the entry itself. */
function dataOf (ctx: BuildContext, e: ContextEntry): ContextEntry {
  if (e.type !== 'link') return e
  const t = ctx.entries.get(posix.normalize(e.linkname).replace(/^\/+/, ''))
  return t !== undefined && t.type === 'file' ? t : { ...e, type: 'file', size: 0, sha256: createHash('sha256').digest('hex') }
}

/** The cache string for the sources (dockerd's `file:`, `dir:` or `multi:` forms). */
export function contextSourcesHash (ctx: BuildContext, sources: readonly ContextSource[]): string {
  const one = (s: ContextSource): string => {
    if (!s.isDir) {
      const e = dataOf(ctx, s.entry as ContextEntry)
      return 'file:' + createHash('sha256').update(`${(s.entry as ContextEntry).mode} ${e.sha256}`).digest('hex')
    }
    const h = createHash('sha256')
    for (const { rel, entry } of ctx.under(s.path)) {
      if (entry === undefined || entry.type === 'directory') h.update(`d ${rel} ${entry?.mode ?? 0o755}\n`)
      else if (entry.type === 'symlink') h.update(`l ${rel} ${entry.linkname}\n`)
      else h.update(`f ${rel} ${entry.mode} ${dataOf(ctx, entry).sha256}\n`)
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
  const entries: LayerEntry[] = []
  const made = new Set<string>()
  const now = Math.floor(Date.now() / 1000)
  const ensureDir = async (abs: string): Promise<void> => {
    for await (const { path: p, st } of destinationDirs(o.layers, o.cmdName, abs, made)) {
      entries.push({ header: st !== undefined
        ? { name: p.slice(1), mode: st.mode & 0o7777, uid: st.uid, gid: st.gid, size: 0, mtime: Math.floor(st.mtimeMs / 1000), type: 'directory', linkname: '' }
        : { name: p.slice(1), mode: 0o755, uid: owner.uid, gid: owner.gid, size: 0, mtime: now, type: 'directory', linkname: '' } })
    }
  }
  const fileEntry = (target: string, e: ContextEntry): LayerEntry => {
    const name = target.slice(1)
    const mode = o.chmod ?? e.mode
    if (e.type === 'symlink') return { header: { name, mode: 0o777, uid: owner.uid, gid: owner.gid, size: 0, mtime: e.mtime, type: 'symlink', linkname: e.linkname } }
    const data = dataOf(ctx, e)
    return { header: { name, mode, uid: owner.uid, gid: owner.gid, size: data.size, mtime: e.mtime, type: 'file', linkname: '' }, data }
  }
  for (const s of sources) {
    if (s.isDir) {
      await ensureDir(realDest)
      for (const { rel, entry } of ctx.under(s.path)) {
        const target = posix.join(realDest, rel)
        if (entry === undefined || entry.type === 'directory') {
          made.add(target)
          entries.push({ header: { name: target.slice(1), mode: o.chmod ?? entry?.mode ?? 0o755, uid: owner.uid, gid: owner.gid, size: 0, mtime: entry?.mtime ?? now, type: 'directory', linkname: '' } })
        } else entries.push(fileEntry(target, entry))
      }
      continue
    }
    const target = destIsDir ? posix.join(realDest, s.name) : realDest
    await ensureDir(posix.dirname(target))
    entries.push(fileEntry(target, s.entry as ContextEntry))
  }
  return { tar: Readable.from(writeEntries(ctx, entries)), fill: async (dir) => { await writeTree(ctx, entries, dir) } }
}

const PARALLEL = 16
const WHOLE_FILE = 4 * 1024 * 1024
/** The in-memory path yields to the event loop after this many files or bytes. */
const SYNC_FILES = 64
const SYNC_BYTES = 4 * 1024 * 1024

/** Directories first (in order, parents before children), then the rest; the last entry for a path wins. */
function splitEntries (entries: readonly LayerEntry[]): { dirs: LayerEntry[], others: LayerEntry[] } {
  const last = new Map<string, LayerEntry>()
  for (const e of entries) last.set(e.header.name.replace(/\/+$/, ''), e)
  const dirs: LayerEntry[] = []
  const others: LayerEntry[] = []
  for (const e of last.values()) (e.header.type === 'directory' ? dirs : others).push(e)
  return { dirs, others }
}

/**
 * Writes the entries as files under `dir` (the layer's directory): directories first, files and links, then the
 * directories' owners, modes and times deepest first. A context held in memory is written with direct (sync) calls
 * in slices that yield to the event loop — one thread-pool round trip per call costs far more than the call for
 * small files; a context on disk is read and written PARALLEL files at a time.
 */
async function writeTree (ctx: BuildContext, entries: readonly LayerEntry[], dir: string): Promise<void> {
  const { dirs, others } = splitEntries(entries)
  if (ctx.stored.memory !== null) await writeTreeFromMemory(ctx, dirs, others, dir)
  else await writeTreeFromFile(ctx, dirs, others, dir)
}

async function writeTreeFromMemory (ctx: BuildContext, dirs: readonly LayerEntry[], others: readonly LayerEntry[], dir: string): Promise<void> {
  const made = new Set<string>()
  const mkdirOnce = (path: string): void => {
    if (made.has(path)) return
    mkdirSync(path, { recursive: true })
    made.add(path)
  }
  for (const d of dirs) mkdirOnce(join(dir, d.header.name))
  let files = 0
  let bytes = 0
  for (const e of others) {
    const h = e.header
    const path = join(dir, h.name)
    mkdirOnce(posix.dirname(path))
    if (h.type === 'symlink') {
      symlinkSync(h.linkname, path)
      lchownSync(path, h.uid, h.gid)
    } else {
      const data = e.data !== undefined ? ctx.bytes(e.data) ?? Buffer.alloc(0) : Buffer.alloc(0)
      writeFileSync(path, data, { mode: h.mode & 0o777 })
      chmodSync(path, h.mode)
      lchownSync(path, h.uid, h.gid)
      utimesSync(path, h.mtime, h.mtime)
      bytes += data.length
    }
    if (++files >= SYNC_FILES || bytes >= SYNC_BYTES) { files = 0; bytes = 0; await nextTurn() }
  }
  for (const d of [...dirs].reverse()) {
    const path = join(dir, d.header.name)
    chmodSync(path, d.header.mode)
    lchownSync(path, d.header.uid, d.header.gid)
    utimesSync(path, d.header.mtime, d.header.mtime)
  }
}

async function writeTreeFromFile (ctx: BuildContext, dirs: readonly LayerEntry[], others: readonly LayerEntry[], dir: string): Promise<void> {
  for (const d of dirs) await mkdir(join(dir, d.header.name), { recursive: true })
  const r = await ctx.open()
  try {
    const writeOne = async (e: LayerEntry): Promise<void> => {
      const h = e.header
      const path = join(dir, h.name)
      await mkdir(posix.dirname(path), { recursive: true })
      if (h.type === 'symlink') {
        await symlink(h.linkname, path)
        await lchown(path, h.uid, h.gid)
        return
      }
      const data = e.data
      if (data === undefined || data.size <= WHOLE_FILE) await writeFile(path, data !== undefined && data.size > 0 ? await r.read(data.offset, data.size) : Buffer.alloc(0))
      else await pipeline(Readable.from(r.range(data.offset, data.size)), createWriteStream(path))
      await chmod(path, h.mode)
      await lchown(path, h.uid, h.gid)
      await utimes(path, h.mtime, h.mtime)
    }
    for (let i = 0; i < others.length; i += PARALLEL) await Promise.all(others.slice(i, i + PARALLEL).map(writeOne))
  } finally {
    await r.close()
  }
  for (const d of [...dirs].reverse()) {
    const path = join(dir, d.header.name)
    await chmod(path, d.header.mode)
    await lchown(path, d.header.uid, d.header.gid)
    await utimes(path, d.header.mtime, d.header.mtime)
  }
}

const BATCH = 1024 * 1024

/** The layer's bytes, gathered into ~1 MiB chunks (many small files would otherwise be many tiny writes). */
async function * writeEntries (ctx: BuildContext, entries: readonly LayerEntry[]): AsyncGenerator<Buffer> {
  const r = await ctx.open()
  let parts: Buffer[] = []
  let size = 0
  const add = (b: Buffer): void => { parts.push(b); size += b.length }
  const take = (): Buffer => { const out = Buffer.concat(parts, size); parts = []; size = 0; return out }
  try {
    for (const e of entries) {
      add(encodeHeader(e.header))
      if (e.data !== undefined && e.data.size > 0) {
        for await (const chunk of r.range(e.data.offset, e.data.size)) {
          add(chunk)
          if (size >= BATCH) yield take()
        }
        const pad = padding(e.data.size)
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
