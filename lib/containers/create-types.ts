// The Go types of a container create request (container.CreateRequest: Config, HostConfig, NetworkingConfig), as
// data, and a check that a decoded JSON body fits them. A value of the wrong JSON kind gets dockerd's own error text
// (`json: cannot unmarshal string into Go struct field HostConfig.HostConfig.Dns of type []string`): the struct that
// holds the field, the field's path from the request's root, the Go type. null is every type's zero value; unknown
// keys are ignored and known ones match case-insensitively, as Go's encoding/json does.
import { invalidArgument } from '../errors.js'

export type GoType =
  | { k: 'string', go: string }
  | { k: 'bool' }
  | { k: 'int', go: string, min: number, max: number }
  | { k: 'slice', of: GoType, go: string, len?: number }
  | { k: 'map', of: GoType, go: string }
  | { k: 'struct', name: string, go: string, fields: Record<string, GoType> }
  | { k: 'strslice' }
  | { k: 'empty' }

const S = (go = 'string'): GoType => ({ k: 'string', go })
const B: GoType = { k: 'bool' }
const I64: GoType = { k: 'int', go: 'int64', min: -(2 ** 63), max: 2 ** 63 - 1 }
const INT: GoType = { k: 'int', go: 'int', min: -(2 ** 63), max: 2 ** 63 - 1 }
const U16: GoType = { k: 'int', go: 'uint16', min: 0, max: 65535 }
const U64: GoType = { k: 'int', go: 'uint64', min: 0, max: 2 ** 64 - 1 }
const DUR: GoType = { k: 'int', go: 'time.Duration', min: -(2 ** 63), max: 2 ** 63 - 1 }
const STRS: GoType = { k: 'slice', of: S(), go: '[]string' }
const STRMAP: GoType = { k: 'map', of: S(), go: 'map[string]string' }
const SLICE = (of: GoType, go: string): GoType => ({ k: 'slice', of, go })
const STRUCT = (name: string, go: string, fields: Record<string, GoType>): GoType => ({ k: 'struct', name, go, fields })

const healthConfig = STRUCT('HealthConfig', 'container.HealthConfig', {
  Test: STRS, Interval: DUR, Timeout: DUR, StartPeriod: DUR, StartInterval: DUR, Retries: INT
})

const weightDevice = STRUCT('WeightDevice', 'blkiodev.WeightDevice', { Path: S(), Weight: U16 })
const throttleDevice = STRUCT('ThrottleDevice', 'blkiodev.ThrottleDevice', { Path: S(), Rate: U64 })

const mount = STRUCT('Mount', 'mount.Mount', {
  Type: S('mount.Type'),
  Source: S(),
  Target: S(),
  ReadOnly: B,
  Consistency: S('mount.Consistency'),
  BindOptions: STRUCT('BindOptions', 'mount.BindOptions', {
    Propagation: S('mount.Propagation'), NonRecursive: B, CreateMountpoint: B, ReadOnlyNonRecursive: B, ReadOnlyForceRecursive: B
  }),
  VolumeOptions: STRUCT('VolumeOptions', 'mount.VolumeOptions', {
    NoCopy: B, Labels: STRMAP, Subpath: S(), DriverConfig: STRUCT('Driver', 'mount.Driver', { Name: S(), Options: STRMAP })
  }),
  ImageOptions: STRUCT('ImageOptions', 'mount.ImageOptions', { Subpath: S() }),
  TmpfsOptions: STRUCT('TmpfsOptions', 'mount.TmpfsOptions', {
    SizeBytes: I64, Mode: { k: 'int', go: 'fs.FileMode', min: 0, max: 2 ** 32 - 1 }, Options: SLICE(STRS, '[][]string')
  })
})

export const HOST_CONFIG_TYPE = STRUCT('HostConfig', 'container.HostConfig', {
  Binds: STRS,
  ContainerIDFile: S(),
  LogConfig: STRUCT('LogConfig', 'container.LogConfig', { Type: S(), Config: STRMAP }),
  NetworkMode: S('container.NetworkMode'),
  PortBindings: { k: 'map', go: 'nat.PortMap', of: SLICE(STRUCT('PortBinding', 'nat.PortBinding', { HostIp: S(), HostPort: S() }), '[]nat.PortBinding') },
  RestartPolicy: STRUCT('RestartPolicy', 'container.RestartPolicy', { Name: S('container.RestartPolicyMode'), MaximumRetryCount: INT }),
  AutoRemove: B,
  VolumeDriver: S(),
  VolumesFrom: STRS,
  ConsoleSize: { k: 'slice', of: { k: 'int', go: 'uint', min: 0, max: 2 ** 64 - 1 }, go: '[2]uint', len: 2 },
  Annotations: STRMAP,
  CapAdd: { k: 'strslice' },
  CapDrop: { k: 'strslice' },
  CgroupnsMode: S('container.CgroupnsMode'),
  Dns: STRS,
  DnsOptions: STRS,
  DnsSearch: STRS,
  ExtraHosts: STRS,
  GroupAdd: STRS,
  IpcMode: S('container.IpcMode'),
  Cgroup: S('container.CgroupSpec'),
  Links: STRS,
  OomScoreAdj: INT,
  PidMode: S('container.PidMode'),
  Privileged: B,
  PublishAllPorts: B,
  ReadonlyRootfs: B,
  SecurityOpt: STRS,
  StorageOpt: STRMAP,
  Tmpfs: STRMAP,
  UTSMode: S('container.UTSMode'),
  UsernsMode: S('container.UsernsMode'),
  ShmSize: I64,
  Sysctls: STRMAP,
  Runtime: S(),
  Isolation: S('container.Isolation'),
  // Resources (embedded)
  CpuShares: I64,
  Memory: I64,
  NanoCpus: I64,
  CgroupParent: S(),
  BlkioWeight: U16,
  BlkioWeightDevice: SLICE(weightDevice, '[]*blkiodev.WeightDevice'),
  BlkioDeviceReadBps: SLICE(throttleDevice, '[]*blkiodev.ThrottleDevice'),
  BlkioDeviceWriteBps: SLICE(throttleDevice, '[]*blkiodev.ThrottleDevice'),
  BlkioDeviceReadIOps: SLICE(throttleDevice, '[]*blkiodev.ThrottleDevice'),
  BlkioDeviceWriteIOps: SLICE(throttleDevice, '[]*blkiodev.ThrottleDevice'),
  CpuPeriod: I64,
  CpuQuota: I64,
  CpuRealtimePeriod: I64,
  CpuRealtimeRuntime: I64,
  CpusetCpus: S(),
  CpusetMems: S(),
  Devices: SLICE(STRUCT('DeviceMapping', 'container.DeviceMapping', { PathOnHost: S(), PathInContainer: S(), CgroupPermissions: S() }), '[]container.DeviceMapping'),
  DeviceCgroupRules: STRS,
  DeviceRequests: SLICE(STRUCT('DeviceRequest', 'container.DeviceRequest', {
    Driver: S(), Count: INT, DeviceIDs: STRS, Capabilities: SLICE(STRS, '[][]string'), Options: STRMAP
  }), '[]container.DeviceRequest'),
  KernelMemory: I64,
  KernelMemoryTCP: I64,
  MemoryReservation: I64,
  MemorySwap: I64,
  MemorySwappiness: I64,
  OomKillDisable: B,
  PidsLimit: I64,
  Ulimits: SLICE(STRUCT('Ulimit', 'units.Ulimit', { Name: S(), Hard: I64, Soft: I64 }), '[]*units.Ulimit'),
  CpuCount: I64,
  CpuPercent: I64,
  IOMaximumIOps: U64,
  IOMaximumBandwidth: U64,
  Mounts: SLICE(mount, '[]mount.Mount'),
  MaskedPaths: STRS,
  ReadonlyPaths: STRS,
  Init: B
})

const endpointSettings = STRUCT('EndpointSettings', 'network.EndpointSettings', {
  IPAMConfig: STRUCT('EndpointIPAMConfig', 'network.EndpointIPAMConfig', { IPv4Address: S(), IPv6Address: S(), LinkLocalIPs: STRS }),
  Links: STRS,
  Aliases: STRS,
  DriverOpts: STRMAP,
  GwPriority: INT,
  NetworkID: S(),
  EndpointID: S(),
  Gateway: S(),
  IPAddress: S(),
  IPPrefixLen: INT,
  IPv6Gateway: S(),
  GlobalIPv6Address: S(),
  GlobalIPv6PrefixLen: INT,
  MacAddress: S(),
  DNSNames: STRS
})

export const NETWORKING_CONFIG_TYPE = STRUCT('NetworkingConfig', 'network.NetworkingConfig', {
  EndpointsConfig: { k: 'map', of: endpointSettings, go: 'map[string]*network.EndpointSettings' }
})

/** container.Config's fields. */
const CONFIG_FIELDS: Record<string, GoType> = {
  Hostname: S(),
  Domainname: S(),
  User: S(),
  AttachStdin: B,
  AttachStdout: B,
  AttachStderr: B,
  ExposedPorts: { k: 'map', of: { k: 'empty' }, go: 'nat.PortSet' },
  Tty: B,
  OpenStdin: B,
  StdinOnce: B,
  Env: STRS,
  Cmd: { k: 'strslice' },
  Healthcheck: healthConfig,
  ArgsEscaped: B,
  Image: S(),
  Volumes: { k: 'map', of: { k: 'empty' }, go: 'map[string]struct {}' },
  WorkingDir: S(),
  Entrypoint: { k: 'strslice' },
  NetworkDisabled: B,
  MacAddress: S(),
  OnBuild: STRS,
  Labels: STRMAP,
  StopSignal: S(),
  StopTimeout: INT,
  Shell: { k: 'strslice' }
}

/** container.Config: a commit's config body (POST /commit). */
export const CONFIG_TYPE = STRUCT('Config', 'container.Config', CONFIG_FIELDS)

/** container.CreateRequest: Config's fields (embedded, so they sit at the root), HostConfig, NetworkingConfig. */
export const CREATE_REQUEST_TYPE = STRUCT('CreateRequest', 'container.CreateRequest', {
  ...CONFIG_FIELDS,
  HostConfig: HOST_CONFIG_TYPE,
  NetworkingConfig: NETWORKING_CONFIG_TYPE
})

function kindOf (v: unknown): string {
  if (Array.isArray(v)) return 'array'
  if (typeof v === 'boolean') return 'bool'
  return typeof v === 'object' ? 'object' : typeof v
}

interface Where { struct: string, path: string[] }

function typeError (value: string, go: string, where: Where | null): Error {
  const into = where === null || where.path.length === 0 ? 'Go value' : `Go struct field ${where.struct}.${where.path.join('.')}`
  return invalidArgument(`json: cannot unmarshal ${value} into ${into} of type ${go}`)
}

function goName (t: GoType): string {
  switch (t.k) {
    case 'string': case 'int': case 'slice': case 'map': case 'struct': return t.go
    case 'bool': return 'bool'
    case 'strslice': return 'strslice.StrSlice'
    case 'empty': return 'struct {}'
  }
}

/** Throws dockerd's error for the first value (in document order) that does not fit `t`. */
export function checkGoType (v: unknown, t: GoType, where: Where | null = null): void {
  if (v === null || v === undefined) return
  const kind = kindOf(v)
  switch (t.k) {
    case 'string': if (kind !== 'string') throw typeError(kind, t.go, where); return
    case 'bool': if (kind !== 'bool') throw typeError(kind, 'bool', where); return
    case 'int':
      if (kind !== 'number') throw typeError(kind, t.go, where)
      if (!Number.isInteger(v) || (v as number) < t.min || (v as number) > t.max) throw typeError(`number ${String(v)}`, t.go, where)
      return
    case 'strslice':
      // StrSlice takes a list of strings or one string; anything else fails as its string attempt does
      if (kind === 'string') return
      if (kind === 'array' && (v as unknown[]).every((x) => typeof x === 'string' || x === null)) return
      throw typeError(kind, 'string', where)
    case 'empty': if (kind !== 'object') throw typeError(kind, 'struct {}', where); return
    case 'slice': {
      if (kind !== 'array') throw typeError(kind, t.go, where)
      for (const x of v as unknown[]) checkGoType(x, t.of, where)
      return
    }
    case 'map': {
      if (kind !== 'object') throw typeError(kind, t.go, where)
      for (const x of Object.values(v as Record<string, unknown>)) checkGoType(x, t.of, where)
      return
    }
    case 'struct': {
      if (kind !== 'object') throw typeError(kind, goName(t), where)
      const byLower = new Map(Object.keys(t.fields).map((k) => [k.toLowerCase(), k]))
      for (const [key, x] of Object.entries(v as Record<string, unknown>)) {
        const field = byLower.get(key.toLowerCase())
        if (field === undefined) continue
        checkGoType(x, t.fields[field] as GoType, { struct: t.name, path: [...(where?.path ?? []), field] })
      }
    }
  }
}

/** Checks a create request body against container.CreateRequest. */
export function checkCreateRequest (body: unknown): void {
  checkGoType(body, CREATE_REQUEST_TYPE)
}
