// Tar streams of directory trees read and written through directory handles (see util/scoped-fs.ts), for trees a
// running container can change under us: `docker cp` in both directions, `docker export`, layer diffs.
//
// tar-stream (tar-fs's own codec) does the encoding; it is loaded from tar-fs's dependency tree so that the engine's
// runtime dependencies stay tar-fs, split2 and debug. Unlike tar-fs's pack, every file type is kept (devices, fifos,
// hard links), file contents are read through O_NOFOLLOW|O_NONBLOCK handles, and a file that changes size while it is
// read is cut or zero-padded to the size in its header rather than corrupting the archive.
import { createRequire } from 'node:module'
import { open, symlink, link, lchown, lutimes, mkdir, readlink, type FileHandle } from 'node:fs/promises'
import { constants as fsc, type Stats } from 'node:fs'
import { execFile } from 'node:child_process'
import { posix } from 'node:path'
import { Readable, type Writable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import type * as TarStream from 'tar-stream'
import { EngineError, invalidArgument, isEngineError, internal, errorMessage } from '../errors.js'
import { at, atForChild, lstatAt, listDir, openDirAt, removeAt, type ScopedRoot } from '../util/scoped-fs.js'
import { entryErrorsViaArchive, safeEntryName } from './tar.js'

// loaded on first use, so an idle daemon does not carry tar-stream and streamx
let tarStreamModule: typeof TarStream | null = null
function tarStream (): typeof TarStream {
  tarStreamModule ??= createRequire(createRequire(import.meta.url).resolve('tar-fs'))('tar-stream') as typeof TarStream
  return tarStreamModule
}

export type TarHeader = Partial<TarStream.Header> & { name: string }
export type TarPack = TarStream.Pack
/** One entry of an archive being read: its body stream (consume it fully) and its header. */
export type TarEntry = Readable & { header: TarStream.Header }

const READ_CHUNK = 1024 * 1024
const O_READ_FILE = fsc.O_RDONLY | fsc.O_NOFOLLOW | fsc.O_NONBLOCK

/**
 * A tar stream filled by `produce`. The archive is finalised when `produce` resolves and destroyed with its error
 * when it rejects; whoever consumes the returned stream (pipeline to a response) sees that error.
 */
export function tarStreamOf (produce: (pack: TarPack) => Promise<void>): Readable {
  const pack = tarStream().pack()
  // the producer may fail before its consumer listens (it may still be opening where the bytes go): the stream is
  // destroyed with the error either way, and its consumer finds it so; unlistened, the 'error' event would be thrown
  pack.on('error', () => {})
  produce(pack).then(() => { pack.finalize() }, (err: Error) => { pack.destroy(err) })
  return pack as unknown as Readable
}

export function tarExtractor (): TarStream.Extract {
  return entryErrorsViaArchive(tarStream().extract())
}

/** Adds an entry without body (directory, symlink, device, whiteout) or with a small in-memory body. */
export async function addEntry (pack: TarPack, header: TarHeader, body?: Buffer): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    const cb = (err?: Error | null): void => { if (err !== null && err !== undefined) reject(err); else resolve() }
    if (body !== undefined) pack.entry({ ...header, size: body.length }, body, cb)
    else pack.entry(header, cb).end(undefined)
  })
}

/** Streams exactly `size` bytes of an open file into a new entry (zero-padded if the file shrank meanwhile). */
export async function addFileEntry (pack: TarPack, header: TarHeader, fh: FileHandle, size: number): Promise<void> {
  const entry = pack.entry({ ...header, type: 'file', size })
  async function * chunks (): AsyncGenerator<Buffer> {
    let pos = 0
    while (pos < size) {
      const want = Math.min(READ_CHUNK, size - pos)
      const buf = Buffer.allocUnsafe(want)
      const { bytesRead } = await fh.read(buf, 0, want, pos)
      if (bytesRead === 0) { buf.fill(0); yield buf; pos += want; continue }
      yield bytesRead === want ? buf : buf.subarray(0, bytesRead)
      pos += bytesRead
    }
  }
  await pipeline(Readable.from(chunks()), entry as unknown as Writable)
}

/** Adds a file from a path on disk that nobody else can change (content-store blobs). */
export async function addPathEntry (pack: TarPack, header: TarHeader, hostPath: string): Promise<void> {
  const fh = await open(hostPath, 'r')
  try {
    const st = await fh.stat()
    await addFileEntry(pack, header, fh, st.size)
  } finally { await fh.close() }
}

function devNumbers (rdev: number): { devmajor: number, devminor: number } {
  return { devmajor: Math.floor(rdev / 256) & 0xfff, devminor: (rdev & 0xff) | ((Math.floor(rdev / 4096) & 0xfff00)) }
}

/** The tar header for an lstat result; `name` is the archive name (directories get their trailing slash here). */
export function headerFor (name: string, st: Stats): TarHeader {
  const base: TarHeader = { name, mode: st.mode & 0o7777, uid: st.uid, gid: st.gid, mtime: st.mtime }
  if (st.isDirectory()) return { ...base, name: name.endsWith('/') ? name : name + '/', type: 'directory' }
  if (st.isSymbolicLink()) return { ...base, type: 'symlink' }
  if (st.isCharacterDevice()) return { ...base, type: 'character-device', ...devNumbers(st.rdev) }
  if (st.isBlockDevice()) return { ...base, type: 'block-device', ...devNumbers(st.rdev) }
  if (st.isFIFO()) return { ...base, type: 'fifo' }
  return { ...base, type: 'file', size: st.size }
}

/** Hard-link bookkeeping for one archive: the first name seen for each multiply-linked inode. */
export type LinkTable = Map<string, string>

/**
 * Adds the entry `name` of the open directory `dir` (already lstat'ed as `st`) under the archive name `as`.
 * Sockets are skipped (tar has no type for them). Returns false when the entry vanished or changed type meanwhile.
 */
export async function addFromDir (pack: TarPack, dir: FileHandle, name: string, st: Stats, as: string, links: LinkTable): Promise<boolean> {
  if (st.isSocket()) return false
  const header = headerFor(as, st)
  if (st.isSymbolicLink()) {
    let target: string
    try { target = await readlink(at(dir, name)) } catch { return false }
    await addEntry(pack, { ...header, linkname: target })
    return true
  }
  if (!st.isFile()) { await addEntry(pack, header); return true }
  if (st.nlink > 1) {
    const key = `${st.dev}:${st.ino}`
    const first = links.get(key)
    if (first !== undefined) { await addEntry(pack, { ...header, type: 'link', size: 0, linkname: first }); return true }
    links.set(key, as)
  }
  let fh: FileHandle
  try { fh = await open(at(dir, name), O_READ_FILE) } catch { return false }
  try {
    const now = await fh.stat()
    if (!now.isFile() || now.ino !== st.ino) return false
    await addFileEntry(pack, header, fh, st.size)
  } finally { await fh.close() }
  return true
}

/** Directories mounted below a walked tree (a container's volumes), by their path relative to the walk's start. */
export interface TreeMounts {
  /** What is mounted at `rel`, if anything: a host directory, or a host file (`file`). */
  at: (rel: string) => { source: string, file: boolean } | undefined
  /** Names of the mount points directly in the directory `rel` ('' for the start). */
  childrenOf: (rel: string) => string[]
}

/**
 * Adds everything below the open directory `dir`, depth first in byte order (Go's filepath.Walk order); archive
 * names are `prefix` + relative path. `skip` may leave out entries by their relative path. With `mounts`, a mount
 * point is archived as the directory mounted there (and shows even where the tree has no entry of its name).
 */
export async function addTree (pack: TarPack, dir: FileHandle, prefix: string, links: LinkTable, skip?: (rel: string) => boolean, mounts?: TreeMounts, rel = ''): Promise<void> {
  let names = await listDir(dir)
  const mountNames = mounts?.childrenOf(rel) ?? []
  if (mountNames.length > 0) names = [...new Set([...names, ...mountNames])].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
  for (const name of names) {
    const childRel = rel === '' ? name : `${rel}/${name}`
    if (skip?.(childRel) === true) continue
    const mounted = mounts?.at(childRel)
    if (mounted?.file === true) {
      let parent: FileHandle
      try { parent = await open(posix.dirname(mounted.source), fsc.O_RDONLY | fsc.O_DIRECTORY) } catch { continue }
      try {
        const st = await lstatAt(parent, posix.basename(mounted.source))
        if (st !== undefined) await addFromDir(pack, parent, posix.basename(mounted.source), st, prefix + childRel, links)
      } finally { await parent.close() }
      continue
    }
    if (mounted !== undefined) {
      let sub: FileHandle
      try { sub = await open(mounted.source, fsc.O_RDONLY | fsc.O_DIRECTORY) } catch { continue }
      try {
        await addEntry(pack, headerFor(prefix + childRel, await sub.stat()))
        await addTree(pack, sub, prefix, links, skip, mounts, childRel)
      } finally { await sub.close() }
      continue
    }
    const st = await lstatAt(dir, name)
    if (st === undefined) continue
    const added = await addFromDir(pack, dir, name, st, prefix + childRel, links)
    if (!added || !st.isDirectory()) continue
    let sub: FileHandle
    try { sub = await openDirAt(dir, name) } catch { continue }
    try { await addTree(pack, sub, prefix, links, skip, mounts, childRel) } finally { await sub.close() }
  }
}

// ---- extraction into a scoped root -------------------------------------------------------------------------------

export interface ExtractIntoOptions {
  /** The tree the archive lands in; nothing outside it is ever touched. */
  root: ScopedRoot
  /** Destination directory inside the root (already resolved, e.g. `/tmp`). */
  dest: string
  /** Refuse to replace a directory with a non-directory or the reverse (docker cp's default). */
  noOverwriteDirNonDir: boolean
  /** Owner for every entry (copyUIDGID); otherwise the archive's uid/gid. Ownership is applied only as root. */
  owner?: { uid: number, gid: number }
}

function describeEntry (name: string): string { return JSON.stringify(name) }

/**
 * Extracts a tar stream the way dockerd's archive PUT does, with the container's rootfs as `/`: missing parents are
 * created, existing entries are replaced (unless noOverwriteDirNonDir forbids it), ownership, modes (with setuid
 * bits) and times are kept. Refused with invalid-argument, before anything of that entry is written: names with `..`,
 * hard links with `..`, and entries whose path runs through a symlink the same archive created (the classic way to
 * make a later entry land outside the tree). Symlinks that were already in the tree are followed inside it.
 */
export async function extractInto (src: Readable, o: ExtractIntoOptions): Promise<void> {
  const ex = tarExtractor()
  const feeding = pipeline(src, ex as unknown as Writable).then(() => null, (err: Error) => err)
  const createdLinks = new Set<string>()
  const dirTimes: Array<{ path: string, mtime: Date }> = []
  const asRoot = process.getuid?.() === 0
  try {
    for await (const entry of ex as AsyncIterable<unknown>) {
      await extractEntry(entry as TarEntry, o, createdLinks, dirTimes, asRoot)
    }
  } catch (err) {
    ex.destroy(null)
    const feedErr = await feeding
    throw classify(err, feedErr)
  }
  const feedErr = await feeding
  if (feedErr !== null) throw classify(feedErr, null)
  for (const d of dirTimes.reverse()) {
    try {
      const loc = await o.root.locate(d.path)
      try {
        const st = await lstatAt(loc.dir, loc.name)
        if (st?.isDirectory() !== true) continue
        const fh = await openDirAt(loc.dir, loc.name)
        try { await fh.utimes(d.mtime, d.mtime) } finally { await fh.close() }
      } finally { await loc.dir.close() }
    } catch { /* the directory went away meanwhile */ }
  }
}

const CLIENT_GONE = new Set(['ECONNRESET', 'ERR_STREAM_PREMATURE_CLOSE', 'EPIPE'])
const BAD_TARGET = new Set(['ENOTDIR', 'ELOOP', 'EISDIR', 'EEXIST', 'ENOTEMPTY', 'EPERM', 'ENAMETOOLONG', 'EBUSY'])

/** One error class for what went wrong: the archive (or its compression), the target tree, the client, the host. */
function classify (err: unknown, feedErr: Error | null): Error {
  if (isEngineError(err)) return err
  // an error of our own file operations says what went wrong; otherwise the reading side knows best (a gunzip or
  // body error surfaces in the loop as a premature close)
  const own = (err as NodeJS.ErrnoException | undefined)?.code
  const cause = own !== undefined && !CLIENT_GONE.has(own) ? err : (feedErr ?? err)
  const code = (cause as NodeJS.ErrnoException | undefined)?.code
  if (code === undefined || code.startsWith('Z_')) return invalidArgument(`invalid tar archive: ${errorMessage(cause)}`, { cause })
  if (CLIENT_GONE.has(code) || errorMessage(cause) === 'aborted') return new EngineError('canceled', `archive upload ended early: ${errorMessage(cause)}`, { cause })
  if (BAD_TARGET.has(code)) return invalidArgument(`cannot extract archive: ${errorMessage(cause)}`, { cause })
  return internal(`cannot extract archive: ${errorMessage(cause)}`, { cause })
}

async function drain (entry: Readable): Promise<void> {
  for await (const chunk of entry) void chunk
}

async function extractEntry (entry: TarEntry, o: ExtractIntoOptions, createdLinks: Set<string>,
  dirTimes: Array<{ path: string, mtime: Date }>, asRoot: boolean): Promise<void> {
  const h = entry.header
  // tar-stream consumes pax and GNU long-name records itself; everything else is one of these types
  const type: string = h.type ?? 'file'
  const rel = safeEntryName(h.name)
  if (rel === '') { await drain(entry); return }
  const parts = rel.split('/')
  for (let i = 1; i < parts.length; i++) {
    if (createdLinks.has(parts.slice(0, i).join('/'))) {
      throw invalidArgument(`invalid tar entry ${describeEntry(h.name)}: its path goes through the symlink ${describeEntry(parts.slice(0, i).join('/'))} created by the same archive`)
    }
  }
  const uid = o.owner?.uid ?? h.uid ?? 0
  const gid = o.owner?.gid ?? h.gid ?? 0
  const mode = (h.mode ?? (type === 'directory' ? 0o755 : 0o644)) & 0o7777
  const mtime = h.mtime ?? new Date()
  const target = posix.join(o.dest, rel)
  const loc = await o.root.locate(target, { mkdirs: { mode: 0o755, ...(asRoot ? { uid: o.owner?.uid ?? 0, gid: o.owner?.gid ?? 0 } : {}) } })
  try {
    const { dir, name } = loc
    if (name === '') throw invalidArgument(`invalid tar entry ${describeEntry(h.name)}`)
    // another extraction into the same directory (two `docker cp` at once, or one whose client left and that is
    // still winding down) may make or remove this name between our look and our create, or right after it: the
    // create refuses to replace anything (O_EXCL, no link followed), so the name is looked at again and retried
    for (let attempt = 1; ; attempt++) {
      try {
        const existing = await lstatAt(dir, name)
        if (existing !== undefined) {
          const isDir = type === 'directory'
          if (o.noOverwriteDirNonDir && existing.isDirectory() && !isDir) {
            throw invalidArgument(`cannot overwrite directory ${describeEntry(loc.path)} with non-directory ${describeEntry(h.name)}`)
          }
          if (o.noOverwriteDirNonDir && !existing.isDirectory() && isDir) {
            throw invalidArgument(`cannot overwrite non-directory ${describeEntry(loc.path)} with directory ${describeEntry(h.name)}`)
          }
          if (!(existing.isDirectory() && isDir)) await removeAt(dir, name)
        }
        switch (type) {
          case 'directory': {
            if (existing === undefined || !existing.isDirectory()) await mkdir(at(dir, name), { mode: 0o700 })
            const fh = await openDirAt(dir, name)
            try {
              if (asRoot) await fh.chown(uid, gid)
              await fh.chmod(mode)
            } finally { await fh.close() }
            dirTimes.push({ path: loc.path, mtime })
            await drain(entry)
            return
          }
          case 'file': case 'contiguous-file': {
            const fh = await open(at(dir, name), fsc.O_WRONLY | fsc.O_CREAT | fsc.O_EXCL | fsc.O_NOFOLLOW, 0o600)
            try {
              for await (const chunk of entry as AsyncIterable<Buffer>) {
                let off = 0
                while (off < chunk.length) off += (await fh.write(chunk, off, chunk.length - off)).bytesWritten
              }
              if (asRoot) await fh.chown(uid, gid)
              await fh.chmod(mode)
              await fh.utimes(mtime, mtime)
            } finally { await fh.close() }
            return
          }
          case 'symlink': {
            await drain(entry)
            await symlink(h.linkname ?? '', at(dir, name))
            if (asRoot) await lchown(at(dir, name), uid, gid)
            await lutimes(at(dir, name), mtime, mtime)
            createdLinks.add(rel)
            return
          }
          case 'link': {
            await drain(entry)
            const linkRel = safeEntryName(h.linkname ?? '')
            const lparts = linkRel.split('/')
            for (let i = 1; i < lparts.length; i++) {
              if (createdLinks.has(lparts.slice(0, i).join('/'))) {
                throw invalidArgument(`invalid tar entry ${describeEntry(h.name)}: hard link target goes through a symlink created by the same archive`)
              }
            }
            if (linkRel === '') throw invalidArgument(`invalid tar entry ${describeEntry(h.name)}: empty hard link target`)
            const tloc = await o.root.locate(posix.join(o.dest, linkRel))
            try {
              const tst = await lstatAt(tloc.dir, tloc.name)
              if (tloc.name === '' || tst === undefined || tst.isDirectory()) {
                throw invalidArgument(`invalid tar entry ${describeEntry(h.name)}: hard link target ${describeEntry(h.linkname ?? '')} is not a file in the archive`)
              }
              await link(at(tloc.dir, tloc.name), at(dir, name))
            } finally { await tloc.dir.close() }
            return
          }
          case 'character-device': case 'block-device': case 'fifo': {
            await drain(entry)
            const kind = type === 'fifo' ? ['p'] : [type === 'character-device' ? 'c' : 'b', String(h.devmajor ?? 0), String(h.devminor ?? 0)]
            await new Promise<void>((resolve, reject) => {
              execFile('mknod', ['-m', (mode & 0o7777).toString(8), atForChild(dir, name), ...kind], { timeout: 10_000 }, (err, _out, stderr) => {
                if (err !== null) reject(internal(`cannot create ${describeEntry(h.name)}: ${String(stderr).trim() || err.message}`, { cause: err }))
                else resolve()
              })
            })
            if (asRoot) await lchown(at(dir, name), uid, gid)
            return
          }
          default:
            throw invalidArgument(`invalid tar entry ${describeEntry(h.name)}: unsupported type ${String(type)}`)
        }
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code
        if ((code !== 'EEXIST' && code !== 'ENOENT') || attempt === 8) throw err
      }
    }
  } finally { await loc.dir.close() }
}
