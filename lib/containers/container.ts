// The container record (internal, camelCase) and its state machine: one transition() changes status, and announces
// the change on the event bus when dockerd has an event for it.
import { conflict, isEngineError } from '../errors.js'
import type { Mount } from '../volumes/mount-spec.js'
import type { DeviceRule } from '../runtime/oci-spec.js'
import type { DeviceMapping } from '../runtime/run-spec.js'
import type { BlkioDevices } from '../runtime/host-facts.js'
import type { SeccompChoice } from '../runtime/seccomp.js'
import type { SandboxRecord } from '../network/model.js'
import type { RuntimeBinary } from '../runtime/runtimes.js'

export type ContainerStatus = 'created' | 'running' | 'paused' | 'restarting' | 'removing' | 'exited' | 'dead'

/** Allowed transitions. `removing` is the only way out of the table (the record is deleted). */
const TRANSITIONS: Readonly<Record<ContainerStatus, readonly ContainerStatus[]>> = {
  created: ['running', 'exited', 'removing', 'dead'],
  // running/paused → removing: a forced removal whose kill did not end the process in time
  running: ['paused', 'exited', 'restarting', 'removing', 'dead'],
  paused: ['running', 'exited', 'removing', 'dead'],
  restarting: ['running', 'exited', 'removing', 'dead'],
  exited: ['running', 'restarting', 'removing', 'dead'],
  removing: ['dead', 'exited', 'created'],
  dead: ['removing']
}

export type HealthStatus = 'starting' | 'healthy' | 'unhealthy'

export interface HealthResult { start: string, end: string, exitCode: number, output: string }

/** State.Health as inspect shows it (health.ts keeps it up to date). */
export interface HealthState { status: HealthStatus, failingStreak: number, log: HealthResult[] }

export interface ContainerState {
  status: ContainerStatus
  pid: number
  exitCode: number
  error: string
  oomKilled: boolean
  /** ns since epoch as decimal strings; '0' for unset */
  startedAt: string
  finishedAt: string
  /** State.Health: only for containers with a health check */
  health?: HealthState
}

/** The container's Config, decoded (lib/api/containers/wire.ts writes the Engine API's PascalCase Config from it). */
export interface ContainerConfig {
  /** '' for the default (the ID's first 12 characters) */
  hostname: string
  domainname: string
  user: string
  attachStdin: boolean
  attachStdout: boolean
  attachStderr: boolean
  /** `port/proto` keys of Config.ExposedPorts, in their order; undefined when it had none */
  exposedPorts?: string[]
  tty: boolean
  openStdin: boolean
  stdinOnce: boolean
  env: string[]
  cmd: string[] | null
  /** Config.Healthcheck (or the image's), decoded; undefined when neither had one */
  healthcheck?: HealthConfig
  argsEscaped?: boolean
  /** The image as the client named it */
  image: string
  /** Config.Volumes' paths; null when it had none */
  volumes: string[] | null
  workingDir: string
  entrypoint: string[] | null
  networkDisabled?: boolean
  /** Config.MacAddress (canonical): the address of the endpoint on the NetworkMode's network, as dockerd's */
  macAddress?: string
  onBuild: string[] | null
  labels: Record<string, string>
  stopSignal?: string
  stopTimeout?: number
  shell?: string[]
}

/**
 * Config.Healthcheck, decoded: the fields as given (undefined: not given, inspect leaves it out), durations in ns as
 * dockerd's (0: the default). health.ts turns it into the probe's settings.
 */
export interface HealthConfig {
  /** [] or ['NONE']: no check; ['CMD', ...args]; ['CMD-SHELL', command] */
  test?: string[] | null
  interval?: number | null
  timeout?: number | null
  startPeriod?: number | null
  startInterval?: number | null
  retries?: number | null
}

/** HostConfig.RestartPolicy, decoded. */
export interface RestartPolicy { name: 'no' | 'always' | 'unless-stopped' | 'on-failure', maximumRetryCount: number }

/** HostConfig.LogConfig, decoded: the driver, its options as given, and the monitor's rotation. */
export interface LogConfig {
  driver: 'json-file' | 'local' | 'none'
  options: Record<string, string>
  /** bytes; 0: no rotation */
  maxSize: number
  /** files kept, the live one included */
  maxFiles: number
}

/** The resolver settings of HostConfig (Dns, DnsSearch, DnsOptions). */
export interface DnsSettings { servers: string[], search: string[], options: string[] }

/** The resource limits of HostConfig (what `docker update` changes). 0: not set. */
export interface ContainerResources {
  memory: number
  memorySwap: number
  memoryReservation?: number
  nanoCpus: number
  cpuShares: number
  cpuQuota: number
  cpuPeriod: number
  /** null: not set; 0: unlimited (after an update) */
  pidsLimit: number | null
  blkioWeight?: number
  cpusetCpus?: string
  cpusetMems?: string
}

/**
 * The namespace modes and runtime of HostConfig, as the create body gave them (IpcMode, CgroupnsMode, Cgroup, Runtime
 * and Isolation with create's defaults). The optional ones are undefined when the body did not name them (inspect then
 * leaves them out) and null when it gave null. The modes the runtime applies are decoded in `run` (run-options.ts).
 */
export interface NamespaceSettings {
  pidMode?: string | null
  ipcMode: string
  utsMode?: string | null
  usernsMode?: string | null
  cgroupnsMode: string
  cgroup: string
  runtime: string
  isolation: string
}

/** An rlimit as `--ulimit` gives it (HostConfig.Ulimits' entries). */
export interface Ulimit { name: string, hard: number, soft: number }

/**
 * The process settings of HostConfig as given (undefined: not named by the create body; null: given null): what
 * `run` (run-options.ts) decoded for the runtime, kept for inspect.
 */
export interface ProcessSettings {
  securityOpt?: string[] | null
  groupAdd?: string[] | null
  oomScoreAdj?: number | null
  init?: boolean | null
  maskedPaths?: string[] | null
  readonlyPaths?: string[] | null
  tmpfs?: Record<string, string> | null
  ulimits?: Ulimit[] | null
  sysctls?: Record<string, string> | null
  memorySwappiness?: number | null
  oomKillDisable?: boolean | null
}

/** A `--device` as given (HostConfig.Devices' entries). */
export interface DeviceMappingSetting { pathOnHost: string, pathInContainer: string, cgroupPermissions: string }

/** A `--gpus` request as given (HostConfig.DeviceRequests' entries). */
export interface DeviceRequestSetting { driver: string, count: number, deviceIds: string[] | null, capabilities: string[][] | null, options: Record<string, string> | null }

/** HostConfig's devices as given (undefined: not named; null: given null). Device requests are refused at create. */
export interface DeviceSettings {
  devices?: DeviceMappingSetting[] | null
  cgroupRules?: string[] | null
  requests?: DeviceRequestSetting[] | null
}

/** A `--mount` as given (HostConfig.Mounts' entries; lib/volumes resolved it into the record's `mounts`). */
export interface MountRequest {
  type?: string
  source?: string
  target?: string
  readOnly?: boolean
  consistency?: string
  bindOptions?: { propagation?: string, nonRecursive?: boolean, createMountpoint?: boolean, readOnlyNonRecursive?: boolean, readOnlyForceRecursive?: boolean }
  volumeOptions?: { noCopy?: boolean, labels?: Record<string, string>, subpath?: string, driverConfig?: { name?: string, options?: Record<string, string> } }
  imageOptions?: { subpath?: string }
  tmpfsOptions?: { sizeBytes?: number, mode?: number, options?: string[][] }
}

/** What the create body asked to mount, as given (Binds, VolumesFrom, VolumeDriver, Mounts; undefined: not named). */
export interface MountRequests {
  binds: string[] | null
  volumesFrom: string[] | null
  volumeDriver?: string | null
  mounts?: MountRequest[] | null
}

/** A `-p` binding as given. */
export interface PortBindingRequest { hostIp: string, hostPort: string }

/** What the create body asked of the network besides its mode (PortBindings, Links, PublishAllPorts), as given. */
export interface PortRequests {
  portBindings: Record<string, PortBindingRequest[] | null>
  links?: string[] | null
  publishAllPorts?: boolean | null
}

/**
 * HostConfig fields Berth does not apply, kept for inspect as given (undefined: not named): the client's own
 * (ContainerIDFile), refused unless empty (StorageOpt), or answered with a Warnings entry (host-config-support.ts).
 */
export interface UnappliedSettings {
  containerIdFile?: string | null
  annotations?: Record<string, string> | null
  storageOpt?: Record<string, string> | null
  kernelMemory?: number | null
  kernelMemoryTCP?: number | null
  cpuRealtimePeriod?: number | null
  cpuRealtimeRuntime?: number | null
  cpuCount?: number | null
  cpuPercent?: number | null
  ioMaximumIOps?: number | null
  ioMaximumBandwidth?: number | null
}

export interface ContainerRecord {
  id: string
  /** With the leading slash, as dockerd stores it. */
  name: string
  /** ns since epoch, decimal string */
  created: string
  /** The image as the client gave it. */
  image: string
  imageId: string
  path: string
  args: string[]
  config: ContainerConfig
  restartPolicy: RestartPolicy
  autoRemove: boolean
  log: LogConfig
  /** HostConfig.NetworkMode: bridge (for '' and default), host, none, container:<ref>, or a network name or ID. */
  networkMode: string
  dns: DnsSettings
  /** --add-host entries, host:address (null when the create body had none). */
  extraHosts: string[] | null
  resources: ContainerResources
  /** --cgroup-parent (undefined: not given; the container's cgroup is then under the engine's). */
  cgroupParent?: string
  /** Per-device block I/O weights and throttles (Blkio*Device*). */
  blkio: BlkioDevices
  /** How the process runs: namespaces, tmpfs, ulimits, sysctls, devices, ... (run-options.ts, decoded at create). */
  run: RunOptions
  privileged: boolean
  /** --cap-add/--cap-drop as given (null when the create body had none) */
  capAdd: string[] | null
  capDrop: string[] | null
  readonlyRootfs: boolean
  /** bytes; 0: the default */
  shmSize: number
  /** [height, width]; [0, 0]: none */
  consoleSize: [number, number]
  namespaces: NamespaceSettings
  process: ProcessSettings
  devices: DeviceSettings
  mountRequests: MountRequests
  portRequests: PortRequests
  unapplied: UnappliedSettings
  /** The seccomp profile (HostConfig.SecurityOpt's seccomp=…). */
  seccomp: SeccompChoice
  state: ContainerState
  restartCount: number
  rootfsKind: 'overlay' | 'copy'
  /** Set when a user stop/kill ended the process (restart policies do not fire). */
  manuallyStopped: boolean
  /** The process that monitors the running container. */
  shimPid: number
  /**
   * The runtime its last start ran with (namespaces.runtime resolved then: binary and options): while it runs, its
   * signals, execs and updates, and a restarted daemon's adoption, go through it, even if a reload changed the name.
   */
  runtimeBinary?: RuntimeBinary
  /** The mounts resolved at create (lib/volumes/mount-spec.ts); records from before them are resolved at load. */
  mounts: Mount[]
  /**
   * A copy of its networking's record as it stood when this record was written (ContainerHandle.save): networking
   * writes no file of its own at create nor at a start (one record on each of those paths), and a restart takes this
   * copy when it is newer than that file or there is none (see Sandboxes.restore).
   */
  sandbox?: SandboxRecord
}

export function newState (): ContainerState {
  return { status: 'created', pid: 0, exitCode: 0, error: '', oomKilled: false, startedAt: '0', finishedAt: '0' }
}

export function canTransition (from: ContainerStatus, to: ContainerStatus): boolean {
  return from === to || TRANSITIONS[from].includes(to)
}

/** Where status changes are announced (the engine's event bus). */
export interface StatusEvents {
  emit (type: 'container', action: string, actorId: string, attributes: Record<string, string>): void
}

/** The event a status change comes with (`die`, `start`, `pause`, ...). */
export interface Announcement { events: StatusEvents, action: string, attributes: Record<string, string> }

/** The one way a container's status changes: checked against the table, then announced. */
export function transition (c: ContainerRecord, to: ContainerStatus, announce?: Announcement): void {
  if (!canTransition(c.state.status, to)) {
    throw conflict(`container ${c.id} cannot go from ${c.state.status} to ${to}`)
  }
  c.state.status = to
  if (announce !== undefined) announce.events.emit('container', announce.action, c.id, announce.attributes)
}

/**
 * A container event's actor attributes as dockerd's LogContainerEventWithAttributes gives them: the container's
 * labels, then image and name, then the event's own (exitCode, signal, execID…).
 */
export function eventAttributes (c: ContainerRecord, extra: Record<string, string> = {}): Record<string, string> {
  return { ...c.config.labels, image: c.image, name: c.name.slice(1), ...extra }
}

export function isRunning (c: ContainerRecord): boolean {
  return c.state.status === 'running' || c.state.status === 'paused' || c.state.status === 'restarting'
}

/**
 * The `docker run` settings beyond networking and binds as the start takes them: decoded and checked once at create
 * (run-options.ts decodeRunOptions), resolved against the host and the other containers at each start.
 */
export interface RunOptions {
  init: boolean
  tmpfs: Array<{ destination: string, options: string[] }>
  ulimits: Array<{ type: string, soft: number, hard: number }>
  sysctls: Record<string, string>
  devices: DeviceMapping[]
  deviceRules: DeviceRule[]
  groupAdd: string[]
  cpusetCpus: string
  cpusetMems: string
  noNewPrivileges: boolean
  /** security-opt systempaths=unconfined: no masked or read-only /proc and /sys paths */
  unmaskedPaths: boolean
  pidMode: string
  ipcMode: string
  utsMode: string
  oomScoreAdj: number
  /** undefined: the kernel's */
  memorySwappiness?: number
  oomKillDisable: boolean
  maskedPaths?: string[]
  readonlyPaths?: string[]
  cgroupNs: boolean
}

/** The runtime's answer for a container that exited (or went) before the daemon applied the exit. */
export function goneFromRuntime (err: unknown): boolean {
  return isEngineError(err) && (err.kind === 'not-found' || err.kind === 'conflict')
}
