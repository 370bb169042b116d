// Decoding a create body like Go does (case-insensitive keys, zero values as unset, Cmd as string or list) and
// merging it with the image config as dockerd does (daemon/commit.go merge).
import { invalidArgument } from '../errors.js'
import { checkCreateRequest } from './create-types.js'
import { checkRestartPolicy } from './resource-checks.js'

const CONFIG_KEYS = ['Hostname', 'Domainname', 'User', 'AttachStdin', 'AttachStdout', 'AttachStderr', 'ExposedPorts',
  'Tty', 'OpenStdin', 'StdinOnce', 'Env', 'Cmd', 'Healthcheck', 'ArgsEscaped', 'Image', 'Volumes', 'WorkingDir',
  'Entrypoint', 'NetworkDisabled', 'MacAddress', 'OnBuild', 'Labels', 'StopSignal', 'StopTimeout', 'Shell',
  'HostConfig', 'NetworkingConfig'] as const

export const HOST_CONFIG_KEYS = ['Binds', 'ContainerIDFile', 'LogConfig', 'NetworkMode', 'PortBindings', 'RestartPolicy',
  'AutoRemove', 'VolumeDriver', 'VolumesFrom', 'ConsoleSize', 'Annotations', 'CapAdd', 'CapDrop', 'CgroupnsMode', 'Dns',
  'DnsOptions', 'DnsSearch', 'ExtraHosts', 'GroupAdd', 'IpcMode', 'Cgroup', 'Links', 'OomScoreAdj', 'PidMode',
  'Privileged', 'PublishAllPorts', 'ReadonlyRootfs', 'SecurityOpt', 'StorageOpt', 'Tmpfs', 'UTSMode', 'UsernsMode',
  'ShmSize', 'Sysctls', 'Runtime', 'Isolation', 'CpuShares', 'Memory', 'NanoCpus', 'CgroupParent', 'BlkioWeight',
  'BlkioWeightDevice', 'BlkioDeviceReadBps', 'BlkioDeviceWriteBps', 'BlkioDeviceReadIOps', 'BlkioDeviceWriteIOps',
  'CpuPeriod', 'CpuQuota', 'CpuRealtimePeriod', 'CpuRealtimeRuntime', 'CpusetCpus', 'CpusetMems', 'Devices',
  'DeviceCgroupRules', 'DeviceRequests', 'KernelMemory', 'KernelMemoryTCP', 'MemoryReservation', 'MemorySwap', 'MemorySwappiness', 'OomKillDisable',
  'PidsLimit', 'Ulimits', 'CpuCount', 'CpuPercent', 'IOMaximumIOps', 'IOMaximumBandwidth', 'Mounts', 'MaskedPaths',
  'ReadonlyPaths', 'Init'] as const

/** Maps keys case-insensitively onto the canonical names; unknown keys are dropped (Go's json decoding). */
export function canonicalKeys (obj: Record<string, unknown>, keys: readonly string[]): Record<string, unknown> {
  const byLower = new Map(keys.map((k) => [k.toLowerCase(), k]))
  const out: Record<string, unknown> = {}
  for (const [k, v] of Object.entries(obj)) {
    const canon = byLower.get(k.toLowerCase())
    if (canon !== undefined && (out[canon] === undefined || k === canon)) out[canon] = v
  }
  return out
}

function str (v: unknown, field: string): string {
  if (v === undefined || v === null) return ''
  if (typeof v !== 'string') throw invalidArgument(`json: cannot unmarshal ${typeof v} into Go struct field Config.${field} of type string`)
  return v
}

function bool (v: unknown, field: string): boolean {
  if (v === undefined || v === null) return false
  if (typeof v !== 'boolean') throw invalidArgument(`json: cannot unmarshal ${typeof v} into Go struct field Config.${field} of type bool`)
  return v
}

/** Cmd/Entrypoint/Shell: a string becomes a one-element list; null stays null. */
export function strSlice (v: unknown, field: string): string[] | null {
  if (v === undefined || v === null) return null
  if (typeof v === 'string') return [v]
  if (Array.isArray(v) && v.every((x) => typeof x === 'string')) return v as string[]
  throw invalidArgument(`json: cannot unmarshal ${typeof v} into Go struct field Config.${field} of type strslice.StrSlice`)
}

function strMap (v: unknown, field: string): Record<string, string> {
  if (v === undefined || v === null) return {}
  if (typeof v !== 'object' || Array.isArray(v)) throw invalidArgument(`json: cannot unmarshal into Go struct field Config.${field} of type map[string]string`)
  const out: Record<string, string> = {}
  for (const [k, val] of Object.entries(v as Record<string, unknown>)) out[k] = String(val)
  return out
}

function objMap (v: unknown): Record<string, object> | undefined {
  if (v === undefined || v === null || typeof v !== 'object' || Array.isArray(v)) return undefined
  const out: Record<string, object> = {}
  for (const k of Object.keys(v as Record<string, unknown>)) out[k] = {}
  return Object.keys(out).length === 0 ? undefined : out
}

/** A create body's Config as the Engine API names it (normalised); the record keeps it decoded (container-settings.ts). */
export interface CreateConfig {
  Hostname: string
  Domainname: string
  User: string
  AttachStdin: boolean
  AttachStdout: boolean
  AttachStderr: boolean
  ExposedPorts?: Record<string, object>
  Tty: boolean
  OpenStdin: boolean
  StdinOnce: boolean
  Env: string[]
  Cmd: string[] | null
  Healthcheck?: unknown
  ArgsEscaped?: boolean
  Image: string
  Volumes: Record<string, object> | null
  WorkingDir: string
  Entrypoint: string[] | null
  NetworkDisabled?: boolean
  OnBuild: string[] | null
  Labels: Record<string, string>
  StopSignal?: string
  StopTimeout?: number
  Shell?: string[]
}

export interface DecodedCreate {
  config: CreateConfig
  hostConfig: Record<string, unknown>
  /** HostConfig.LogConfig as the body gave it (before the defaults: the daemon's driver may apply). */
  rawLogConfig: unknown
}

export function decodeCreateBody (body: Record<string, unknown>): DecodedCreate {
  // every field's JSON kind first, with dockerd's wording; the decoding below then only meets well-typed values
  checkCreateRequest(body)
  const b = canonicalKeys(body, CONFIG_KEYS)
  // Go decodes the Config embedded in the request only when one of its fields is there (`{}` leaves it nil)
  if (Object.keys(b).every((k) => k === 'HostConfig' || k === 'NetworkingConfig')) throw invalidArgument('config cannot be empty in order to create a container')
  const env = b.Env === undefined || b.Env === null ? [] : b.Env
  if (!Array.isArray(env) || !env.every((e) => typeof e === 'string')) throw invalidArgument('json: cannot unmarshal into Go struct field Config.Env of type []string')
  const config: CreateConfig = {
    Hostname: str(b.Hostname, 'Hostname'),
    Domainname: str(b.Domainname, 'Domainname'),
    User: str(b.User, 'User'),
    AttachStdin: bool(b.AttachStdin, 'AttachStdin'),
    AttachStdout: bool(b.AttachStdout, 'AttachStdout'),
    AttachStderr: bool(b.AttachStderr, 'AttachStderr'),
    Tty: bool(b.Tty, 'Tty'),
    OpenStdin: bool(b.OpenStdin, 'OpenStdin'),
    StdinOnce: bool(b.StdinOnce, 'StdinOnce'),
    Env: env as string[],
    Cmd: strSlice(b.Cmd, 'Cmd'),
    Image: str(b.Image, 'Image'),
    Volumes: objMap(b.Volumes) ?? null,
    WorkingDir: str(b.WorkingDir, 'WorkingDir'),
    Entrypoint: strSlice(b.Entrypoint, 'Entrypoint'),
    OnBuild: null,
    Labels: strMap(b.Labels, 'Labels')
  }
  const ports = objMap(b.ExposedPorts)
  if (ports !== undefined) config.ExposedPorts = ports
  if (b.Healthcheck !== undefined && b.Healthcheck !== null) config.Healthcheck = b.Healthcheck
  if (typeof b.StopSignal === 'string' && b.StopSignal !== '') config.StopSignal = b.StopSignal
  if (typeof b.StopTimeout === 'number') config.StopTimeout = b.StopTimeout
  const shell = strSlice(b.Shell, 'Shell')
  if (shell !== null) config.Shell = shell
  checkWorkingDir(config.WorkingDir)
  const rawHc = b.HostConfig
  if (rawHc !== undefined && rawHc !== null && (typeof rawHc !== 'object' || Array.isArray(rawHc))) throw invalidArgument('json: cannot unmarshal into Go struct field of type container.HostConfig')
  const given = canonicalKeys((rawHc ?? {}) as Record<string, unknown>, HOST_CONFIG_KEYS)
  return { config, hostConfig: normalizeHostConfig(given), rawLogConfig: given.LogConfig }
}

/** Config.WorkingDir: '' (the image's) or an absolute path (checked as the body is decoded, and again for a typed request). */
export function checkWorkingDir (dir: string): void {
  if (dir !== '' && !dir.startsWith('/')) throw invalidArgument(`the working directory '${dir}' is invalid, it needs to be an absolute path`)
}

function num (v: unknown, field: string): number {
  if (v === undefined || v === null) return 0
  if (typeof v !== 'number' || !Number.isFinite(v)) throw invalidArgument(`json: cannot unmarshal ${typeof v} into Go struct field HostConfig.${field} of type int64`)
  return v
}

/** Fills HostConfig with the defaults dockerd reports and validates what the runtime uses. */
export function normalizeHostConfig (hc: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...hc }
  const binds = hc.Binds ?? null
  if (binds !== null && (!Array.isArray(binds) || !binds.every((x) => typeof x === 'string'))) throw invalidArgument('invalid Binds: expected a list of strings')
  out.Binds = binds
  let mode = typeof hc.NetworkMode === 'string' ? hc.NetworkMode : ''
  if (mode === '' || mode === 'default') mode = 'bridge'
  out.NetworkMode = mode
  const lc = (hc.LogConfig ?? {}) as { Type?: string, Config?: Record<string, string> }
  out.LogConfig = { Type: lc.Type === undefined || lc.Type === '' ? 'json-file' : lc.Type, Config: lc.Config ?? {} }
  const rp = (hc.RestartPolicy ?? {}) as { Name?: string, MaximumRetryCount?: number }
  checkRestartPolicy(rp.Name ?? '', rp.MaximumRetryCount ?? 0)
  const rpName = rp.Name === undefined || rp.Name === '' ? 'no' : rp.Name
  out.RestartPolicy = { Name: rpName, MaximumRetryCount: rp.MaximumRetryCount ?? 0 }
  out.AutoRemove = hc.AutoRemove === true
  if (out.AutoRemove === true && rpName !== 'no') throw invalidArgument("can't create 'AutoRemove' container with restart policy")
  for (const f of ['Memory', 'MemorySwap', 'NanoCpus', 'CpuShares', 'CpuQuota', 'CpuPeriod', 'ShmSize'] as const) out[f] = num(hc[f], f)
  out.PidsLimit = hc.PidsLimit === undefined || hc.PidsLimit === null ? null : num(hc.PidsLimit, 'PidsLimit')
  // 0 and negative limits mean unlimited: dockerd keeps no limit (inspect shows null)
  if (out.PidsLimit !== null && (out.PidsLimit as number) <= 0) out.PidsLimit = null
  if ((out.ShmSize as number) < 0) throw invalidArgument('SHM size can not be less than 0')
  // the resource limits' checks are dockerd's, in resource-checks.ts (create and update share them)
  // dockerd's default swap: as much again as the memory limit
  if ((out.Memory as number) > 0 && (out.MemorySwap as number) === 0) out.MemorySwap = 2 * (out.Memory as number)
  out.Privileged = hc.Privileged === true
  out.ReadonlyRootfs = hc.ReadonlyRootfs === true
  out.PortBindings = hc.PortBindings ?? {}
  out.CapAdd = hc.CapAdd ?? null
  out.CapDrop = hc.CapDrop ?? null
  out.ConsoleSize = Array.isArray(hc.ConsoleSize) ? hc.ConsoleSize : [0, 0]
  out.ExtraHosts = hc.ExtraHosts ?? null
  out.Dns = hc.Dns ?? []
  out.DnsOptions = hc.DnsOptions ?? []
  out.DnsSearch = hc.DnsSearch ?? []
  out.VolumesFrom = hc.VolumesFrom ?? null
  out.Mounts = hc.Mounts ?? undefined
  if (typeof hc.Isolation === 'string' && hc.Isolation !== '' && hc.Isolation !== 'default') throw invalidArgument(`Invalid isolation: "${hc.Isolation}" - linux only supports 'default'`)
  // kept as given: '' (unset) or 'default' (dockerd shows what the client sent)
  out.Isolation = typeof hc.Isolation === 'string' ? hc.Isolation : ''
  out.IpcMode = typeof hc.IpcMode === 'string' && hc.IpcMode !== '' ? hc.IpcMode : 'private'
  out.Cgroup = hc.Cgroup ?? ''
  out.CgroupnsMode = hc.CgroupnsMode ?? 'host'
  out.Runtime = typeof hc.Runtime === 'string' && hc.Runtime !== '' ? hc.Runtime : 'runc'
  return out
}

export const VALID_NAME = /^\/?[a-zA-Z0-9][a-zA-Z0-9_.-]+$/

export function validateName (name: string): string {
  if (!VALID_NAME.test(name)) throw invalidArgument(`Invalid container name (${name}), only [a-zA-Z0-9][a-zA-Z0-9_.-] are allowed`)
  return name.startsWith('/') ? name : `/${name}`
}

const ADJECTIVES = ['brave', 'calm', 'eager', 'fancy', 'gentle', 'happy', 'jolly', 'keen', 'lucid', 'merry', 'nimble',
  'quiet', 'sharp', 'swift', 'tender', 'vivid', 'witty', 'zealous', 'bold', 'clever', 'daring', 'elated', 'focused', 'silly']
const NOUNS = ['anchor', 'beacon', 'cove', 'dock', 'estuary', 'ferry', 'galley', 'harbor', 'inlet', 'jetty', 'keel',
  'lagoon', 'mooring', 'narrows', 'oar', 'pier', 'quay', 'rudder', 'schooner', 'tide', 'wharf', 'yawl', 'buoy', 'hull']

export function randomName (taken: (name: string) => boolean): string {
  for (let i = 0; i < 100; i++) {
    const a = ADJECTIVES[Math.floor(Math.random() * ADJECTIVES.length)] as string
    const n = NOUNS[Math.floor(Math.random() * NOUNS.length)] as string
    const name = i < 10 ? `/${a}_${n}` : `/${a}_${n}${i}`
    if (!taken(name)) return name
  }
  return `/${ADJECTIVES[0] as string}_${Date.now().toString(36)}`
}
