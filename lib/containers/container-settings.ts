// The container's settings as the record keeps them (camelCase, typed), decoded once at create from the normalised
// HostConfig (create-config.ts), family by family; the record keeps no HostConfig of its own. lib/api/containers/wire.ts
// writes the PascalCase HostConfig back from the families.
//
// Records written before the families (a PascalCase `hostConfig` in the record) are upgraded when they load
// (upgradeRecord): the same decoding from their stored HostConfig, which then leaves the record; the loader writes
// the new shape back at once (atomically, as every save).
import type { ContainerRecord, ContainerConfig, ContainerResources, RestartPolicy, LogConfig, DnsSettings, NamespaceSettings, ProcessSettings, DeviceSettings, Ulimit, DeviceMappingSetting, MountRequest, MountRequests, PortRequests, PortBindingRequest, UnappliedSettings, DeviceRequestSetting, HealthState, RunOptions } from './container.js'
import type { CreateConfig } from './create-config.js'
import { decodeLogConfig } from './log-config.js'
import { configOf, healthConfigOf } from './container-config.js'
import type { ResourceLimits } from './resource-checks.js'
import { invalidArgument } from '../errors.js'
import { decodeRunOptions, type RunInputs } from './run-options.js'
import type { BlkioDeviceLimit, BlkioDevices, HostFacts } from '../runtime/host-facts.js'
import { seccompChoice } from '../runtime/seccomp.js'
import { withCreateDefaults } from './create-defaults.js'
import { parseBind, type Mount } from '../volumes/mount-spec.js'

/** The typed settings of a record, from a normalised HostConfig. */
export type DecodedSettings = Pick<ContainerRecord, 'cgroupParent' | 'restartPolicy' | 'autoRemove' | 'log' | 'networkMode' | 'dns' | 'extraHosts' | 'resources' | 'blkio' |
'privileged' | 'capAdd' | 'capDrop' | 'readonlyRootfs' | 'shmSize' | 'consoleSize' | 'seccomp' | 'namespaces' | 'process' | 'devices' | 'mountRequests' | 'portRequests' | 'unapplied'>

function restartPolicyOf (hc: Record<string, unknown>): RestartPolicy {
  const rp = (hc.RestartPolicy ?? {}) as { Name?: string, MaximumRetryCount?: number }
  const name = rp.Name === undefined || rp.Name === '' ? 'no' : rp.Name
  return { name: name as RestartPolicy['name'], maximumRetryCount: rp.MaximumRetryCount ?? 0 }
}

function logConfigOf (hc: Record<string, unknown>): LogConfig {
  const lc = (hc.LogConfig ?? {}) as { Type?: string, Config?: Record<string, string> }
  const s = decodeLogConfig(lc)
  return { driver: s.driver, options: { ...(lc.Config ?? {}) }, maxSize: s.maxSize, maxFiles: s.maxFiles }
}

function strings (v: unknown): string[] { return Array.isArray(v) ? v.map(String) : [] }

function dnsOf (hc: Record<string, unknown>): DnsSettings {
  return { servers: strings(hc.Dns), search: strings(hc.DnsSearch), options: strings(hc.DnsOptions) }
}

function networkModeOf (hc: Record<string, unknown>): string {
  const mode = typeof hc.NetworkMode === 'string' ? hc.NetworkMode : ''
  return mode === '' || mode === 'default' ? 'bridge' : mode
}

function extraHostsOf (hc: Record<string, unknown>): string[] | null {
  return Array.isArray(hc.ExtraHosts) ? strings(hc.ExtraHosts) : null
}

const number = (v: unknown): number => typeof v === 'number' ? v : 0

function resourcesOf (hc: Record<string, unknown>): ContainerResources {
  const r: ContainerResources = {
    memory: number(hc.Memory),
    memorySwap: number(hc.MemorySwap),
    nanoCpus: number(hc.NanoCpus),
    cpuShares: number(hc.CpuShares),
    cpuQuota: number(hc.CpuQuota),
    cpuPeriod: number(hc.CpuPeriod),
    pidsLimit: typeof hc.PidsLimit === 'number' ? hc.PidsLimit : null
  }
  if (typeof hc.MemoryReservation === 'number') r.memoryReservation = hc.MemoryReservation
  if (typeof hc.BlkioWeight === 'number') r.blkioWeight = hc.BlkioWeight
  if (typeof hc.CpusetCpus === 'string') r.cpusetCpus = hc.CpusetCpus
  if (typeof hc.CpusetMems === 'string') r.cpusetMems = hc.CpusetMems
  return r
}

const stringsOrNull = (v: unknown): string[] | null => Array.isArray(v) ? strings(v) : null

function consoleSizeOf (hc: Record<string, unknown>): [number, number] {
  const v = hc.ConsoleSize
  return Array.isArray(v) ? [number(v[0]), number(v[1])] : [0, 0]
}

function privilegesOf (hc: Record<string, unknown>): Pick<DecodedSettings, 'privileged' | 'capAdd' | 'capDrop' | 'readonlyRootfs' | 'shmSize' | 'consoleSize' | 'seccomp'> {
  return {
    privileged: hc.Privileged === true,
    capAdd: stringsOrNull(hc.CapAdd),
    capDrop: stringsOrNull(hc.CapDrop),
    readonlyRootfs: hc.ReadonlyRootfs === true,
    shmSize: number(hc.ShmSize),
    consoleSize: consoleSizeOf(hc),
    seccomp: seccompChoice(Array.isArray(hc.SecurityOpt) ? strings(hc.SecurityOpt) : [])
  }
}

/** The value of a key the create body named (null included), mapped; undefined when it did not name it. */
function given<T> (v: unknown, map: (v: unknown) => T): T | null | undefined {
  return v === undefined ? undefined : v === null ? null : map(v)
}

const asString = (v: unknown): string => String(v)
const asStrings = (v: unknown): string[] => strings(v)
const asStringMap = (v: unknown): Record<string, string> => Object.fromEntries(Object.entries(v as Record<string, unknown>).map(([k, x]) => [k, x === null || x === undefined ? '' : String(x)]))
const str = (v: unknown, dflt: string): string => typeof v === 'string' ? v : dflt

/** Leaves out the fields whose value is undefined (keys the create body did not name). */
function named<T extends object> (o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T
}

function namespacesOf (hc: Record<string, unknown>): NamespaceSettings {
  return named({
    pidMode: given(hc.PidMode, asString),
    ipcMode: str(hc.IpcMode, 'private'),
    utsMode: given(hc.UTSMode, asString),
    usernsMode: given(hc.UsernsMode, asString),
    cgroupnsMode: str(hc.CgroupnsMode, 'host'),
    cgroup: str(hc.Cgroup, ''),
    // ('': the daemon's default, named at create)
    runtime: str(hc.Runtime, ''),
    isolation: str(hc.Isolation, '')
  })
}

function ulimitsOf (v: unknown): Ulimit[] {
  return (v as Array<{ Name?: unknown, Hard?: unknown, Soft?: unknown } | null>).map((u) => ({ name: str(u?.Name, ''), hard: number(u?.Hard), soft: number(u?.Soft) }))
}

function processOf (hc: Record<string, unknown>): ProcessSettings {
  return named({
    securityOpt: given(hc.SecurityOpt, asStrings),
    groupAdd: given(hc.GroupAdd, asStrings),
    oomScoreAdj: given(hc.OomScoreAdj, number),
    init: given(hc.Init, (v) => v === true),
    maskedPaths: given(hc.MaskedPaths, asStrings),
    readonlyPaths: given(hc.ReadonlyPaths, asStrings),
    tmpfs: given(hc.Tmpfs, asStringMap),
    ulimits: given(hc.Ulimits, ulimitsOf),
    sysctls: given(hc.Sysctls, asStringMap),
    memorySwappiness: given(hc.MemorySwappiness, number),
    oomKillDisable: given(hc.OomKillDisable, (v) => v === true)
  })
}

function deviceMappingsOf (v: unknown): DeviceMappingSetting[] {
  return (v as Array<{ PathOnHost?: unknown, PathInContainer?: unknown, CgroupPermissions?: unknown } | null>).map((d) => ({
    pathOnHost: str(d?.PathOnHost, ''), pathInContainer: str(d?.PathInContainer, ''), cgroupPermissions: str(d?.CgroupPermissions, '')
  }))
}

function deviceRequestsOf (v: unknown): DeviceRequestSetting[] {
  return (v as Array<{ Driver?: unknown, Count?: unknown, DeviceIDs?: unknown, Capabilities?: unknown, Options?: unknown } | null>).map((r) => ({
    driver: str(r?.Driver, ''),
    count: number(r?.Count),
    deviceIds: Array.isArray(r?.DeviceIDs) ? strings(r?.DeviceIDs) : null,
    capabilities: Array.isArray(r?.Capabilities) ? (r?.Capabilities as unknown[]).map(strings) : null,
    options: r?.Options !== null && typeof r?.Options === 'object' ? asStringMap(r.Options) : null
  }))
}

function devicesOf (hc: Record<string, unknown>): DeviceSettings {
  return named({ devices: given(hc.Devices, deviceMappingsOf), cgroupRules: given(hc.DeviceCgroupRules, asStrings), requests: given(hc.DeviceRequests, deviceRequestsOf) })
}

/** Copies the fields `pairs` names ([wire key, record field]) that `o` has, under their record names. */
export function renamed<T> (o: unknown, pairs: ReadonlyArray<readonly [string, string]>, map: (field: string, v: unknown) => unknown = (_f, v) => v): T {
  const src = (o ?? {}) as Record<string, unknown>
  const out: Record<string, unknown> = {}
  for (const [wire, field] of pairs) if (src[wire] !== undefined) out[field] = map(field, src[wire])
  return out as T
}

/** HostConfig.Mounts' fields: wire name, record name (lib/api/containers/wire.ts writes them back with the same tables). */
export const MOUNT_FIELDS = [['Type', 'type'], ['Source', 'source'], ['Target', 'target'], ['ReadOnly', 'readOnly'], ['Consistency', 'consistency'],
  ['BindOptions', 'bindOptions'], ['VolumeOptions', 'volumeOptions'], ['ImageOptions', 'imageOptions'], ['TmpfsOptions', 'tmpfsOptions']] as const
export const BIND_OPTION_FIELDS = [['Propagation', 'propagation'], ['NonRecursive', 'nonRecursive'], ['CreateMountpoint', 'createMountpoint'],
  ['ReadOnlyNonRecursive', 'readOnlyNonRecursive'], ['ReadOnlyForceRecursive', 'readOnlyForceRecursive']] as const
export const VOLUME_OPTION_FIELDS = [['NoCopy', 'noCopy'], ['Labels', 'labels'], ['Subpath', 'subpath'], ['DriverConfig', 'driverConfig']] as const
export const DRIVER_FIELDS = [['Name', 'name'], ['Options', 'options']] as const
export const IMAGE_OPTION_FIELDS = [['Subpath', 'subpath']] as const
export const TMPFS_OPTION_FIELDS = [['SizeBytes', 'sizeBytes'], ['Mode', 'mode'], ['Options', 'options']] as const

/** The fields `pairs` names ([wire key, record field]) that `o` has, under their wire names. */
export function wireNamed (o: object, pairs: ReadonlyArray<readonly [string, string]>, map: (field: string, v: unknown) => unknown = (_f, v) => v): Record<string, unknown> {
  const src = o as Record<string, unknown>
  const out: Record<string, unknown> = {}
  for (const [wire, field] of pairs) if (src[field] !== undefined) out[wire] = map(field, src[field])
  return out
}

/** A typed HostConfig.Mounts entry in the API's shape (inspect shows it; lib/volumes parses it at create). */
export function mountRequestWire (m: MountRequest): Record<string, unknown> {
  return wireNamed(m, MOUNT_FIELDS, (field, v) => {
    if (v === null) return null
    switch (field) {
      case 'bindOptions': return wireNamed(v as object, BIND_OPTION_FIELDS)
      case 'volumeOptions': return wireNamed(v as object, VOLUME_OPTION_FIELDS, (f, x) => f === 'driverConfig' && x !== null ? wireNamed(x as object, DRIVER_FIELDS) : x)
      case 'imageOptions': return wireNamed(v as object, IMAGE_OPTION_FIELDS)
      case 'tmpfsOptions': return wireNamed(v as object, TMPFS_OPTION_FIELDS)
      default: return v
    }
  })
}

function mountRequestOf (m: unknown): MountRequest {
  return renamed<MountRequest>(m, MOUNT_FIELDS, (field, v) => {
    if (v === null) return null
    switch (field) {
      case 'bindOptions': return renamed(v, BIND_OPTION_FIELDS)
      case 'volumeOptions': return renamed(v, VOLUME_OPTION_FIELDS, (f, x) => f === 'driverConfig' && x !== null ? renamed(x, DRIVER_FIELDS) : x)
      case 'imageOptions': return renamed(v, IMAGE_OPTION_FIELDS)
      case 'tmpfsOptions': return renamed(v, TMPFS_OPTION_FIELDS)
      default: return v
    }
  })
}

function mountRequestsOf (hc: Record<string, unknown>): MountRequests {
  return named({
    binds: Array.isArray(hc.Binds) ? strings(hc.Binds) : null,
    volumesFrom: Array.isArray(hc.VolumesFrom) ? strings(hc.VolumesFrom) : null,
    volumeDriver: given(hc.VolumeDriver, asString),
    mounts: given(hc.Mounts, (v) => (v as unknown[]).map(mountRequestOf))
  })
}

function portBindingsOf (v: unknown): PortRequests['portBindings'] {
  const out: PortRequests['portBindings'] = {}
  for (const [port, list] of Object.entries((v ?? {}) as Record<string, unknown>)) {
    out[port] = Array.isArray(list)
      ? list.map((b: { HostIp?: unknown, HostPort?: unknown } | null): PortBindingRequest => ({ hostIp: str(b?.HostIp, ''), hostPort: str(b?.HostPort, '') }))
      : null
  }
  return out
}

function portRequestsOf (hc: Record<string, unknown>): PortRequests {
  return named({ portBindings: portBindingsOf(hc.PortBindings), links: given(hc.Links, asStrings), publishAllPorts: given(hc.PublishAllPorts, (v) => v === true) })
}

/** The unapplied fields: wire name, record name. */
export const UNAPPLIED_FIELDS = [['ContainerIDFile', 'containerIdFile'], ['Annotations', 'annotations'], ['StorageOpt', 'storageOpt'],
  ['KernelMemory', 'kernelMemory'], ['KernelMemoryTCP', 'kernelMemoryTCP'], ['CpuRealtimePeriod', 'cpuRealtimePeriod'],
  ['CpuRealtimeRuntime', 'cpuRealtimeRuntime'], ['CpuCount', 'cpuCount'], ['CpuPercent', 'cpuPercent'], ['IOMaximumIOps', 'ioMaximumIOps'],
  ['IOMaximumBandwidth', 'ioMaximumBandwidth']] as const

function unappliedOf (hc: Record<string, unknown>): UnappliedSettings {
  return renamed<UnappliedSettings>(hc, UNAPPLIED_FIELDS, (_f, v) => v !== null && typeof v === 'object' ? asStringMap(v) : v)
}

function blkioList (v: unknown, key: 'rate' | 'weight'): BlkioDeviceLimit[] | null {
  if (!Array.isArray(v)) return null
  return (v as Array<{ Path?: unknown, Rate?: unknown, Weight?: unknown }>).map((d) => ({ path: String(d.Path ?? ''), [key]: Number(key === 'rate' ? d.Rate : d.Weight) }))
}

/** The per-device block I/O lists: HostConfig's name, the record's, and what each entry carries. */
export const BLKIO_LISTS = [
  ['BlkioWeightDevice', 'weightDevice', 'weight'],
  ['BlkioDeviceReadBps', 'readBps', 'rate'],
  ['BlkioDeviceWriteBps', 'writeBps', 'rate'],
  ['BlkioDeviceReadIOps', 'readIOps', 'rate'],
  ['BlkioDeviceWriteIOps', 'writeIOps', 'rate']
] as const

function blkioOf (hc: Record<string, unknown>): BlkioDevices {
  return Object.fromEntries(BLKIO_LISTS.map(([wire, field, key]) => [field, blkioList(hc[wire], key)])) as unknown as BlkioDevices
}

/** The families the run options are decoded from (run-options.ts), from a normalised HostConfig. */
export function runInputsOf (hc: Record<string, unknown>): RunInputs {
  return { namespaces: namespacesOf(hc), process: processOf(hc), devices: devicesOf(hc), networkMode: networkModeOf(hc), resources: resourcesOf(hc) }
}

/** The resource limits of a HostConfig or an update body (resource-checks.ts checks them). */
export function limitsOf (hc: Record<string, unknown>): ResourceLimits {
  return { resources: resourcesOf(hc), blkio: blkioOf(hc) }
}

/** The typed families of a create's HostConfig but its log driver (checked at create, with the daemon's default). */
export type RequestedSettings = Omit<DecodedSettings, 'log'>

/** Decodes the typed families of a normalised HostConfig but LogConfig (which may fail: the create checks it later). */
export function requestedSettingsOf (hc: Record<string, unknown>): RequestedSettings {
  return {
    restartPolicy: restartPolicyOf(hc),
    autoRemove: hc.AutoRemove === true,
    networkMode: networkModeOf(hc),
    dns: dnsOf(hc),
    extraHosts: extraHostsOf(hc),
    resources: resourcesOf(hc),
    blkio: blkioOf(hc),
    ...privilegesOf(hc),
    namespaces: namespacesOf(hc),
    process: processOf(hc),
    devices: devicesOf(hc),
    mountRequests: mountRequestsOf(hc),
    portRequests: portRequestsOf(hc),
    unapplied: unappliedOf(hc),
    ...(typeof hc.CgroupParent === 'string' ? { cgroupParent: hc.CgroupParent } : {})
  }
}

/** Binds, parsed (unparsable ones dropped): the mounts of a record from before mounts were resolved, or of an engine without lib/volumes. */
export function bindMountsOf (binds: string[]): Mount[] {
  const out: Mount[] = []
  for (const b of binds) {
    try { out.push(parseBind(b)) } catch { /* never ran */ }
  }
  return out
}

/** What create resolves the mounts from (lib/volumes), but the --volumes-from containers' mounts: their names. */
export interface MountRequestInputs { binds: string[], mounts: unknown[], volumesFrom: string[], volumeDriver: string, tmpfs: string[] }

export function mountInputsOf (hc: Record<string, unknown>): MountRequestInputs {
  const mounts = hc.Mounts ?? []
  if (!Array.isArray(mounts)) throw invalidArgument('json: cannot unmarshal into Go struct field HostConfig.Mounts of type []mount.Mount')
  return {
    binds: strings(hc.Binds),
    mounts,
    volumesFrom: strings(hc.VolumesFrom),
    volumeDriver: typeof hc.VolumeDriver === 'string' ? hc.VolumeDriver : '',
    tmpfs: Object.keys((hc.Tmpfs ?? {}) as Record<string, unknown>)
  }
}

/** An object with Engine API (PascalCase) keys: kept as given by an earlier version. */
const pascalCase = (o: unknown): boolean => o !== null && typeof o === 'object' && Object.keys(o).some((k) => /^[A-Z]/.test(k))

/**
 * A record as it was read from disk, possibly written before some family had its typed fields: those kept the
 * create body's HostConfig (normalised, PascalCase) in the record.
 */
export type StoredRecord = Omit<ContainerRecord, keyof DecodedSettings | 'config' | 'run' | 'mounts'> & Partial<DecodedSettings> & {
  config: ContainerConfig | CreateConfig
  run?: Partial<RunOptions>
  mounts?: Mount[]
  hostConfig?: Record<string, unknown>
}

/**
 * Fills the typed families a stored record lacks from its stored HostConfig, which then leaves the record. The run
 * options are decoded again from that HostConfig: what a record lacks (an option newer than the record) comes from
 * there, what it has stays. `upgraded`: the record was in an earlier shape (the loader writes it back).
 */
export function upgradeRecord (stored: StoredRecord, host: HostFacts, onError: (err: unknown) => void): { rec: ContainerRecord, upgraded: boolean } {
  const hc = stored.hostConfig ?? {}
  const upgraded = stored.hostConfig !== undefined || 'Tty' in stored.config || (stored.state.health as { Status?: unknown } | undefined)?.Status !== undefined ||
    pascalCase((stored.config as ContainerConfig).healthcheck)
  delete stored.hostConfig
  const rec = stored as ContainerRecord
  let run: Partial<RunOptions> = {}
  try { run = decodeRunOptions(runInputsOf(hc), host).options } catch (err) { onError(err) }
  rec.run = { ...run, ...stored.run } as RunOptions
  if (stored.privileged === undefined) Object.assign(rec, privilegesOf(hc))
  rec.mounts ??= bindMountsOf(strings(hc.Binds))
  // State.Health in its Engine API shape: decoded
  const h = stored.state.health as unknown as { Status?: HealthState['status'], FailingStreak?: number, Log?: Array<{ Start: string, End: string, ExitCode: number, Output: string }> } | undefined
  if (h?.Status !== undefined) {
    rec.state.health = { status: h.Status, failingStreak: h.FailingStreak ?? 0, log: (h.Log ?? []).map((r) => ({ start: r.Start, end: r.End, exitCode: r.ExitCode, output: r.Output })) }
  }
  // the Config in its Engine API shape (PascalCase keys): decoded
  if ('Tty' in stored.config) rec.config = configOf(stored.config)
  // Config.Healthcheck as given (PascalCase keys): decoded
  if (pascalCase(rec.config.healthcheck)) rec.config.healthcheck = healthConfigOf(rec.config.healthcheck)
  if (stored.restartPolicy === undefined) rec.restartPolicy = restartPolicyOf(hc)
  if (stored.autoRemove === undefined) rec.autoRemove = hc.AutoRemove === true
  if (stored.log === undefined) rec.log = logConfigOf(hc)
  if (stored.networkMode === undefined) rec.networkMode = networkModeOf(hc)
  if (stored.dns === undefined) rec.dns = dnsOf(hc)
  if (stored.extraHosts === undefined) rec.extraHosts = extraHostsOf(hc)
  if (stored.resources === undefined) rec.resources = resourcesOf(hc)
  if (stored.blkio === undefined) rec.blkio = blkioOf(hc)
  if (stored.cgroupParent === undefined && typeof hc.CgroupParent === 'string') rec.cgroupParent = hc.CgroupParent
  if (stored.namespaces === undefined) rec.namespaces = namespacesOf(hc)
  if (stored.process === undefined) rec.process = processOf(hc)
  if (stored.devices === undefined) rec.devices = devicesOf(hc)
  if (stored.mountRequests === undefined) {
    rec.mountRequests = mountRequestsOf(hc)
    rec.portRequests = portRequestsOf(hc)
    rec.unapplied = unappliedOf(hc)
    // the OOM settings joined the process family with these
    Object.assign(rec.process, named({ memorySwappiness: given(hc.MemorySwappiness, number), oomKillDisable: given(hc.OomKillDisable, (v) => v === true) }))
  }
  // a record decoded from its Engine API HostConfig gets what a create writes into a new one
  if (Object.keys(hc).length > 0) {
    const d = withCreateDefaults(rec)
    rec.shmSize = d.shmSize
    rec.namespaces = d.namespaces
    rec.process = d.process
  }
  return { rec, upgraded }
}
