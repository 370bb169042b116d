// What a container's lifecycle asks of volumes: its mounts resolved and their volumes created at create, the copy-up,
// the runtime's mount list at start (subpaths mounted safely first), the references and anonymous volumes dropped at
// remove, and the mounts `docker cp` sees the container's files through.
import { mkdir, open, stat, type FileHandle } from 'node:fs/promises'
import { constants as fsc } from 'node:fs'
import { join, posix } from 'node:path'
import { invalidArgument, describeError, isEngineError } from '../errors.js'
import { levelLogger, logger } from '../log.js'
import { coveredByTmpfs, resolveMounts, type Mount, type MountInputs } from './mount-spec.js'
import { copyUp } from './copy-up.js'
import { checkDriver, isMountedKind } from './volume-record.js'
import type { VolumeStore } from './volume-store.js'
import { SubpathMounts } from './subpath-mounts.js'
import { openSubpath } from './subpath.js'

const log = logger('volumes')
const ops = levelLogger('volumes')

/** One mount in the OCI runtime spec. */
export interface RuntimeMount { destination: string, type: string, source: string, options: string[] }

/** A directory mounted in a container, as its processes see it: where, what (a host directory), and writable or not. */
export interface ViewMount { destination: string, source: string, rw: boolean }

export interface ContainerVolumesOptions {
  /** Where subpath mounts get their private mount points (in the exec root: they live while a container runs). */
  subpathRoot: string
}

export class ContainerVolumes {
  private readonly store: VolumeStore
  private readonly subpaths: SubpathMounts
  constructor (store: VolumeStore, o: ContainerVolumesOptions) {
    this.store = store
    this.subpaths = new SubpathMounts(o.subpathRoot)
  }

  /**
   * Resolves the request's mounts (see resolveMounts), creates the volumes they name and anonymous ones, creates a
   * missing -v bind source, and takes the references for `containerId`. On failure nothing stays behind.
   */
  async prepare (containerId: string, inp: MountInputs): Promise<Mount[]> {
    const mounts = resolveMounts(inp)
    const created: string[] = []
    const referenced: string[] = []
    try {
      for (const m of mounts) {
        if (m.type === 'volume') {
          checkDriver(m.source === '' ? containerId : m.source, m.driver)
          const r = await this.store.create({ name: m.source, driver: m.driver, labels: m.volumeLabels ?? {}, options: m.volumeOptions ?? null, anonymous: m.source === '' })
          if (r.created) created.push(r.volume.name)
          m.source = r.volume.name
          m.anonymous = r.volume.anonymous
          m.path = this.store.mountpoint(m.source)
          this.store.addRef(m.source, containerId)
          referenced.push(m.source)
        } else if (m.type === 'bind') {
          const st = await stat(m.source).catch(() => null)
          if (st === null) {
            if (!m.createSource) throw invalidArgument(`invalid mount config for type "bind": bind source path does not exist: ${m.source}`)
            await mkdir(m.source, { recursive: true, mode: 0o755 })
          }
        }
      }
    } catch (err) {
      for (const name of referenced) this.store.removeRef(name, containerId)
      for (const name of created) await this.store.remove(name, true).catch((e) => { ops.warn('a failed create leaves volume %s: %s', name, describeError(e)) })
      throw err
    }
    return mounts
  }

  /** Re-takes a container's references (daemon start). */
  adopt (containerId: string, mounts: readonly Mount[]): void {
    for (const m of mounts) if (m.type === 'volume' && m.source !== '') this.store.addRef(m.source, containerId)
  }

  /** Whether any volume mount may need the image's content copied in (the root filesystem must be mounted then). */
  wantsCopyUp (mounts: readonly Mount[]): boolean {
    return mounts.some((m) => m.type === 'volume' && !m.nocopy && this.canCopyInto(m))
  }

  /** A subpath mount is never filled from the image (the volume is someone else's tree). */
  private canCopyInto (m: Mount): boolean {
    if (m.subpath !== undefined) return false
    const v = this.store.find(m.source)
    return v !== undefined && !isMountedKind(v)
  }

  /** Fills new, empty volumes from the image at their destination (unless nocopy). */
  async copyUp (rootfs: string, mounts: readonly Mount[]): Promise<void> {
    for (const m of mounts) {
      if (m.type !== 'volume' || m.nocopy || !this.canCopyInto(m)) continue
      if (await copyUp(rootfs, m.destination, join(this.store.root, m.source))) log('copied %s into volume %s', m.destination, m.source)
    }
  }

  /**
   * The OCI mounts at start; volumes with driver options are mounted first (held for `containerId` until stopped()).
   * A bind or volume on a --tmpfs path is left out: the tmpfs wins, as in dockerd. Emits the volume mount events.
   */
  async runtimeMounts (containerId: string, mounts: readonly Mount[], tmpfs: readonly string[] = []): Promise<RuntimeMount[]> {
    const out: RuntimeMount[] = []
    const covered = coveredByTmpfs(mounts, tmpfs)
    for (const [i, m] of mounts.entries()) {
      const rw = m.rw ? 'rw' : 'ro'
      if (m.type !== 'tmpfs' && covered.has(m.destination)) continue
      if (m.type === 'bind') {
        out.push({ destination: m.destination, type: 'bind', source: m.source, options: [m.nonRecursive === true ? 'bind' : 'rbind', m.propagation === '' ? 'rprivate' : m.propagation, rw] })
      } else if (m.type === 'volume') {
        const v = this.store.get(m.source)
        await this.store.mountFor(v, containerId)
        // a subpath is mounted by the handle it was found through (subpath-mounts.ts), the runtime binds that
        const source = m.subpath === undefined ? this.store.mountpoint(v.name) : await this.subpaths.mount(containerId, i, this.store.mountpoint(v.name), m.subpath)
        this.store.notify('mount', v.name, { container: containerId, destination: m.destination, driver: v.driver, propagation: '', 'read/write': String(m.rw) })
        out.push({ destination: m.destination, type: 'bind', source, options: ['rbind', 'rprivate', rw] })
      } else {
        const opts = ['nosuid', 'nodev', 'noexec', rw]
        if (m.tmpfsSize !== undefined) opts.push(`size=${m.tmpfsSize}`)
        if (m.tmpfsMode !== undefined) opts.push(`mode=${m.tmpfsMode.toString(8)}`)
        out.push({ destination: m.destination, type: 'tmpfs', source: 'tmpfs', options: opts })
      }
    }
    return out
  }

  /**
   * The container stopped (or its start failed): its volumes are let go (the last container to stop unmounts a volume
   * with driver options) and dockerd's unmount event goes out for each volume mount.
   */
  async stopped (containerId: string, mounts: readonly Mount[]): Promise<void> {
    if (mounts.some((m) => m.subpath !== undefined)) await this.subpaths.release(containerId)
    for (const m of mounts) {
      if (m.type !== 'volume' || m.source === '') continue
      const v = this.store.find(m.source)
      if (v === undefined) continue
      await this.store.unmountFor(v.name, containerId).catch((err) => { ops.warn('volume %s: letting go of its mount for container %s: %s', v.name, containerId.slice(0, 12), describeError(err)) })
      this.store.notify('unmount', v.name, { container: containerId, driver: v.driver })
    }
  }

  /** Daemon start: a running container that was re-adopted still has its volumes mounted. */
  resume (containerId: string, mounts: readonly Mount[]): void {
    for (const m of mounts) {
      const v = m.type === 'volume' ? this.store.find(m.source) : undefined
      if (v !== undefined && isMountedKind(v)) this.store.hold(v.name, containerId)
    }
  }

  /**
   * Daemon start, after resume() of every running container: unmounts volumes no running container holds, and the
   * subpath mounts of containers not running.
   */
  async settle (running: ReadonlySet<string> = new Set()): Promise<void> {
    await this.store.settleMounts()
    await this.subpaths.settle(running)
  }

  /**
   * The container's directory mounts as its processes see them, for docker cp and the archive API, parents before
   * children: volumes (a subpath opened inside its volume as at start), binds of directories. Not tmpfs mounts (dockerd's
   * view of the files gets a fresh one there) nor what a --tmpfs covers. `release` closes what was opened for them.
   */
  async viewMounts (mounts: readonly Mount[], tmpfs: readonly string[] = []): Promise<{ mounts: ViewMount[], release: () => Promise<void> }> {
    const covered = coveredByTmpfs(mounts, tmpfs)
    const held: FileHandle[] = []
    // closing a directory handle that was only read loses nothing
    const release = async (): Promise<void> => { for (const fh of held) await fh.close().catch(() => {}) }
    const out: ViewMount[] = []
    try {
      for (const m of mounts) {
        if (m.type === 'tmpfs' || covered.has(m.destination)) continue
        let fh: FileHandle
        if (m.type === 'volume') {
          if (this.store.find(m.source) === undefined) continue
          const dir = this.store.mountpoint(m.source)
          if (m.subpath === undefined) fh = await open(dir, fsc.O_RDONLY | fsc.O_DIRECTORY)
          else {
            // a subpath that is gone or leaves the volume now is not in the view (the container's tree shows there)
            const opened = await openSubpath(dir, m.subpath).catch(() => null)
            if (opened === null) continue
            if (!opened.isDirectory) { await opened.handle.close(); continue }
            fh = opened.handle
          }
        } else {
          const h = await open(m.source, fsc.O_RDONLY | fsc.O_DIRECTORY).catch(() => null)
          if (h === null) continue // a file, or gone: the container's own tree shows there
          fh = h
        }
        held.push(fh)
        out.push({ destination: m.destination, source: `/proc/self/fd/${fh.fd}`, rw: m.rw })
      }
    } catch (err) { await release(); throw err }
    const depth = (p: string): number => posix.normalize(p).split('/').length
    return { mounts: out.sort((a, b) => depth(a.destination) - depth(b.destination)), release }
  }

  /** Drops the container's references; `removeAnonymous` (rm -v) removes its anonymous volumes no one else uses. */
  async release (containerId: string, mounts: readonly Mount[], removeAnonymous: boolean): Promise<void> {
    for (const m of mounts) if (m.type === 'volume') this.store.removeRef(m.source, containerId)
    if (!removeAnonymous) return
    for (const m of mounts) {
      if (m.type !== 'volume' || !m.anonymous) continue
      // one another container took meanwhile stays (dockerd skips a volume in use); any other failure is worth a warning
      await this.store.remove(m.source, true).catch((err) => {
        if (isEngineError(err) && err.kind === 'conflict') log('rm -v %s: %s', m.source, err.message)
        else ops.warn('removing anonymous volume %s of container %s: %s', m.source, containerId.slice(0, 12), describeError(err))
      })
    }
  }
}
