// The local volume driver's store: <dataRoot>/volumes/<name>/{volume.json,_data}. Records are written atomically; a
// removal renames the directory away first, so a crash leaves the volume whole or gone. Which containers use a volume
// is told by the container side (their records are the references on disk) and kept here in memory.
import { mkdir, readdir, readFile, rename, rm, stat } from 'node:fs/promises'
import { join } from 'node:path'
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { randomBytes } from 'node:crypto'
import { conflict, describeError, errorMessage } from '../errors.js'
import { writeJsonAtomic } from '../util/atomic.js'
import { newId } from '../util/ids.js'
import { levelLogger, logger } from '../log.js'
import { currentMounts } from '../runtime/rootfs.js'
import { PRIVATE_DIR } from '../util/private-modes.js'
import { isoSeconds } from '../util/time.js'
import {
  ANONYMOUS_LABEL, checkDriver, isMountedKind, noSuchVolume, nowRfc3339, validateLocalOptions, validateVolumeName,
  type VolumeRecord
} from './volume-record.js'

const log = logger('volumes')
const ops = levelLogger('volumes')
const exec = promisify(execFile)

/** How the store tells the engine's event bus (type 'volume'). */
export type VolumeEmit = (action: string, name: string, attributes: Record<string, string>) => void

export interface VolumeStoreOptions {
  dataRoot: string
  emit: VolumeEmit
}

export interface CreateVolumeRequest {
  name: string
  driver: string
  labels: Record<string, string>
  options: Record<string, string> | null
  anonymous?: boolean
}

export class VolumeStore {
  readonly root: string
  private readonly o: VolumeStoreOptions
  private readonly vols = new Map<string, VolumeRecord>()
  private readonly refs = new Map<string, Set<string>>()
  /** Volumes with driver options: the running containers that have them mounted (the mount goes with the last). */
  private readonly holders = new Map<string, Set<string>>()
  /** Bumped by every create and removal (list caches key on it). */
  seq = 0
  /** Serialises creates and removals of one name. */
  private readonly busy = new Map<string, Promise<unknown>>()

  constructor (o: VolumeStoreOptions) {
    this.o = o
    this.root = join(o.dataRoot, 'volumes')
  }

  /** Loads the records; finishes removals and copy-ups a crash interrupted. */
  async init (): Promise<void> {
    await mkdir(this.root, { recursive: true, mode: PRIVATE_DIR })
    for (const name of await readdir(this.root)) {
      const dir = join(this.root, name)
      // best effort: removals and copy-ups a crash interrupted left these; what stays is tried again at the next start
      if (name.startsWith('.')) { await rm(dir, { recursive: true, force: true }).catch(() => {}); continue }
      for (const entry of await readdir(dir).catch(() => [] as string[])) {
        if (entry.startsWith('.copyup-')) await rm(join(dir, entry), { recursive: true, force: true }).catch(() => {})
      }
      try {
        const rec = JSON.parse(await readFile(join(dir, 'volume.json'), 'utf8')) as VolumeRecord
        this.vols.set(rec.name, rec)
      } catch {
        // a create that did not finish (or a volume from before records): adopt what has a data directory
        const st = await stat(join(dir, '_data')).catch(() => null)
        // best effort: an unfinished create has nothing to lose; what stays is tried again at the next start
        if (st === null || !/^[a-zA-Z0-9][a-zA-Z0-9_.-]+$/.test(name)) { await rm(dir, { recursive: true, force: true }).catch(() => {}); continue }
        const rec: VolumeRecord = { name, driver: 'local', labels: {}, options: null, createdAt: isoSeconds(st.mtimeMs), anonymous: false }
        await writeJsonAtomic(join(dir, 'volume.json'), rec)
        this.vols.set(name, rec)
      }
    }
    log('%d volumes', this.vols.size)
  }

  all (): VolumeRecord[] { return [...this.vols.values()] }

  find (name: string): VolumeRecord | undefined { return this.vols.get(name) }

  get (name: string, op = 'get'): VolumeRecord {
    const v = this.vols.get(name)
    if (v === undefined) throw noSuchVolume(op, name)
    return v
  }

  mountpoint (name: string): string { return join(this.root, name, '_data') }

  // ---- references (containers) ----------------------------------------------------------------------------------

  /** Bumped by every reference change. */
  refSeq = 0

  addRef (name: string, containerId: string): void {
    this.refSeq++
    let s = this.refs.get(name)
    if (s === undefined) { s = new Set(); this.refs.set(name, s) }
    s.add(containerId)
  }

  removeRef (name: string, containerId: string): void {
    this.refSeq++
    const s = this.refs.get(name)
    if (s === undefined) return
    s.delete(containerId)
    if (s.size === 0) this.refs.delete(name)
  }

  usedBy (name: string): string[] { return [...(this.refs.get(name) ?? [])] }

  // ---- create / remove -----------------------------------------------------------------------------------------

  private async locked<T> (name: string, fn: () => Promise<T>): Promise<T> {
    const prev = this.busy.get(name) ?? Promise.resolve()
    const next = prev.then(fn, fn)
    const tail = next.catch(() => {}) // the chain only orders the work: the caller gets the error below
    this.busy.set(name, tail)
    try { return await next } finally { if (this.busy.get(name) === tail) this.busy.delete(name) }
  }

  /** Creates the volume, or returns the existing one of that name (as dockerd: labels and options are kept). */
  async create (req: CreateVolumeRequest): Promise<{ volume: VolumeRecord, created: boolean }> {
    const anonymous = req.name === '' || req.anonymous === true
    let name = req.name
    if (name === '') { do name = newId(); while (this.vols.has(name)) }
    checkDriver(name, req.driver)
    validateVolumeName(name)
    validateLocalOptions(name, req.options)
    return await this.locked(name, async () => {
      const existing = this.vols.get(name)
      // dockerd announces every create, of an existing volume too (a container naming it, a repeated volume create)
      if (existing !== undefined) { this.o.emit('create', name, { driver: 'local' }); return { volume: existing, created: false } }
      const labels = { ...req.labels }
      if (anonymous) labels[ANONYMOUS_LABEL] = ''
      const rec: VolumeRecord = { name, driver: 'local', labels, options: req.options, createdAt: nowRfc3339(), anonymous }
      const dir = join(this.root, name)
      // the volume's directory is private; _data is what the container's user sees (0755, as dockerd's)
      await mkdir(dir, { recursive: true, mode: PRIVATE_DIR })
      await mkdir(join(dir, '_data'), { recursive: true, mode: 0o755 })
      await writeJsonAtomic(join(dir, 'volume.json'), rec)
      this.vols.set(name, rec)
      this.seq++
      this.o.emit('create', name, { driver: 'local' })
      return { volume: rec, created: true }
    })
  }

  /** Removes an unused volume. `force`: a missing volume is no error (dockerd's `volume rm -f`). */
  async remove (name: string, force: boolean): Promise<void> {
    await this.locked(name, async () => {
      const v = this.vols.get(name)
      if (v === undefined) {
        if (force) return
        throw noSuchVolume('get', name)
      }
      const users = this.usedBy(name)
      if (users.length > 0) throw conflict(`remove ${name}: volume is in use - [${users.join(', ')}]`)
      await this.destroy(v)
    })
  }

  private async destroy (v: VolumeRecord): Promise<void> {
    const dir = join(this.root, v.name)
    if (isMountedKind(v)) {
      await this.unmount(v)
      // never remove through a mount that stayed: that would empty the device (a bind option's directory)
      if ((await currentMounts()).has(this.mountpoint(v.name))) throw conflict(`remove ${v.name}: unmounting the volume failed: device or resource busy`)
    }
    const trash = join(this.root, `.rm-${randomBytes(6).toString('hex')}`)
    await rename(dir, trash)
    this.vols.delete(v.name)
    this.seq++
    // the volume is gone; its data left on disk is removed at the next start
    await rm(trash, { recursive: true, force: true }).catch((err) => { ops.warn('removing volume %s leaves its data in %s: %s', v.name, trash, describeError(err)) })
    this.o.emit('destroy', v.name, { driver: 'local' })
  }

  /** Removes the volumes `pick` selects that no container uses; returns their names and the bytes freed. */
  async prune (pick: (v: VolumeRecord) => boolean, size: (v: VolumeRecord) => Promise<number>): Promise<{ deleted: string[], reclaimed: number }> {
    const deleted: string[] = []
    let reclaimed = 0
    for (const v of this.all()) {
      if (!pick(v) || this.usedBy(v.name).length > 0) continue
      await this.locked(v.name, async () => {
        if (this.vols.get(v.name) !== v || this.usedBy(v.name).length > 0) return
        const bytes = await size(v)
        await this.destroy(v)
        deleted.push(v.name)
        reclaimed += bytes
      }).catch((err) => { ops.warn('could not prune volume %s: %s', v.name, describeError(err)) })
    }
    return { deleted, reclaimed }
  }

  // ---- local driver options: mounts over _data, held by running containers -------------------------------------

  /**
   * Mounts a volume with driver options (type/device/o) over its directory for a container that starts, unless it is
   * mounted already (dockerd's local driver: mounted at the first start, counted per container). Other volumes need
   * nothing.
   */
  async mountFor (v: VolumeRecord, containerId: string): Promise<void> {
    if (!isMountedKind(v)) return
    await this.locked(v.name, async () => {
      const holders = this.holders.get(v.name)
      if (holders?.has(containerId) === true) return
      if (holders === undefined || holders.size === 0 || !(await currentMounts()).has(this.mountpoint(v.name))) await this.mount(v)
      this.hold(v.name, containerId)
    })
  }

  /** A container that stopped lets go of its volumes; the last one to go unmounts a volume with driver options. */
  async unmountFor (name: string, containerId: string): Promise<void> {
    const v = this.vols.get(name)
    if (v === undefined || !isMountedKind(v)) return
    await this.locked(name, async () => {
      const holders = this.holders.get(name)
      if (holders === undefined || !holders.delete(containerId)) return
      if (holders.size > 0) return
      this.holders.delete(name)
      await this.unmount(v)
    })
  }

  /** Re-takes a running container's hold on a mounted volume (daemon start; the mount outlived the daemon). */
  hold (name: string, containerId: string): void {
    let s = this.holders.get(name)
    if (s === undefined) { s = new Set(); this.holders.set(name, s) }
    s.add(containerId)
  }

  /** Daemon start, once the running containers are back: unmounts what no running container holds (a crash's leftovers). */
  async settleMounts (): Promise<void> {
    const mounted = await currentMounts()
    for (const v of this.vols.values()) {
      if (!isMountedKind(v) || (this.holders.get(v.name)?.size ?? 0) > 0 || !mounted.has(this.mountpoint(v.name))) continue
      log('unmounting %s: no running container uses it', v.name)
      await this.locked(v.name, async () => { await this.unmount(v) })
    }
  }

  /** Which running containers hold the volume's mount (tests, inspect). */
  mountedFor (name: string): string[] { return [...(this.holders.get(name) ?? [])] }

  private async mount (v: VolumeRecord): Promise<void> {
    const target = this.mountpoint(v.name)
    if ((await currentMounts()).has(target)) return
    const opts = v.options ?? {}
    const args: string[] = []
    if ((opts.type ?? '') !== '') args.push('-t', opts.type as string)
    if ((opts.o ?? '') !== '') args.push('-o', opts.o as string)
    args.push(opts.device as string, target)
    try {
      await exec('mount', args)
    } catch (err) {
      const msg = ((err as { stderr?: string }).stderr ?? errorMessage(err)).trim()
      throw conflict(`error while mounting volume '${target}': failed to mount local volume: mount ${opts.device as string}:${target}, flags: ${opts.o ?? ''}: ${msg}`)
    }
  }

  private async unmount (v: VolumeRecord): Promise<void> {
    const target = this.mountpoint(v.name)
    if (!(await currentMounts()).has(target)) return
    await exec('umount', [target]).catch(async () => await exec('umount', ['-l', target])).catch((err) => { ops.warn('volume %s stays mounted on %s: %s', v.name, target, describeError(err)) })
  }

  /** An event about a volume (mount, unmount) from the container side. */
  notify (action: string, name: string, attributes: Record<string, string>): void { this.o.emit(action, name, attributes) }

  async close (): Promise<void> {}
}
