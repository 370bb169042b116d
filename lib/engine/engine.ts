// The Engine: owns the stores, the runtime, the event bus and the API server; implements the route backends.
import { readFile, rm, rmdir } from 'node:fs/promises'
import { join, resolve } from 'node:path'
import { ApiServer } from '../api/api-server.js'
import { listenAll } from './listeners.js'
import type { ListenAddress } from '../http/listen.js'
import { EventBus } from '../events/event-bus.js'
import { ContainerService } from '../containers/container-service.js'
import { ExecService } from '../containers/exec-service.js'
import { ImageService } from '../image/image-service.js'
import { Supervisor } from '../runtime/supervisor.js'
import { ResolverPeer } from '../runtime/resolver-peer.js'
import { closingMonitoredRuntime } from '../runtime/closing-runtime.js'
import { RuntimeTable } from '../runtime/runtimes.js'
import { parseNofileHard } from '../runtime/oci-spec.js'
import { NetworkService } from '../network/network-service.js'
import type { SwarmManager } from '../swarm/manager.js'
import { SwarmStore } from '../swarm/store.js'
import { pingRoutes } from '../api/system/routes.js'
import { hasSwarmState } from '../swarm/state-path.js'
import { taskContainers, taskNetworks } from './swarm-containers.js'
import { VolumeStore } from '../volumes/volume-store.js'
import { Collector } from '../image/collector.js'
import { VolumeService } from '../volumes/volume-service.js'
import { ContainerVolumes } from '../volumes/container-volumes.js'
import { ContainerList } from '../containers/container-list.js'
import { EngineSystem } from './system-info.js'
import { EngineBuildBackend } from './build-backend.js'
import { routeTables } from './route-tables.js'
import { currentMounts, unmountRootfs } from '../runtime/rootfs.js'
import type { Distribution } from '../distribution/distribution.js'
import { isRunning } from '../containers/container.js'
import { ENGINE_VERSION } from '../api/api-version.js'
import { logger, levelLogger } from '../log.js'
import { describeError, errorMessage, unavailable } from '../errors.js'
import type { DirLock } from '../util/dir-lock.js'
import { boundedCapabilities, CAPABILITY_NUMBERS } from '../runtime/capabilities.js'
import { HealthMonitor } from '../containers/health.js'
import type { StartFacts } from './start-checks.js'
import { claimStart, type StartClaim } from './start-claim.js'
import { watchLifecycle } from './lifecycle-log.js'
import { secureEngineState } from './state-modes.js'

import { DEFAULT_DATA_ROOT, DEFAULT_SOCKET } from './defaults.js'
import type { EngineOptions } from './engine-options.js'

export type { EngineOptions }
export { DEFAULT_DATA_ROOT, DEFAULT_SOCKET }

const log = logger('engine')
const ops = levelLogger('engine')

export class Engine {
  readonly dataRoot: string
  readonly execRoot: string
  readonly events = new EventBus()
  readonly api: ApiServer
  readonly images: ImageService
  containers!: ContainerService
  execs!: ExecService
  network!: NetworkService
  swarm?: SwarmManager // once loaded (loadSwarm())
  private swarmP?: Promise<{ swarm: SwarmManager, toRun: boolean }>
  private swarmStore?: SwarmStore // read at start for /_ping, handed to the swarm
  volumes!: VolumeStore
  private containerVolumes!: ContainerVolumes
  /** Sweeps blobs and layers no image references, after removals and at prune. */
  collector!: Collector
  private volumeService!: VolumeService
  system!: EngineSystem
  private list!: ContainerList
  private runtimes!: RuntimeTable // the runtimes containers may name, and the default (a reload replaces them)
  private runtimeVersion = 'unknown'
  private facts?: StartFacts
  /** What this start created (roots, socket directories): a failed start removes them. */
  private readonly created: string[] = []
  private readonly opts: EngineOptions
  private closed = false
  private distributionP?: Promise<Distribution>
  private readonly builds: EngineBuildBackend
  private readonly locks: DirLock[] = []

  constructor (opts: EngineOptions = {}) {
    this.opts = { ...opts }
    this.api = new ApiServer(opts.connectionLimits)
    this.dataRoot = resolve(opts.dataRoot ?? DEFAULT_DATA_ROOT)
    this.execRoot = resolve(opts.execRoot ?? join(this.dataRoot, 'run'))
    this.images = new ImageService({ dataRoot: this.dataRoot, events: this.events, usage: { containersUsingImage: (id) => this.containers.containersUsingImage(id) } })
    this.builds = new EngineBuildBackend({ images: this.images, containers: () => this.containers, distribution: async () => await this.distribution() })
  }

  get addresses (): ListenAddress[] { return this.api.addresses }

  /** The default OCI runtime: the name containers get, its binary and its version (checked at start). */
  get runtime (): { name: string, path: string, version: string } {
    return { name: this.runtimes?.defaultName ?? this.runtimeName, path: this.runtimes?.resolve('').path ?? '', version: this.runtimeVersion }
  }

  /** What the start checks found: the monitor binary in use, the cgroup layout, overlayfs (once started). */
  get host (): { shimPath: string, cgroup: 'v1' | 'v2', overlay: boolean } | undefined {
    return this.facts === undefined ? undefined : { shimPath: this.facts.shimPath, cgroup: this.facts.cgroup, overlay: this.facts.overlay }
  }

  private get runtimeName (): string {
    const r = this.opts.runtime ?? 'runc'
    return this.opts.runtimeName ?? r.slice(r.lastIndexOf('/') + 1)
  }

  /**
   * Starts the engine: the claim (options and host checked, roots made and locked: start-claim.ts) unless the caller
   * made it already for these options, then the listeners and the boot.
   */
  async start (claimed?: StartClaim): Promise<void> {
    const claim = claimed ?? await claimStart(this.opts)
    const { addrs, facts } = claim
    this.facts = facts
    this.runtimes = new RuntimeTable({ runtimes: this.opts.runtimes ?? {}, defaultName: this.runtimeName, defaultPath: facts.runtime.path, stockPath: facts.runc })
    this.created.push(...claim.created)
    this.locks.push(...await claim.locks)
    await facts.remember()
    // Listening at once, /_ping answered from then on (its one fact, whether this node is in a swarm, from the swarm's
    // state file, read once: the swarm takes the store over); every other request waits for the boot (the roots' modes,
    // the records, containers re-adopted, networking reconciled) and never sees a container half-recovered.
    const swarmStore = new SwarmStore(this.dataRoot)
    const swarmRead = swarmStore.load()
    const prepared = swarmRead.then(async () => {
      // an earlier layout's modes (nothing others could write) repaired before the records, after /_ping can answer
      const modes = await secureEngineState(this.dataRoot, this.execRoot)
      if (modes.changed.length > 0) log('data root modes repaired: %d entries (%s)', modes.changed.length, modes.changed.slice(0, 5).join(', '))
      if (modes.refused.length > 0) ops.warn('data root modes not repairable (these stay readable by others): %s', modes.refused.join(', '))
    })
    let booted!: () => void
    let failed!: (err: unknown) => void
    const bootDone = new Promise<void>((resolve, reject) => { booted = resolve; failed = reject })
    // the waiting requests get the failures through hold(), and start() throws them: not lost
    bootDone.catch(() => {})
    prepared.catch(() => {})
    this.api.addRoutes(pingRoutes({ swarmState: () => swarmStore.active() ? 'active' : 'inactive' }))
    this.api.hold((path) => path === '/_ping' ? swarmRead : bootDone)
    try {
      await listenAll(this.api, addrs, this.opts, this.created)
      try { this.opts.onListening?.() } catch (e) { ops.warn('onListening: %s', describeError(e)) }
      await prepared
      await this.boot(swarmStore)
      booted()
      this.api.hold(null)
    } catch (err) {
      failed(unavailable(`the daemon failed to start: ${(err as Error).message}`))
      // nothing of this start may still be writing (the swarm's directory, the modes' mark) once it gives up
      await prepared.catch(() => {})
      throw err
    }
    log('engine ready: data root %s', this.dataRoot)
    for (const w of facts.warnings) ops.warn('%s', w)
  }

  private async boot (swarmStore: SwarmStore): Promise<void> {
    const facts = this.facts as StartFacts
    await facts.remember()
    this.runtimeVersion = facts.runtime.version
    const hostNofileHard = parseNofileHard(await readFile('/proc/self/limits', 'utf8').catch(() => ''))
    // --privileged and --cap-add ALL grant what this host can give (its bounding set may lack some)
    const allCaps = boundedCapabilities(Object.keys(CAPABILITY_NUMBERS), await readFile('/proc/self/status', 'utf8').catch(() => ''))
    await this.images.init()
    this.collector = new Collector(this.images.gate, async () => await this.images.collectGarbage())
    this.watchRemovals()
    this.network = new NetworkService({
      dataRoot: this.dataRoot,
      execRoot: this.execRoot,
      events: this.events,
      containers: {
        find: (ref) => {
          const c = this.containers.find(ref)
          return c === undefined ? undefined : { id: c.id, name: c.rec.name.slice(1), pid: c.rec.state.pid, running: isRunning(c.rec) }
        }
      },
      monitors: {
        resolver: async (id) => {
          // (called as the monitor starts, before the container is marked running: a gone monitor refuses)
          const c = this.containers.find(id)
          return c === undefined ? null : await ResolverPeer.connect(c.stateDir).catch((err) => { log('resolver connection to %s: %s', id, errorMessage(err)); return null })
        },
        resolvConfFile: (id) => {
          const c = this.containers.find(id)
          return c === undefined ? undefined : join(c.dir, 'resolv.conf')
        }
      },
      ...(this.opts.defaultBridge !== undefined ? { defaultBridge: this.opts.defaultBridge } : {}),
      ...(this.opts.bip !== undefined ? { bip: this.opts.bip } : {}),
      ...(this.opts.defaultAddressPools !== undefined ? { defaultAddressPools: this.opts.defaultAddressPools } : {}),
      ...(this.opts.networkPrefix !== undefined ? { prefix: this.opts.networkPrefix } : {}),
      ...(this.opts.iptables !== undefined ? { iptables: this.opts.iptables } : {}),
      ...(this.opts.icc !== undefined ? { icc: this.opts.icc } : {}),
      ...(this.opts.userlandProxy !== undefined ? { userlandProxy: this.opts.userlandProxy } : {}),
      ...(this.opts.resolvConf !== undefined ? { resolvConf: this.opts.resolvConf } : {}),
      swarmActive: () => this.swarm?.active === true,
      swarmNetworkUse: {
        blocksRemoval: (n) => this.swarm?.networkRemovalBlocked(n),
        pools: () => this.swarm?.overlayPools(),
        leaving: (id) => this.swarm?.taskContainerLeaving(id) === true
      }
    })
    await this.network.load()
    const supervisor = new Supervisor({ shimPath: facts.shimPath, launcherSocket: join(this.execRoot, 'monitors.sock') })
    const runtime = closingMonitoredRuntime({ runtimeRoot: join(this.execRoot, 'runtime'), defaultRuntime: this.runtimes.resolve(''), supervisor, overlay: facts.overlay, hostNofileHard, allCaps, ...(this.opts.initPath !== undefined ? { initPath: this.opts.initPath } : {}) })
    await runtime.init()
    this.volumes = new VolumeStore({ dataRoot: this.dataRoot, emit: (action, name, attrs) => { this.events.emit('volume', action, name, attrs) } })
    await this.volumes.init()
    this.volumeService = new VolumeService(this.volumes)
    const health = new HealthMonitor({
      probe: async (c, cmd, timeoutMs) => await this.execs.probe(c, cmd, timeoutMs),
      changed: (c, status) => {
        this.events.emit('container', `health_status: ${status}`, c.id, { ...c.rec.config.labels, image: c.rec.image, name: c.rec.name.slice(1) })
        c.emit('health', status)
      },
      save: async (c) => { await c.save() }
    })
    const containerVolumes = new ContainerVolumes(this.volumes, { subpathRoot: join(this.execRoot, 'subpaths') })
    this.containerVolumes = containerVolumes
    this.containers = new ContainerService({
      health,
      dataRoot: this.dataRoot,
      execRoot: this.execRoot,
      runtime,
      runtimes: this.runtimes,
      images: this.images,
      events: this.events,
      network: this.network,
      volumes: containerVolumes,
      ...(this.opts.defaultLogConfig !== undefined ? { defaultLogConfig: this.opts.defaultLogConfig } : {}),
      ...(this.opts.defaultUlimits !== undefined ? { defaultUlimits: this.opts.defaultUlimits } : {})
    })
    this.execs = new ExecService({ containers: this.containers, runtime, events: this.events })
    await this.containers.load()
    // sandbox records of containers a crash removed or never finished creating (nothing is served yet)
    this.network.dropOrphans((id) => this.containers.find(id) !== undefined)
    this.swarmStore = swarmStore // the swarm takes over the store /_ping read; it is loaded now only if it has a state
    const swarmAtStart = await hasSwarmState(this.dataRoot) ? await this.loadSwarm() : undefined
    this.list = new ContainerList({ containers: this.containers, images: this.images })
    this.system = new EngineSystem({
      dataRoot: this.dataRoot,
      runtimes: this.runtimes,
      runtimeVersion: this.runtimeVersion,
      ...(this.opts.defaultLogConfig !== undefined ? { loggingDriver: this.opts.defaultLogConfig.type } : {}),
      containers: this.containers,
      list: this.list,
      images: this.images,
      network: this.network,
      swarm: () => this.swarm,
      builds: this.builds,
      volumes: this.volumeService,
      events: this.events
    })
    // every route family: a table over the one method-only backend it needs (route-tables.ts)
    const families = routeTables({
      system: this.system,
      swarm: async () => (await this.loadSwarm()).swarm,
      containers: this.containers,
      list: this.list,
      execs: this.execs,
      runtime,
      network: this.network,
      volumes: this.volumeService,
      containerVolumes: this.containerVolumes,
      images: this.images,
      events: this.events,
      builds: this.builds,
      buildDir: join(this.dataRoot, 'build'),
      ...(this.opts.buildContextLimit !== undefined ? { buildContextLimit: this.opts.buildContextLimit } : {}),
      distribution: async () => await this.distribution(),
      collect: async () => await this.collector.now()
    })
    for (const routes of families) this.api.addRoutes(routes)
    watchLifecycle(this.events, ops)
    // the host's networking and the containers at once; a container's network changes wait for the reconciliation
    await Promise.all([this.network.reconcileHost(), this.containers.recoverAll(), this.clearBuilds()])
    if (swarmAtStart?.toRun === true) swarmAtStart.swarm.recover()
    else if (swarmAtStart !== undefined && !swarmAtStart.swarm.active) void swarmAtStart.swarm.finishLeave()
  }

  /**
   * After a failed start: what this start created goes (the roots it made, the socket directories), unless
   * something is mounted below it (then it stays, and says so).
   */
  async removeCreated (): Promise<void> {
    const mounts = [...await currentMounts()]
    for (const p of this.created.splice(0).reverse()) {
      if (mounts.some((m) => m === p || m.startsWith(p + '/'))) { ops.warn('a failed start leaves %s: something is mounted below it', p); continue }
      await (p === this.dataRoot || p === this.execRoot || this.isRootAncestor(p) ? rm(p, { recursive: true, force: true }) : rmdir(p))
        .catch((err: Error) => { ops.warn('a failed start could not remove %s: %s', p, err.message) })
    }
  }

  private isRootAncestor (p: string): boolean {
    return this.dataRoot.startsWith(p + '/') || this.execRoot.startsWith(p + '/')
  }

  /** Builds a crash interrupted: their COPY --from mounts unmounted, their directories removed. */
  private async clearBuilds (): Promise<void> {
    const dir = join(this.dataRoot, 'build')
    const mounts = [...await currentMounts()].filter((m) => m.startsWith(dir + '/')).sort().reverse()
    for (const merged of mounts) await unmountRootfs({ dir: '', merged, upper: '', work: '' }).catch((err) => { ops.warn('an interrupted build leaves %s mounted: %s', merged, describeError(err)) })
    await rm(dir, { recursive: true, force: true }).catch((err) => { ops.warn('interrupted builds leave %s: %s', dir, describeError(err)) })
  }

  async close (): Promise<void> {
    if (this.closed) return
    this.closed = true
    this.events.close()
    const swarm = (await this.swarmP?.catch(() => undefined))?.swarm // it closes the containers once its starts ended
    await (swarm !== undefined ? swarm.close(async () => { await this.containers?.close() }) : this.containers?.close())
    await this.network?.close()
    this.volumeService?.close()
    await this.api.close()
    if (this.distributionP !== undefined) (await this.distributionP).close()
    await this.collector?.close()
    await this.images.content.close()
    for (const l of this.locks.splice(0).reverse()) await l.release()
  }

  /**
   * The swarm, loaded at the first call: at start when the data root has a swarm's state, else at the first swarm
   * request (bench README, "memory round three"). `toRun`: an unlocked swarm whose tasks start takes over.
   */
  private async loadSwarm (): Promise<{ swarm: SwarmManager, toRun: boolean }> {
    this.swarmP ??= import('../swarm/manager.js').then(async (m) => {
      const swarm = new m.SwarmManager({
        dataRoot: this.dataRoot,
        execRoot: this.execRoot,
        containers: taskContainers(this.containers, this.images),
        networks: taskNetworks(this.network),
        events: this.events, engineVersion: ENGINE_VERSION,
        ...(this.swarmStore !== undefined ? { store: this.swarmStore } : {})
      })
      const toRun = await swarm.load()
      this.swarm = swarm
      return { swarm, toRun }
    })
    return await this.swarmP
  }

  /**
   * The registry client side (pull, push, login, remote inspect), loaded on first use: an engine that never talks to
   * a registry does not carry its code, its HTTPS stack or its connection pools.
   */
  async distribution (): Promise<Distribution> {
    this.distributionP ??= import('../distribution/distribution.js').then((m) => new m.Distribution({
      images: this.images,
      events: this.events,
      dataRoot: this.dataRoot,
      insecureRegistries: this.opts.insecureRegistries ?? [],
      registryMirrors: this.opts.registryMirrors ?? []
    }))
    return await this.distributionP
  }

  /**
   * Applies the settings a running engine takes without a restart (dockerd's SIGHUP subset): the insecure
   * registries and the registry mirrors, for the pulls and pushes that start from now on; the runtimes and the default
   * runtime, for the creates and starts from now on (a configuration refused throws, changing nothing).
   */
  async reload (o: { insecureRegistries?: string[], registryMirrors?: string[], runtimes?: EngineOptions['runtimes'], defaultRuntime?: string }): Promise<void> {
    if (o.runtimes !== undefined || o.defaultRuntime !== undefined) this.runtimes?.reconfigure(o.runtimes, o.defaultRuntime)
    if (o.insecureRegistries !== undefined) this.opts.insecureRegistries = [...o.insecureRegistries]
    if (o.registryMirrors !== undefined) this.opts.registryMirrors = [...o.registryMirrors]
    if (this.distributionP !== undefined) (await this.distributionP).configure({ insecureRegistries: this.opts.insecureRegistries ?? [], registryMirrors: this.opts.registryMirrors ?? [] })
  }

  /** Removals (image delete, container destroy, volume destroy) ask the image collector for a sweep. */
  private watchRemovals (): void {
    const sub = this.events.subscribe(new Map([['event', ['delete', 'destroy']]]))
    void (async () => {
      while (!sub.ended) {
        await sub.waitForMore()
        let removed = sub.overflowed
        while (sub.take() !== undefined) removed = true
        if (removed) this.collector.schedule()
        if (sub.overflowed) sub.cancel()
      }
    })()
  }
}

/**
 * Starts an engine and its listeners. `claim`: the start's claim (start-claim.ts claimStart) when the caller made it
 * already with the same options.
 */
export async function createEngine (opts: EngineOptions = {}, claim?: StartClaim): Promise<Engine> {
  const engine = new Engine(opts)
  try {
    await engine.start(claim)
  } catch (err) {
    // the start's failure is the one thrown; what closing the half-started engine meets is the operator's to see
    await engine.close().catch((e) => { ops.warn('closing the engine after a failed start: %s', describeError(e)) })
    await engine.removeCreated()
    throw err
  }
  return engine
}

