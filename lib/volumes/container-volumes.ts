// What a container's lifecycle asks of volumes: its mounts resolved and their volumes created at create, the copy-up,
// the runtime's mount list at start, the references and anonymous volumes dropped at remove.
import { mkdir, stat } from 'node:fs/promises'
import { join } from 'node:path'
import { invalidArgument, errorMessage } from '../errors.js'
import { logger } from '../log.js'
import { coveredByTmpfs, resolveMounts, type Mount, type MountInputs } from './mount-spec.js'
import { copyUp } from './copy-up.js'
import { checkDriver, isMountedKind } from './volume-record.js'
import type { VolumeStore } from './volume-store.js'

const log = logger('volumes')

/** One mount in the OCI runtime spec. */
export interface RuntimeMount { destination: string, type: string, source: string, options: string[] }

export class ContainerVolumes {
  private readonly store: VolumeStore
  constructor (store: VolumeStore) { this.store = store }

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
      for (const name of created) await this.store.remove(name, true).catch(() => {})
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

  private canCopyInto (m: Mount): boolean {
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
    for (const m of mounts) {
      const rw = m.rw ? 'rw' : 'ro'
      if (m.type !== 'tmpfs' && covered.has(m.destination)) continue
      if (m.type === 'bind') {
        out.push({ destination: m.destination, type: 'bind', source: m.source, options: [m.nonRecursive === true ? 'bind' : 'rbind', m.propagation === '' ? 'rprivate' : m.propagation, rw] })
      } else if (m.type === 'volume') {
        const v = this.store.get(m.source)
        await this.store.mountFor(v, containerId)
        this.store.notify('mount', v.name, { container: containerId, destination: m.destination, driver: v.driver, propagation: '', 'read/write': String(m.rw) })
        out.push({ destination: m.destination, type: 'bind', source: this.store.mountpoint(v.name), options: ['rbind', 'rprivate', rw] })
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
    for (const m of mounts) {
      if (m.type !== 'volume' || m.source === '') continue
      const v = this.store.find(m.source)
      if (v === undefined) continue
      await this.store.unmountFor(v.name, containerId).catch((err) => { log('unmount %s: %s', v.name, errorMessage(err)) })
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

  /** Daemon start, after resume() of every running container: unmounts volumes no running container holds. */
  async settle (): Promise<void> { await this.store.settleMounts() }

  /** Drops the container's references; `removeAnonymous` (rm -v) removes its anonymous volumes no one else uses. */
  async release (containerId: string, mounts: readonly Mount[], removeAnonymous: boolean): Promise<void> {
    for (const m of mounts) if (m.type === 'volume') this.store.removeRef(m.source, containerId)
    if (!removeAnonymous) return
    for (const m of mounts) {
      if (m.type !== 'volume' || !m.anonymous) continue
      await this.store.remove(m.source, true).catch((err) => { log('rm -v %s: %s', m.source, errorMessage(err)) })
    }
  }
}
