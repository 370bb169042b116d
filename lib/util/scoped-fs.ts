// Filesystem access confined to one directory tree, as if that tree were `/` (a chroot without chroot).
//
// Every step goes through an open directory handle: a component is looked up relative to the handle of its parent
// (`/proc/self/fd/<fd>/<name>`, Linux's stand-in for openat), directories are opened with O_NOFOLLOW|O_DIRECTORY, and
// symlinks are expanded by us, relative to the tree's root, never by the kernel relative to the host. `..` pops the
// handle stack and stops at the root. A process inside a container that swaps a directory for a symlink between two
// of our steps makes the next open fail (ELOOP/ENOTDIR); it cannot redirect us to the host.
//
// Directories may be mounted into the tree (a container's volumes and bind mounts, as the container sees them): a
// lookup that reaches a mount point goes on in the mounted directory, `..` from it comes back to the tree, and a
// symlink inside it is expanded relative to the tree's root, as dockerd's view of a container's filesystem does.
import { open, lstat, readlink, readdir, rmdir, unlink, mkdir, stat, type FileHandle } from 'node:fs/promises'
import { constants as fsc, type BigIntStats, type Stats } from 'node:fs'
import { posix } from 'node:path'

/** Opens a directory, never through a symlink in its last component. */
export const O_DIR = fsc.O_RDONLY | fsc.O_DIRECTORY | fsc.O_NOFOLLOW
/** A mounted directory is opened by its host path (links in it followed, as the runtime's bind mount follows them). */
const O_MOUNTED = fsc.O_RDONLY | fsc.O_DIRECTORY
/** Linux's own limit on symlink expansions during one lookup. */
const MAX_LINKS = 40

/** The path that names `name` inside the directory open as `dir` (a handle or a descriptor; itself when name is ''). */
export function at (dir: FileHandle | number, name = ''): string {
  const fd = typeof dir === 'number' ? dir : dir.fd
  return name === '' ? `/proc/self/fd/${fd}` : `/proc/self/fd/${fd}/${name}`
}

/** The same path as seen from a child process (which has its own /proc/self). */
export function atForChild (dir: FileHandle, name: string): string {
  return `/proc/${process.pid}/fd/${dir.fd}/${name}`
}

export function fsError (code: string, message: string): NodeJS.ErrnoException {
  const err: NodeJS.ErrnoException = new Error(`${code}: ${message}`)
  err.code = code
  return err
}

function components (path: string): string[] {
  return path.split('/').filter((p) => p !== '' && p !== '.')
}

/** Opens the directory `name` inside `dir` without following a symlink there. */
export async function openDirAt (dir: FileHandle, name: string): Promise<FileHandle> {
  return await open(at(dir, name), O_DIR)
}

/** lstat of an entry inside `dir`; undefined when it does not exist. */
export async function lstatAt (dir: FileHandle, name: string): Promise<Stats | undefined> {
  try {
    return await lstat(at(dir, name))
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined
    throw err
  }
}

export async function lstatBigAt (dir: FileHandle, name: string): Promise<BigIntStats> {
  return await lstat(at(dir, name), { bigint: true })
}

/** Entry names of an open directory, in byte order (the order Go's filepath.Walk uses). */
export async function listDir (dir: FileHandle): Promise<string[]> {
  const names = await readdir(at(dir))
  return names.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
}

/** Removes `name` inside `dir` and, for a directory, everything below it, never following a symlink. */
export async function removeAt (dir: FileHandle, name: string): Promise<void> {
  // what another remover (a second `docker cp` into the same directory) took away meanwhile is gone as wanted
  const gone = (err: unknown): void => { if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err }
  const st = await lstatAt(dir, name)
  if (st === undefined) return
  if (!st.isDirectory()) { await unlink(at(dir, name)).catch(gone); return }
  let sub: FileHandle
  try { sub = await openDirAt(dir, name) } catch (err) { gone(err); return }
  try {
    for (const child of await readdir(at(sub))) await removeAt(sub, child)
  } finally { await sub.close() }
  await rmdir(at(dir, name)).catch(gone)
}

/** Where a path lands inside the root: the directory holding it, and its name there. */
export interface Located {
  /** The directory that holds the entry; owned by the caller (close it). */
  dir: FileHandle
  /** The entry's name in `dir`, or '' when the path names `dir` itself (the root, or a path ending in `..`). */
  name: string
  /** The path inside the root after symlinks and `..` were resolved, e.g. `/usr/lib/x`. */
  path: string
}

export interface LocateOptions {
  /** Expand a symlink in the last component too (stat semantics); otherwise the link itself is located. */
  followLast?: boolean
  /** Create missing intermediate directories (mkdir -p) with this mode and owner instead of failing with ENOENT. */
  mkdirs?: { mode: number, uid?: number, gid?: number }
  /** Stop at a missing or non-directory component and append the rest lexically (only `path` is meaningful then). */
  lenient?: boolean
}

/** A directory (or file) mounted into a ScopedRoot. */
export interface ScopedMount {
  /** Where, inside the tree (absolute, its symlinks resolved in the tree). */
  path: string
  /** The host directory mounted there, or the host file (by a path whose last component is not a symlink). */
  source: string
  readonly: boolean
  /** A file mounted over a file: looked up for reading; a write that would replace it fails with EBUSY. */
  file: boolean
}

/** A directory tree used as a root: lookups never leave it (or the directories mounted into it). */
export class ScopedRoot {
  readonly hostPath: string
  private readonly root: FileHandle
  private readonly onClose: (() => Promise<void>) | undefined
  private readonly mounts = new Map<string, ScopedMount>()

  private constructor (hostPath: string, root: FileHandle, onClose?: () => Promise<void>) {
    this.hostPath = hostPath
    this.root = root
    this.onClose = onClose
  }

  /** `onClose`: runs after close (what holds the tree for its user lets go then). */
  static async open (hostPath: string, onClose?: () => Promise<void>): Promise<ScopedRoot> {
    return new ScopedRoot(hostPath, await open(hostPath, fsc.O_RDONLY | fsc.O_DIRECTORY), onClose)
  }

  async close (): Promise<void> {
    try { await this.root.close() } finally { await this.onClose?.() }
  }

  /**
   * Mounts the host directory `source` at `path` in the tree (resolved as the tree is now, with the mounts made so far:
   * mount parents before children, as a runtime does).
   */
  async mount (path: string, source: string, readonly: boolean): Promise<void> {
    const resolved = await this.canonical(path)
    const file = !(await stat(source)).isDirectory()
    this.mounts.set(resolved, { path: resolved, source, readonly, file })
  }

  /** The mount a resolved path is in (the deepest one), if any. */
  mountOf (path: string): ScopedMount | undefined {
    let best: ScopedMount | undefined
    for (const m of this.mounts.values()) {
      if ((path === m.path || path.startsWith(m.path + '/')) && (best === undefined || m.path.length > best.path.length)) best = m
    }
    return best
  }

  /** The mount at exactly this resolved path, if any. */
  mountAt (path: string): ScopedMount | undefined { return this.mounts.get(path) }

  /** Resolved paths of the mount points directly inside the directory at resolved path `dir`. */
  mountsIn (dir: string): string[] {
    const prefix = dir === '/' ? '/' : dir + '/'
    return [...this.mounts.keys()].filter((p) => p.startsWith(prefix) && !p.slice(prefix.length).includes('/')).map((p) => p.slice(prefix.length))
  }

  /** A fresh handle on the root directory. */
  async openRoot (): Promise<FileHandle> { return await open(at(this.root), fsc.O_RDONLY | fsc.O_DIRECTORY) }

  /**
   * Resolves `path` (absolute or relative, both taken from the root) component by component. Throws ENOENT for a
   * missing intermediate directory (unless `mkdirs`), ENOTDIR when one is not a directory, ELOOP after too many
   * symlinks. A missing last component is not an error: the caller gets where it would be.
   */
  async locate (path: string, o: LocateOptions = {}): Promise<Located> {
    const stack: FileHandle[] = [await this.openRoot()]
    const names: string[] = []
    const todo = components(path)
    let links = 0
    let result: Located | undefined
    try {
      while (todo.length > 0) {
        const comp = todo.shift() as string
        if (comp === '..') {
          if (stack.length > 1) { await (stack.pop() as FileHandle).close(); names.pop() }
          continue
        }
        const last = todo.length === 0
        const cur = stack[stack.length - 1] as FileHandle
        const mounted = this.mounts.size === 0 ? undefined : this.mounts.get('/' + [...names, comp].join('/'))
        if (mounted?.file === true && last) {
          // a file mount: the host file itself; replacing it is the mount point's EBUSY
          if (o.mkdirs !== undefined) throw fsError('EBUSY', `device or resource busy: ${mounted.path}`)
          result = { dir: await open(posix.dirname(mounted.source), O_MOUNTED), name: posix.basename(mounted.source), path: mounted.path }
          break
        }
        if (mounted !== undefined && !mounted.file) {
          // the mount point is the mounted directory itself (what was at that path in the tree is hidden)
          const fh = await open(mounted.source, O_MOUNTED)
          names.push(comp)
          stack.push(fh)
          if (last) { result = { dir: fh, name: '', path: '/' + names.join('/') }; break }
          continue
        }
        let st = await lstatAt(cur, comp)
        if (st === undefined) {
          if (last) { result = { dir: cur, name: comp, path: '/' + [...names, comp].join('/') }; break }
          if (o.lenient === true) { result = { dir: cur, name: '', path: posix.normalize('/' + [...names, comp, ...todo].join('/')) }; break }
          if (o.mkdirs === undefined) throw fsError('ENOENT', `no such file or directory: /${[...names, comp].join('/')}`)
          await mkdir(at(cur, comp), { mode: o.mkdirs.mode }).catch((err: NodeJS.ErrnoException) => { if (err.code !== 'EEXIST') throw err })
          st = await lstat(at(cur, comp))
          if (st.isDirectory() && o.mkdirs.uid !== undefined) {
            const made = await openDirAt(cur, comp)
            try { await made.chown(o.mkdirs.uid, o.mkdirs.gid ?? 0) } finally { await made.close() }
          }
        }
        if (st.isSymbolicLink() && (!last || o.followLast === true)) {
          if (++links > MAX_LINKS) throw fsError('ELOOP', `too many levels of symbolic links: /${[...names, comp].join('/')}`)
          const target = await readlink(at(cur, comp))
          if (target.startsWith('/')) {
            while (stack.length > 1) await (stack.pop() as FileHandle).close()
            names.length = 0
          }
          todo.unshift(...components(target))
          continue
        }
        if (last) { result = { dir: cur, name: comp, path: '/' + [...names, comp].join('/') }; break }
        if (!st.isDirectory() && o.lenient === true) { result = { dir: cur, name: '', path: posix.normalize('/' + [...names, comp, ...todo].join('/')) }; break }
        if (!st.isDirectory()) throw fsError('ENOTDIR', `not a directory: /${[...names, comp].join('/')}`)
        stack.push(await openDirAt(cur, comp))
        names.push(comp)
      }
      if (result === undefined) result = { dir: stack[stack.length - 1] as FileHandle, name: '', path: '/' + names.join('/') }
      return result
    } finally {
      for (const fh of stack) if (fh !== result?.dir) await fh.close()
    }
  }

  /**
   * FollowSymlinkInScope: the path with every symlink expanded inside the root; components that do not exist are
   * appended as they are (so a dangling link still gets a target).
   */
  async canonical (path: string): Promise<string> {
    const loc = await this.locate(path, { followLast: true, lenient: true })
    await loc.dir.close()
    return loc.path
  }

  /** Opens what `path` names as a directory (following a symlink in the last component). */
  async openDir (path: string): Promise<FileHandle> {
    const loc = await this.locate(path, { followLast: true })
    if (loc.name === '') return loc.dir
    try {
      return await openDirAt(loc.dir, loc.name)
    } finally { await loc.dir.close() }
  }
}

/** What a path inside a root names once its symlinks are expanded inside the root. */
export interface ScopedKind {
  kind: 'missing' | 'file' | 'directory' | 'fifo' | 'socket' | 'character device' | 'block device'
  /** the path inside the root after symlinks */
  path: string
}

/** The kind of what `path` names inside `root` (symlinks expanded inside the root; nothing opened, nothing read). */
export async function scopedKind (root: ScopedRoot, path: string): Promise<ScopedKind> {
  let loc: Located
  try { loc = await root.locate(path, { followLast: true }) } catch { return { kind: 'missing', path } }
  try {
    if (loc.name === '') return { kind: 'directory', path: loc.path }
    const st = await lstatAt(loc.dir, loc.name)
    const kind: ScopedKind['kind'] = st === undefined
      ? 'missing'
      : st.isFile() ? 'file' : st.isDirectory() ? 'directory' : st.isFIFO() ? 'fifo' : st.isSocket() ? 'socket' : st.isCharacterDevice() ? 'character device' : st.isBlockDevice() ? 'block device' : 'missing'
    return { kind, path: loc.path }
  } finally { await loc.dir.close() }
}

/** Largest file `readScopedFile` reads: the daemon reads small configuration files from containers, never data. */
export const MAX_SCOPED_READ = 4 * 1024 * 1024

/**
 * Reads the regular file `path` names inside `root` (symlinks expanded inside the root, never the host's), opened
 * O_NOFOLLOW|O_NONBLOCK so a FIFO or device put there by a container neither blocks nor is read. Returns null when
 * the path does not exist or is not a regular file; throws EFBIG past `limit` bytes.
 */
export async function readScopedFile (root: ScopedRoot, path: string, limit = MAX_SCOPED_READ): Promise<Buffer | null> {
  let loc: Located
  try { loc = await root.locate(path, { followLast: true }) } catch { return null }
  try {
    if (loc.name === '') return null
    let fh: FileHandle
    try { fh = await open(at(loc.dir, loc.name), fsc.O_RDONLY | fsc.O_NOFOLLOW | fsc.O_NONBLOCK) } catch { return null }
    try {
      const st = await fh.stat()
      if (!st.isFile()) return null
      if (st.size > limit) throw fsError('EFBIG', `${path} is larger than ${limit} bytes`)
      const buf = Buffer.alloc(Math.min(st.size, limit) + 1)
      let got = 0
      // the file may grow between stat and read: never past the limit
      while (got < buf.length) {
        const { bytesRead } = await fh.read(buf, got, buf.length - got, got)
        if (bytesRead === 0) break
        got += bytesRead
      }
      if (got > limit) throw fsError('EFBIG', `${path} is larger than ${limit} bytes`)
      return buf.subarray(0, got)
    } finally { await fh.close() }
  } finally { await loc.dir.close() }
}
