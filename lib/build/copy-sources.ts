// COPY/ADD sources: resolved inside their root (the context or another stage's/image's filesystem), globs expanded,
// paths outside the root refused, and a content checksum (mtimes ignored) that keys the layer cache.
import { createHash } from 'node:crypto'
import { createReadStream, createWriteStream } from 'node:fs'
import { lstat, readdir, readlink, realpath, stat, open } from 'node:fs/promises'
import { join, posix } from 'node:path'
import { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { invalidArgument, notFound } from '../errors.js'
import { ScopedRoot, listDir, lstatAt } from '../util/scoped-fs.js'

export interface CopySource {
  /** The path on disk. */
  path: string
  /** Its name as given (the destination file name for a single file). */
  name: string
  kind: 'file' | 'dir'
  /** A downloaded ADD URL. */
  url?: string
  hash: string
}

export const WILDCARD = /[*?[]/

/** One glob path segment (Go filepath.Match syntax) as a regular expression. */
export function segmentRe (seg: string): RegExp {
  let re = '^'
  for (let i = 0; i < seg.length; i++) {
    const ch = seg[i] as string
    if (ch === '*') re += '.*'
    else if (ch === '?') re += '.'
    else if (ch === '[') {
      const end = seg.indexOf(']', i + 1)
      if (end === -1) { re += '\\['; continue }
      let cls = seg.slice(i + 1, end)
      if (cls.startsWith('^') || cls.startsWith('!')) cls = '^' + cls.slice(1)
      re += '[' + cls + ']'
      i = end
    } else if (ch === '\\' && i + 1 < seg.length) { i++; re += (seg[i] as string).replace(/[.*+?^${}()|[\]\\]/g, '\\$&') } else re += ch.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
  }
  return new RegExp(re + '$', 's')
}

/** The names a glob matches inside the root, each directory listed where its path leads inside the root. */
async function glob (scope: ScopedRoot, rel: string): Promise<string[]> {
  const segs = rel.split('/').filter((s) => s !== '')
  let cur = ['']
  for (const seg of segs) {
    const next: string[] = []
    for (const base of cur) {
      if (!WILDCARD.test(seg)) { next.push(base === '' ? seg : `${base}/${seg}`); continue }
      const re = segmentRe(seg)
      let names: string[] = []
      try {
        const dir = await scope.openDir(base)
        try { names = await listDir(dir) } finally { await dir.close() }
      } catch { /* not a directory: no match below it */ }
      for (const n of names) if (re.test(n)) next.push(base === '' ? n : `${base}/${n}`)
    }
    cur = next
  }
  const out: string[] = []
  for (const c of cur) {
    const loc = await scope.locate(c).catch(() => undefined)
    if (loc === undefined) continue
    try { if (loc.name === '' || await lstatAt(loc.dir, loc.name) !== undefined) out.push(c) } finally { await loc.dir.close() }
  }
  return out
}

async function hashFile (path: string): Promise<string> {
  const h = createHash('sha256')
  await pipeline(createReadStream(path), h)
  return h.digest('hex')
}

/** Checksum of a tree: names, types, permission bits, link targets and contents; no times, no owners. */
async function hashTree (dir: string): Promise<string> {
  const h = createHash('sha256')
  const walk = async (rel: string): Promise<void> => {
    const names = (await readdir(join(dir, rel))).sort()
    for (const n of names) {
      const r = rel === '' ? n : `${rel}/${n}`
      const st = await lstat(join(dir, r))
      if (st.isDirectory()) { h.update(`d ${r} ${st.mode & 0o7777}\n`); await walk(r) } else if (st.isSymbolicLink()) h.update(`l ${r} ${await readlink(join(dir, r))}\n`)
      else if (st.isFile()) h.update(`f ${r} ${st.mode & 0o7777} ${await hashFile(join(dir, r))}\n`)
      else h.update(`o ${r} ${st.mode}\n`)
    }
  }
  await walk('')
  return h.digest('hex')
}

export interface ResolveOptions {
  cmdName: string
  root: string
  allowUrl: boolean
  /** Where downloads go. */
  downloadDir: string
  signal: AbortSignal
}

async function download (url: string, dir: string, signal: AbortSignal, cmdName: string): Promise<CopySource> {
  let name = posix.basename(new URL(url).pathname)
  if (name === '' || name === '/') name = '__unnamed__'
  const path = join(dir, `dl-${createHash('sha256').update(url).digest('hex').slice(0, 12)}`)
  try {
    const res = await fetch(url, { signal: AbortSignal.any([signal, AbortSignal.timeout(60_000)]), redirect: 'follow' })
    if (!res.ok || res.body === null) throw new Error(`failed to GET ${url} with status ${res.status} ${res.statusText}`)
    await pipeline(Readable.fromWeb(res.body as Parameters<typeof Readable.fromWeb>[0]), createWriteStream(path, { mode: 0o600 }))
  } catch (err) {
    const cause = (err as { cause?: Error }).cause
    const detail = cause !== undefined ? `${(err as Error).message}: ${cause.message}` : (err as Error).message
    throw invalidArgument(`${cmdName} failed: unable to fetch ${url}: ${detail}`)
  }
  return { path, name, kind: 'file', url, hash: 'file:' + await hashFile(path) }
}

export async function resolveSources (srcs: readonly string[], o: ResolveOptions): Promise<CopySource[]> {
  const scope = await ScopedRoot.open(o.root)
  try {
    return await resolveIn(scope, srcs, o)
  } finally { await scope.close() }
}

/** The sources, each path resolved as `docker cp` resolves one (links followed inside the root, util/scoped-fs.ts). */
async function resolveIn (scope: ScopedRoot, srcs: readonly string[], o: ResolveOptions): Promise<CopySource[]> {
  const out: CopySource[] = []
  const realRoot = await realpath(o.root)
  for (const src of srcs) {
    if (/^https?:\/\//i.test(src)) {
      if (!o.allowUrl) throw invalidArgument(`${o.cmdName} failed: source can't be a URL for COPY`)
      out.push(await download(src, o.downloadDir, o.signal, o.cmdName))
      continue
    }
    const norm = posix.normalize(src.replace(/\\/g, '/'))
    const rel = norm.replace(/^\/+/, '')
    if (rel === '..' || rel.startsWith('../')) throw invalidArgument(`${o.cmdName} failed: forbidden path outside the build context: ${src} ()`)
    const matches = WILDCARD.test(rel) ? await glob(scope, rel) : [rel === '.' ? '' : rel]
    if (matches.length === 0) throw invalidArgument(`${o.cmdName} failed: no source files were specified`)
    for (const m of matches) {
      const scoped = await scope.canonical(m).catch(() => undefined)
      let st
      let path = scoped === undefined ? '' : join(o.root, scoped)
      try {
        if (scoped === undefined) throw new Error('dangling')
        st = await stat(path)
      } catch {
        throw notFound(`${o.cmdName} failed: file not found in build context or excluded by .dockerignore: stat ${m === '' ? '.' : m}: file does not exist`)
      }
      path = await realpath(path)
      if (path !== realRoot && !path.startsWith(realRoot + '/')) throw invalidArgument(`${o.cmdName} failed: forbidden path outside the build context: ${src} ()`)
      if (st.isDirectory()) out.push({ path, name: posix.basename(m), kind: 'dir', hash: 'dir:' + await hashTree(path) })
      else out.push({ path, name: posix.basename(m), kind: 'file', hash: 'file:' + createHash('sha256').update(`${st.mode & 0o7777} ${await hashFile(path)}`).digest('hex') })
    }
  }
  return out
}

/** dockerd's cache string for the sources: one hash, or `multi:` over all. */
export function sourcesHash (sources: readonly CopySource[]): string {
  if (sources.length === 1) return (sources[0] as CopySource).hash
  return 'multi:' + createHash('sha256').update(sources.map((s) => s.hash).join(',')).digest('hex')
}

/** Whether a file is a tar archive ADD unpacks (plain or gzip). */
export async function archiveKind (path: string): Promise<'tar' | 'gzip' | null> {
  const fh = await open(path, 'r')
  try {
    const buf = Buffer.alloc(262)
    const { bytesRead } = await fh.read(buf, 0, 262, 0)
    if (bytesRead >= 2 && buf[0] === 0x1f && buf[1] === 0x8b) return 'gzip'
    if (bytesRead >= 262 && buf.subarray(257, 262).toString('latin1') === 'ustar') return 'tar'
    return null
  } finally {
    await fh.close()
  }
}
