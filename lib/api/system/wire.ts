// The system routes' wire shapes: GET /version and GET /info as dockerd spells them, from the engine's typed facts.
import { API_VERSION, MIN_API_VERSION, ENGINE_VERSION, versionAtLeast } from '../api-version.js'
import type { SystemInfo, VersionInfo } from './backend.js'
import { isoTime } from '../../util/time.js'

export function toVersion (v: VersionInfo): Record<string, unknown> {
  return {
    Platform: { Name: 'Berth Engine' },
    Components: [
      {
        Name: 'Engine',
        Version: ENGINE_VERSION,
        Details: {
          ApiVersion: API_VERSION,
          Arch: v.arch,
          BuildTime: v.buildTime,
          Experimental: 'false',
          GitCommit: v.gitCommit,
          GoVersion: v.nodeVersion,
          KernelVersion: v.kernelVersion,
          MinAPIVersion: MIN_API_VERSION,
          Os: 'linux'
        }
      },
      { Name: 'berth', Version: v.berthVersion, Details: { NodeVersion: v.nodeVersion } },
      { Name: v.runtimeName, Version: v.runtimeVersion, Details: { GitCommit: '' } }
    ],
    Version: ENGINE_VERSION,
    ApiVersion: API_VERSION,
    MinAPIVersion: MIN_API_VERSION,
    GitCommit: v.gitCommit,
    GoVersion: v.nodeVersion,
    Os: 'linux',
    Arch: v.arch,
    KernelVersion: v.kernelVersion,
    BuildTime: v.buildTime
  }
}

/** GET /info: the facts, and what Berth always answers (its storage driver, plugins, cgroup driver, options). */
export function toInfo (i: SystemInfo, now: Date, version: string): Record<string, unknown> {
  const { total, running, paused } = i.containers
  return {
    ID: i.id,
    Containers: total,
    ContainersRunning: running,
    ContainersPaused: paused,
    ContainersStopped: total - running - paused,
    Images: i.images,
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
    IPv4Forwarding: i.ipv4Forwarding,
    Debug: i.debug,
    NFd: 0,
    OomKillDisable: false,
    NGoroutines: 0,
    SystemTime: isoTime(now.getTime()),
    LoggingDriver: i.loggingDriver,
    CgroupDriver: 'cgroupfs',
    CgroupVersion: i.cgroupVersion,
    NEventsListener: 0,
    KernelVersion: i.kernelVersion,
    OperatingSystem: i.operatingSystem,
    OSVersion: i.osVersion,
    OSType: 'linux',
    Architecture: i.architecture,
    IndexServerAddress: 'https://index.docker.io/v1/',
    RegistryConfig: { IndexConfigs: {}, InsecureRegistryCIDRs: ['127.0.0.0/8'], Mirrors: [] },
    NCPU: i.cpus,
    MemTotal: i.memTotal,
    GenericResources: null,
    DockerRootDir: i.dataRoot,
    HttpProxy: '',
    HttpsProxy: '',
    NoProxy: '',
    Name: i.hostname,
    Labels: [],
    ExperimentalBuild: false,
    ServerVersion: ENGINE_VERSION,
    Runtimes: Object.fromEntries(i.runtimes.map((r) => [r.name, toRuntime(r, version)])),
    DefaultRuntime: i.runtime.name,
    Swarm: i.swarm,
    LiveRestoreEnabled: true,
    Isolation: '',
    InitBinary: '',
    ContainerdCommit: { ID: '' },
    RuncCommit: { ID: i.runtime.version },
    InitCommit: { ID: '' },
    SecurityOptions: ['name=seccomp,profile=builtin', 'name=cgroupns'],
    CDISpecDirs: [],
    DiscoveredDevices: [],
    Warnings: i.warnings,
    ApiVersion: API_VERSION
  }
}

/** One entry of /info's Runtimes; `status` (API 1.44 on) holds the runtime's OCI features document, as dockerd 25's. */
function toRuntime (r: SystemInfo['runtimes'][number], version: string): Record<string, unknown> {
  return {
    path: r.path,
    ...(r.args.length > 0 ? { runtimeArgs: r.args } : {}),
    ...(r.features !== undefined && versionAtLeast(version, '1.44') ? { status: { 'org.opencontainers.runtime-spec.features': r.features } } : {})
  }
}
