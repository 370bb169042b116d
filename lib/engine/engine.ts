// The Engine: owns the stores, the runtime, the event bus and the API server; implements the route backends.
import type { ConnectionLimits } from '../http/limits.js'
import { mkdir, readFile, rm } from 'node:fs/promises'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { ApiServer } from './api-server.js'
import { parseHost, formatAddress, type ListenAddress } from '../http/listen.js'
import { tcpRequestGuard, certificateNames, isLoopbackAddress } from '../http/tcp-guard.js'
import { EventBus } from '../events/event-bus.js'
import { ContainerService } from './container-service.js'
import { ExecService } from './exec-service.js'
import { ImageService } from '../image/image-service.js'
import { Runc } from '../runtime/runc.js'
import { Supervisor } from '../runtime/supervisor.js'
import { ResolverPeer } from '../runtime/resolver-peer.js'
import { parseNofileHard } from '../runtime/oci-spec.js'
import { systemRoutes } from './routes/system.js'
import { containerRoutes } from './routes/containers.js'
import { execRoutes } from './routes/exec.js'
import { imageRoutes } from './routes/images.js'
import { containerFileRoutes, containerStatsRoutes } from './routes/container-files.js'
import type { Route } from '../http/router.js'
import type { ApiHandler } from '../http/api-context.js'
import { commitRoutes } from './routes/commit.js'
import { ContainerCommit } from './commit.js'
import { ImageApi } from './image-api.js'
import type { ContainerHandle } from './container-handle.js'
import type { EventType } from '../events/event-bus.js'
import { networkRoutes } from './routes/networks.js'
import { NetworkService } from '../network/network-service.js'
import { NetworkApi } from '../network/network-api.js'
import { SwarmManager } from '../swarm/manager.js'
import { swarmRoutes, nodeRoutes, serviceRoutes, taskRoutes, secretRoutes, configRoutes } from './routes/swarm.js'
import { taskContainers, taskNetworks } from './swarm-containers.js'
import { VolumeStore } from '../volumes/volume-store.js'
import { Collector } from '../image/collector.js'
import { VolumeApi } from '../volumes/volume-api.js'
import { ContainerVolumes } from '../volumes/container-volumes.js'
import { volumeRoutes } from './routes/volumes.js'
import { pluginRoutes } from './routes/plugins.js'
import { ContainerFiles } from './container-files.js'
import { ContainerList } from './container-list.js'
import { ContainerApi } from './container-api.js'
import { EngineSystem } from './system-info.js'
import { ContainerStats } from './container-stats.js'
import { imageArchiveRoutes } from './routes/image-archive.js'
import { imageDistributionRoutes } from './routes/image-distribution.js'
import { buildRoutes } from './routes/build.js'
import { BuildApi, DEFAULT_CONTEXT_LIMIT } from './build-api.js'
import { EngineBuildBackend } from './build-backend.js'
import { currentMounts, unmountRootfs } from '../runtime/rootfs.js'
import type { Distribution } from '../distribution/distribution.js'
import { isRunning } from './container.js'
import { ENGINE_VERSION } from './api-version.js'
import { logger } from '../log.js'
import { invalidArgument, unavailable } from '../errors.js'
import { lockDirectory, type DirLock } from '../util/dir-lock.js'
import { boundedCapabilities } from '../runtime/capabilities.js'
import { HealthMonitor } from './health.js'
import { secureEngineState } from './state-modes.js'
import { PRIVATE_DIR } from '../util/private-modes.js'

const log = logger('engine')

export interface EngineOptions {
  /** Connection caps and request timeouts of the API listeners (lib/http/limits.ts has the defaults). */
  connectionLimits?: ConnectionLimits
  /** Where images, containers and volumes live (default /var/lib/berth). */
  dataRoot?: string
  /** Runtime state: shim sockets, runc state (default <dataRoot>/run). Keep it short: Unix socket paths are limited. */
  execRoot?: string
  /** -H values: unix:///path or tcp://host:port (default unix:///var/run/berth.sock). */
  hosts?: string[]
  /** OCI runtime binary (default runc). */
  runtime?: string
  /** The container monitor binary (default: the one built next to this package). */
  shimPath?: string
  /** --insecure-registry: registries (host, host:port or CIDR) reached over plain HTTP; loopback ones always are. */
  insecureRegistries?: string[]
  /** The default bridge network's Linux bridge (default berth0; never docker0). */
  defaultBridge?: string
  /** --bip: the default bridge's gateway address and prefix, e.g. 10.88.0.1/16. */
  bip?: string
  /** --default-address-pool: base/size pairs for networks created without a subnet. */
  defaultAddressPools?: Array<{ base: string, size: number }>
  /** Prefix of this engine's iptables chains, bridges and veths (≤ 6 characters; default BERTH). */
  networkPrefix?: string
  /** --iptables=false: leave the firewall alone. */
  iptables?: boolean
  /** --icc=false: no traffic between containers on the default bridge. */
  icc?: boolean
  /** --userland-proxy (default true): a forwarder holds each published port besides DNAT; false: DNAT only. */
  userlandProxy?: boolean
  /** --init-path: the init binary `docker run --init` runs (default: docker-init, else tini-static, found in PATH). */
  initPath?: string
  /** The host's resolver configuration containers' DNS derives from (default /etc/resolv.conf). */
  resolvConf?: string
  /** Limit on a build context (uncompressed tar bytes; default 8 GiB). */
  buildContextLimit?: number
  /**
   * TLS for the TCP listeners (PEM file paths): --tlscert/--tlskey, --tlscacert; `verify` (--tlsverify, the
   * default when a CA is given) requires client certificates signed by that CA.
   */
  tls?: { cert: string, key: string, ca?: string, verify?: boolean }
  /** Listen on a non-loopback TCP address without TLS (refused otherwise). */
  allowInsecureTcp?: boolean
}

import { DEFAULT_DATA_ROOT, DEFAULT_SOCKET } from './defaults.js'

export { DEFAULT_DATA_ROOT, DEFAULT_SOCKET }

const ALL_CAPS = ['CAP_CHOWN', 'CAP_DAC_OVERRIDE', 'CAP_DAC_READ_SEARCH', 'CAP_FOWNER', 'CAP_FSETID', 'CAP_KILL',
  'CAP_SETGID', 'CAP_SETUID', 'CAP_SETPCAP', 'CAP_LINUX_IMMUTABLE', 'CAP_NET_BIND_SERVICE', 'CAP_NET_BROADCAST',
  'CAP_NET_ADMIN', 'CAP_NET_RAW', 'CAP_IPC_LOCK', 'CAP_IPC_OWNER', 'CAP_SYS_MODULE', 'CAP_SYS_RAWIO', 'CAP_SYS_CHROOT',
  'CAP_SYS_PTRACE', 'CAP_SYS_PACCT', 'CAP_SYS_ADMIN', 'CAP_SYS_BOOT', 'CAP_SYS_NICE', 'CAP_SYS_RESOURCE',
  'CAP_SYS_TIME', 'CAP_SYS_TTY_CONFIG', 'CAP_MKNOD', 'CAP_LEASE', 'CAP_AUDIT_WRITE', 'CAP_AUDIT_CONTROL',
  'CAP_SETFCAP', 'CAP_MAC_OVERRIDE', 'CAP_MAC_ADMIN', 'CAP_SYSLOG', 'CAP_WAKE_ALARM', 'CAP_BLOCK_SUSPEND',
  'CAP_AUDIT_READ', 'CAP_PERFMON', 'CAP_BPF', 'CAP_CHECKPOINT_RESTORE'] as const

function packageRoot (): string {
  return fileURLToPath(new URL('../../../', import.meta.url))
}

async function which (bin: string): Promise<string> {
  if (bin.includes('/')) return bin
  for (const dir of (process.env.PATH ?? '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin').split(':').concat(['/usr/sbin', '/sbin'])) {
    try {
      await readFile(join(dir, bin), { flag: 'r' }).then(() => {}, (err: NodeJS.ErrnoException) => { if (err.code !== 'EISDIR') throw err })
      return join(dir, bin)
    } catch { /* next */ }
  }
  return bin
}

export class Engine {
  readonly dataRoot: string
  readonly execRoot: string
  readonly events = new EventBus()
  readonly api: ApiServer
  readonly images: ImageService
  containers!: ContainerService
  execs!: ExecService
  network!: NetworkService
  swarm?: SwarmManager
  volumes!: VolumeStore
  /** Sweeps blobs and layers no image references, after removals and at prune. */
  collector!: Collector
  private volumeApi!: VolumeApi
  system!: EngineSystem
  private list!: ContainerList
  private runc!: Runc
  private runtimeVersion = 'unknown'
  private readonly opts: EngineOptions
  private closed = false
  private distributionP?: Promise<Distribution>
  private readonly builds: EngineBuildBackend
  private readonly locks: DirLock[] = []

  constructor (opts: EngineOptions = {}) {
    this.opts = opts
    this.api = new ApiServer(opts.connectionLimits)
    this.dataRoot = resolve(opts.dataRoot ?? DEFAULT_DATA_ROOT)
    this.execRoot = resolve(opts.execRoot ?? join(this.dataRoot, 'run'))
    this.images = new ImageService({ dataRoot: this.dataRoot, events: this.events, usage: { containersUsingImage: (id) => this.containers.containersUsingImage(id) } })
    this.builds = new EngineBuildBackend({ images: this.images, containers: () => this.containers, distribution: async () => await this.distribution() })
  }

  get addresses (): ListenAddress[] { return this.api.addresses }

  async start (): Promise<void> {
    // the options are checked before anything is touched
    const addrs = (this.opts.hosts ?? [`unix://${DEFAULT_SOCKET}`]).map(parseHost)
    for (const a of addrs) {
      if (a.kind === 'tcp' && this.opts.tls === undefined && !isLoopbackAddress(a.host) && this.opts.allowInsecureTcp !== true) {
        throw invalidArgument(`refusing to listen on ${formatAddress(a)} without TLS: anyone who can reach it has root on this host. Use --tlsverify with --tlscacert, --tlscert and --tlskey, listen on a loopback address, or accept the risk with --allow-insecure-tcp`)
      }
    }
    await mkdir(this.dataRoot, { recursive: true, mode: PRIVATE_DIR })
    await mkdir(this.execRoot, { recursive: true, mode: PRIVATE_DIR })
    // before anything reads or repairs state: a second daemon on the same roots stops here, having touched nothing
    const locking = await Promise.allSettled([
      lockDirectory(this.dataRoot, 'data root'),
      ...(this.execRoot !== this.dataRoot ? [lockDirectory(this.execRoot, 'exec root')] : [])
    ])
    for (const l of locking) if (l.status === 'fulfilled') this.locks.push(l.value)
    const refused = locking.find((l): l is PromiseRejectedResult => l.status === 'rejected')
    if (refused !== undefined) throw refused.reason
    // Listening at once: /_ping answers as soon as the routes exist (the records read, the swarm's state known);
    // every other request waits until the boot is over (containers re-adopted, the host's networking reconciled)
    // and never sees a container half-recovered.
    let routed!: () => void
    let booted!: () => void
    let failed!: (err: unknown) => void
    const routesReady = new Promise<void>((resolve) => { routed = resolve })
    const bootDone = new Promise<void>((resolve, reject) => { booted = resolve; failed = reject })
    bootDone.catch(() => {})
    this.api.hold((path) => path === '/_ping' ? routesReady : bootDone)
    try {
      await this.listenAll(addrs)
      await this.boot(routed)
      booted()
      this.api.hold(null)
    } catch (err) {
      failed(unavailable(`the daemon failed to start: ${(err as Error).message}`))
      routed()
      throw err
    }
    log('engine ready: data root %s', this.dataRoot)
  }

  private async boot (routed: () => void): Promise<void> {
    // an earlier layout (world-traversable roots, readable specs and logs) is repaired before any state is read
    const modes = await secureEngineState(this.dataRoot, this.execRoot)
    if (modes.changed.length > 0) log('data root modes repaired: %d entries (%s)', modes.changed.length, modes.changed.slice(0, 5).join(', '))
    if (modes.refused.length > 0) log('data root modes not repairable: %s', modes.refused.join(', '))
    const runtimeBin = await which(this.opts.runtime ?? 'runc')
    this.runc = new Runc({ binary: runtimeBin, root: join(this.execRoot, 'runtime') })
    const runtimeVersion = this.runc.version()
    runtimeVersion.catch(() => {})
    const hostNofileHard = parseNofileHard(await readFile('/proc/self/limits', 'utf8').catch(() => ''))
    // --privileged and --cap-add ALL grant what this host can give (its bounding set may lack some)
    const allCaps = boundedCapabilities(ALL_CAPS, await readFile('/proc/self/status', 'utf8').catch(() => ''))
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
          return c === undefined ? null : await ResolverPeer.connect(c.stateDir).catch(() => null)
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
    const supervisor = new Supervisor({ shimPath: this.opts.shimPath ?? join(packageRoot(), 'dist', 'berth-shim'), runc: this.runc })
    this.volumes = new VolumeStore({ dataRoot: this.dataRoot, emit: (action, name, attrs) => { this.events.emit('volume', action, name, attrs) } })
    await this.volumes.init()
    this.volumeApi = new VolumeApi(this.volumes)
    const health = new HealthMonitor({
      probe: async (c, cmd, timeoutMs) => await this.execs.probe(c, cmd, timeoutMs),
      changed: (c, status) => {
        this.events.emit('container', `health_status: ${status}`, c.id, { ...c.rec.config.labels, image: c.rec.image, name: c.rec.name.slice(1) })
        c.emit('health', status)
      },
      save: async (c) => { await c.save() }
    })
    this.containers = new ContainerService({
      health,
      dataRoot: this.dataRoot,
      execRoot: this.execRoot,
      runc: this.runc,
      supervisor,
      runtimeName: this.opts.runtime ?? 'runc',
      images: this.images,
      events: this.events,
      hostNofileHard,
      allCaps,
      network: this.network,
      volumes: new ContainerVolumes(this.volumes),
      ...(this.opts.initPath !== undefined ? { initPath: this.opts.initPath } : {})
    })
    this.execs = new ExecService({ containers: this.containers, supervisor, events: this.events, allCaps })
    await this.containers.load()
    this.swarm = new SwarmManager({
      dataRoot: this.dataRoot,
      execRoot: this.execRoot,
      containers: taskContainers(this.containers, this.images),
      networks: taskNetworks(this.network),
      events: this.events,
      engineVersion: ENGINE_VERSION
    })
    const swarmToRun = await this.swarm.load()
    this.runtimeVersion = await runtimeVersion
    this.list = new ContainerList({ containers: this.containers, images: this.images })
    this.system = new EngineSystem({
      dataRoot: this.dataRoot,
      runtimeName: this.opts.runtime ?? 'runc',
      runtimeBinary: this.runc.binary,
      runtimeVersion: this.runtimeVersion,
      containers: this.containers,
      list: this.list,
      images: this.images,
      network: this.network,
      swarm: () => this.swarm,
      builds: this.builds,
      volumes: this.volumeApi,
      events: this.events
    })
    const swarm = this.swarm
    const imageApi = new ImageApi({
      images: this.images,
      events: this.events,
      containerCount: (id) => this.containers.containersUsingImage(id).length,
      distribution: async () => await this.distribution(),
      collect: async () => await this.collector.now()
    })
    const container = (ref: string): ContainerHandle => this.containers.get(ref)
    const holdRootfs = async (c: ContainerHandle): Promise<() => Promise<void>> => await this.containers.holdRootfs(c)
    const emit = (type: EventType, action: string, id: string, attrs: Record<string, string>): void => { this.events.emit(type, action, id, attrs) }
    // every route family: a table over the one method-only backend it needs
    const families: Array<Array<Route<ApiHandler>>> = [
      ...[swarmRoutes, nodeRoutes, serviceRoutes, taskRoutes, secretRoutes, configRoutes].map((routes) => routes(swarm)),
      systemRoutes(this.system),
      execRoutes(this.execs),
      containerRoutes(new ContainerApi({ containers: this.containers, list: this.list, events: this.events })),
      networkRoutes(new NetworkApi(this.network)),
      volumeRoutes(this.volumeApi),
      pluginRoutes(),
      commitRoutes(new ContainerCommit({
        container,
        withRootfs: async (c, fn) => await this.containers.withRootfs(c, fn),
        pause: async (id) => { await this.runc.pause(id) },
        resume: async (id) => { await this.runc.resume(id) },
        images: this.images,
        emit
      })),
      containerFileRoutes(new ContainerFiles({ container, holdRootfs, images: this.images, emit })),
      containerStatsRoutes(new ContainerStats({ container, pids: async (id) => await this.runc.ps(id) })),
      imageArchiveRoutes(imageApi),
      imageDistributionRoutes(imageApi),
      buildRoutes(new BuildApi({ backend: this.builds, tmpRoot: join(this.dataRoot, 'build'), contextLimit: this.opts.buildContextLimit ?? DEFAULT_CONTEXT_LIMIT })),
      imageRoutes(imageApi)
    ]
    for (const routes of families) this.api.addRoutes(routes)
    routed()
    // the host's networking and the containers at once; a container's network changes wait for the reconciliation
    await Promise.all([this.network.reconcileHost(), this.containers.recoverAll(), this.clearBuilds()])
    if (swarmToRun) swarm.recover()
  }

  private async listenAll (addrs: ListenAddress[]): Promise<void> {
    for (const addr of addrs) {
      if (addr.kind === 'unix') { await this.api.listen(addr); continue }
      const t = this.opts.tls
      if (t === undefined) { await this.api.listen(addr, { guard: tcpRequestGuard(addr.host) }); continue }
      const [cert, key, ca] = await Promise.all([readFile(t.cert), readFile(t.key), t.ca !== undefined ? readFile(t.ca) : undefined])
      const verify = t.verify !== false
      if (verify && ca === undefined) throw invalidArgument('--tlsverify needs a CA certificate (--tlscacert) to check clients against')
      await this.api.listen(addr, {
        tls: { cert, key, ...(ca !== undefined ? { ca } : {}), requestCert: verify, rejectUnauthorized: verify, minVersion: 'TLSv1.2' },
        guard: tcpRequestGuard(addr.host, certificateNames(cert))
      })
    }
  }

  /** Builds a crash interrupted: their COPY --from mounts unmounted, their directories removed. */
  private async clearBuilds (): Promise<void> {
    const dir = join(this.dataRoot, 'build')
    const mounts = [...await currentMounts()].filter((m) => m.startsWith(dir + '/')).sort().reverse()
    for (const merged of mounts) await unmountRootfs({ dir: '', merged, upper: '', work: '' }).catch((err: Error) => { log('unmount %s: %s', merged, err.message) })
    await rm(dir, { recursive: true, force: true }).catch((err: Error) => { log('removing %s: %s', dir, err.message) })
  }

  async close (): Promise<void> {
    if (this.closed) return
    this.closed = true
    this.events.close()
    await this.swarm?.close()
    await this.containers?.close()
    await this.network?.close()
    this.volumeApi?.close()
    await this.api.close()
    if (this.distributionP !== undefined) (await this.distributionP).close()
    await this.collector?.close()
    await this.images.content.close()
    for (const l of this.locks.splice(0).reverse()) await l.release()
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
      insecureRegistries: this.opts.insecureRegistries ?? []
    }))
    return await this.distributionP
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

/** Starts an engine and its listeners. */
export async function createEngine (opts: EngineOptions = {}): Promise<Engine> {
  const engine = new Engine(opts)
  try {
    await engine.start()
  } catch (err) {
    await engine.close().catch(() => {})
    throw err
  }
  return engine
}

