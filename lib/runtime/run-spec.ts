// What the engine asks the runtime to run, in the runtime's words: a container (RunSpec: its root filesystem, process,
// mounts, limits, namespaces, devices and security settings, everything resolved that only the engine can resolve:
// other containers, volumes, networking) and an exec'd process (ExecSpec). The runtime resolves what the host and the
// image hold (users, device nodes, block devices, the init binary) and writes the OCI bundle from it.
import type { BlkioDevices } from './host-facts.js'
import type { DeviceRule, MountSpec, NamespaceMode, ResourceLimits } from './oci-spec.js'
import type { RootfsKind, RootfsPaths } from './rootfs.js'
import type { SeccompChoice } from './seccomp.js'
import type { RuntimeBinary } from './runtimes.js'

/** A `--device`: the node at `pathOnHost` made at `pathInContainer`, with its cgroup permissions (r, w, m). */
export interface DeviceMapping { pathOnHost: string, pathInContainer: string, permissions: string }

/** A container's root filesystem: its directories, how it is made, and the image layers under it (lowest first). */
export interface RootfsRequest {
  paths: RootfsPaths
  kind: RootfsKind
  /** The image's unpacked layers, lowest first ([] when the image is gone). */
  layers: string[]
  imageId: string
}

/** A veth pair: `hostName` on the host (on `bridge`), `ifName` in the container with its addresses and routes. */
/** A published port the container's monitor holds (shim/ports.h): bound on the host side, relayed to the target. */
export interface PublishSpec { proto: 'tcp' | 'udp', hostIp: string, hostPort: number, targetIp: string, targetPort: number }

export interface VethSpec {
  hostName: string
  ifName: string
  bridge: string
  mac: string
  /** 0: the kernel's default */
  mtu: number
  /** CIDRs (an IPv4 or IPv6 address with its prefix length) */
  addresses: string[]
  /** Default routes' gateways (IPv4 or IPv6); [] for none. */
  gateways: string[]
}

/**
 * The container's network namespace: the host's; a new one with loopback only (made by the OCI runtime); one to join
 * (another container's); or a new one the monitor makes before the runtime runs, bind-mounted on `path` (so it
 * outlives a process for `network connect` and the daemon's restarts) with its veths wired.
 */
export type NetworkNamespace =
  | { kind: 'host' }
  | { kind: 'new' }
  | { kind: 'join', path: string }
  | { kind: 'create', path: string, veths: VethSpec[] }

/** /dev/shm: a new tmpfs, a bind of another one (the host's or a peer's), or none. */
export type ShmSource = { kind: 'tmpfs' } | { kind: 'bind', source: string } | { kind: 'none' }

export interface RunSpec {
  id: string
  /** The OCI runtime that runs it (its signals, execs and updates go through the same until it exits). */
  runtime: RuntimeBinary
  /** The container's directory: config.json, the /etc files it bind-mounts, its root filesystem's directories. */
  dir: string
  /** The monitor's state directory (shim.pid, attach.sock, exit.json). */
  stateDir: string
  rootfs: RootfsRequest
  readonlyRootfs: boolean
  /**
   * Removed once it exits (AutoRemove): its monitor deletes its root filesystem's trees after the exit, unless the
   * container's directory (`dir`) holds KEEP_TREES_FILE then.
   */
  removeAtExit?: boolean
  process: {
    /** The command (path and arguments), without the init that may wrap it. */
    args: string[]
    /** As the container's Config has it; the runtime adds PATH, HOSTNAME, TERM (with a tty) and HOME when missing. */
    env: string[]
    cwd: string
    /** Config.User ('' for root), resolved against the container's /etc/passwd and /etc/group. */
    user: string
    groupAdd: string[]
    tty: boolean
    openStdin: boolean
    consoleSize?: { height: number, width: number }
    /** --init: the host's init binary runs as PID 1 and runs the command. */
    init: boolean
  }
  hostname: string
  domainname: string
  /** The network namespace the monitor serves the container's embedded DNS resolver in (shim/resolver.h); none: no resolver. */
  resolver?: string
  /** Host ports the container's monitor binds before the process starts and serves until it exits (shim/ports.h). */
  publish?: PublishSpec[]
  /** The contents of the /etc files bind-mounted into the container (hostname comes from `hostname`). */
  etc: { hosts: string, resolvConf: string }
  /** The container's own mounts (binds, volumes, tmpfs) in OCI form, in order. */
  mounts: MountSpec[]
  resources: Omit<ResourceLimits, 'blockIO'>
  blkio: { weight?: number, devices: BlkioDevices }
  cgroupParent: string
  privileged: boolean
  capAdd: string[]
  capDrop: string[]
  /** bytes; 0: the default */
  shmSize: number
  namespaces: {
    net: NetworkNamespace
    pid: NamespaceMode
    ipc: NamespaceMode
    uts: NamespaceMode
    cgroup: boolean
    shm: ShmSource
  }
  /** --ipc shareable: the container's own /dev/shm, a tmpfs mounted at `dir` (its peers bind it). */
  shareableShm?: { dir: string, size: number }
  devices: DeviceMapping[]
  deviceRules: DeviceRule[]
  sysctls: Record<string, string>
  rlimits: Array<{ type: string, soft: number, hard: number }>
  noNewPrivileges: boolean
  oomScoreAdj: number
  unmaskedPaths: boolean
  maskedPaths?: string[]
  readonlyPaths?: string[]
  seccomp: SeccompChoice
  log: { path: string, maxSize: number, maxFiles: number }
}

/** A process run in a running container (docker exec, a health probe). */
export interface ExecSpec {
  /** The container's ID and directory (its config.json gives the process's defaults). */
  containerId: string
  dir: string
  /** The container's root filesystem as its processes see it (its /etc files are checked, another user resolved from them). */
  rootfs: string
  stateDir: string
  logPath: string
  args: string[]
  /** Added to (or replacing) the container's environment. */
  env: string[]
  /** '' for the container's */
  cwd: string
  /** '' for the container's */
  user: string
  /** The container's --group-add (kept for another user). */
  groupAdd: string[]
  privileged: boolean
  tty: boolean
  stdin: boolean
  consoleSize: { height: number, width: number } | null
}

/** In a container's directory while a manual restart stops it: its monitor keeps the trees an AutoRemove deletes. */
export const KEEP_TREES_FILE = 'keep-trees'
