// Builds an OCI runtime config.json with Docker's defaults. Pure: everything it needs comes in as arguments.
import { defaultSeccompProfile, ociSeccomp, type SeccompChoice } from './seccomp.js'

export const DEFAULT_CAPS = [
  'CAP_CHOWN', 'CAP_DAC_OVERRIDE', 'CAP_FSETID', 'CAP_FOWNER', 'CAP_MKNOD', 'CAP_NET_RAW', 'CAP_SETGID',
  'CAP_SETUID', 'CAP_SETFCAP', 'CAP_SETPCAP', 'CAP_NET_BIND_SERVICE', 'CAP_SYS_CHROOT', 'CAP_KILL', 'CAP_AUDIT_WRITE'
] as const

export const MASKED_PATHS = [
  '/proc/asound', '/proc/acpi', '/proc/interrupts', '/proc/kcore', '/proc/keys', '/proc/latency_stats',
  '/proc/timer_list', '/proc/timer_stats', '/proc/sched_debug', '/proc/scsi', '/sys/firmware',
  '/sys/devices/virtual/powercap'
] as const

export const READONLY_PATHS = ['/proc/bus', '/proc/fs', '/proc/irq', '/proc/sys', '/proc/sysrq-trigger'] as const

export const DEFAULT_PATH_ENV = 'PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'

/**
 * RLIM_INFINITY (2^64 - 1), what `--ulimit core=-1` means (dockerd casts -1 to uint64). The runtime reads rlimits as
 * uint64: the spec must carry the exact integer, which a JS number cannot hold, so it is a marker until the JSON text
 * is written (ociJson) and read back as the marker (ociParse).
 */
const RLIM_INFINITY = '__rlim_infinity__'
const RLIM_INFINITY_TEXT = '18446744073709551615'

function rlimitValue (v: number): number | string { return v === -1 ? RLIM_INFINITY : v }

/** An OCI document (config.json, process.json) as the runtime reads it. */
export function ociJson (value: unknown): string {
  return JSON.stringify(value).replaceAll(`"${RLIM_INFINITY}"`, RLIM_INFINITY_TEXT)
}

/** An OCI document read back (its unlimited rlimits as the marker ociJson writes out again). */
export function ociParse (text: string): unknown {
  return JSON.parse(text.replace(new RegExp(`(?<=[:,\\[]\\s*)${RLIM_INFINITY_TEXT}(?=\\s*[,}\\]])`, 'g'), `"${RLIM_INFINITY}"`))
}

export interface MountSpec { destination: string, type: string, source: string, options: string[] }

/** A device node the runtime creates in the container (OCI linux.devices). */
export interface DeviceNode { path: string, type: 'c' | 'b', major: number, minor: number, fileMode: number, uid: number, gid: number }

/** A device cgroup rule (OCI linux.resources.devices); no major/minor: any. */
export interface DeviceRule { allow: boolean, type?: 'a' | 'b' | 'c', major?: number, minor?: number, access: string }

/** A namespace: a new one, the host's (none in the spec), or one to join. */
export type NamespaceMode = 'private' | 'host' | { path: string }

/** A per-device block I/O limit (OCI linux.resources.blockIO throttles: rate; weightDevice: weight). */
export interface BlockIODevice { major: number, minor: number, rate?: number, weight?: number }

/** OCI linux.resources.blockIO */
export interface BlockIOLimits {
  weight?: number
  weightDevice?: BlockIODevice[]
  throttleReadBpsDevice?: BlockIODevice[]
  throttleWriteBpsDevice?: BlockIODevice[]
  throttleReadIOPSDevice?: BlockIODevice[]
  throttleWriteIOPSDevice?: BlockIODevice[]
}

export interface ResourceLimits {
  memory?: number
  blockIO?: BlockIOLimits
  memoryReservation?: number
  /** 0-100; undefined: the kernel's */
  memorySwappiness?: number
  disableOomKiller?: boolean
  cpusetCpus?: string
  cpusetMems?: string
  memorySwap?: number
  nanoCpus?: number
  cpuShares?: number
  cpuQuota?: number
  cpuPeriod?: number
  pidsLimit?: number
}

export interface ProcessSpec {
  args: string[]
  env: string[]
  cwd: string
  uid: number
  gid: number
  additionalGids: number[]
  terminal: boolean
  consoleSize?: { height: number, width: number }
}

export interface RuntimeSpecInput {
  rootfs: string
  readonlyRootfs: boolean
  hostname: string
  domainname?: string
  process: ProcessSpec
  /** Extra mounts (binds, /etc/hosts, resolv.conf, hostname), in order. */
  mounts: MountSpec[]
  resources: ResourceLimits
  cgroupsPath: string
  /** The host's hard rlimits, so container limits never exceed them. */
  hostNofileHard: number
  privileged: boolean
  capAdd?: string[]
  capDrop?: string[]
  shmSize?: number
  /** The network namespace: a path to join, null for the host's, undefined for a new empty one. */
  netns?: string | null
  /** pid, ipc and uts namespaces (default: new ones) */
  pidNs?: NamespaceMode
  ipcNs?: NamespaceMode
  utsNs?: NamespaceMode
  /** /dev/shm: a new tmpfs (default), a bind of `source`, or none */
  shm?: { kind: 'tmpfs' } | { kind: 'bind', source: string } | { kind: 'none' }
  /** --ulimit; RLIMIT_NOFILE defaults to the host's hard limit (at most 1048576) */
  rlimits?: Array<{ type: string, soft: number, hard: number }>
  sysctl?: Record<string, string>
  /** --device nodes and their cgroup permissions; privileged containers get the host's (access rwm) */
  devices?: Array<{ node: DeviceNode, access: string }>
  deviceRules?: DeviceRule[]
  noNewPrivileges?: boolean
  oomScoreAdj?: number
  /** security-opt systempaths=unconfined */
  unmaskedPaths?: boolean
  /** HostConfig.MaskedPaths / ReadonlyPaths: replace the defaults when given */
  maskedPaths?: string[]
  readonlyPaths?: string[]
  /** CgroupnsMode private: a new cgroup namespace */
  cgroupNs?: boolean
  /** The seccomp policy (Docker's default unless told otherwise; a privileged container runs unconfined). */
  seccomp?: { choice: SeccompChoice, arch: string, kernel: string }
}

export function capName (c: string): string {
  const u = c.toUpperCase()
  return u.startsWith('CAP_') ? u : `CAP_${u}`
}

export function capabilities (input: Pick<RuntimeSpecInput, 'privileged' | 'capAdd' | 'capDrop'>, allCaps: readonly string[]): string[] {
  let caps: string[] = input.privileged ? [...allCaps] : [...DEFAULT_CAPS]
  const add = (input.capAdd ?? []).map(capName)
  const drop = (input.capDrop ?? []).map(capName)
  if (add.includes('CAP_ALL')) caps = [...allCaps]
  for (const c of add) if (c !== 'CAP_ALL' && !caps.includes(c)) caps.push(c)
  if (drop.includes('CAP_ALL')) caps = add.filter((c) => c !== 'CAP_ALL')
  else caps = caps.filter((c) => !drop.includes(c))
  return caps
}

const DEVICE_RULES = [
  { allow: false, access: 'rwm' },
  { allow: true, type: 'c', major: 1, minor: 5, access: 'rwm' },
  { allow: true, type: 'c', major: 1, minor: 3, access: 'rwm' },
  { allow: true, type: 'c', major: 1, minor: 9, access: 'rwm' },
  { allow: true, type: 'c', major: 1, minor: 8, access: 'rwm' },
  { allow: true, type: 'c', major: 5, minor: 0, access: 'rwm' },
  { allow: true, type: 'c', major: 5, minor: 1, access: 'rwm' },
  { allow: true, type: 'c', major: 1, minor: 7, access: 'rwm' },
  { allow: true, type: 'c', major: 5, minor: 2, access: 'rwm' },
  { allow: true, type: 'c', major: 136, access: 'rwm' },
  { allow: true, type: 'c', major: 10, minor: 200, access: 'rwm' },
  { allow: false, type: 'c', major: 10, minor: 229, access: 'rwm' },
  { allow: true, type: 'c', access: 'm' },
  { allow: true, type: 'b', access: 'm' }
] as const

function namespace (type: string, mode: NamespaceMode | undefined): Array<Record<string, string>> {
  if (mode === 'host') return []
  if (mode === undefined || mode === 'private') return [{ type }]
  return [{ type, path: mode.path }]
}

export function buildRuntimeSpec (input: RuntimeSpecInput, allCaps: readonly string[]): Record<string, unknown> {
  const caps = capabilities(input, allCaps)
  const nofile = Math.min(1048576, input.hostNofileHard)
  const shm = input.shmSize !== undefined && input.shmSize > 0 ? input.shmSize : 64 * 1024 * 1024
  const shmMount: MountSpec[] = input.shm?.kind === 'none'
    ? []
    : input.shm?.kind === 'bind'
      ? [{ destination: '/dev/shm', type: 'bind', source: input.shm.source, options: ['rbind', 'rprivate'] }]
      : [{ destination: '/dev/shm', type: 'tmpfs', source: 'shm', options: ['nosuid', 'noexec', 'nodev', 'mode=1777', `size=${shm}`] }]
  const mounts: MountSpec[] = [
    { destination: '/proc', type: 'proc', source: 'proc', options: ['nosuid', 'noexec', 'nodev'] },
    { destination: '/dev', type: 'tmpfs', source: 'tmpfs', options: ['nosuid', 'strictatime', 'mode=755', 'size=65536k'] },
    { destination: '/dev/pts', type: 'devpts', source: 'devpts', options: ['nosuid', 'noexec', 'newinstance', 'ptmxmode=0666', 'mode=0620', 'gid=5'] },
    { destination: '/sys', type: 'sysfs', source: 'sysfs', options: ['nosuid', 'noexec', 'nodev', input.privileged ? 'rw' : 'ro'] },
    { destination: '/sys/fs/cgroup', type: 'cgroup', source: 'cgroup', options: ['nosuid', 'noexec', 'nodev', 'relatime', input.privileged ? 'rw' : 'ro'] },
    { destination: '/dev/mqueue', type: 'mqueue', source: 'mqueue', options: ['nosuid', 'noexec', 'nodev'] },
    ...shmMount,
    ...input.mounts
  ]
  const deviceRules: DeviceRule[] = input.privileged
    ? [{ allow: true, access: 'rwm' }]
    : [...DEVICE_RULES, ...(input.devices ?? []).map((d) => ({ allow: true, type: d.node.type, major: d.node.major, minor: d.node.minor, access: d.access })), ...(input.deviceRules ?? [])]
  const resources: Record<string, unknown> = { devices: deviceRules }
  const r = input.resources
  const mem: Record<string, number | boolean> = {}
  if (r.memory !== undefined && r.memory > 0) {
    mem.limit = r.memory
    // any negative swap limit is no limit, as dockerd's runtime applies it (-2 reached the kernel as an error)
    if (r.memorySwap !== undefined && r.memorySwap !== 0) mem.swap = r.memorySwap < 0 ? -1 : r.memorySwap
  }
  if (r.memoryReservation !== undefined && r.memoryReservation > 0) mem.reservation = r.memoryReservation
  if (r.memorySwappiness !== undefined) mem.swappiness = r.memorySwappiness
  if (r.disableOomKiller === true) mem.disableOOMKiller = true
  if (Object.keys(mem).length > 0) resources.memory = mem
  const cpu: Record<string, number | string> = {}
  if (r.cpusetCpus !== undefined && r.cpusetCpus !== '') cpu.cpus = r.cpusetCpus
  if (r.cpusetMems !== undefined && r.cpusetMems !== '') cpu.mems = r.cpusetMems
  if (r.cpuShares !== undefined && r.cpuShares > 0) cpu.shares = r.cpuShares
  if (r.nanoCpus !== undefined && r.nanoCpus > 0) {
    cpu.period = 100000
    cpu.quota = Math.round(r.nanoCpus * 100000 / 1e9)
  } else {
    if (r.cpuPeriod !== undefined && r.cpuPeriod > 0) cpu.period = r.cpuPeriod
    if (r.cpuQuota !== undefined && r.cpuQuota > 0) cpu.quota = r.cpuQuota
  }
  if (Object.keys(cpu).length > 0) resources.cpu = cpu
  if (r.pidsLimit !== undefined && r.pidsLimit > 0) resources.pids = { limit: r.pidsLimit }
  const blockIO = Object.fromEntries(Object.entries(r.blockIO ?? {}).filter(([, v]) => Array.isArray(v) ? v.length > 0 : v !== undefined && v > 0))
  if (Object.keys(blockIO).length > 0) resources.blockIO = blockIO

  const proc: Record<string, unknown> = {
    terminal: input.process.terminal,
    user: { uid: input.process.uid, gid: input.process.gid, additionalGids: input.process.additionalGids },
    args: input.process.args,
    env: input.process.env,
    cwd: input.process.cwd,
    capabilities: { bounding: caps, effective: caps, permitted: caps, inheritable: caps },
    rlimits: [
      ...((input.rlimits ?? []).some((l) => l.type === 'RLIMIT_NOFILE') ? [] : [{ type: 'RLIMIT_NOFILE', hard: nofile, soft: nofile }]),
      ...(input.rlimits ?? []).map((l) => ({ type: l.type, hard: rlimitValue(l.hard), soft: rlimitValue(l.soft) }))
    ],
    noNewPrivileges: input.noNewPrivileges === true,
    oomScoreAdj: input.oomScoreAdj ?? 0
  }
  if (input.process.terminal && input.process.consoleSize !== undefined) proc.consoleSize = input.process.consoleSize
  const linux: Record<string, unknown> = {
    resources,
    cgroupsPath: input.cgroupsPath,
    namespaces: [...namespace('pid', input.pidNs), ...namespace('ipc', input.ipcNs), ...namespace('uts', input.utsNs), { type: 'mount' }, ...(input.cgroupNs === true ? [{ type: 'cgroup' }] : []),
      ...(input.netns === null ? [] : [input.netns === undefined ? { type: 'network' } : { type: 'network', path: input.netns }])]
  }
  if (input.devices !== undefined && input.devices.length > 0) linux.devices = input.devices.map((d) => d.node)
  if (input.sysctl !== undefined && Object.keys(input.sysctl).length > 0) linux.sysctl = input.sysctl
  if (!input.privileged && input.unmaskedPaths !== true) {
    linux.maskedPaths = input.maskedPaths ?? MASKED_PATHS
    linux.readonlyPaths = input.readonlyPaths ?? READONLY_PATHS
  }
  const sc = input.seccomp
  if (sc !== undefined && !input.privileged && sc.choice.kind !== 'unconfined') {
    const profile = sc.choice.kind === 'profile' ? sc.choice.profile : defaultSeccompProfile()
    linux.seccomp = ociSeccomp(profile, { caps, arch: sc.arch, kernel: sc.kernel })
  }
  const spec: Record<string, unknown> = {
    ociVersion: '1.0.2',
    process: proc,
    root: { path: input.rootfs, readonly: input.readonlyRootfs },
    ...(input.utsNs === 'host' ? {} : { hostname: input.hostname }),
    mounts,
    linux
  }
  if (input.domainname !== undefined && input.domainname !== '' && input.utsNs !== 'host') spec.domainname = input.domainname
  return spec
}

/** Parses /proc/self/limits text for the hard limit of "Max open files". */
export function parseNofileHard (limitsText: string): number {
  const line = limitsText.split('\n').find((l) => l.startsWith('Max open files'))
  if (line === undefined) return 1048576
  const parts = line.slice('Max open files'.length).trim().split(/\s+/)
  const hard = parts[1]
  if (hard === undefined || hard === 'unlimited') return 1048576
  const n = Number.parseInt(hard, 10)
  return Number.isFinite(n) && n > 0 ? n : 1048576
}
