// The build context: the request body (a tar, plain or gzip) kept in memory (or, past a threshold, stored as one file
// under the build's own directory) and indexed — entry names checked (`..` refused), contents hashed, .dockerignore
// applied — without unpacking. The index is the tree dockerd's unpacker would leave (entry-tree.ts): a later entry
// replaces an earlier one at its path, an entry below a symlink lands where the link leads inside the context, so no
// entry ever lies below a symlink.
// COPY/ADD read files straight out of it; only instructions that need a real tree (ADD of an archive, a URL) get the
// context written out (once, lazily, through directory descriptors: tree-writer.ts).
import { createHash } from 'node:crypto'
import { mkdir } from 'node:fs/promises'
import { posix } from 'node:path'
import { Readable, Transform } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { safeEntryName } from '../stream/tar.js'
import { decompressed } from '../stream/decompressed.js'
import { tooLarge, invalidArgument } from '../errors.js'
import { parseDockerignore, isIgnored, type IgnorePattern } from './dockerignore.js'
import { BLOCK, parseHeader, parsePax, padding, type TarType } from './tar-codec.js'
import { ContextSink, type ContextReader, type StoredContext, type SyncReader } from './context-store.js'
import { EntryTree, type EntryKind } from './entry-tree.js'
import { writeTree } from './tree-writer.js'

/** Contexts up to this size stay in memory (one per running build); bigger ones go to the build's own file. */
export const IN_MEMORY_CONTEXT = 16 * 1024 * 1024

export interface ContextEntry {
  /** Relative path, no leading or trailing slash (where the entry landed). */
  path: string
  /** A hard link is indexed as a file with its target's data (or as a copy of a symlink it names). */
  type: 'file' | 'directory' | 'symlink'
  mode: number
  mtime: number
  size: number
  /** Where the data starts in the stored context. */
  offset: number
  linkname: string
  /** sha256 of the contents (files). */
  sha256: string
}

async function hashRange (r: ContextReader, start: number, size: number): Promise<string> {
  const h = createHash('sha256')
  for await (const chunk of r.range(start, size)) h.update(chunk)
  return h.digest('hex')
}

/** A pass-through that fails once more than `limit` bytes went through. */
function byteLimit (limit: number): Transform {
  let n = 0
  return new Transform({
    transform (chunk: Buffer, _enc, cb) {
      n += chunk.length
      if (n > limit) { cb(tooLarge(`the build context is larger than the limit of ${limit} bytes`)); return }
      cb(null, chunk)
    }
  })
}

const KEEP_TYPES: ReadonlySet<TarType> = new Set(['file', 'directory', 'symlink', 'link'])

/** dockerd's words for a context it cannot unpack. */
const UNPACK_ERROR = 'Error processing tar file: '

/** Where a context entry's bytes come from, for the tree writer (the caller closes it). */
export interface ContextData {
  bytes (e: ContextEntry): Buffer
  chunks (e: ContextEntry): AsyncIterable<Buffer>
  close (): Promise<void>
}

export class BuildContext {
  readonly stored: StoredContext
  readonly entries = new Map<string, ContextEntry>()
  /** Every directory that holds an entry (explicit or implied). */
  readonly dirs = new Set<string>([''])
  patterns: IgnorePattern[] = []
  /** The Dockerfile, found before .dockerignore applied (it may list it: then COPY does not see it, as in dockerd). */
  dockerfile: ContextEntry | undefined
  private unpacked: Promise<void> | null = null

  constructor (stored: StoredContext) { this.stored = stored }

  /**
   * Stores the body (decompressed, size-limited; in memory up to `memLimit`, else in `file`) and indexes it. The
   * Dockerfile is looked up (`Dockerfile` falls back to `dockerfile`) before the .dockerignore patterns remove what
   * they match — the Dockerfile and .dockerignore included (dockerd's removeDockerfile; the docker CLI and docker-py
   * list a Dockerfile from outside the context there under its generated name).
   */
  static async ingest (body: Readable, file: string, o: { limit: number, dockerfile: string, memLimit?: number }): Promise<BuildContext> {
    const sink = new ContextSink(file, o.memLimit ?? IN_MEMORY_CONTEXT)
    await pipeline(await decompressed(body), byteLimit(o.limit), sink)
    const ctx = new BuildContext(sink.stored())
    const r = await ctx.open()
    try {
      await ctx.index(r)
    } finally {
      await r.close()
    }
    const rel = posix.normalize('/' + o.dockerfile.replace(/\\/g, '/')).slice(1)
    for (const t of o.dockerfile === 'Dockerfile' ? ['Dockerfile', 'dockerfile'] : [rel]) {
      const e = ctx.resolve(t)?.entry
      if (e !== undefined && e.type === 'file') { ctx.dockerfile = e; break }
    }
    const ignore = ctx.resolve('.dockerignore')?.entry
    if (ignore !== undefined && ignore.type === 'file') {
      ctx.patterns = parseDockerignore((await ctx.read(ignore)).toString('utf8'))
      for (const p of [...ctx.entries.keys()]) if (isIgnored(ctx.patterns, p)) ctx.entries.delete(p)
      ctx.dirs.clear()
      ctx.dirs.add('')
      for (const e of ctx.entries.values()) ctx.addParents(e.path, e.type === 'directory')
    }
    return ctx
  }

  private addParents (path: string, isDir: boolean): void {
    if (isDir) this.dirs.add(path)
    for (let d = posix.dirname(path); d !== '.' && !this.dirs.has(d); d = posix.dirname(d)) this.dirs.add(d)
  }

  private async index (r: ContextReader): Promise<void> {
    const total = this.stored.size
    let off = 0
    let longName: string | undefined
    let longLink: string | undefined
    let pax = new Map<string, string>()
    const tree = new EntryTree<ContextEntry>(UNPACK_ERROR)
    if (total > 0 && total < BLOCK) throw invalidArgument('failed to read the build context: not a tar archive')
    while (off + BLOCK <= total) {
      const block = await r.read(off, BLOCK)
      if (block.length < BLOCK) break
      let h
      try { h = parseHeader(block) } catch (err) { throw invalidArgument(`failed to read the build context: ${(err as Error).message}`) }
      if (h === null) break
      const dataOff = off + BLOCK
      // the docker CLI's context for a Dockerfile outside the context ends right after the last entry's data
      const next = dataOff + h.size + padding(h.size)
      if (dataOff + h.size > total) throw invalidArgument('failed to read the build context: unexpected end of data')
      if (h.type === 'pax' || h.type === 'gnu-long-name' || h.type === 'gnu-long-link' || h.type === 'pax-global') {
        const data = await r.read(dataOff, h.size)
        if (h.type === 'pax') pax = parsePax(data)
        else if (h.type === 'gnu-long-name') longName = data.toString('utf8').replace(/\0+$/, '')
        else if (h.type === 'gnu-long-link') longLink = data.toString('utf8').replace(/\0+$/, '')
        off = next
        continue
      }
      const name = pax.get('path') ?? longName ?? h.name
      const linkname = pax.get('linkpath') ?? longLink ?? h.linkname
      const size = pax.has('size') ? Number(pax.get('size')) : h.size
      pax = new Map(); longName = undefined; longLink = undefined
      const path = safeEntryName(name)
      off = next
      if (path === '' || !KEEP_TYPES.has(h.type)) continue
      const entry: ContextEntry = { path, type: 'file', mode: h.mode & 0o7777, mtime: h.mtime, size: 0, offset: dataOff, linkname, sha256: '' }
      let kind: EntryKind = 'other'
      if (h.type === 'directory') { entry.type = 'directory'; kind = 'directory' } else if (h.type === 'symlink') { entry.type = 'symlink'; kind = 'symlink' } else if (h.type === 'file') {
        entry.size = size
        entry.sha256 = await hashRange(r, dataOff, size)
      } else {
        // a hard link: the data of what its target names now (link(2) follows the target's parents, not the target)
        if (linkname.split('/').includes('..')) throw invalidArgument(`invalid tar entry ${JSON.stringify(name)}: hard link target leaves the directory`)
        const target = tree.lookup(safeEntryName(linkname))
        if (target?.value === undefined || target.kind === 'directory') throw invalidArgument(`${UNPACK_ERROR}link /${safeEntryName(linkname)} /${path}: ${target === undefined ? 'no such file or directory' : 'operation not permitted'}`)
        const t = target.value
        Object.assign(entry, { type: t.type, size: t.size, offset: t.offset, sha256: t.sha256, linkname: t.linkname })
        kind = target.kind
      }
      const node = tree.add(path, kind, entry, entry.linkname)
      entry.path = node.path
    }
    for (const node of tree.live()) {
      if (node.kind === 'directory') this.dirs.add(node.path)
      if (node.value !== undefined) this.entries.set(node.path, node.value)
    }
  }

  /** A file's contents (small files: the Dockerfile, .dockerignore, archive sniffing). */
  async read (e: ContextEntry, max = e.size): Promise<Buffer> {
    const r = await this.open()
    try {
      return await r.read(e.offset, Math.min(max, e.size))
    } finally {
      await r.close()
    }
  }

  /** The stored context, opened for reading ranges (the caller closes it). */
  async open (): Promise<ContextReader> { return await this.stored.open() }

  /** A file's bytes when the context is in memory (no copy), else undefined. */
  bytes (e: ContextEntry): Buffer | undefined {
    return this.stored.memory?.subarray(e.offset, e.offset + e.size)
  }

  /** Follows symlinks (scoped to the context, as dockerd resolves sources) to the entry or directory at `rel`. */
  resolve (rel: string): { path: string, entry: ContextEntry | undefined, isDir: boolean } | undefined {
    let parts = rel.split('/').filter((p) => p !== '' && p !== '.')
    let hops = 0
    for (let i = 0; i < parts.length; i++) {
      const prefix = parts.slice(0, i + 1).join('/')
      const e = this.entries.get(prefix)
      if (e?.type !== 'symlink') continue
      if (++hops > 32) return undefined
      const target = e.linkname.startsWith('/') ? e.linkname : posix.join(posix.dirname('/' + prefix), e.linkname)
      parts = [...posix.normalize('/' + target).split('/').filter((p) => p !== ''), ...parts.slice(i + 1)]
      i = -1
    }
    const path = parts.join('/')
    const entry = this.entries.get(path)
    const isDir = this.dirs.has(path)
    if (entry === undefined && !isDir) return undefined
    return { path, entry, isDir }
  }

  /** Entries under a directory (sorted), with paths relative to it. */
  under (dir: string): Array<{ rel: string, entry: ContextEntry | undefined }> {
    const prefix = dir === '' ? '' : dir + '/'
    const out: Array<{ rel: string, entry: ContextEntry | undefined }> = []
    const seen = new Set<string>()
    for (const [p, e] of this.entries) if (p.startsWith(prefix) && p !== dir) { out.push({ rel: p.slice(prefix.length), entry: e }); seen.add(p) }
    for (const d of this.dirs) if (d !== '' && d.startsWith(prefix) && d !== dir && !seen.has(d)) out.push({ rel: d.slice(prefix.length), entry: undefined })
    return out.sort((a, b) => a.rel < b.rel ? -1 : a.rel > b.rel ? 1 : 0)
  }

  /** Names in one directory (for globs). */
  list (dir: string): string[] {
    const prefix = dir === '' ? '' : dir + '/'
    const names = new Set<string>()
    for (const p of [...this.entries.keys(), ...this.dirs]) {
      if (p === '' || !p.startsWith(prefix) || p === dir) continue
      names.add(p.slice(prefix.length).split('/')[0] as string)
    }
    return [...names].sort()
  }

  /** Readers of entry data for the tree writer: direct reads for small files, chunks for larger ones. */
  data (): ContextData {
    let sync: SyncReader | undefined
    let reader: Promise<ContextReader> | undefined
    return {
      bytes: (e) => (sync ??= this.stored.openSync()).bytes(e.offset, e.size),
      chunks: (e) => (async function * (ctx: BuildContext) {
        reader ??= ctx.open()
        yield * (await reader).range(e.offset, e.size)
      })(this),
      close: async () => {
        sync?.close()
        if (reader !== undefined) await (await reader).close()
      }
    }
  }

  /** The context as a real tree in `dir` (an empty directory; once), for the instructions that need files on disk. */
  async unpack (dir: string): Promise<void> {
    this.unpacked ??= (async () => {
      const tree = new EntryTree<ContextEntry>()
      for (const { rel, entry } of this.under('')) {
        tree.add(rel, entry === undefined || entry.type === 'directory' ? 'directory' : entry.type === 'symlink' ? 'symlink' : 'other', entry as ContextEntry, entry?.linkname ?? '')
      }
      await mkdir(dir, { recursive: true, mode: 0o700 })
      const data = this.data()
      const now = Math.floor(Date.now() / 1000)
      try {
        await writeTree(dir, tree, {
          attrs: (e) => ({ mode: e?.mode ?? 0o755, uid: 0, gid: 0, mtime: e?.mtime ?? now }),
          isFile: () => true,
          size: (e) => e.size,
          bytes: (e) => data.bytes(e),
          chunks: (e) => data.chunks(e)
        })
      } finally { await data.close() }
    })()
    await this.unpacked
  }
}
