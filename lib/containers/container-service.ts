// Container lifecycle over the OCI runtime: create, start, stop, kill, pause, restart, rename, remove, wait, and
// the recovery of running containers when the daemon starts again.
// Long because it is the record's state machine in one place: start, exit, restart policy, stop, kill, pause and
// removal call one another under each container's one operation chain over one table of containers. What is pure
// lives beside it: the create's plan (create-plan.ts), the request (create-request.ts), updates, run options, health.
import { mkdir, readdir, rm, writeFile, truncate } from 'node:fs/promises'
import { PRIVATE_DIR, LOG_FILE } from '../util/private-modes.js'
import { readTexts } from '../util/read-files.js'
import { fsyncFile } from '../util/atomic.js'
import { join } from 'node:path'
import { constants as osConstants } from 'node:os'
import { conflict, invalidArgument, notFound, notModified, unavailable, errorMessage, describeError, isEngineError } from '../errors.js'
import { newId, resolvePrefix, FULL_ID } from '../util/ids.js'
import { nowNs } from '../util/time.js'
import { levelLogger, logger } from '../log.js'
import { ContainerHandle } from './container-handle.js'
import { eventAttributes, isRunning, goneFromRuntime, newState, transition, type Announcement, type ContainerRecord, type ContainerConfig } from './container.js'
import { validateName, randomName } from './create-config.js'
import type { CreateRequest } from './create-request.js'
import { checkImagePlatform, planCreate, sandboxRequest } from './create-plan.js'
import type { ImageProvider } from '../image/types.js'
import type { EventBus } from '../events/event-bus.js'
import type { ProcessExit, SupervisedProcess } from '../runtime/supervisor.js'
import type { ShimConnection } from '../runtime/shim-client.js'
import type { ContainerRuntime } from '../runtime/container-runtime.js'
import type { RuntimeBinary } from '../runtime/runtimes.js'
import { StartError } from '../runtime/start-error.js'
import { KEEP_TREES_FILE } from '../runtime/run-spec.js'
import type { ContainerNetworking } from './container-networking.js'
import { planUpdate } from './container-update.js'
import type { UpdateRequest } from './update-request.js'
import { bindMountsOf, upgradeRecord, type MountRequestInputs, type StoredRecord } from './container-settings.js'
import type { HealthMonitor } from './health.js'
import type { ContainerVolumes } from '../volumes/container-volumes.js'
import { parseVolumesFrom, type Mount } from '../volumes/mount-spec.js'
import { RunSpecSources } from './container-run-spec.js'
import { hostname as hostHostname } from 'node:os'
import { setTimeout as delay } from 'node:timers/promises'

/** Containers recovered at once at boot. */
const RECOVERY_PARALLEL = 16
const log = logger('engine:containers')
const ops = levelLogger('engine:containers')

/**
 * An AutoRemove container whose run ended (not by a docker restart) is being removed: its monitor took its trees at
 * the exit, and its removal follows.
 */
function autoRemoving (c: ContainerHandle): boolean {
  return c.rec.autoRemove && !c.manualRestart && (c.rec.state.status === 'exited' || c.applyingExit)
}

/** A failure the operator must see (something left behind, a state not written), with its cause. */
function warnOf (what: string): (err: unknown) => void {
  return (err) => { ops.warn('%s: %s', what, describeError(err)) }
}

/**
 * For signals and resumes that race with the process's end: the runtime's "not running" or "no such container" is
 * that race (debug detail); anything else is the operator's to see.
 */
function unlessEnded (what: string): (err: unknown) => void {
  return (err) => {
    if (isEngineError(err) && (err.kind === 'conflict' || err.kind === 'not-found')) log('%s: %s', what, errorMessage(err))
    else ops.warn('%s: %s', what, describeError(err))
  }
}

export interface ContainerServiceOptions {
  dataRoot: string
  execRoot: string
  /** Runs the containers (initialised before init()). */
  runtime: ContainerRuntime
  /**
   * The runtimes by name (the daemon's configuration, which a reload may change): a create names one or gets the
   * default, each start resolves the name again (an unknown one: dockerd's 400).
   */
  runtimes: { has: (name: string) => boolean, readonly defaultName: string, resolve: (name: string) => RuntimeBinary }
  images: ImageProvider
  events: EventBus
  /** Runs the containers' health checks (started with each run, stopped at the exit). */
  health?: HealthMonitor
  /** Networking (namespaces, endpoints, ports, /etc/hosts and resolv.conf); absent: every container gets only lo. */
  network?: ContainerNetworking
  /** Volumes and mounts (lib/volumes); absent: a container gets no mounts but the /etc files. */
  volumes?: ContainerVolumes
  /** The daemon's log-driver and log-opts: a create that names no driver gets them (dockerd's merge). */
  defaultLogConfig?: { type: string, config: Record<string, string> }
  /** The daemon's default-ulimits: added to a container's own where it sets none of that name. */
  defaultUlimits?: ReadonlyArray<{ name: string, soft: number, hard: number }>
}

export type WaitCondition = 'not-running' | 'next-exit' | 'removed'

/** How many auto-removed containers' exits are kept for a late wait, and for how long. */
const AUTO_REMOVED_KEPT = 256
const AUTO_REMOVED_KEPT_MS = 60_000
/** How long an exit waits for attach sessions to write the run's last output (dockerd's stream copiers: 2 s). */
const ATTACH_DRAIN_MS = 2000
/** rm -r that takes ENOTEMPTY (a writer still finishing in the tree) as a reason to look again, a few times. */
async function removeTree (path: string): Promise<void> {
  for (let i = 0; ; i++) {
    try { await rm(path, { recursive: true, force: true }); return } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOTEMPTY' || i >= 8) throw err
      await delay(20 * (i + 1))
    }
  }
}

/** The handle's event when the last holder of its root filesystem let go (ContainerService.holdRootfs). */
const ROOTFS_LET_GO = 'rootfs-let-go'

/** What a wait ends with: the exit code, and the error that ended the run (a failed start), if any. */
export interface WaitResult { exitCode: number, error?: string }

/** The alias of a `--link target[:alias]` (the target's name without one). */
function linkAlias (link: string): string {
  const [target = '', alias = ''] = link.split(':')
  return (alias === '' ? target : alias).split('/').pop() ?? ''
}

export function signalNumber (sig: string | number | undefined, dflt: number): number {
  if (sig === undefined || sig === '') return dflt
  if (typeof sig === 'number') return sig
  const s = sig.trim().toUpperCase()
  if (/^\d+$/.test(s)) {
    const n = Number(s)
    if (n < 1 || n > 64) throw invalidArgument(`Invalid signal: ${sig}`)
    return n
  }
  const name = s.startsWith('SIG') ? s : `SIG${s}`
  const n = (osConstants.signals as Record<string, number>)[name]
  if (n === undefined) throw invalidArgument(`Invalid signal: ${sig}`)
  return n
}



export class ContainerService {
  private readonly o: ContainerServiceOptions
  private readonly containers = new Map<string, ContainerHandle>()
  private readonly names = new Map<string, string>()
  /** Containers whose create is under way (not listed yet; users of their image already). */
  private readonly creating = new Map<string, ContainerHandle>()
  /** The creates under way (close() waits for them: a create makes the container's directories). */
  private readonly creates = new Set<Promise<unknown>>()
  readonly containersDir: string
  private closed = false
  /** Aborted by close(): the waits for an exit under way give up then (their operation ends with an error). */
  private readonly closing = new AbortController()
  /** Removed containers' files being deleted (after the removal's reply). */
  private readonly deletions = new Set<Promise<void>>()
  /** Removals asked for and not finished, per container (several internal ones may overlap). */
  private readonly removalsAsked = new Map<string, number>()
  /**
   * The exits of containers auto-removed lately, by ID, for a wait that arrives after the removal: dockerode's
   * run() and docker-py's run() ask for the wait only once the start is answered, and a short run is gone by then
   * (the race dockerd has too, rarely met there because its exit path is slower). Bounded in count and age.
   */
  private readonly autoRemovedExits = new Map<string, { name: string, exitCode: number, error: string, at: number }>()
  /** How many withRootfs uses hold a container's root filesystem mounted. */
  private readonly rootfsHolds = new Map<string, number>()
  /** How many uses keep an AutoRemove container's trees past its exit (KEEP_TREES_FILE): a restart, a file operation. */
  private readonly treeKeepers = new Map<string, number>()
  private readonly specs: RunSpecSources

  constructor (o: ContainerServiceOptions) {
    this.o = o
    this.containersDir = join(o.dataRoot, 'containers')
    this.specs = new RunSpecSources({
      images: o.images,
      ...(o.network !== undefined ? { network: o.network } : {}),
      ...(o.volumes !== undefined ? { volumes: o.volumes } : {}),
      peer: (ref) => this.find(ref)
    })
  }

  private get hostFacts (): ContainerRuntime['host'] { return this.o.runtime.host }

  all (): ContainerHandle[] { return [...this.containers.values()] }

  // ---- lookup -------------------------------------------------------------------------------------------------

  /** Full ID, exact name (with or without '/'), or unique ID prefix. */
  find (ref: string): ContainerHandle | undefined {
    if (FULL_ID.test(ref)) { const c = this.containers.get(ref); if (c !== undefined) return c }
    const byName = this.names.get(ref.startsWith('/') ? ref : `/${ref}`)
    if (byName !== undefined) return this.containers.get(byName)
    const id = resolvePrefix(this.containers.keys(), ref)
    return id === undefined ? undefined : this.containers.get(id)
  }

  get (ref: string): ContainerHandle {
    if (ref.trim() === '') throw notFound(`No such container: ${ref}`)
    const c = this.find(ref)
    if (c === undefined) throw notFound(`No such container: ${ref}`)
    return c
  }

  /** Containers of an image, those being created included (an image removal meanwhile keeps their image). */
  containersUsingImage (imageId: string): Array<{ id: string, running: boolean }> {
    const users = this.all().filter((c) => c.rec.imageId === imageId).map((c) => ({ id: c.id, running: isRunning(c.rec) }))
    for (const c of this.creating.values()) if (c.rec.imageId === imageId) users.push({ id: c.id, running: false })
    return users
  }

  private attributes (c: ContainerHandle, extra: Record<string, string> = {}): Record<string, string> {
    return eventAttributes(c.rec, extra)
  }

  /** The event a status change announces. */
  private announce (c: ContainerHandle, action: string, extra: Record<string, string> = {}): Announcement {
    return { events: this.o.events, action, attributes: this.attributes(c, extra) }
  }

  // ---- boot -----------------------------------------------------------------------------------------------------

  async init (): Promise<void> {
    await this.load()
    await this.recoverAll()
  }

  /** Boot, first half: the records (no monitor is contacted yet). */
  async load (): Promise<void> {
    await mkdir(this.containersDir, { recursive: true, mode: PRIVATE_DIR })
    await mkdir(this.o.execRoot, { recursive: true, mode: PRIVATE_DIR })
    // every record read at once (a restart answers /_ping only after this), then taken in the directory's order
    const ids = await readdir(this.containersDir)
    const texts = await readTexts(ids.map((id) => join(this.containersDir, id, 'container.json')))
    for (const [i, id] of ids.entries()) {
      const dir = join(this.containersDir, id)
      let rec: ContainerRecord
      let upgraded: boolean
      try {
        const read = texts[i] as PromiseSettledResult<string>
        if (read.status === 'rejected') throw read.reason
        const up = upgradeRecord(JSON.parse(read.value) as StoredRecord, this.hostFacts, warnOf(`container ${id}: its stored run options cannot be decoded on this host (it starts without them)`))
        rec = up.rec
        upgraded = up.upgraded
      } catch (err) {
        // a create that never finished: nothing references it
        ops.warn('container directory %s has no readable record (a create a crash interrupted): removed: %s', id, describeError(err))
        // best effort: mounted only if the crash came after the mount; the removal below fails loudly if it stays
        await this.o.runtime.unmountRootfs({ dir, merged: join(dir, 'rootfs'), upper: join(dir, 'diff'), work: join(dir, 'work') }).catch(() => {})
        await rm(dir, { recursive: true, force: true })
        continue
      }
      this.o.volumes?.adopt(rec.id, rec.mounts)
      // the copy of its networking's record it carries, taken when newer than networking's own file (or there is none);
      // from here on each save carries the record as networking holds it (see ContainerRecord.sandbox)
      if (rec.sandbox !== undefined && this.o.network !== undefined) {
        this.o.network.restore(rec.id, rec.sandbox)
        delete rec.sandbox
      }
      const c = new ContainerHandle(rec, this.containersDir, this.o.execRoot)
      // a record in an earlier shape is written back in the current one at once (atomically)
      if (upgraded) await c.save().catch(warnOf(`container ${id}: writing the upgraded record (tried again at the next start)`))
      this.bindNetworkView(c)
      this.containers.set(rec.id, c)
      this.names.set(rec.name, rec.id)
    }
  }

  /**
   * Boot, second half: every container re-adopted or its exit recorded, several at once (each waits on its own
   * monitor's files and socket).
   */
  async recoverAll (): Promise<void> {
    const queue = this.all()
    await Promise.all(Array.from({ length: Math.min(RECOVERY_PARALLEL, queue.length) }, async () => {
      for (let c = queue.shift(); c !== undefined; c = queue.shift()) await this.recover(c)
    }))
    // volumes with driver options stay mounted for the running containers only (a crash's leftovers go)
    await this.o.volumes?.settle(new Set(this.all().filter((c) => isRunning(c.rec)).map((c) => c.id))).catch(warnOf('unmounting the volumes no running container uses'))
  }

  /** Re-adopts a container after a daemon restart: reconnect to its shim, or record the exit it had meanwhile. */
  private async recover (c: ContainerHandle): Promise<void> {
    const status = c.rec.state.status
    if (status === 'removing') { await this.finishRemove(c, false).catch(warnOf(`container ${c.id}: finishing its removal`)); return }
    if (!isRunning(c.rec)) {
      // a daemon killed while it started the container (after its monitor's spawn, before the record said running):
      // the process goes, and its namespace, veths and ports with it; the container stays as it was recorded
      const orphan = await this.o.runtime.reap(c.id, c.stateDir, this.runtimeOf(c))
      await this.o.network?.release(c.id, orphan?.error === '' ? 'monitor' : 'daemon').catch(warnOf(`container ${c.id}: releasing its networking`))
      // as dockerd: an auto-removed container that does not run goes (a crash came between its exit and its removal)
      if (c.rec.autoRemove) await this.finishRemove(c, false).catch(warnOf(`container ${c.id}: removing it (--rm)`))
      return
    }
    const proc = await this.o.runtime.adopt(c.id, c.stateDir, this.runtimeOf(c))
    const conn = await proc.connection
    // a record written while the runtime started the process has no PIDs yet: the monitor's files have them
    if (proc.pid !== 0) c.rec.state.pid = proc.pid
    if (proc.monitorPid !== 0) c.rec.shimPid = proc.monitorPid
    if (conn === null) {
      // it ended while no daemon watched
      c.proc = proc
      await this.onExit(c, proc, await proc.exited)
      return
    }
    this.o.network?.monitorStarted(c.id)
    this.o.volumes?.resume(c.id, c.rec.mounts ?? [])
    this.supervise(c, proc, conn)
    this.o.health?.start(c, true)
    // kills before the restart were this run's too: only new ones are events
    this.watchOom(c, await this.o.runtime.oomKills(c.id, c.rec.cgroupParent ?? ''))
    log('re-adopted running container %s', c.id)
  }

  /**
   * The runtime a container's monitor was started with (recorded at its start); for a record from before that was
   * recorded, its runtime's binary now.
   */
  private runtimeOf (c: ContainerHandle): RuntimeBinary {
    if (c.rec.runtimeBinary !== undefined) return c.rec.runtimeBinary
    try { return this.o.runtimes.resolve(c.rec.namespaces.runtime) } catch { return this.o.runtimes.resolve('') }
  }

  // ---- create ---------------------------------------------------------------------------------------------------

  /** Creates a container from a typed request (create-request.ts: the API's decoded body, or swarm's and build's own). */
  async create (req: CreateRequest, nameParam: string | null): Promise<{ id: string, warnings: string[] }> {
    if (this.closed) throw unavailable('the engine is shutting down')
    const p = this.createNow(req, nameParam)
    this.creates.add(p)
    try { return await p } finally { this.creates.delete(p) }
  }

  private async createNow (req: CreateRequest, nameParam: string | null): Promise<{ id: string, warnings: string[] }> {
    // the request stays the caller's: what create adjusts (defaults, what this host cannot apply) is its own copy
    const r = structuredClone(req)
    let name: string
    if (nameParam !== null && nameParam !== '') {
      name = validateName(nameParam)
    } else name = randomName((n) => this.names.has(n))
    if (r.config.image === '') throw invalidArgument('no image specified')
    const image = await this.o.images.resolveImage(r.config.image)
    const { config, settings, run, warnings: planned } = planCreate(r, image.config.config, {
      host: this.hostFacts,
      runtimes: this.o.runtimes,
      ...(this.o.defaultLogConfig !== undefined ? { defaultLogConfig: this.o.defaultLogConfig } : {}),
      ...(this.o.defaultUlimits !== undefined ? { defaultUlimits: this.o.defaultUlimits } : {})
    })
    // after the settings' checks, as dockerd looks at the platform as it takes the image
    const platformWarnings = checkImagePlatform(r.config.image, image.config, r.platform)
    const entry = [...(config.entrypoint ?? []), ...(config.cmd ?? [])]
    for (const d of run.devices) await this.o.runtime.checkDevice(d)
    // the host's UTS namespace: the host's name
    if (run.utsMode === 'host') {
      if (config.hostname !== '') throw invalidArgument('Conflicting options: hostname and the UTS mode')
      config.hostname = hostHostname()
    }
    const taken = this.names.get(name)
    if (taken !== undefined) {
      throw conflict(`Conflict. The container name "${name}" is already in use by container "${taken}". You have to remove (or rename) that container to be able to reuse that name.`)
    }
    let id = newId()
    while ([...this.containers.keys()].some((k) => k.slice(0, 16) === id.slice(0, 16))) id = newId()
    const rec: ContainerRecord = {
      id,
      name,
      created: nowNs().toString(),
      image: config.image,
      imageId: image.id,
      path: entry[0] as string,
      args: entry.slice(1),
      config,
      ...settings,
      run,
      state: newState(),
      restartCount: 0,
      rootfsKind: 'overlay',
      manuallyStopped: false,
      shimPid: 0,
      mounts: []
    }
    this.names.set(name, id)
    const c = new ContainerHandle(rec, this.containersDir, this.o.execRoot)
    this.bindNetworkView(c)
    let warnings: string[] = []
    let mountsTaken = false
    this.creating.set(id, c)
    try {
      // a user of its image from here on; a removal of the image that started before may not have seen it
      if (this.o.images.removalsSettled !== undefined) await this.stillThere(image.id, r.config.image)
      rec.mounts = await this.prepareMounts(id, config, r.mounts)
      mountsTaken = true
      // the networking's record (checked, in memory) while the container's directories are made; the container's
      // own record carries it (the create writes one file, not two: see ContainerRecord.sandbox)
      const mounts = rec.mounts
      const [registered, prepared] = await Promise.allSettled([
        this.o.network?.register(sandboxRequest(rec, r.network)) ?? Promise.resolve([]),
        (async () => {
          await mkdir(c.dir, { recursive: true, mode: PRIVATE_DIR })
          const copyUp = this.o.volumes?.wantsCopyUp(mounts) === true
          const made = await Promise.allSettled([
            (async () => {
              rec.rootfsKind = await this.o.runtime.prepareRootfs({ paths: c.rootfs, kind: 'overlay', layers: await this.o.images.layerPaths(image), imageId: image.id },
                copyUp ? async (merged) => { await this.o.volumes?.copyUp(merged, mounts) } : undefined)
            })(),
            writeFile(c.logPath, '', { mode: LOG_FILE })
          ])
          for (const m of made) if (m.status === 'rejected') throw m.reason
        })()
      ])
      if (registered.status === 'rejected') throw registered.reason
      if (prepared.status === 'rejected') throw prepared.reason
      warnings = [...planned, ...platformWarnings, ...registered.value]
      // a new file: renamed into place without waiting for the disk, flushed after the reply (a power loss before
      // that may leave no record or an empty one: the boot takes it as a create that never finished)
      await c.save(c.rec, true)
      void fsyncFile(c.recordPath).catch(warnOf(`container ${id}: flushing its new record to the disk`))
    } catch (err) {
      this.names.delete(name)
      // the create's own failure is the one reported; what its undoing leaves is the operator's to see
      const left = (what: string): (e: unknown) => void => warnOf(`a failed create of ${id} leaves ${what}`)
      if (mountsTaken) await this.o.volumes?.release(id, rec.mounts ?? [], true).catch(left('its volumes'))
      await this.o.network?.unregister(id).catch(left('its networking'))
      await this.o.runtime.delete(id, c.dir, c.rootfs).catch(left('its root filesystem'))
      await rm(c.dir, { recursive: true, force: true }).catch(left(c.dir))
      throw err
    } finally { this.creating.delete(id) }
    this.containers.set(id, c)
    this.o.events.emit('container', 'create', id, this.attributes(c))
    return { id, warnings }
  }

  /** Throws dockerd's not-found for `ref` when the image a create resolved was removed meanwhile. */
  private async stillThere (imageId: string, ref: string): Promise<void> {
    await this.o.images.removalsSettled?.()
    try { await this.o.images.resolveImage(imageId) } catch (err) {
      // the reference's own answer when it is gone too, else the ID's
      await this.o.images.resolveImage(ref)
      throw err
    }
  }

  // ---- mounts (lib/volumes) -------------------------------------------------------------------------------------

  /** Binds, Mounts, VolumesFrom and Config.Volumes resolved into the container's mounts, their volumes created. */
  private async prepareMounts (id: string, config: ContainerConfig, inp: MountRequestInputs): Promise<Mount[]> {
    const volumesFrom: Array<{ mounts: Mount[], mode: '' | 'ro' | 'rw' }> = []
    for (const spec of inp.volumesFrom) {
      const vf = parseVolumesFrom(spec)
      const other = this.get(vf.container)
      volumesFrom.push({ mounts: other.rec.mounts ?? [], mode: vf.mode })
    }
    if (this.o.volumes === undefined) return bindMountsOf(inp.binds)
    return await this.o.volumes.prepare(id, { ...inp, volumesFrom, volumes: config.volumes ?? [] })
  }

  // ---- networking (lib/network) ---------------------------------------------------------------------------------

  private bindNetworkView (c: ContainerHandle): void {
    const net = this.o.network
    if (net === undefined) return
    c.networkView = () => net.view(c.id)
    c.networkRecord = () => net.record(c.id)
    c.networkSeq = () => net.seq
  }

  // ---- start ----------------------------------------------------------------------------------------------------

  async start (ref: string): Promise<void> {
    const c = this.get(ref)
    // (a copy in or out of it under way is waited for, as dockerd's start waits for the container's lock)
    await c.files.exclusive(async () => { await c.serialize(async () => { await this.startLocked(c) }) })
  }

  private async startLocked (c: ContainerHandle): Promise<void> {
    const s = c.rec.state.status
    if (s === 'running' || s === 'restarting') throw notModified('container already started')
    if (s === 'paused') throw conflict('cannot start a paused container, try unpause instead')
    if (s === 'removing' || c.removed || autoRemoving(c)) throw conflict(`container ${c.id} is marked for removal and cannot be started`)
    if (s === 'dead') throw conflict(`container ${c.id} is marked for removal and cannot be started`)
    let proc: SupervisedProcess
    let recorded: Promise<void> | undefined
    // the last run's monitor unmounts its root filesystem and namespace file just after it told the exit
    await c.released
    const startedAt = nowNs().toString()
    try {
      // a start that fails (a spec that cannot be built: a device gone, a group unknown, a peer not running; or the
      // runtime's refusal) ends as the runtime's failures do: the container exits with the error and attached
      // clients are released
      // the container's runtime by its name, as configured now (a reload may have removed it: dockerd's 400)
      if (c.rec.namespaces.runtime === '') c.rec.namespaces.runtime = this.o.runtimes.defaultName
      const runtime = this.o.runtimes.resolve(c.rec.namespaces.runtime)
      const spec = await this.specs.runSpec(c, runtime)
      c.rec.runtimeBinary = runtime
      c.rec.manuallyStopped = false
      recorded = this.recordStarting(c, startedAt)
      // while the runtime starts it, a kill, stop or forced removal ends the start (a runtime stuck in `runc init`
      // would never finish it)
      c.abortStart = async () => { await this.o.runtime.abortStart(c.id, c.rec.cgroupParent ?? '') }
      try { proc = await this.o.runtime.start(spec) } finally { c.abortStart = null }
    } catch (err) {
      await recorded?.catch(() => {}) // best effort: the record is written again below, as exited
      await this.o.network?.release(c.id).catch(warnOf(`container ${c.id}: releasing the networking of a failed start`))
      await this.o.volumes?.stopped(c.id, c.rec.mounts ?? []).catch(warnOf(`container ${c.id}: letting go of the volumes of a failed start`))
      // the runtime says which exit code its failure means; the engine's own (networking, volumes, peers) are 128
      c.rec.state.exitCode = err instanceof StartError ? err.exitCode : 128
      c.rec.state.error = errorMessage(err)
      c.rec.state.finishedAt = nowNs().toString()
      transition(c.rec, 'exited', this.announce(c, 'die', { exitCode: String(c.rec.state.exitCode) }))
      await c.save()
      c.exitSeq++
      c.emit('exit')
      if (c.rec.autoRemove) void this.autoRemove(c)
      throw err
    }
    this.o.network?.monitorStarted(c.id)
    await recorded
    c.rec.shimPid = proc.monitorPid
    c.rec.state.pid = proc.pid
    c.rec.state.error = ''
    c.rec.state.exitCode = 0
    c.rec.state.oomKilled = false
    c.rec.state.startedAt = startedAt
    c.rec.state.finishedAt = '0'
    // the process runs already and may even be over (then the connection is null and `exited` settles at once)
    const conn = await proc.connection
    c.proc = proc
    if (conn !== null) this.supervise(c, proc, conn)
    transition(c.rec, 'running', this.announce(c, 'start'))
    this.o.health?.start(c)
    this.watchOom(c, 0)
    c.startSeq++
    c.emit('start')
    // (the record on disk says running since recordStarting; the PIDs are read from the monitor's files at a restart)
    if (conn === null) this.onExitOf(c, proc)
  }

  /**
   * Writes the record as it will be once the container runs, while the runtime starts it (the disk's latency hidden
   * behind the runtime's): it carries its networking's record as the start's setup left it (written nowhere else), so
   * a restart never finds the container running without it.
   * A crash before the start ends finds the record saying running: the restart adopts the process, or records its
   * monitor's end (exit.json, or 255 when there is none).
   */
  private async recordStarting (c: ContainerHandle, startedAt: string): Promise<void> {
    await c.save({ ...c.rec, state: { ...c.rec.state, status: 'running', pid: 0, exitCode: 0, error: '', oomKilled: false, startedAt, finishedAt: '0' } })
  }

  /**
   * Reports the kernel's OOM kills in a running container with a memory limit as they happen (as dockerd does):
   * each one sets OOMKilled and emits `oom`, even when the container's first process survives it.
   */
  private watchOom (c: ContainerHandle, seen: number): void {
    if (!(c.rec.resources.memory > 0) || !isRunning(c.rec)) return
    this.o.runtime.watchOom(c.id, c.rec.cgroupParent ?? '', () => {
      c.rec.state.oomKilled = true
      this.o.events.emit('container', 'oom', c.id, this.attributes(c))
    }, seen)
  }

  /** Attaches the monitor's connection and waits for the exit. */
  private supervise (c: ContainerHandle, proc: SupervisedProcess, conn: ShimConnection): void {
    c.proc = proc
    c.attachShim(conn)
    this.onExitOf(c, proc)
  }

  /** Records the process's exit when it comes; a failure to is the operator's to see (the record may say running). */
  private onExitOf (c: ContainerHandle, proc: SupervisedProcess): void {
    c.released = proc.released
    proc.exited.then(async (exit) => { await this.onExit(c, proc, exit) }).catch((err) => {
      ops.error('container %s: recording its exit failed: %s', c.id.slice(0, 12), describeError(err))
    })
  }

  private async onExit (c: ContainerHandle, proc: SupervisedProcess, exit: ProcessExit): Promise<void> {
    if (c.proc !== proc || this.closed) return
    c.proc = null
    await this.applyExit(c, exit.exitCode, exit.exitedAtNs, exit.error, exit.oomKilled)
  }

  private async applyExit (c: ContainerHandle, exitCode: number, atNs: bigint, error = '', oomKilled = false): Promise<void> {
    c.conn = null
    c.applyingExit = true
    // the monitor wrote the last output before it reported the exit: attached clients get their end now
    c.outputEndSeq++
    c.emit('output')
    this.o.health?.stop(c)
    c.rec.state.exitCode = exitCode
    // kills seen while it ran were announced then; the monitor's count at the exit covers the others
    const announced = this.o.runtime.unwatchOom(c.id)
    c.rec.state.oomKilled = oomKilled || announced > 0
    // --log-driver none keeps no log: the scratch file attached clients read goes once they have drained it
    // (best effort: a scratch file; it goes with the container at the latest)
    if (c.rec.log.driver === 'none') setTimeout(() => { void truncate(c.logPath, 0).catch(() => {}) }, 2000).unref()
    c.rec.state.pid = 0
    c.rec.state.finishedAt = atNs.toString()
    c.rec.state.error = error
    c.rec.shimPid = 0
    if (oomKilled && announced === 0) this.o.events.emit('container', 'oom', c.id, this.attributes(c))
    // volumes are let go before the exit is seen (dockerd's Cleanup runs before SetStopped): a wait or stop that
    // returns finds a driver-option volume its last container used unmounted
    if (!this.closed) await this.o.volumes?.stopped(c.id, c.rec.mounts ?? []).catch(warnOf(`container ${c.id}: letting go of its volumes`))
    transition(c.rec, 'exited', this.announce(c, 'die', { exitCode: String(exitCode) }))
    // a monitor that recorded the exit has removed the namespace and deletes the veths; after a monitor's death, the daemon
    if (!this.closed) await this.o.network?.release(c.id, error === '' ? 'monitor' : 'daemon', !c.rec.autoRemove).catch(warnOf(`container ${c.id}: releasing its networking`))
    // an auto-removed container's next record is 'removing' (autoRemove below): one write, not two
    if (!c.rec.autoRemove || c.manualRestart || this.closed) await c.save().catch(warnOf(`container ${c.id}: writing its exit (the next start reads it from its monitor)`))
    // the attach sessions have written the run's last output before the exit is seen (dockerd waits up to 2 s)
    await c.attachedOutput(ATTACH_DRAIN_MS)
    c.exitSeq++
    c.applyingExit = false
    c.emit('exit')
    if (this.closed) return
    if (c.rec.autoRemove && !c.manualRestart) { void this.autoRemove(c); return }
    this.maybeRestart(c)
  }

  private maybeRestart (c: ContainerHandle): void {
    const rp = c.rec.restartPolicy
    if (c.rec.manuallyStopped || rp.name === 'no') return
    if (rp.name === 'on-failure') {
      if (c.rec.state.exitCode === 0) return
      if (rp.maximumRetryCount > 0 && c.rec.restartCount >= rp.maximumRetryCount) {
        ops.info('container %s (%s) exited with code %d: not restarted, the %d restarts of its on-failure policy are used up', c.id.slice(0, 12), c.rec.name.slice(1), c.rec.state.exitCode, rp.maximumRetryCount)
        return
      }
    }
    const delay = Math.min(100 * 2 ** Math.min(c.rec.restartCount, 10), 60_000)
    ops.info('container %s (%s) exited with code %d: restarting by its %s policy in %d ms (restart %d)', c.id.slice(0, 12), c.rec.name.slice(1), c.rec.state.exitCode, rp.name, delay, c.rec.restartCount + 1)
    transition(c.rec, 'restarting')
    const exit = c.exitSeq
    const t = setTimeout(() => {
      if (this.closed || c.removed || c.rec.manuallyStopped) { if (c.rec.state.status === 'restarting') transition(c.rec, 'exited'); return }
      // a stop (restarting → exited) and a start (→ running) meanwhile, or a later exit with a restart of its own:
      // this restart is no longer the container's, as dockerd's does not start a running container (before, the
      // running container was marked exited and started again: that start waited for the exit of the run it did not
      // see, and the container's operations behind it)
      if (c.rec.state.status !== 'restarting' || c.exitSeq !== exit) return
      c.rec.restartCount++
      transition(c.rec, 'exited')
      void this.start(c.id).catch((err) => { ops.error('container %s (%s): restart by policy failed: %s', c.id.slice(0, 12), c.rec.name.slice(1), errorMessage(err)) })
    }, delay)
    t.unref()
  }

  private async autoRemove (c: ContainerHandle): Promise<void> {
    try {
      await c.files.exclusive(async () => { await c.serialize(async () => { await this.finishRemove(c, false) }) })
    } catch (err) {
      ops.warn('container %s: removing it (--rm) failed: %s', c.id.slice(0, 12), describeError(err))
      // the exit itself was not written (applyExit)
      await c.save().catch(warnOf(`container ${c.id}: writing its exit`))
    }
  }

  // ---- stop / kill / restart / pause ----------------------------------------------------------------------------

  private async waitExit (c: ContainerHandle, ms: number): Promise<boolean> {
    // an exit being applied (its volumes let go, its network released) is waited for, and then the monitor's own
    // undoing, which follows its telling of the exit (the root filesystem and the namespace file unmounted, the
    // connection closed: released): a stop that returns finds it all done
    const exited = await this.exitSeen(c, ms)
    if (exited) await c.released
    return exited
  }

  private async exitSeen (c: ContainerHandle, ms: number): Promise<boolean> {
    // (a run whose process ended before its monitor's connection came is running until its exit is applied: proc)
    if (!isRunning(c.rec) || (c.conn === null && !c.applyingExit && c.proc === null)) return true
    // a closed engine sees no exit (it no longer supervises): what waited for one ends rather than going on later
    const closing = this.closing.signal
    if (closing.aborted) throw unavailable('the engine is shutting down')
    return await new Promise<boolean>((resolve, reject) => {
      const timer = ms < 0 ? undefined : setTimeout(() => { done(); resolve(false) }, ms)
      timer?.unref()
      const done = (): void => { if (timer !== undefined) clearTimeout(timer); c.off('exit', onExit); closing.removeEventListener('abort', onClose) }
      const onExit = (): void => { done(); resolve(true) }
      const onClose = (): void => { done(); reject(unavailable('the engine is shutting down')) }
      c.once('exit', onExit)
      closing.addEventListener('abort', onClose)
    })
  }

  async stop (ref: string, timeoutSec: number | undefined, signal: string | undefined): Promise<void> {
    const c = this.get(ref)
    // a start stuck in the runtime: ended rather than waited for (it would never settle)
    const abort = c.abortStart
    if (abort !== null) { await abort(); this.o.events.emit('container', 'stop', c.id, this.attributes(c)); return }
    await c.files.exclusive(async () => { await c.serialize(async () => { await this.stopLocked(c, timeoutSec, signal) }) })
  }

  private async stopLocked (c: ContainerHandle, timeoutSec: number | undefined, signal: string | undefined): Promise<void> {
    if (!isRunning(c.rec)) throw notModified('container already stopped')
    c.rec.manuallyStopped = true
    const t = timeoutSec ?? c.rec.config.stopTimeout ?? 10
    const sig = signalNumber(signal ?? c.rec.config.stopSignal, 15)
    if (c.rec.state.status === 'paused') await this.o.runtime.resume(c.id).catch(unlessEnded(`container ${c.id}: resuming it to stop it`))
    if (c.rec.state.status === 'restarting') { transition(c.rec, 'exited'); await c.save(); return }
    // each signal sent is a kill event, as dockerd's stop (killWithSignal) logs them, ahead of the die it may cause
    if (t !== 0) {
      this.o.events.emit('container', 'kill', c.id, this.attributes(c, { signal: String(sig) }))
      await this.o.runtime.kill(c.id, sig).catch(unlessEnded(`container ${c.id}: the stop signal`))
      if (await this.waitExit(c, t < 0 ? -1 : t * 1000)) { this.o.events.emit('container', 'stop', c.id, this.attributes(c)); return }
    }
    this.o.events.emit('container', 'kill', c.id, this.attributes(c, { signal: '9' }))
    await this.o.runtime.kill(c.id, 'KILL', true).catch(unlessEnded(`container ${c.id}: the stop's kill`))
    await this.waitExit(c, -1)
    this.o.events.emit('container', 'stop', c.id, this.attributes(c))
  }

  async kill (ref: string, signal: string | undefined): Promise<void> {
    const c = this.get(ref)
    const sig = signalNumber(signal, 9)
    // a start stuck in the runtime: ended (whatever the signal: the process it would reach does not exist yet)
    const abort = c.abortStart
    if (abort !== null) { await abort(); this.o.events.emit('container', 'kill', c.id, this.attributes(c, { signal: String(sig) })); return }
    // (not behind a copy in or out, unlike dockerd's kill: nor behind a stop's or restart's grace period, which holds
    // the container's files lock; a copy goes on in the tree the exit detached, and the next start waits for it)
    if (!isRunning(c.rec) || c.conn === null) throw conflict(`cannot kill container: ${ref}: container ${c.id} is not running`)
    if (sig === 9 || sig === 15 || sig === 2) c.rec.manuallyStopped = true
    // (an exit not applied yet: the runtime no longer knows the container)
    await this.o.runtime.kill(c.id, sig, sig === 9).catch((err) => {
      throw goneFromRuntime(err) ? conflict(`cannot kill container: ${ref}: container ${c.id} is not running`, { cause: err }) : err
    })
    this.o.events.emit('container', 'kill', c.id, this.attributes(c, { signal: String(sig) }))
    if (sig === 9) await this.waitExit(c, 10_000)
  }

  async restart (ref: string, timeoutSec: number | undefined, signal: string | undefined): Promise<void> {
    const c = this.get(ref)
    await c.files.exclusive(async () => { await this.restartEntered(c, timeoutSec, signal) })
    this.o.events.emit('container', 'restart', c.id, this.attributes(c))
  }

  private async restartEntered (c: ContainerHandle, timeoutSec: number | undefined, signal: string | undefined): Promise<void> {
    await c.serialize(async () => {
      // an AutoRemove container restarts, as with dockerd: its exit does not remove it, nor its monitor its trees
      const keep = c.rec.autoRemove && isRunning(c.rec)
      if (keep) c.manualRestart = true
      let letGo: (() => Promise<void>) | undefined
      try {
        if (keep) letGo = await this.keepTrees(c)
        if (isRunning(c.rec)) await this.stopLocked(c, timeoutSec, signal)
        await this.startLocked(c)
      } finally {
        if (keep) c.manualRestart = false
        await letGo?.()
      }
    })
  }

  async pause (ref: string): Promise<void> {
    const c = this.get(ref)
    await c.serialize(async () => {
      if (c.rec.state.status === 'paused') throw conflict(`Container ${c.id} is already paused`)
      if (c.rec.state.status !== 'running') throw conflict(`Container ${c.id} is not running`)
      // (an exit not applied yet: the runtime no longer knows the container)
      await this.o.runtime.pause(c.id).catch((err) => { throw goneFromRuntime(err) ? conflict(`Container ${c.id} is not running`, { cause: err }) : err })
      transition(c.rec, 'paused', this.announce(c, 'pause'))
      await c.save()
    })
  }

  async unpause (ref: string): Promise<void> {
    const c = this.get(ref)
    await c.serialize(async () => {
      if (c.rec.state.status !== 'paused') throw conflict(`Container ${c.id} is not paused`)
      await this.o.runtime.resume(c.id).catch((err) => { throw goneFromRuntime(err) ? conflict(`Container ${c.id} is not paused`, { cause: err }) : err })
      transition(c.rec, 'running', this.announce(c, 'unpause'))
      await c.save()
    })
  }

  /** POST /containers/{id}/update: the record, and the live cgroup of a running container. */
  async update (ref: string, req: UpdateRequest): Promise<string[]> {
    const c = this.get(ref)
    const warnings = await c.serialize(async () => {
      const u = planUpdate(req, c.rec, this.hostFacts)
      if (isRunning(c.rec) && c.rec.state.status !== 'restarting') {
        await this.o.runtime.update(c.id, u.resources).catch((err) => {
          // a container that exited meanwhile (its exit not applied yet) takes the change as a stopped one does
          if (goneFromRuntime((err as Error).cause)) return
          // dockerd's wording of the runtime's refusal (its last line is containerd's error code)
          throw invalidArgument(`Cannot update container ${c.id}: ${errorMessage(err)}\n: unknown`, { cause: err })
        })
      }
      Object.assign(c.rec.resources, u.patch)
      if (u.restartPolicy !== undefined) c.rec.restartPolicy = u.restartPolicy
      // a memory limit set on a running container: its OOM kills are watched from now on
      if (isRunning(c.rec)) this.watchOom(c, 0)
      await c.save()
      return u.warnings
    })
    this.o.events.emit('container', 'update', c.id, this.attributes(c))
    return warnings
  }

  async rename (ref: string, newName: string): Promise<void> {
    const c = this.get(ref)
    if (newName === '') throw invalidArgument('Neither old nor new names may be empty')
    const name = validateName(newName)
    if (name === c.rec.name) throw invalidArgument(`Renaming a container with the same name as its current name`)
    const taken = this.names.get(name)
    if (taken !== undefined) throw conflict(`Error when allocating new name: Conflict. The container name "${name}" is already in use by container "${taken}". You have to remove (or rename) that container to be able to reuse that name.`)
    const old = c.rec.name
    this.names.delete(old)
    this.names.set(name, c.id)
    c.rec.name = name
    await c.save()
    await this.o.network?.rename(c.id, name.slice(1))
    this.o.events.emit('container', 'rename', c.id, this.attributes(c, { oldName: old }))
  }

  /**
   * DELETE /containers/{parent}/{alias}?link=true (`docker rm --link /web/db`): the parent's legacy link of that alias
   * goes (its record and its networking; a running parent keeps the environment and hosts entries it started with,
   * as with dockerd). A plain container name is dockerd's "default link name" and is refused.
   */
  async removeLink (name: string): Promise<void> {
    const full = name.startsWith('/') ? name : `/${name}`
    const cut = full.lastIndexOf('/')
    const parentName = full.slice(1, cut)
    const alias = full.slice(cut + 1)
    if (parentName === '') {
      this.get(name)
      throw conflict('Conflict, cannot remove the default link name of the container')
    }
    const parent = this.find(parentName)
    const removed = parent === undefined ? false : await this.o.network?.removeLink(parent.id, alias) ?? false
    if (parent === undefined || !removed) throw notFound(`No such container: ${name}`)
    await parent.serialize(async () => {
      const links = parent.rec.portRequests.links ?? []
      const kept = links.filter((l) => linkAlias(l) !== alias)
      if (kept.length === links.length) return
      parent.rec.portRequests.links = kept.length > 0 ? kept : null
      await parent.save()
    })
  }

  /**
   * Mounts a container's root filesystem for `fn` (holdRootfs) and, once no other such use holds it, unmounts it
   * again if the container does not run: a stopped container's stays unmounted, as dockerd's (mounted again at start).
   */
  async withRootfs<T> (c: ContainerHandle, fn: () => Promise<T>): Promise<T> {
    const release = await this.holdRootfs(c)
    try { return await fn() } finally { await release() }
  }

  /**
   * withRootfs for a use that outlives one call (a tar stream): mounts now, and the returned function lets go.
   *
   * The root filesystem is mounted while the container runs (its monitor detaches it at the exit, as dockerd unmounts
   * a stopped container's) and here, on demand, for file operations on a container that does not run. A tree that
   * was detached while held (the container exited meanwhile) stays whole for its holders, which hold it open; no
   * second tree is mounted over the same writable layer until they are done with it (the mount's reference count
   * in dockerd's graph driver).
   */
  async holdRootfs (c: ContainerHandle): Promise<() => Promise<void>> {
    let kept: (() => Promise<void>) | undefined
    for (;;) {
      if (c.removed) throw notFound(`No such container: ${c.id}`)
      // (a stopped container's last monitor may be unmounting it still)
      if (!isRunning(c.rec)) await c.released
      const letGo = this.nextLetGo(c)
      const held = await c.serialize(async () => {
        // a removal went first: its deletion must not find the tree mounted again (nor an empty one be mounted for an
        // AutoRemove container whose monitor took its trees at the exit)
        if (c.removed || autoRemoving(c)) throw notFound(`No such container: ${c.id}`)
        const overlay = c.rec.rootfsKind === 'overlay'
        // an AutoRemove container that exits meanwhile keeps its trees for its holders (its removal follows them).
        // Its monitor looks for the marker after it told the exit and detached the tree: a running container's tree
        // still mounted once the marker is written is kept; one detached already may be going
        const mark = c.rec.autoRemove ? await this.keepTrees(c) : undefined
        try {
          if (mark !== undefined && (autoRemoving(c) || (isRunning(c.rec) && overlay && !await this.o.runtime.rootfsMounted(c.rootfs)))) {
            throw notFound(`No such container: ${c.id}`)
          }
          if (overlay && !await this.o.runtime.rootfsMounted(c.rootfs)) {
            if (this.rootfsHolds.has(c.id)) { await mark?.(); return false }
            const image = await this.o.images.resolveImage(c.rec.imageId)
            await this.o.runtime.mountRootfs({ paths: c.rootfs, kind: 'overlay', layers: await this.o.images.layerPaths(image), imageId: image.id })
          }
        } catch (err) { await mark?.(); throw err }
        kept = mark
        this.rootfsHolds.set(c.id, (this.rootfsHolds.get(c.id) ?? 0) + 1)
        return true
      }).catch((err) => { letGo.cancel(); throw err })
      if (held) { letGo.cancel(); break }
      await letGo.promise
    }
    let released = false
    return async (): Promise<void> => {
      if (released) return
      released = true
      await kept?.().catch(warnOf(`container ${c.id}: letting go of its trees`))
      const left = (this.rootfsHolds.get(c.id) ?? 1) - 1
      if (left > 0) { this.rootfsHolds.set(c.id, left); return }
      this.rootfsHolds.delete(c.id)
      c.emit(ROOTFS_LET_GO)
      await c.serialize(async () => {
        if (c.removed || isRunning(c.rec) || c.rec.rootfsKind !== 'overlay' || this.rootfsHolds.has(c.id)) return
        await this.o.runtime.unmountRootfs(c.rootfs)
      }).catch(warnOf(`container ${c.id}: unmounting its root filesystem`))
    }
  }

  /**
   * Keeps an AutoRemove container's trees past an exit of its run (its monitor removes them at the exit unless the
   * container's directory holds KEEP_TREES_FILE then) until the returned function lets go: a restart starts it again
   * on them, a file operation goes on in them (the removal deletes them after it, as dockerd's waits for the lock).
   */
  private async keepTrees (c: ContainerHandle): Promise<() => Promise<void>> {
    const marker = join(c.dir, KEEP_TREES_FILE)
    const n = this.treeKeepers.get(c.id) ?? 0
    this.treeKeepers.set(c.id, n + 1)
    if (n === 0) await writeFile(marker, '', { mode: 0o600 }).catch((err) => { this.treeKeepers.delete(c.id); throw err })
    let done = false
    return async () => {
      if (done) return
      done = true
      const left = (this.treeKeepers.get(c.id) ?? 1) - 1
      if (left > 0) { this.treeKeepers.set(c.id, left); return }
      this.treeKeepers.delete(c.id)
      await rm(marker, { force: true })
    }
  }

  /** Settles when the last holder of the container's root filesystem lets go, or the engine closes. */
  private async letGoOrClosing (c: ContainerHandle): Promise<void> {
    const letGo = this.nextLetGo(c)
    const closing = this.closing.signal
    let onClose = (): void => {}
    try {
      await Promise.race([letGo.promise, new Promise<void>((resolve) => { onClose = resolve; closing.addEventListener('abort', onClose) })])
    } finally {
      letGo.cancel()
      closing.removeEventListener('abort', onClose)
    }
  }

  /** Settles when the last holder of the container's root filesystem lets go (cancel: no longer waited for). */
  private nextLetGo (c: ContainerHandle): { promise: Promise<void>, cancel: () => void } {
    let wake = (): void => {}
    const promise = new Promise<void>((resolve) => { wake = resolve })
    c.once(ROOTFS_LET_GO, wake)
    return { promise, cancel: () => { c.off(ROOTFS_LET_GO, wake) } }
  }

  // ---- remove ---------------------------------------------------------------------------------------------------

  /**
   * `alone`: a removal already under way is a conflict, as dockerd answers a client's second `rm` (the API's; the
   * engine's own removals, a swarm task's or a build's, wait for it and find the container gone).
   */
  async remove (ref: string, force: boolean, volumes: boolean, o: { alone?: boolean } = {}): Promise<void> {
    const c = this.get(ref)
    if (o.alone === true && ((this.removalsAsked.get(c.id) ?? 0) > 0 || c.rec.state.status === 'removing')) {
      throw conflict(`removal of container ${ref} is already in progress`)
    }
    this.removalsAsked.set(c.id, (this.removalsAsked.get(c.id) ?? 0) + 1)
    try {
      await this.removeAsked(c, force, volumes)
    } finally {
      const n = (this.removalsAsked.get(c.id) ?? 1) - 1
      if (n <= 0) this.removalsAsked.delete(c.id); else this.removalsAsked.set(c.id, n)
    }
  }

  /** Whether a removal of the container is asked for, under way or done (a commit racing it is refused). */
  beingRemoved (c: ContainerHandle): boolean {
    return c.removed || c.rec.state.status === 'removing' || (this.removalsAsked.get(c.id) ?? 0) > 0
  }

  private async removeAsked (c: ContainerHandle, force: boolean, volumes: boolean): Promise<void> {
    const abort = c.abortStart
    if (force && abort !== null) await abort()
    // (a copy in or out of it under way is waited for, as dockerd's removal waits for the container's lock)
    await c.files.exclusive(async () => { await this.removeEntered(c, force, volumes) })
  }

  private async removeEntered (c: ContainerHandle, force: boolean, volumes: boolean): Promise<void> {
    await c.serialize(async () => {
      if (c.removed) return
      // a restarting container counts as running (dockerd's State.Running stays true between the restarts)
      if (isRunning(c.rec) && !force) {
        throw conflict(`cannot remove container "${c.rec.name}": container is ${c.rec.state.status}: stop the container before removing or force remove`)
      }
      if (isRunning(c.rec) && c.rec.state.status !== 'restarting') {
        c.rec.manuallyStopped = true
        if (c.rec.state.status === 'paused') await this.o.runtime.resume(c.id).catch(unlessEnded(`container ${c.id}: resuming it to remove it`))
        await this.o.runtime.kill(c.id, 'KILL', true).catch(unlessEnded(`container ${c.id}: the removal's kill`))
        await this.waitExit(c, 15_000)
      }
      await this.finishRemove(c, true, volumes)
    })
  }

  private async finishRemove (c: ContainerHandle, emit: boolean, removeVolumes = c.rec.autoRemove): Promise<void> {
    if (c.removed) return
    c.rec.manuallyStopped = true
    transition(c.rec, 'removing')
    // from here a restart after a crash finishes the removal (the record says so until its directory is gone); an
    // auto-removed container's record needs no such write: the boot removes it anyway once it does not run
    if (!c.rec.autoRemove) await c.save()
    await this.o.network?.unregister(c.id).catch(warnOf(`container ${c.id}: releasing its networking at removal`))
    await this.o.volumes?.release(c.id, c.rec.mounts ?? [], removeVolumes)
    c.removed = true
    if (c.rec.autoRemove) this.keepAutoRemovedExit(c)
    this.containers.delete(c.id)
    if (this.names.get(c.rec.name) === c.id) this.names.delete(c.rec.name)
    if (emit) this.o.events.emit('container', 'destroy', c.id, this.attributes(c))
    c.emit('removed')
    // the trees go after the reply: nothing reaches them by this container's ID or name any more, a new container
    // has a directory of its own, and the boot after a crash finishes what was left
    this.track(this.deleteFiles(c))
  }

  /** The runtime's part (root filesystem, /dev/shm, its record), then the monitor's state and the container's directory. */
  private async deleteFiles (c: ContainerHandle): Promise<void> {
    try {
      await c.released
      // a file operation under way (an export, a commit, a diff: a copy in or out was waited for before the
      // removal) holds the root filesystem: deleted once it let go, as dockerd's layer store deletes a writable layer
      // at its last reference's release (the removal itself is done: the export goes on to its end, intact); a
      // closing engine deletes it at once (its connections go with it)
      while (this.rootfsHolds.has(c.id) && !this.closing.signal.aborted) await this.letGoOrClosing(c)
      await this.o.runtime.delete(c.id, c.dir, c.rootfs, c.rec.runtimeBinary)
      // an exec of the container winding down (a start refused meanwhile) may still write its state directory
      await removeTree(c.stateDir)
      await removeTree(c.dir)
    } catch (err) { ops.warn('removing the files of %s (finished at the next start of the daemon): %s', c.id, describeError(err)) }
  }

  private track (p: Promise<void>): void {
    this.deletions.add(p)
    void p.finally(() => { this.deletions.delete(p) })
  }

  /** Waits for the removed containers' files to be gone. */
  async settled (): Promise<void> {
    while (this.deletions.size > 0) await Promise.all([...this.deletions])
  }

  // ---- wait -----------------------------------------------------------------------------------------------------

  /** Resolves with the exit code (and the run's error, if any) once the condition holds. Validates before anything blocks. */
  waitFor (c: ContainerHandle, condition: WaitCondition, signal: AbortSignal): Promise<WaitResult> {
    const result = (): WaitResult => c.rec.state.error !== '' && condition !== 'removed'
      ? { exitCode: c.rec.state.exitCode, error: c.rec.state.error }
      : { exitCode: c.rec.state.exitCode }
    // (an exit being applied is answered once it is seen: its attach sessions have written its output by then)
    if (condition === 'not-running' && !isRunning(c.rec) && !c.applyingExit) return Promise.resolve(result())
    if (condition === 'removed' && c.removed) return Promise.resolve(result())
    return new Promise((resolve, reject) => {
      const event = condition === 'removed' ? 'removed' : 'exit'
      const done = (): void => {
        c.off(event, done); signal.removeEventListener('abort', aborted)
        resolve(result())
      }
      const aborted = (): void => { c.off(event, done); reject(new Error('client went away')) }
      c.on(event, done)
      signal.addEventListener('abort', aborted)
    })
  }

  private keepAutoRemovedExit (c: ContainerHandle, now = Date.now()): void {
    const kept = this.autoRemovedExits
    for (const [id, e] of kept) {
      if (kept.size < AUTO_REMOVED_KEPT && now - e.at < AUTO_REMOVED_KEPT_MS) break
      kept.delete(id)
    }
    kept.set(c.id, { name: c.rec.name, exitCode: c.rec.state.exitCode, error: c.rec.state.error, at: now })
  }

  /**
   * What a wait on a container auto-removed in the last minute answers (full ID, name or unique ID prefix, as a
   * lookup); undefined for any other reference, which stays dockerd's 404.
   */
  exitOfAutoRemoved (ref: string, condition: WaitCondition, now = Date.now()): WaitResult | undefined {
    const name = ref.startsWith('/') ? ref : `/${ref}`
    let found: { exitCode: number, error: string, at: number } | undefined
    if (ref.trim() !== '') {
      found = this.autoRemovedExits.get(ref)
      if (found === undefined) for (const e of this.autoRemovedExits.values()) if (e.name === name) found = e
      if (found === undefined) {
        const id = resolvePrefix(this.autoRemovedExits.keys(), ref)
        if (id !== undefined) found = this.autoRemovedExits.get(id)
      }
    }
    if (found === undefined || now - found.at >= AUTO_REMOVED_KEPT_MS) return undefined
    return found.error !== '' && condition !== 'removed' ? { exitCode: found.exitCode, error: found.error } : { exitCode: found.exitCode }
  }

  // ---- close ----------------------------------------------------------------------------------------------------

  /**
   * Detaches from every shim; running containers keep running and are re-adopted on the next start. The operations
   * under way end first (the runtime refuses further commands, waits for an exit give up), so that nothing of this
   * engine runs after it: a stop's kill after its grace period would run the runtime on a root that may be gone.
   */
  async close (): Promise<void> {
    this.closed = true
    this.o.health?.close()
    const runtimeClosed = this.o.runtime.close()
    this.closing.abort()
    await runtimeClosed
    await Promise.allSettled([...this.creates])
    await Promise.all(this.all().map(async (c) => { await c.serialize(async () => {}) }))
    await this.settled()
    for (const c of this.all()) {
      c.proc?.detach()
      c.proc = null
      c.conn = null
    }
  }
}
