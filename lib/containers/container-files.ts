// What the container routes need beyond the lifecycle: files in and out of a container's root filesystem (archive
// HEAD/GET/PUT, export) and its changes. Its processes and resource usage (top, stats) are container-stats.ts.
//
// Every path a client names is resolved inside the container's root filesystem as if it were `/` (util/scoped-fs.ts):
// symlinks in the container point into the container, never at the host, also while the container runs and changes
// its files. The container's volumes and bind-mounted directories are mounted into that view (running or not), as
// dockerd's view of a container's files has them: a path inside one reads and writes the volume, and a symlink in a
// volume is expanded inside the container. `docker export` is the root filesystem alone, as dockerd's.
import { lstat } from 'node:fs/promises'
import { constants as fsc, type BigIntStats, type Stats } from 'node:fs'
import { posix } from 'node:path'
import type { Readable } from 'node:stream'
import { conflict, invalidArgument, isEngineError, notFound, notImplemented, type EngineError } from '../errors.js'
import { ScopedRoot, at, openDirAt, readScopedFile, type Located } from '../util/scoped-fs.js'
import { addEntry, addFromDir, addTree, headerFor, tarStreamOf, extractInto, type LinkTable, type TreeMounts } from '../stream/tar-tree.js'
import { containerChanges, type Change } from '../image/diff.js'
import { decompressed } from '../stream/decompressed.js'
import type { ImageProvider } from '../image/types.js'
import type { EventType } from '../events/event-bus.js'
import type { ContainerHandle } from './container-handle.js'
import { rfc3339Nano } from '../util/time.js'

export interface ContainerFilesOptions {
  /** A container by full ID, name or unique ID prefix; throws not-found. */
  container (ref: string): ContainerHandle
  /** Mounts the container's root filesystem (a stopped container's) until the returned function lets go. */
  holdRootfs (c: ContainerHandle): Promise<() => Promise<void>>
  /** Whether the container's root filesystem is mounted (always true for a copied tree). */
  rootfsMounted?: (c: ContainerHandle) => Promise<boolean>
  /** The directories mounted in the container (host directories by path), parents first; `release` after use. */
  viewMounts?: (c: ContainerHandle) => Promise<{ mounts: Array<{ destination: string, source: string, rw: boolean }>, release: () => Promise<void> }>
  images: ImageProvider
  emit (type: EventType, action: string, actorId: string, attributes: Record<string, string>): void
}

/** The archive stat (X-Docker-Container-Path-Stat); `mode` carries Go os.FileMode bits. */
export interface PathStat { name: string, size: number, mode: number, mtime: string, linkTarget: string }

/** The /etc files Berth bind-mounts from the container's directory, by their path in the container. */
const ETC_BIND_FILES = new Map([['/etc/hostname', 'hostname'], ['/etc/hosts', 'hosts'], ['/etc/resolv.conf', 'resolv.conf']])

// Go os.FileMode type bits (io/fs), not Unix st_mode bits.
const GO_MODE_DIR = 2 ** 31
const GO_MODE_SYMLINK = 2 ** 27
const GO_MODE_DEVICE = 2 ** 26
const GO_MODE_NAMED_PIPE = 2 ** 25
const GO_MODE_SOCKET = 2 ** 24
const GO_MODE_SETUID = 2 ** 23
const GO_MODE_SETGID = 2 ** 22
const GO_MODE_CHAR_DEVICE = 2 ** 21
const GO_MODE_STICKY = 2 ** 20

/** st_mode → Go's os.FileMode (what `docker cp` calls IsDir() on). */
export function goFileMode (mode: number): number {
  let m = mode & 0o777
  switch (mode & fsc.S_IFMT) {
    case fsc.S_IFDIR: m += GO_MODE_DIR; break
    case fsc.S_IFLNK: m += GO_MODE_SYMLINK; break
    case fsc.S_IFIFO: m += GO_MODE_NAMED_PIPE; break
    case fsc.S_IFSOCK: m += GO_MODE_SOCKET; break
    case fsc.S_IFBLK: m += GO_MODE_DEVICE; break
    case fsc.S_IFCHR: m += GO_MODE_DEVICE + GO_MODE_CHAR_DEVICE; break
  }
  if ((mode & 0o4000) !== 0) m += GO_MODE_SETUID
  if ((mode & 0o2000) !== 0) m += GO_MODE_SETGID
  if ((mode & 0o1000) !== 0) m += GO_MODE_STICKY
  return m
}

/** Go's filepath.Base for '/'-paths. */
function goBase (p: string): string {
  const t = p.replace(/\/+$/, '')
  if (t === '') return p === '' ? '.' : '/'
  return t.slice(t.lastIndexOf('/') + 1)
}

/** dockerd's `PreserveTrailingDotOrSeparator(filepath.Join("/", path), path)`. */
export function containerAbsPath (path: string): string {
  let abs = posix.join('/', path)
  if (path.endsWith('/.') || path === '.') { if (!abs.endsWith('/.')) abs = abs === '/' ? '/.' : `${abs}/.` } else if (path.endsWith('/') && !abs.endsWith('/')) abs += '/'
  return abs
}

function errnoOf (err: unknown): string | undefined {
  return (err as NodeJS.ErrnoException | undefined)?.code
}

/**
 * The per-container side of the Engine API: archive, export, changes. Errors carry their kind; texts
 * follow dockerd's where clients show them.
 */
export class ContainerFiles {
  private readonly o: ContainerFilesOptions

  constructor (o: ContainerFilesOptions) {
    this.o = o
  }

  private attributes (c: ContainerHandle): Record<string, string> {
    return { ...c.rec.config.labels, image: c.rec.image, name: c.rec.name.slice(1) }
  }

  /**
   * The container's files as `/`, with its volumes and bind mounts in place unless `mounts` is false (export).
   * `copy`: a copy in or out (the archive routes) holds the container's lock shared until the root closes, as
   * dockerd's archive routes hold the container's lock: a start, stop, restart or removal waits for it.
   */
  private async openRoot (ref: string, o: { mounts?: boolean, copy?: boolean } = {}): Promise<{ c: ContainerHandle, root: ScopedRoot }> {
    const c = this.o.container(ref)
    const unlock = o.copy === true ? await c.files.enterShared() : () => {}
    try {
      // a removal that went first: dockerd finds no such container by then
      if (c.removed) throw notFound(`No such container: ${ref}`)
      return await this.openTree(c, ref, o.mounts ?? true, unlock, true)
    } catch (err) { unlock(); throw err }
  }

  private async openTree (c: ContainerHandle, ref: string, mounts: boolean, unlock: () => void, again: boolean): Promise<{ c: ContainerHandle, root: ScopedRoot }> {
    // a stopped container's tree is mounted while the root is open, and unmounted again when it closes
    const releaseRootfs = await this.o.holdRootfs(c)
    let view: Awaited<ReturnType<NonNullable<ContainerFilesOptions['viewMounts']>>> | null = null
    // (the lock is let go with the root handed out, not with one given up for another below)
    let handedOut = false
    const release = async (): Promise<void> => {
      try { await view?.release() } finally { await releaseRootfs(); if (handedOut) unlock() }
    }
    let root: ScopedRoot | null = null
    try {
      if (mounts && this.o.viewMounts !== undefined) view = await this.o.viewMounts(c)
      root = await ScopedRoot.open(c.rootfs.merged, release)
      // a running container's tree is its monitor's: one that exited just now took it away before the open (the
      // hold then mounts it as a stopped container's)
      if (again && this.o.rootfsMounted !== undefined && !await this.o.rootfsMounted(c)) {
        const r = root
        root = null
        await r.close()
        return await this.openTree(c, ref, mounts, unlock, false)
      }
      for (const m of view?.mounts ?? []) await root.mount(m.destination, m.source, !m.rw)
      // /etc/hostname, /etc/hosts, /etc/resolv.conf are bind-mounted from the container's directory once it started
      if (mounts) {
        for (const [dest, name] of ETC_BIND_FILES) {
          if (root.mountAt(dest) !== undefined || c.removed) continue
          const st = await lstat(posix.join(c.dir, name)).catch(() => null)
          if (st?.isFile() === true) await root.mount(dest, posix.join(c.dir, name), c.rec.readonlyRootfs)
        }
      }
      handedOut = true
      return { c, root }
    } catch (err) {
      if (root !== null) await root.close(); else await release()
      throw removedMeanwhile(c, ref) ?? err
    }
  }

  /** Locates `path` as dockerd's Stat does: the last component is not followed unless the path ends in / or /. */
  private async locatePath (root: ScopedRoot, ref: string, path: string): Promise<{ loc: Located, st: Stats, big: BigIntStats, abs: string }> {
    const abs = containerAbsPath(path)
    const followLast = abs !== '/' && (abs.endsWith('/') || abs.endsWith('/.'))
    let loc: Located
    try {
      loc = await root.locate(abs, { followLast })
    } catch (err) {
      const code = errnoOf(err)
      if (code === 'ENOENT' || code === 'ENOTDIR') throw notFound(`Could not find the file ${path} in container ${ref}`, { cause: err })
      if (code === 'ELOOP') throw invalidArgument(`${path}: too many levels of symbolic links`, { cause: err })
      throw err
    }
    try {
      if (loc.name === '') return { loc, st: await loc.dir.stat(), big: await loc.dir.stat({ bigint: true }), abs }
      const st = await lstat(at(loc.dir, loc.name))
      // like lstat("/etc/passwd/"): a trailing separator asks for a directory
      if (followLast && !st.isDirectory()) throw Object.assign(new Error(`not a directory: ${abs}`), { code: 'ENOENT' })
      return { loc, st, big: await lstat(at(loc.dir, loc.name), { bigint: true }), abs }
    } catch (err) {
      await loc.dir.close()
      if (errnoOf(err) === 'ENOENT') throw notFound(`Could not find the file ${path} in container ${ref}`, { cause: err })
      throw err
    }
  }

  private async pathStat (root: ScopedRoot, abs: string, st: Stats, big: BigIntStats): Promise<PathStat> {
    return {
      name: goBase(abs),
      size: st.size,
      mode: goFileMode(st.mode),
      mtime: rfc3339Nano(big.mtimeNs),
      linkTarget: st.isSymbolicLink() ? await root.canonical(abs) : ''
    }
  }

  /** HEAD /containers/{id}/archive */
  async statPath (ref: string, clientPath: string): Promise<PathStat> {
    const { c, root } = await this.openRoot(ref, { copy: true })
    try {
      const { loc, st, big, abs } = await this.locatePath(root, ref, clientPath)
      await loc.dir.close()
      return await this.pathStat(root, abs, st, big)
    } catch (err) {
      throw removedMeanwhile(c, ref) ?? err
    } finally { await root.close() }
  }

  /**
   * GET /containers/{id}/archive: the stat and a tar of the path. A directory's entries are renamed to start with
   * the requested base name (`/etc/` → `etc/…`, `/etc/.` → `./…`, `/` → `/…`), as dockerd's rebase does.
   */
  async archivePath (ref: string, clientPath: string): Promise<{ stat: PathStat, tar: Readable }> {
    const { c, root } = await this.openRoot(ref, { copy: true })
    let located: Awaited<ReturnType<ContainerFiles['locatePath']>>
    let stat: PathStat
    try {
      located = await this.locatePath(root, ref, clientPath)
      stat = await this.pathStat(root, located.abs, located.st, located.big)
    } catch (err) {
      await root.close()
      throw removedMeanwhile(c, ref) ?? err
    }
    const { loc, st, abs } = located
    const base = goBase(abs)
    const tar = tarStreamOf(async (pack) => {
      const links: LinkTable = new Map()
      try {
        if (!st.isDirectory()) {
          await addFromDir(pack, loc.dir, loc.name, st, base, links)
          return
        }
        const dir = loc.name === '' ? loc.dir : await openDirAt(loc.dir, loc.name)
        // mount points below it are archived as the directories mounted there
        const mounts: TreeMounts = {
          at: (rel) => root.mountAt(posix.join(loc.path, rel)),
          childrenOf: (rel) => root.mountsIn(posix.join(loc.path, rel))
        }
        try {
          await addEntry(pack, headerFor(base === '/' ? '/' : base, st))
          await addTree(pack, dir, base === '/' ? '/' : `${base}/`, links, undefined, mounts)
        } finally { if (dir !== loc.dir) await dir.close() }
      } finally {
        await loc.dir.close()
        await root.close()
      }
    })
    this.o.emit('container', 'archive-path', c.id, this.attributes(c))
    return { stat, tar }
  }

  /** PUT /containers/{id}/archive: extracts a tar (plain or gzip) into the directory `path` names. */
  async extractToDir (ref: string, path: string, body: Readable, opts: { noOverwriteDirNonDir: boolean, copyUIDGID: boolean }): Promise<void> {
    const { c, root } = await this.openRoot(ref, { copy: true })
    try {
      const abs = posix.join('/', path)
      let loc: Located
      try {
        loc = await root.locate(abs, { followLast: true })
      } catch (err) {
        const code = errnoOf(err)
        if (code === 'ENOENT' || code === 'ENOTDIR') throw notFound(`Could not find the file ${path} in container ${ref}`, { cause: err })
        if (code === 'ELOOP') throw invalidArgument(`${path}: too many levels of symbolic links`, { cause: err })
        throw err
      }
      let isDir: boolean
      try {
        isDir = loc.name === '' || (await lstat(at(loc.dir, loc.name))).isDirectory()
      } catch (err) {
        if (errnoOf(err) === 'ENOENT') throw notFound(`Could not find the file ${path} in container ${ref}`, { cause: err })
        throw err
      } finally { await loc.dir.close() }
      if (!isDir) throw invalidArgument('extraction point is not a directory')
      // dockerd's checkWritablePath: the mount the extraction point is in decides, else the root filesystem
      const mount = root.mountOf(loc.path)
      if (mount !== undefined ? mount.readonly : c.rec.readonlyRootfs) throw invalidArgument(mount !== undefined ? 'mounted volume is marked read-only' : 'container rootfs is marked read-only')
      const owner = opts.copyUIDGID ? await this.containerUser(root, c.rec.config.user) : undefined
      await extractInto(await decompressed(body), { root, dest: loc.path, noOverwriteDirNonDir: opts.noOverwriteDirNonDir, ...(owner !== undefined ? { owner } : {}) })
    } catch (err) {
      throw removedMeanwhile(c, ref) ?? await remountedMeanwhile(c, root, err) ?? err
    } finally { await root.close() }
    this.o.emit('container', 'extract-to-dir', c.id, this.attributes(c))
  }

  /** Reads a small file of the container (its /etc/passwd) without following links out of it, blocking or overreading. */
  private async readScoped (root: ScopedRoot, path: string): Promise<string> {
    try {
      return (await readScopedFile(root, path))?.toString('utf8') ?? ''
    } catch { return '' }
  }

  /**
   * Config.User as uid/gid for copyUIDGID, looked up in the container's own passwd and group files the way dockerd's
   * getUIDGID does; undefined (keep the archive's ownership) when the container has no user set.
   */
  private async containerUser (root: ScopedRoot, user: string): Promise<{ uid: number, gid: number } | undefined> {
    if (user === '') return undefined
    const table = (text: string): string[][] => text.split('\n').filter((l) => l !== '' && !l.startsWith('#')).map((l) => l.split(':'))
    const colon = user.indexOf(':')
    const u = colon === -1 ? user : user.slice(0, colon)
    const g = colon === -1 ? '' : user.slice(colon + 1)
    let uid = 0
    let gid = 0
    if (u !== '') {
      const passwd = table(await this.readScoped(root, '/etc/passwd'))
      if (/^\d+$/.test(u)) {
        uid = Number(u)
        const entry = passwd.find((p) => p[2] === u)
        gid = entry !== undefined ? Number(entry[3]) : 0
      } else {
        const entry = passwd.find((p) => p[0] === u)
        if (entry === undefined) throw invalidArgument(`failed to look up user "${u}" in container: no matching entries in passwd file`)
        uid = Number(entry[2])
        gid = Number(entry[3])
      }
    }
    if (g !== '') {
      if (/^\d+$/.test(g)) gid = Number(g)
      else {
        const entry = table(await this.readScoped(root, '/etc/group')).find((x) => x[0] === g)
        if (entry === undefined) throw invalidArgument(`failed to look up group "${g}" in container: no matching entries in group file`)
        gid = Number(entry[2])
      }
    }
    return { uid, gid }
  }

  /** GET /containers/{id}/export: the whole root filesystem as a tar stream. */
  async export (ref: string): Promise<Readable> {
    const { c, root } = await this.openRoot(ref, { mounts: false })
    const tar = tarStreamOf(async (pack) => {
      try {
        const dir = await root.openRoot()
        try { await addTree(pack, dir, '', new Map()) } finally { await dir.close() }
      } finally { await root.close() }
    })
    this.o.emit('container', 'export', c.id, this.attributes(c))
    return tar
  }

  /** GET /containers/{id}/changes */
  async changes (ref: string): Promise<Change[]> {
    const c = this.o.container(ref)
    if (c.rec.rootfsKind !== 'overlay') throw notImplemented('changes are only tracked for containers on overlayfs; this one has a copied root filesystem')
    const release = await this.o.holdRootfs(c)
    try {
      const image = await this.o.images.resolveImage(c.rec.imageId)
      return await containerChanges({ upper: c.rootfs.upper, lowers: await this.o.images.layerPaths(image), merged: c.rootfs.merged, mountPoints: runtimeMountPoints(c) })
    } catch (err) {
      throw removedMeanwhile(c, ref) ?? err
    } finally { await release() }
  }

}

/**
 * The answer for a file operation that failed because a removal (rm -f at the same time) took the container's
 * trees away under it: dockerd finds no such container by then. Undefined while the container is still there.
 */
function removedMeanwhile (c: ContainerHandle, ref: string): EngineError | undefined {
  return c.removed || c.rec.state.status === 'removing' ? notFound(`No such container: ${ref}`) : undefined
}

/**
 * An extraction that failed in the host's file system because the container stopped (its monitor detached the tree)
 * and started again (a new mount over the same writable layer, whose work directory it cleared) while it wrote: the
 * copy met a container changing state, a conflict rather than the daemon's failure. Undefined otherwise.
 */
async function remountedMeanwhile (c: ContainerHandle, root: ScopedRoot, err: unknown): Promise<EngineError | undefined> {
  if (!isEngineError(err) || err.kind !== 'internal') return undefined
  const held = await root.openRoot().catch(() => null)
  try {
    const [was, now] = await Promise.all([held?.stat(), lstat(c.rootfs.merged).catch(() => undefined)])
    if (was !== undefined && now !== undefined && was.dev === now.dev && was.ino === now.ino) return undefined
  } finally { await held?.close() }
  return conflict(`Container ${c.id} stopped or restarted during the copy: ${err.message}`, { cause: err })
}

/**
 * What the runtime creates in a container's root filesystem as mount points (dockerd's init layer holds the same):
 * the /etc files Berth bind-mounts, the kernel filesystems, and the targets of the container's bind mounts.
 */
export function runtimeMountPoints (c: ContainerHandle): string[] {
  const out = ['/.dockerenv', '/dev', '/dev/pts', '/dev/shm', '/etc/hostname', '/etc/hosts', '/etc/mtab', '/etc/resolv.conf', '/proc', '/sys']
  for (const m of c.rec.mounts ?? []) out.push(posix.normalize(m.destination))
  return out
}
