// The Engine: owns the stores, the runtime, the event bus and the API server; implements the route backends.
import type { ConnectionLimits } from '../http/limits.js'
import { mkdir, readFile, rm } from 'node:fs/promises'
import os from 'node:os'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { createRequire } from 'node:module'
import { ApiServer } from './api-server.js'
import { parseHost, formatAddress, type ListenAddress } from '../http/listen.js'
import { tcpRequestGuard, certificateNames, isLoopbackAddress } from '../http/tcp-guard.js'
import { EventBus, type EventFilters, type EventSubscription } from '../events/event-bus.js'
import { ContainerService } from './container-service.js'
import { ExecService } from './exec-service.js'
import { ImageService } from '../image/image-service.js'
import { Runc } from '../runtime/runc.js'
import { Supervisor } from '../runtime/supervisor.js'
import { parseNofileHard } from '../runtime/oci-spec.js'
import { systemRoutes } from './routes/system.js'
import { containerRoutes } from './routes/containers.js'
import { execRoutes } from './routes/exec.js'
import { imageRoutes } from './routes/images.js'
import { containerFileRoutes } from './routes/container-files.js'
import { commitRoutes } from './routes/commit.js'
import { networkRoutes } from './routes/networks.js'
import { NetworkService } from '../network/network-service.js'
import { NetworkApi } from '../network/network-api.js'
import { SwarmManager } from '../swarm/manager.js'
import { swarmRoutes, nodeRoutes, serviceRoutes, taskRoutes, secretRoutes, configRoutes } from './routes/swarm.js'
import { taskContainers, taskNetworks } from './swarm-containers.js'
import { VolumeStore } from '../volumes/volume-store.js'
import { VolumeApi } from '../volumes/volume-api.js'
import { ContainerVolumes } from '../volumes/container-volumes.js'
import { volumeRoutes } from './routes/volumes.js'
import { ContainerFiles } from './container-files.js'
import { ContainerStats } from './container-stats.js'
import { imageArchiveRoutes } from './routes/image-archive.js'
import { imageDistributionRoutes, postImagesPull } from './routes/image-distribution.js'
import { buildRoutes, DEFAULT_CONTEXT_LIMIT } from './routes/build.js'
import { EngineBuildBackend } from './build-backend.js'
import { buildCacheRecords } from '../build/build-cache.js'
import { toBuildCacheItem } from './build-wire.js'
import { currentMounts, unmountRootfs } from '../runtime/rootfs.js'
import type { Distribution } from '../distribution/distribution.js'
import type { ContainerBackend, ExecBackend, ListOptions, SystemBackend, VersionInfo } from './backend.js'
import type { ContainerHandle } from './container-handle.js'
import { toContainerSummary, containerSummaryParts } from './container-wire.js'
import { toImageSummary } from './image-wire.js'
import { chainIds } from '../image/layer-store.js'
import { isRunning } from './container.js'
import type { Filters } from '../http/query.js'
import type { ApiContext } from '../http/api-context.js'
import { notFound, invalidArgument } from '../errors.js'
import { API_VERSION, ENGINE_VERSION } from './api-version.js'
import { ZERO_TIME } from '../util/time.js'
import { logger } from '../log.js'
import { compileRegexp, type LinearRegexp } from '../util/linear-regexp.js'
import { lockDirectory, type DirLock } from '../util/dir-lock.js'
import { dirSize } from '../util/du.js'
import { mountMatches } from '../volumes/mount-spec.js'
import { boundedCapabilities } from '../runtime/capabilities.js'
import { HealthMonitor } from './health.js'

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
  /** --init-path: the init binary `docker run --init` runs (default: docker-init, else tini-static, found in PATH). */
  initPath?: string
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

const LIST_OPEN = Buffer.from('[')
const LIST_COMMA = Buffer.from(',')
const LIST_CLOSE = Buffer.from(']\n')
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

function berthVersion (): string {
  try { return (createRequire(import.meta.url)('../../../package.json') as { version: string }).version } catch { return '0.0.0' }
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

export class Engine implements SystemBackend, ContainerBackend, ExecBackend {
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
  private volumeApi!: VolumeApi
  private runc!: Runc
  private runtimeVersion = 'unknown'
  private readonly opts: EngineOptions
  private closed = false
  private distributionP?: Promise<Distribution>
  private distributionLoaded?: Distribution
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
    await mkdir(this.dataRoot, { recursive: true, mode: 0o711 })
    await mkdir(this.execRoot, { recursive: true, mode: 0o700 })
    // before anything reads or repairs state: a second daemon on the same roots stops here, having touched nothing
    const locking = await Promise.allSettled([
      lockDirectory(this.dataRoot, 'data root'),
      ...(this.execRoot !== this.dataRoot ? [lockDirectory(this.execRoot, 'exec root')] : [])
    ])
    for (const l of locking) if (l.status === 'fulfilled') this.locks.push(l.value)
    const refused = locking.find((l): l is PromiseRejectedResult => l.status === 'rejected')
    if (refused !== undefined) throw refused.reason
    const runtimeBin = await which(this.opts.runtime ?? 'runc')
    this.runc = new Runc({ binary: runtimeBin, root: join(this.execRoot, 'runtime') })
    this.runtimeVersion = await this.runc.version()
    const hostNofileHard = parseNofileHard(await readFile('/proc/self/limits', 'utf8').catch(() => ''))
    // --privileged and --cap-add ALL grant what this host can give (its bounding set may lack some)
    const allCaps = boundedCapabilities(ALL_CAPS, await readFile('/proc/self/status', 'utf8').catch(() => ''))
    await this.images.init()
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
      ...(this.opts.defaultBridge !== undefined ? { defaultBridge: this.opts.defaultBridge } : {}),
      ...(this.opts.bip !== undefined ? { bip: this.opts.bip } : {}),
      ...(this.opts.defaultAddressPools !== undefined ? { defaultAddressPools: this.opts.defaultAddressPools } : {}),
      ...(this.opts.networkPrefix !== undefined ? { prefix: this.opts.networkPrefix } : {}),
      ...(this.opts.iptables !== undefined ? { iptables: this.opts.iptables } : {}),
      ...(this.opts.icc !== undefined ? { icc: this.opts.icc } : {}),
      swarmActive: () => this.swarmState() === 'active'
    })
    await this.network.init()
    const supervisor = new Supervisor({ shimPath: this.opts.shimPath ?? join(packageRoot(), 'dist', 'berth-shim'), runc: this.runc })
    this.volumes = new VolumeStore({ dataRoot: this.dataRoot, emit: (action, name, attrs) => { this.events.emit('volume', action, name, attrs) } })
    await this.volumes.init()
    this.volumeApi = new VolumeApi(this.volumes)
    const health = new HealthMonitor({
      probe: async (c, cmd, timeoutMs) => await this.execs.probe(c, cmd, timeoutMs),
      changed: (c, status) => { this.events.emit('container', `health_status: ${status}`, c.id, { ...c.rec.config.Labels, image: c.rec.image, name: c.rec.name.slice(1) }) },
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
    await this.containers.init()
    this.swarm = new SwarmManager({
      dataRoot: this.dataRoot,
      execRoot: this.execRoot,
      containers: taskContainers(this.containers, this.images),
      networks: taskNetworks(this.network),
      events: this.events,
      engineVersion: ENGINE_VERSION
    })
    await this.swarm.init()
    for (const routes of [swarmRoutes, nodeRoutes, serviceRoutes, taskRoutes, secretRoutes, configRoutes]) this.api.addRoutes(routes(this.swarm))
    this.api.addRoutes(systemRoutes(this))
    this.api.addRoutes(execRoutes(this))
    this.api.addRoutes(containerRoutes(this))
    this.api.addRoutes(networkRoutes(new NetworkApi(this.network)))
    this.api.addRoutes(volumeRoutes({
      listVolumes: async (f) => await this.volumeApi.listVolumes(f),
      inspectVolume: async (name) => await this.volumeApi.inspectVolume(name),
      createVolume: async (body) => await this.volumeApi.createVolume(body),
      removeVolume: async (name, force) => { await this.volumeApi.removeVolume(name, force) },
      pruneVolumes: async (f, anonymousOnly) => {
        const r = await this.volumeApi.pruneVolumes(f, anonymousOnly)
        this.events.emit('volume', 'prune', '', { reclaimed: String(r.SpaceReclaimed) })
        return r
      }
    }))
    this.api.addRoutes(commitRoutes({ containers: this.containers, images: this.images, runc: this.runc, events: this.events }))
    this.api.addRoutes(containerFileRoutes(
      new ContainerFiles({ containers: this.containers, images: this.images, events: this.events }),
      new ContainerStats({ containers: this.containers, runc: this.runc })
    ))
    this.api.addRoutes(imageArchiveRoutes({ images: this.images, events: this.events }))
    this.api.addRoutes(imageDistributionRoutes(async () => await this.distribution()))
    await this.clearBuilds()
    this.api.addRoutes(buildRoutes({ backend: this.builds, tmpRoot: join(this.dataRoot, 'build'), contextLimit: this.opts.buildContextLimit ?? DEFAULT_CONTEXT_LIMIT }))
    this.api.addRoutes(imageRoutes({
      images: this.images,
      containerCount: (id) => this.containers.containersUsingImage(id).length,
      pull: async (ctx: ApiContext) => { await this.pull(ctx) },
      busy: () => this.distributionBusy()
    }))
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
    log('engine ready: data root %s', this.dataRoot)
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
    await this.api.close()
    if (this.distributionP !== undefined) (await this.distributionP).close()
    await this.images.content.close()
    for (const l of this.locks.splice(0).reverse()) await l.release()
  }

  /**
   * The registry client side (pull, push, login, remote inspect), loaded on first use: an engine that never talks to
   * a registry does not carry its code, its HTTPS stack or its connection pools.
   */
  async distribution (): Promise<Distribution> {
    this.distributionP ??= import('../distribution/distribution.js').then((m) => this.distributionLoaded = new m.Distribution({
      images: this.images,
      events: this.events,
      dataRoot: this.dataRoot,
      insecureRegistries: this.opts.insecureRegistries ?? []
    }))
    return await this.distributionP
  }

  /** Chains pulls in flight hold; null (collect nothing) while the registry client is still loading. */
  private distributionBusy (): ReadonlySet<string> | null {
    if (this.distributionP === undefined) return new Set()
    return this.distributionLoaded?.pulling() ?? null
  }

  // ---- SystemBackend --------------------------------------------------------------------------------------------

  swarmState (): string { return this.swarm?.active === true ? 'active' : 'inactive' }

  versionInfo (): VersionInfo {
    return {
      berthVersion: berthVersion(),
      gitCommit: 'berth',
      nodeVersion: process.version,
      kernelVersion: os.release(),
      arch: process.arch === 'x64' ? 'amd64' : process.arch,
      buildTime: ZERO_TIME,
      runtimeName: this.opts.runtime ?? 'runc',
      runtimeVersion: this.runtimeVersion
    }
  }

  async systemInfo (): Promise<Record<string, unknown>> {
    const all = this.containers.all()
    const running = all.filter((c) => c.rec.state.status === 'running').length
    const paused = all.filter((c) => c.rec.state.status === 'paused').length
    const osRelease = await readFile('/etc/os-release', 'utf8').catch(() => '')
    const pretty = /PRETTY_NAME="?([^"\n]+)"?/.exec(osRelease)?.[1] ?? 'Linux'
    const versionId = /VERSION_ID="?([^"\n]+)"?/.exec(osRelease)?.[1] ?? ''
    const cgroup2 = await readFile('/sys/fs/cgroup/cgroup.controllers', 'utf8').then(() => true, () => false)
    const runtime = this.opts.runtime ?? 'runc'
    return {
      ID: 'BERTH:' + this.dataRoot,
      Containers: all.length,
      ContainersRunning: running,
      ContainersPaused: paused,
      ContainersStopped: all.length - running - paused,
      Images: this.images.store.all().length,
      Driver: 'overlay2',
      DriverStatus: [['Backing Filesystem', 'extfs'], ['Supports d_type', 'true']],
      Plugins: { Volume: ['local'], Network: ['bridge', 'host', 'null'], Authorization: null, Log: ['json-file'] },
      MemoryLimit: true,
      SwapLimit: false,
      CpuCfsPeriod: true,
      CpuCfsQuota: true,
      CPUShares: true,
      CPUSet: true,
      PidsLimit: true,
      IPv4Forwarding: (await readFile('/proc/sys/net/ipv4/ip_forward', 'utf8').catch(() => '0')).trim() === '1',
      Debug: false,
      NFd: 0,
      OomKillDisable: false,
      NGoroutines: 0,
      SystemTime: new Date().toISOString(),
      LoggingDriver: 'json-file',
      CgroupDriver: 'cgroupfs',
      CgroupVersion: cgroup2 ? '2' : '1',
      NEventsListener: 0,
      KernelVersion: os.release(),
      OperatingSystem: pretty,
      OSVersion: versionId,
      OSType: 'linux',
      Architecture: os.machine(),
      IndexServerAddress: 'https://index.docker.io/v1/',
      RegistryConfig: { IndexConfigs: {}, InsecureRegistryCIDRs: ['127.0.0.0/8'], Mirrors: [] },
      NCPU: os.cpus().length,
      MemTotal: os.totalmem(),
      GenericResources: null,
      DockerRootDir: this.dataRoot,
      HttpProxy: '',
      HttpsProxy: '',
      NoProxy: '',
      Name: os.hostname(),
      Labels: [],
      ExperimentalBuild: false,
      ServerVersion: ENGINE_VERSION,
      Runtimes: { [runtime]: { path: this.runc.binary } },
      DefaultRuntime: runtime,
      Swarm: this.swarm?.infoSection() ?? { NodeID: '', NodeAddr: '', LocalNodeState: 'inactive', ControlAvailable: false, Error: '', RemoteManagers: null },
      LiveRestoreEnabled: true,
      Isolation: '',
      InitBinary: '',
      ContainerdCommit: { ID: '' },
      RuncCommit: { ID: this.runtimeVersion },
      InitCommit: { ID: '' },
      SecurityOptions: ['name=seccomp,profile=builtin', 'name=cgroupns'],
      CDISpecDirs: [],
      DiscoveredDevices: [],
      Warnings: this.network.unavailable === '' ? [] : [`WARNING: containers get loopback only: ${this.network.unavailable}`],
      ApiVersion: API_VERSION
    }
  }

  async diskUsage (version: string, types: string[]): Promise<Record<string, unknown>> {
    const want = (t: string): boolean => types.length === 0 || types.includes(t)
    const out: Record<string, unknown> = {}
    if (want('image')) {
      // each layer once in LayersSize; an image's SharedSize is what it has in common with other images
      const sizes = new Map<string, number>()
      const users = new Map<string, number>()
      for (const img of this.images.store.all()) {
        const chains = chainIds(img.config.rootfs.diff_ids)
        for (let i = 0; i < chains.length; i++) {
          const c = chains[i] as string
          users.set(c, (users.get(c) ?? 0) + 1)
          if (!sizes.has(c)) sizes.set(c, await this.images.layerSize(c, img.config.rootfs.diff_ids[i] as string))
        }
      }
      let layers = 0
      for (const n of sizes.values()) layers += n
      out.LayersSize = layers
      out.Images = this.images.store.all().map((img) => {
        let shared = 0
        for (const c of new Set(chainIds(img.config.rootfs.diff_ids))) if ((users.get(c) ?? 0) > 1) shared += sizes.get(c) ?? 0
        return { ...toImageSummary(img, version, -1), SharedSize: shared, Containers: this.containers.containersUsingImage(img.id).length }
      })
    }
    if (want('container')) {
      const list: Array<Record<string, unknown>> = []
      for (const c of this.containers.all()) list.push(toContainerSummary(c, { size: true, sizes: await this.containerSizes(c) }))
      out.Containers = list
    }
    if (want('volume')) out.Volumes = await this.volumeApi.usage()
    if (want('build-cache')) out.BuildCache = buildCacheRecords(this.builds).map(toBuildCacheItem)
    return out
  }

  subscribeEvents (filters: EventFilters, sinceNs: bigint | undefined): EventSubscription {
    return this.events.subscribe(filters, sinceNs)
  }

  // ---- ContainerBackend -----------------------------------------------------------------------------------------

  async containerSizes (c: ContainerHandle): Promise<{ rw: number, rootfs: number }> {
    const rw = c.rec.rootfsKind === 'overlay' ? await dirSize(c.rootfs.upper) : await dirSize(c.rootfs.merged)
    const img = this.images.store.byId(c.rec.imageId)
    return { rw, rootfs: rw + (img?.size ?? 0) }
  }

  /** The list as JSON bytes (with the trailing newline dockerd's encoder writes). */
  async listContainers (o: ListOptions): Promise<Buffer> {
    let list = this.containers.all().sort((a, b) => b.createdMs - a.createdMs)
    const f = o.filters
    const status = f.get('status')
    for (const v of f.get('health') ?? []) if (!['starting', 'healthy', 'unhealthy', 'none'].includes(v)) throw invalidArgument(`Unrecognised filter value for health: ${v}`)
    const all = o.all || (o.limit > 0) || (status !== undefined && status.length > 0)
    if (!all) list = list.filter((c) => isRunning(c.rec))
    const regexps = new Map<string, LinearRegexp | null>()
    if (f.size > 0) list = list.filter((c) => matchContainer(c, f, (ref) => this.containers.find(ref), (ref) => { try { return this.images.store.lookup(ref).img.id } catch { return undefined } }, regexps))
    if (o.limit > 0) list = list.slice(0, o.limit)
    if (!o.size) {
      const now = Date.now()
      const parts: Buffer[] = [LIST_OPEN]
      for (let i = 0; i < list.length; i++) {
        if (i > 0) parts.push(LIST_COMMA)
        containerSummaryParts(list[i] as ContainerHandle, now, parts)
      }
      parts.push(LIST_CLOSE)
      return Buffer.concat(parts)
    }
    const out: Array<Record<string, unknown>> = []
    for (const c of list) out.push(toContainerSummary(c, { size: true, sizes: await this.containerSizes(c) }))
    return Buffer.from(JSON.stringify(out) + '\n')
  }

  emitAttach (c: ContainerHandle): void {
    this.events.emit('container', 'attach', c.id, { image: c.rec.image, name: c.rec.name.slice(1) })
  }

  async pruneContainers (filters: Filters): Promise<{ ContainersDeleted: string[], SpaceReclaimed: number }> {
    const deleted: string[] = []
    let space = 0
    for (const c of this.containers.all()) {
      if (isRunning(c.rec) || c.rec.state.status === 'removing') continue
      if (!matchContainer(c, new Map([...filters].filter(([k]) => k === 'label')), () => undefined, () => undefined)) continue
      const until = filters.get('until')?.[0]
      if (until !== undefined && Number(BigInt(c.rec.created) / 1_000_000_000n) > Number(until)) continue
      space += (await this.containerSizes(c)).rw
      await this.containers.remove(c.id, false, false)
      deleted.push(c.id)
    }
    return { ContainersDeleted: deleted, SpaceReclaimed: space }
  }

  // ---- images (pull arrives with the registry client) -------------------------------------------------------------

  async pull (ctx: ApiContext): Promise<void> {
    await postImagesPull(ctx, await this.distribution())
  }
}

/** A name filter's pattern; null when RE2 would refuse it (then it matches nothing, as in dockerd). */
function nameRegexp (pattern: string, cache: Map<string, LinearRegexp | null>): LinearRegexp | null {
  let re = cache.get(pattern)
  if (re === undefined) {
    try { re = compileRegexp(pattern.replace(/^\//, '')) } catch { re = null }
    cache.set(pattern, re)
  }
  return re
}

function matchContainer (c: ContainerHandle, f: Filters, findContainer: (ref: string) => ContainerHandle | undefined, imageId: (ref: string) => string | undefined, regexps = new Map<string, LinearRegexp | null>()): boolean {
  for (const [key, values] of f) {
    if (values.length === 0) continue
    const r = c.rec
    let ok: boolean
    switch (key) {
      case 'status': ok = values.includes(r.state.status); break
      case 'id': ok = values.some((v) => r.id.startsWith(v)); break
      // filters.Args.Match: an exact name, or Go's regexp (RE2, linear time here too); a bad pattern matches nothing
      case 'name': ok = values.some((v) => v === r.name || v === r.name.slice(1) || nameRegexp(v, regexps)?.test(r.name.slice(1)) === true); break
      case 'label': ok = values.every((v) => {
        const i = v.indexOf('=')
        return i === -1 ? r.config.Labels[v] !== undefined : r.config.Labels[v.slice(0, i)] === v.slice(i + 1)
      }); break
      case 'exited': ok = r.state.status === 'exited' && values.some((v) => Number(v) === r.state.exitCode); break
      case 'ancestor': ok = values.some((v) => v === r.image || imageId(v) === r.imageId || r.imageId.startsWith(v) || r.imageId.slice(7).startsWith(v)); break
      case 'before': { const o = findContainer(values[0] as string); if (o === undefined) throw notFound(`No such container: ${values[0] as string}`); ok = BigInt(r.created) < BigInt(o.rec.created); break }
      case 'since': { const o = findContainer(values[0] as string); if (o === undefined) throw notFound(`No such container: ${values[0] as string}`); ok = BigInt(r.created) > BigInt(o.rec.created); break }
      case 'is-task': ok = values.some((v) => (v === 'true') === (r.config.Labels['com.docker.swarm.task.id'] !== undefined)); break
      case 'volume': ok = values.some((v) => (r.mounts ?? []).some((m) => mountMatches(m, v))); break
      case 'network': ok = values.includes(r.hostConfig.NetworkMode as string); break
      case 'health': ok = values.includes(r.state.health?.Status ?? 'none'); break
      case 'expose': case 'publish': ok = values.some((v) => Object.keys(r.config.ExposedPorts ?? {}).some((p) => p === v || p.split('/')[0] === v)); break
      case 'isolation': ok = values.includes('default'); break
      default: ok = true
    }
    if (!ok) return false
  }
  return true
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

