// The Engine API's container shapes (PascalCase), produced from internal records in one place.
import { formatRfc3339Nano } from '../../stream/log-record.js'
import { humanDuration } from '../../util/time.js'
import type { ContainerHandle } from '../../containers/container-handle.js'
import { toContainerNetworkView, type ContainerNetworkView } from './network-view.js'
import type { WaitResult } from '../../containers/container-service.js'
import type { ContainerRecord, ContainerResources, NamespaceSettings, ProcessSettings, DeviceSettings, MountRequests, PortRequests, UnappliedSettings, HealthConfig, HealthState } from '../../containers/container.js'
import type { Change } from '../../image/diff.js'
import type { BlkioDeviceLimit, BlkioDevices } from '../../runtime/host-facts.js'
import { BLKIO_LISTS, UNAPPLIED_FIELDS, mountRequestWire, wireNamed } from '../../containers/container-settings.js'
import { HEALTH_FIELDS } from '../../containers/container-config.js'
import { versionAtLeast } from '../api-version.js'
import { HOST_CONFIG_KEYS } from '../../containers/create-config.js'

function nsTime (s: string): string { return formatRfc3339Nano(BigInt(s)) }

function shellQuote (arg: string): string {
  if (arg !== '' && /^[a-zA-Z0-9_./=:,@%+-]+$/.test(arg)) return arg
  return `'${arg.replace(/'/g, "'\\''")}'`
}

export const nsToMs = (ns: string): number => Number(BigInt(ns) / 1_000_000n)

/** dockerd's Status column. `refMs` (the start or finish time the text counts from) may be given precomputed. */
export function statusString (c: ContainerHandle, nowMs = Date.now(), refMs?: number): string {
  const st = c.rec.state
  const since = (ns: string): number => nowMs - (refMs ?? nsToMs(ns))
  switch (st.status) {
    case 'created': return 'Created'
    case 'running': return `Up ${humanDuration(since(st.startedAt))}${st.health === undefined ? '' : st.health.status === 'starting' ? ' (health: starting)' : ` (${st.health.status})`}`
    case 'paused': return `Up ${humanDuration(since(st.startedAt))} (Paused)`
    case 'restarting': return `Restarting (${st.exitCode}) ${humanDuration(since(st.finishedAt))} ago`
    case 'removing': return 'Removal In Progress'
    case 'dead': return 'Dead'
    case 'exited': return st.finishedAt === '0' ? 'Exited' : `Exited (${st.exitCode}) ${humanDuration(since(st.finishedAt))} ago`
  }
}

/** The container's networking spelled as dockerd does, or undefined without a network service. */
function networkViewOf (c: ContainerHandle): ContainerNetworkView | undefined {
  const v = c.networkView?.()
  return v === undefined ? undefined : toContainerNetworkView(v, c.rec.config.exposedPorts ?? [])
}

function ports (c: ContainerHandle): Array<Record<string, unknown>> {
  const view = networkViewOf(c)
  if (view !== undefined) return view.summaryPorts
  const out: Array<Record<string, unknown>> = []
  for (const p of c.rec.config.exposedPorts ?? []) {
    const [port = '0', type = 'tcp'] = p.split('/')
    out.push({ PrivatePort: Number(port), Type: type })
  }
  return out
}

const EMPTY_ENDPOINT = {
  IPAMConfig: null, Links: null, Aliases: null, MacAddress: '', DriverOpts: null, GwPriority: 0, NetworkID: '',
  EndpointID: '', Gateway: '', IPAddress: '', IPPrefixLen: 0, IPv6Gateway: '', GlobalIPv6Address: '',
  GlobalIPv6PrefixLen: 0, DNSNames: null
}

function networks (c: ContainerHandle): Record<string, unknown> {
  const view = networkViewOf(c)
  if (view !== undefined) return view.networks
  const mode = c.rec.networkMode
  return { [mode === 'bridge' ? 'bridge' : mode]: { ...EMPTY_ENDPOINT } }
}

/** Inspect's and the list's Mounts, as dockerd fills them. */
export function mounts (c: ContainerHandle): Array<Record<string, unknown>> {
  return (c.rec.mounts ?? []).map((m) => {
    if (m.type === 'volume') {
      return { Type: 'volume', Name: m.source, Source: m.path ?? '', Destination: m.destination, Driver: m.driver, Mode: m.mode, RW: m.rw, Propagation: '' }
    }
    if (m.type === 'tmpfs') return { Type: 'tmpfs', Source: '', Destination: m.destination, Mode: '', RW: m.rw, Propagation: '' }
    return { Type: 'bind', Source: m.source, Destination: m.destination, Mode: m.mode, RW: m.rw, Propagation: m.propagation }
  })
}

export function toContainerSummary (c: ContainerHandle, opts: { size: boolean, sizes?: { rw: number, rootfs: number } }): Record<string, unknown> {
  const r = c.rec
  const out: Record<string, unknown> = {
    Id: r.id,
    Names: [r.name],
    Image: r.image,
    ImageID: r.imageId,
    Command: [r.path, ...r.args].map(shellQuote).join(' '),
    Created: Math.floor(c.createdMs / 1000),
    Ports: ports(c),
    Labels: r.config.labels,
    State: r.state.status,
    Status: statusString(c),
    HostConfig: { NetworkMode: r.networkMode === 'bridge' ? 'default' : r.networkMode },
    NetworkSettings: { Networks: networks(c) },
    Mounts: mounts(c)
  }
  if (opts.size && opts.sizes !== undefined) { out.SizeRw = opts.sizes.rw; out.SizeRootFs = opts.sizes.rootfs }
  return out
}

/** The limits under their HostConfig names (the same names, capitalised); unset optional ones left out. */
function resourcesWire (r: ContainerResources): Record<string, unknown> {
  return Object.fromEntries(Object.entries(r).filter(([, v]) => v !== undefined).map(([k, v]) => [k.charAt(0).toUpperCase() + k.slice(1), v]))
}

const blkioDevicesWire = (list: BlkioDeviceLimit[] | null): unknown[] | null =>
  list === null ? null : list.map((d) => ({ Path: d.path, ...(d.rate !== undefined ? { Rate: d.rate } : {}), ...(d.weight !== undefined ? { Weight: d.weight } : {}) }))

/** The per-device block I/O lists given at create (lists not given left out). */
function blkioWire (b: BlkioDevices): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  for (const [wire, field] of BLKIO_LISTS) {
    const list = b[field]
    if (list !== null) out[wire] = blkioDevicesWire(list)
  }
  return out
}

/** State.Health as dockerd writes it. */
function healthWire (h: HealthState): Record<string, unknown> {
  return { Status: h.status, FailingStreak: h.failingStreak, Log: h.log.map((r) => ({ Start: r.start, End: r.end, ExitCode: r.exitCode, Output: r.output })) }
}

/** A list or map as given, or null; undefined (not named at create) stays undefined and is left out. */
const mapped = <T, W> (v: T | null | undefined, f: (v: T) => W): W | null | undefined => v === undefined ? undefined : v === null ? null : f(v)

function namespacesWire (n: NamespaceSettings): Record<string, unknown> {
  return { PidMode: n.pidMode, IpcMode: n.ipcMode, UTSMode: n.utsMode, UsernsMode: n.usernsMode, CgroupnsMode: n.cgroupnsMode, Cgroup: n.cgroup, Runtime: n.runtime, Isolation: n.isolation }
}

function processWire (p: ProcessSettings): Record<string, unknown> {
  return {
    SecurityOpt: p.securityOpt,
    GroupAdd: p.groupAdd,
    OomScoreAdj: p.oomScoreAdj,
    Init: p.init,
    MaskedPaths: p.maskedPaths,
    ReadonlyPaths: p.readonlyPaths,
    Tmpfs: p.tmpfs,
    Ulimits: mapped(p.ulimits, (l) => l.map((u) => ({ Name: u.name, Hard: u.hard, Soft: u.soft }))),
    Sysctls: p.sysctls,
    // (-1 is the CLI's "unset", which dockerd stores as no setting)
    MemorySwappiness: p.memorySwappiness === -1 ? null : p.memorySwappiness,
    // (dockerd writes false into a container that names none)
    OomKillDisable: p.oomKillDisable ?? false
  }
}

/**
 * The zero values of the keys Go's HostConfig always has (no omitempty): a key the create did not name is there
 * with its zero, as dockerd's inspect has it (`HostConfig.PidMode`, `.SecurityOpt`, `.CpusetCpus` for every client);
 * the omitempty ones (Init, Tmpfs, Sysctls, Mounts, Runtime, StorageOpt, Annotations, KernelMemory…) stay out.
 */
const GO_ZERO: Readonly<Record<string, unknown>> = {
  Binds: null, ContainerIDFile: '', VolumeDriver: '', VolumesFrom: null, CapAdd: null, CapDrop: null, Dns: null,
  DnsOptions: null, DnsSearch: null, ExtraHosts: null, GroupAdd: null, IpcMode: '', Cgroup: '', Links: null,
  OomScoreAdj: 0, PidMode: '', PublishAllPorts: false, SecurityOpt: null, UTSMode: '', UsernsMode: '', Isolation: '',
  CpuShares: 0, Memory: 0, NanoCpus: 0, CgroupParent: '', BlkioWeight: 0, BlkioWeightDevice: null,
  BlkioDeviceReadBps: null, BlkioDeviceWriteBps: null, BlkioDeviceReadIOps: null, BlkioDeviceWriteIOps: null,
  CpuPeriod: 0, CpuQuota: 0, CpuRealtimePeriod: 0, CpuRealtimeRuntime: 0, CpusetCpus: '', CpusetMems: '',
  Devices: null, DeviceCgroupRules: null, DeviceRequests: null, MemoryReservation: 0, MemorySwap: 0,
  MemorySwappiness: null, PidsLimit: null, Ulimits: null, CpuCount: 0, CpuPercent: 0, IOMaximumIOps: 0,
  IOMaximumBandwidth: 0, MaskedPaths: null, ReadonlyPaths: null
}

function devicesWire (d: DeviceSettings): Record<string, unknown> {
  return {
    Devices: mapped(d.devices, (l) => l.map((m) => ({ PathOnHost: m.pathOnHost, PathInContainer: m.pathInContainer, CgroupPermissions: m.cgroupPermissions }))),
    DeviceCgroupRules: d.cgroupRules,
    DeviceRequests: mapped(d.requests, (l) => l.map((r) => ({ Driver: r.driver, Count: r.count, DeviceIDs: r.deviceIds, Capabilities: r.capabilities, Options: r.options })))
  }
}

function mountRequestsWire (m: MountRequests): Record<string, unknown> {
  return { Binds: m.binds, VolumesFrom: m.volumesFrom, VolumeDriver: m.volumeDriver, Mounts: mapped(m.mounts, (l) => l.map(mountRequestWire)) }
}

function portRequestsWire (p: PortRequests): Record<string, unknown> {
  const bindings = Object.fromEntries(Object.entries(p.portBindings).map(([port, list]) => [port, mapped(list, (l) => l.map((b) => ({ HostIp: b.hostIp, HostPort: b.hostPort })))]))
  return { PortBindings: bindings, Links: p.links, PublishAllPorts: p.publishAllPorts }
}

const unappliedWire = (u: UnappliedSettings): Record<string, unknown> => wireNamed(u, UNAPPLIED_FIELDS)

/**
 * HostConfig's order as the docker CLI sends it (Go's), Runtime last: the CLI leaves it out when empty and create adds
 * it after the rest, so that inspect repeats a CLI-made container's HostConfig in the bytes it always had.
 */
const WIRE_ORDER = [...HOST_CONFIG_KEYS.filter((k) => k !== 'Runtime'), 'Runtime']

/** The given fields in the wire order, those not named at create left out. */
function inHostConfigOrder (fields: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  for (const k of WIRE_ORDER) if (fields[k] !== undefined) out[k] = fields[k]
  return out
}

/** Inspect's HostConfig, from the record's typed families (the keys not named at create with Go's zero values). */
export function hostConfigWire (r: ContainerRecord): Record<string, unknown> {
  const out: Record<string, unknown> = {
    ...inHostConfigOrder({ ...namespacesWire(r.namespaces), ...processWire(r.process), ...devicesWire(r.devices), ...mountRequestsWire(r.mountRequests), ...portRequestsWire(r.portRequests), ...unappliedWire(r.unapplied) }),
    RestartPolicy: { Name: r.restartPolicy.name, MaximumRetryCount: r.restartPolicy.maximumRetryCount },
    AutoRemove: r.autoRemove,
    LogConfig: { Type: r.log.driver, Config: r.log.options },
    NetworkMode: r.networkMode,
    Dns: r.dns.servers,
    DnsSearch: r.dns.search,
    DnsOptions: r.dns.options,
    ExtraHosts: r.extraHosts,
    ...resourcesWire(r.resources),
    ...blkioWire(r.blkio),
    ...(r.cgroupParent !== undefined ? { CgroupParent: r.cgroupParent } : {}),
    Privileged: r.privileged,
    CapAdd: r.capAdd,
    CapDrop: r.capDrop,
    ReadonlyRootfs: r.readonlyRootfs,
    ShmSize: r.shmSize,
    ConsoleSize: r.consoleSize
  }
  for (const [k, zero] of Object.entries(GO_ZERO)) if (out[k] === undefined) out[k] = zero
  return out
}

/** Config.Healthcheck as given (durations in ns). */
const healthConfigWire = (h: HealthConfig): Record<string, unknown> => wireNamed(h, HEALTH_FIELDS)

const emptyObjects = (keys: string[]): Record<string, object> => Object.fromEntries(keys.map((k) => [k, {}]))

/** Inspect's Config, from the record's. */
export function configWire (r: ContainerRecord): Record<string, unknown> {
  const c = r.config
  return {
    Hostname: c.hostname !== '' ? c.hostname : r.id.slice(0, 12),
    Domainname: c.domainname,
    User: c.user,
    AttachStdin: c.attachStdin,
    AttachStdout: c.attachStdout,
    AttachStderr: c.attachStderr,
    ...(c.exposedPorts !== undefined ? { ExposedPorts: emptyObjects(c.exposedPorts) } : {}),
    Tty: c.tty,
    OpenStdin: c.openStdin,
    StdinOnce: c.stdinOnce,
    Env: c.env,
    Cmd: c.cmd,
    ...(c.healthcheck !== undefined ? { Healthcheck: healthConfigWire(c.healthcheck) } : {}),
    Image: c.image,
    Volumes: c.volumes === null ? null : emptyObjects(c.volumes),
    WorkingDir: c.workingDir,
    Entrypoint: c.entrypoint,
    ...(c.macAddress !== undefined ? { MacAddress: c.macAddress } : {}),
    OnBuild: c.onBuild,
    Labels: c.labels,
    ...(c.stopSignal !== undefined ? { StopSignal: c.stopSignal } : {}),
    ...(c.stopTimeout !== undefined ? { StopTimeout: c.stopTimeout } : {}),
    ...(c.shell !== undefined ? { Shell: c.shell } : {})
  }
}

export function toContainerInspect (c: ContainerHandle, version: string, sizes?: { rw: number, rootfs: number }): Record<string, unknown> {
  const r = c.rec
  const st = r.state
  const cfg = configWire(r)
  const netSettings: Record<string, unknown> = {
    Bridge: '', SandboxID: '', SandboxKey: '', Ports: {}, HairpinMode: false, LinkLocalIPv6Address: '',
    LinkLocalIPv6PrefixLen: 0, SecondaryIPAddresses: null, SecondaryIPv6Addresses: null, EndpointID: '', Gateway: '',
    GlobalIPv6Address: '', GlobalIPv6PrefixLen: 0, IPAddress: '', IPPrefixLen: 0, IPv6Gateway: '', MacAddress: '',
    Networks: networks(c)
  }
  const view = networkViewOf(c)
  if (view !== undefined) {
    netSettings.Ports = view.ports
    netSettings.SandboxKey = view.sandboxKey
    netSettings.SandboxID = view.sandboxKey === '' ? '' : c.id
    for (const k of ['EndpointID', 'Gateway', 'IPAddress', 'IPPrefixLen', 'MacAddress'] as const) {
      if (view.primary[k] !== undefined) netSettings[k] = view.primary[k]
    }
    if (view.primary.IPAddress !== undefined && view.primary.IPAddress !== '') netSettings.Bridge = ''
  }
  if (versionAtLeast(version, '1.52')) {
    for (const k of ['Bridge', 'HairpinMode', 'LinkLocalIPv6Address', 'LinkLocalIPv6PrefixLen', 'SecondaryIPAddresses', 'SecondaryIPv6Addresses', 'EndpointID', 'Gateway', 'GlobalIPv6Address', 'GlobalIPv6PrefixLen', 'IPAddress', 'IPPrefixLen', 'IPv6Gateway', 'MacAddress']) delete netSettings[k]
  }
  const out: Record<string, unknown> = {
    Id: r.id,
    Created: nsTime(r.created),
    Path: r.path,
    Args: r.args,
    State: {
      Status: st.status,
      Running: st.status === 'running' || st.status === 'paused',
      Paused: st.status === 'paused',
      Restarting: st.status === 'restarting',
      OOMKilled: st.oomKilled,
      Dead: st.status === 'dead',
      Pid: st.pid,
      ExitCode: st.exitCode,
      Error: st.error,
      StartedAt: nsTime(st.startedAt),
      FinishedAt: nsTime(st.finishedAt),
      ...(st.health !== undefined ? { Health: healthWire(st.health) } : {})
    },
    Image: r.imageId,
    ResolvConfPath: `${c.dir}/resolv.conf`,
    HostnamePath: `${c.dir}/hostname`,
    HostsPath: `${c.dir}/hosts`,
    LogPath: c.logPath,
    Name: r.name,
    RestartCount: r.restartCount,
    Driver: r.rootfsKind === 'overlay' ? 'overlay2' : 'vfs',
    Platform: 'linux',
    MountLabel: '',
    ProcessLabel: '',
    AppArmorProfile: '',
    ExecIDs: null,
    HostConfig: hostConfigWire(r),
    GraphDriver: {
      Name: r.rootfsKind === 'overlay' ? 'overlay2' : 'vfs',
      Data: r.rootfsKind === 'overlay' ? { MergedDir: c.rootfs.merged, UpperDir: c.rootfs.upper, WorkDir: c.rootfs.work } : { Dir: c.rootfs.merged }
    },
    Mounts: mounts(c),
    Config: cfg,
    NetworkSettings: netSettings
  }
  if (sizes !== undefined) { out.SizeRw = sizes.rw; out.SizeRootFs = sizes.rootfs }
  return out
}

/** POST /containers/{id}/wait's reply (Error null when the run had none, as dockerd). */
export function toWaitReply (r: WaitResult): { StatusCode: number, Error: { Message: string } | null } {
  return r.error === undefined ? { Error: null, StatusCode: r.exitCode } : { StatusCode: r.exitCode, Error: { Message: r.error } }
}

/** GET /containers/{id}/changes: null for no change, as dockerd. */
export function toChangesWire (changes: Change[]): Array<{ Path: string, Kind: number }> | null {
  if (changes.length === 0) return null
  return changes.map((ch) => ({ Path: ch.path, Kind: ch.kind === 'modify' ? 0 : ch.kind === 'add' ? 1 : 2 }))
}
