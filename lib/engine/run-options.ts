// The `docker run` settings of HostConfig beyond networking and binds, checked and decoded once from the record's typed
// families (decodeRunOptions, pure: at create, for the reply's errors and Warnings), then resolved against the host and
// the other containers at start (resolveNamespaces, ...) into what the runtime spec takes.
import { stat, readdir, readFile, access } from 'node:fs/promises'
import { constants as fsc } from 'node:fs'
import os from 'node:os'
import { join } from 'node:path'
import { seccompChoice } from '../runtime/seccomp.js'
import { invalidArgument, conflict, errorMessage } from '../errors.js'
import type { BlockIODevice, BlockIOLimits, DeviceNode, DeviceRule, MountSpec, NamespaceMode } from '../runtime/oci-spec.js'
import type { ResolvedUser } from '../runtime/user.js'
import type { ContainerRecord, DeviceMappingSetting, Ulimit } from './container.js'

/** The rlimits `--ulimit` names (RLIMIT_<NAME>). */
export const ULIMIT_NAMES: ReadonlySet<string> = new Set(['as', 'core', 'cpu', 'data', 'fsize', 'locks', 'memlock', 'msgqueue', 'nice', 'nofile', 'nproc',
  'rss', 'rtprio', 'rttime', 'sigpending', 'stack'])

/** Sysctls of the IPC namespace (besides fs.mqueue.*), as the runtime's validator lists them. */
const IPC_SYSCTLS = new Set(['kernel.msgmax', 'kernel.msgmnb', 'kernel.msgmni', 'kernel.sem', 'kernel.shmall',
  'kernel.shmmax', 'kernel.shmmni', 'kernel.shm_rmid_forced'])

export interface DeviceMapping { pathOnHost: string, pathInContainer: string, permissions: string }

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

export interface HostFacts {
  /** The CPUs and memory nodes containers may use, as cpuset lists ("0-1"). */
  cpus: string
  mems: string
  /** The init binary `--init` runs (undefined: none installed). */
  initPath?: string
  /** How many CPUs containers may use (the CPUs of `cpus`). */
  cpuCount: number
  /** The kernel has the block I/O weight controller, the throttles. */
  blkioWeight: boolean
  blkioThrottle: boolean
}

/** Parses a cpuset list ("0-2,4"); null when malformed. */
export function parseCpuset (s: string): number[] | null {
  const out: number[] = []
  for (const part of s.split(',')) {
    const m = /^(\d+)(?:-(\d+))?$/.exec(part.trim())
    if (m === null) return null
    const a = Number(m[1])
    const b = m[2] === undefined ? a : Number(m[2])
    if (b < a || b - a > 4096) return null
    for (let i = a; i <= b; i++) out.push(i)
  }
  return out
}

export function checkCpuset (v: unknown, available: string, what: 'cpus' | 'mems'): string {
  if (v === undefined || v === null || v === '') return ''
  if (typeof v !== 'string') throw invalidArgument(`json: cannot unmarshal ${typeof v} into Go struct field HostConfig.Cpuset${what === 'cpus' ? 'Cpus' : 'Mems'} of type string`)
  const want = parseCpuset(v)
  if (want === null) throw invalidArgument(`Invalid value ${v} for cpuset ${what}`)
  const have = new Set(parseCpuset(available) ?? [])
  if (want.some((n) => !have.has(n))) {
    throw invalidArgument(what === 'cpus'
      ? `Requested CPUs are not available - requested ${v}, available: ${available}`
      : `Requested memory nodes are not available - requested ${v}, available: ${available}`)
  }
  return v
}

/** tmpfs mount options as dockerd sets them: noexec,nosuid,nodev unless the user's options say otherwise. */
export function tmpfsOptions (user: string[]): string[] {
  const opts = user.filter((o) => o !== '')
  const has = (...names: string[]): boolean => opts.some((o) => names.includes(o))
  const base: string[] = []
  if (!has('exec', 'noexec')) base.push('noexec')
  if (!has('suid', 'nosuid')) base.push('nosuid')
  if (!has('dev', 'nodev')) base.push('nodev')
  return [...base, ...opts]
}

function mountPath (p: string, type: string): string {
  if (!p.startsWith('/')) throw invalidArgument(`invalid mount config for type "${type}": invalid mount path: '${p}' mount path must be absolute`)
  return p
}

/** --tmpfs (HostConfig.Tmpfs); `--mount type=tmpfs` is HostConfig.Mounts, which lib/volumes parses. */
function decodeTmpfs (map: Record<string, string>): RunOptions['tmpfs'] {
  return Object.entries(map).map(([path, opts]) => ({ destination: mountPath(path, 'tmpfs'), options: tmpfsOptions(opts.split(',')) }))
}

function decodeUlimits (list: Ulimit[]): RunOptions['ulimits'] {
  return list.map(({ name, soft, hard }) => {
    if (!ULIMIT_NAMES.has(name)) throw invalidArgument(`invalid ulimit type: ${name}`)
    if (soft > hard && hard !== -1) throw invalidArgument(`ulimit soft limit must be less than or equal to hard limit: ${soft} > ${hard}`)
    return { type: `RLIMIT_${name.toUpperCase()}`, soft, hard }
  })
}

function decodeSysctls (map: Record<string, string>, modes: { ipc: string, net: string, uts: string }): Record<string, string> {
  for (const k of Object.keys(map)) {
    if (IPC_SYSCTLS.has(k) || k.startsWith('fs.mqueue.')) {
      if (modes.ipc === 'host') throw invalidArgument(`sysctl "${k}" is not allowed in the hosts ipc namespace`)
    } else if (k.startsWith('net.')) {
      // the runtime's wordings, which dockerd reports (Berth refuses at create what dockerd's runtime refuses at start)
      if (modes.net === 'host') throw invalidArgument(`sysctl "${k}" not allowed in host network namespace`)
    } else if (k === 'kernel.domainname') {
      if (modes.uts === 'host') throw invalidArgument(`sysctl "${k}" is not in a separate kernel namespace`)
    } else {
      throw invalidArgument(`sysctl "${k}" is not in a separate kernel namespace`)
    }
  }
  return { ...map }
}

function decodeDevices (list: DeviceMappingSetting[]): DeviceMapping[] {
  return list.map((d) => {
    const host = d.pathOnHost
    const inside = d.pathInContainer !== '' ? d.pathInContainer : host
    const perms = d.cgroupPermissions !== '' ? d.cgroupPermissions : 'rwm'
    if (host === '') throw invalidArgument('invalid device mapping: PathOnHost is empty')
    if (!/^[rwm]{1,3}$/.test(perms)) throw invalidArgument(`invalid device mode: ${perms}`)
    if (!inside.startsWith('/')) throw invalidArgument(`${inside} is not an absolute path`)
    return { pathOnHost: host, pathInContainer: inside, permissions: perms }
  })
}

/** `c 1:3 rwm`, `a *:* m`, ... (dockerd's --device-cgroup-rule). */
export function parseDeviceRule (rule: string): DeviceRule {
  const m = /^([acb]) ([0-9]+|\*):([0-9]+|\*) ([rwm]{1,3})$/.exec(rule.trim())
  if (m === null) throw invalidArgument(`invalid device cgroup format '${rule}'`)
  const out: DeviceRule = { allow: true, type: m[1] as 'a' | 'b' | 'c', access: m[4] as string }
  if (m[2] !== '*') out.major = Number(m[2])
  if (m[3] !== '*') out.minor = Number(m[3])
  return out
}

function decodeSecurityOpt (opts: string[]): { noNewPrivileges: boolean, unmaskedPaths: boolean, warnings: string[] } {
  let noNewPrivileges = false
  let unmaskedPaths = false
  const warnings: string[] = []
  for (const opt of opts) {
    const sep = opt.search(/[=:]/)
    const key = sep === -1 ? opt : opt.slice(0, sep)
    const val = sep === -1 ? '' : opt.slice(sep + 1)
    if (key === 'no-new-privileges') {
      if (val === '' || val === 'true') noNewPrivileges = true
      else if (val === 'false') noNewPrivileges = false
      else throw invalidArgument(`invalid --security-opt 2: "${opt}"`)
    } else if (key === 'seccomp') {
      // unconfined, builtin (Docker's default profile) or a profile's JSON (the CLI sends the file's contents)
      seccompChoice([opt])
    } else if (key === 'apparmor') {
      if (val !== 'unconfined') warnings.push(`Berth applies no AppArmor profiles; security-opt "${opt}" is not applied`)
    } else if (key === 'label') {
      if (val !== 'disable') warnings.push(`Berth applies no SELinux labels; security-opt "${opt}" is not applied`)
    } else if (key === 'systempaths') {
      if (val !== 'unconfined') throw invalidArgument(`invalid --security-opt 2: "${opt}"`)
      unmaskedPaths = true
    } else if (key === 'credentialspec') {
      throw invalidArgument('credentialspec is only supported on Windows')
    } else {
      throw invalidArgument(`invalid --security-opt 1: "${opt}"`)
    }
  }
  return { noNewPrivileges, unmaskedPaths, warnings }
}

function namespaceMode (v: string | null | undefined, kind: 'PID' | 'IPC' | 'UTS', allowed: string[], dflt: string): string {
  const mode = typeof v === 'string' && v !== '' ? v : dflt
  if (allowed.includes(mode)) return mode
  if (kind !== 'UTS' && mode.startsWith('container:') && mode.length > 'container:'.length) return mode
  throw invalidArgument(`invalid ${kind} mode: ${mode}`)
}

/** The typed settings the run options are decoded from. */
export type RunInputs = Pick<ContainerRecord, 'namespaces' | 'process' | 'devices' | 'networkMode' | 'resources'>

/** Checks the run settings; returns them with the create reply's Warnings. */
export function decodeRunOptions (s: RunInputs, host: HostFacts): { options: RunOptions, warnings: string[] } {
  const warnings: string[] = []
  const n = s.namespaces
  const p = s.process
  const pidMode = namespaceMode(n.pidMode, 'PID', ['', 'host'], '')
  const ipcMode = namespaceMode(n.ipcMode, 'IPC', ['private', 'shareable', 'host', 'none'], 'private')
  const utsMode = namespaceMode(n.utsMode, 'UTS', ['', 'host'], '')
  const oom = p.oomScoreAdj ?? 0
  if (oom < -1000 || oom > 1000) throw invalidArgument(`Invalid value ${oom}, range for oom score adj is [-1000, 1000]`)
  const swappiness = typeof p.memorySwappiness === 'number' && p.memorySwappiness !== -1 ? p.memorySwappiness : undefined
  if (swappiness !== undefined && (swappiness < 0 || swappiness > 100)) throw invalidArgument(`Invalid value: ${swappiness}, valid memory swappiness range is 0-100`)
  const oomKillDisable = p.oomKillDisable === true
  if (oomKillDisable && !(s.resources.memory > 0)) warnings.push('OOM killer is disabled for the container, but no memory limit is set, this can result in the system running out of resources.')
  const cgroupns = n.cgroupnsMode !== '' ? n.cgroupnsMode : 'host'
  if (cgroupns !== 'host' && cgroupns !== 'private') throw invalidArgument(`invalid cgroup namespace mode: ${cgroupns}`)
  const sec = decodeSecurityOpt(p.securityOpt ?? [])
  warnings.push(...sec.warnings)
  const init = p.init === true
  if (init && host.initPath === undefined) {
    warnings.push('--init: no init binary found (docker-init or tini-static; see the daemon\'s --init-path); the command runs as PID 1')
  }
  return {
    options: {
      init: init && host.initPath !== undefined,
      tmpfs: decodeTmpfs(p.tmpfs ?? {}),
      ulimits: decodeUlimits(p.ulimits ?? []),
      sysctls: decodeSysctls(p.sysctls ?? {}, { ipc: ipcMode, net: s.networkMode, uts: utsMode }),
      devices: decodeDevices(s.devices.devices ?? []),
      deviceRules: (s.devices.cgroupRules ?? []).map(parseDeviceRule),
      groupAdd: p.groupAdd ?? [],
      cpusetCpus: checkCpuset(s.resources.cpusetCpus, host.cpus, 'cpus'),
      cpusetMems: checkCpuset(s.resources.cpusetMems, host.mems, 'mems'),
      noNewPrivileges: sec.noNewPrivileges,
      unmaskedPaths: sec.unmaskedPaths,
      pidMode,
      ipcMode,
      utsMode,
      oomScoreAdj: oom,
      ...(swappiness !== undefined ? { memorySwappiness: swappiness } : {}),
      oomKillDisable,
      ...(p.maskedPaths !== undefined && p.maskedPaths !== null ? { maskedPaths: p.maskedPaths } : {}),
      ...(p.readonlyPaths !== undefined && p.readonlyPaths !== null ? { readonlyPaths: p.readonlyPaths } : {}),
      cgroupNs: cgroupns === 'private'
    },
    warnings
  }
}

// ---- at start: the host's devices and the other containers ------------------------------------------------------

/** Linux's dev_t split (glibc's gnu_dev_major/minor). */
function devMajor (rdev: number): number { return Number((BigInt(rdev) >> 8n) & 0xfffn) | Number((BigInt(rdev) >> 32n) & ~0xfffn) }
function devMinor (rdev: number): number { return Number(BigInt(rdev) & 0xffn) | Number((BigInt(rdev) >> 12n) & ~0xffn) }

/** The device node at `path` on the host, to be created at `inside` in the container. */
export async function deviceNode (path: string, inside: string): Promise<DeviceNode> {
  let st
  try { st = await stat(path) } catch (err) {
    const code = (err as NodeJS.ErrnoException).code
    throw invalidArgument(`error gathering device information while adding custom device "${path}": ${code === 'ENOENT' ? 'no such file or directory' : String(code)}`, { cause: err })
  }
  if (!st.isCharacterDevice() && !st.isBlockDevice()) throw invalidArgument(`error gathering device information while adding custom device "${path}": not a device node`)
  return { path: inside, type: st.isCharacterDevice() ? 'c' : 'b', major: devMajor(st.rdev), minor: devMinor(st.rdev), fileMode: st.mode & 0o7777, uid: st.uid, gid: st.gid }
}

/** A block device limit as HostConfig names it (Blkio* lists): the device's path and its rate or weight. */
export interface BlkioDeviceLimit { path: string, rate?: number, weight?: number }

/** HostConfig's per-device block I/O limits, decoded (null: the list was not given). */
export interface BlkioDevices {
  weightDevice: BlkioDeviceLimit[] | null
  readBps: BlkioDeviceLimit[] | null
  writeBps: BlkioDeviceLimit[] | null
  readIOps: BlkioDeviceLimit[] | null
  writeIOps: BlkioDeviceLimit[] | null
}

/** The block I/O limits as the runtime takes them (devices by number); a missing device as dockerd says it. */
export async function blockIOLimits (weight: number | undefined, d: BlkioDevices): Promise<BlockIOLimits> {
  const devices = async (list: BlkioDeviceLimit[] | null): Promise<BlockIODevice[]> => {
    return await Promise.all((list ?? []).map(async (l) => {
      let st
      try { st = await stat(l.path) } catch (err) {
        throw invalidArgument(`stat ${l.path}: ${(err as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file or directory' : errorMessage(err)}`, { cause: err })
      }
      return { major: devMajor(st.rdev), minor: devMinor(st.rdev), ...(l.rate !== undefined ? { rate: l.rate } : {}), ...(l.weight !== undefined ? { weight: l.weight } : {}) }
    }))
  }
  return {
    ...(weight !== undefined && weight > 0 ? { weight } : {}),
    weightDevice: await devices(d.weightDevice),
    throttleReadBpsDevice: await devices(d.readBps),
    throttleWriteBpsDevice: await devices(d.writeBps),
    throttleReadIOPSDevice: await devices(d.readIOps),
    throttleWriteIOPSDevice: await devices(d.writeIOps)
  }
}

const HOST_DEV_SKIP = new Set(['pts', 'shm', 'fd', 'mqueue', '.lxc', '.lxd-mounts', '.udev', 'console'])

/** Every device node under the host's /dev (what a privileged container gets), bounded. */
export async function hostDevices (root = '/dev'): Promise<DeviceNode[]> {
  const out: DeviceNode[] = []
  const walk = async (dir: string, depth: number): Promise<void> => {
    if (depth > 4 || out.length > 4096) return
    let entries
    try { entries = await readdir(dir, { withFileTypes: true }) } catch { return }
    for (const e of entries) {
      if (HOST_DEV_SKIP.has(e.name) && dir === root) continue
      const p = join(dir, e.name)
      if (e.isDirectory()) await walk(p, depth + 1)
      else if (e.isCharacterDevice() || e.isBlockDevice()) out.push(await deviceNode(p, p).catch(() => null) as DeviceNode)
    }
  }
  await walk(root, 0)
  return out.filter((d) => d !== null)
}

/** What a container's namespaces join: another container's process, looked up by reference. */
export interface PeerLookup {
  (ref: string): { id: string, pid: number, running: boolean, ipcMode: string, shmDir: string } | undefined
}

export interface ResolvedNamespaces {
  pid: NamespaceMode
  ipc: NamespaceMode
  uts: NamespaceMode
  /** /dev/shm: a new tmpfs, a bind of another one (host or peer), or none. */
  shm: { kind: 'tmpfs' } | { kind: 'bind', source: string } | { kind: 'none' }
}

/** `shmDir`: where this container's own /dev/shm tmpfs is mounted when its IPC is shareable. */
export function resolveNamespaces (o: RunOptions, peer: PeerLookup, shmDir: string): ResolvedNamespaces {
  const join = (mode: string, kind: 'PID' | 'IPC'): { pid: number, shmDir: string } => {
    const ref = mode.slice('container:'.length)
    const p = peer(ref)
    if (p === undefined) throw invalidArgument(`No such container: ${ref}`)
    if (!p.running || p.pid === 0) throw conflict(`cannot join ${kind} of a non running container: ${ref}`)
    if (kind === 'IPC' && p.ipcMode !== 'shareable' && p.ipcMode !== 'host') throw conflict('non-shareable IPC (hint: use IpcMode:shareable for the donor container)')
    return { pid: p.pid, shmDir: p.shmDir }
  }
  let pid: NamespaceMode = 'private'
  if (o.pidMode === 'host') pid = 'host'
  else if (o.pidMode.startsWith('container:')) pid = { path: `/proc/${join(o.pidMode, 'PID').pid}/ns/pid` }
  let ipc: NamespaceMode = 'private'
  let shm: ResolvedNamespaces['shm'] = { kind: 'tmpfs' }
  if (o.ipcMode === 'host') { ipc = 'host'; shm = { kind: 'bind', source: '/dev/shm' } } else if (o.ipcMode === 'none') shm = { kind: 'none' }
  else if (o.ipcMode === 'shareable') shm = { kind: 'bind', source: shmDir }
  else if (o.ipcMode.startsWith('container:')) {
    const p = join(o.ipcMode, 'IPC')
    ipc = { path: `/proc/${p.pid}/ns/ipc` }
    shm = { kind: 'bind', source: p.shmDir }
  }
  return { pid, ipc, uts: o.utsMode === 'host' ? 'host' : 'private', shm }
}

/** --group-add: numbers as given, names from the container's /etc/group. */
export function resolveGroups (names: string[], groupFile: string): number[] {
  const rows = groupFile.split('\n').filter((l) => l !== '' && !l.startsWith('#')).map((l) => l.split(':'))
  return names.map((g) => {
    const row = rows.find((r) => r[0] === g)
    if (row !== undefined) return Number(row[2])
    if (/^\d+$/.test(g)) return Number(g)
    throw invalidArgument(`Unable to find group ${g}: no matching entries in group file`)
  })
}

/** The supplementary groups of a process run as `user` in a container: the user's own, then --group-add's (each once). */
export function supplementaryGids (user: ResolvedUser, groupAdd: string[], groupFile: string): number[] {
  const extra = groupAdd.length === 0 ? [] : resolveGroups(groupAdd, groupFile)
  return [...new Set([...user.additionalGids, ...extra.filter((g) => g !== user.gid)])]
}

/** The init binary's mount and the args it wraps (dockerd's /sbin/docker-init). */
export const INIT_DEST = '/sbin/docker-init'
export function initMount (initPath: string): MountSpec {
  return { destination: INIT_DEST, type: 'bind', source: initPath, options: ['rbind', 'ro', 'rprivate'] }
}

async function firstExecutable (names: string[]): Promise<string | undefined> {
  const dirs = (process.env.PATH ?? '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin').split(':').concat(['/usr/libexec/docker', '/usr/sbin', '/usr/bin'])
  for (const name of names) {
    for (const dir of name.includes('/') ? [''] : dirs) {
      const p = dir === '' ? name : join(dir, name)
      try { await access(p, fsc.X_OK); if ((await stat(p)).isFile()) return p } catch { /* next */ }
    }
  }
  return undefined
}

/**
 * The CPUs and memory nodes of the host's cpuset (cgroup v1 or v2) and the init binary: `initPath` when given (the
 * daemon's --init-path), else docker-init or a static tini (an image need not hold the libraries of a dynamic one),
 * else Debian's tini.
 */
export async function readHostFacts (initPath?: string): Promise<HostFacts> {
  const first = async (paths: string[]): Promise<string | undefined> => {
    for (const p of paths) {
      const t = (await readFile(p, 'utf8').catch(() => '')).trim()
      if (t !== '') return t
    }
    return undefined
  }
  const cpus = await first(['/sys/fs/cgroup/cpuset/cpuset.effective_cpus', '/sys/fs/cgroup/cpuset/cpuset.cpus', '/sys/fs/cgroup/cpuset.cpus.effective']) ??
    (os.cpus().length > 1 ? `0-${os.cpus().length - 1}` : '0')
  const mems = await first(['/sys/fs/cgroup/cpuset/cpuset.effective_mems', '/sys/fs/cgroup/cpuset/cpuset.mems', '/sys/fs/cgroup/cpuset.mems.effective']) ?? '0'
  const init = initPath !== undefined ? await firstExecutable([initPath]) : await firstExecutable(['docker-init', 'tini-static', 'tini'])
  const anyOf = async (paths: string[]): Promise<boolean> => (await Promise.all(paths.map(async (p) => await access(p).then(() => true, () => false)))).some((x) => x)
  const v2io = (await readFile('/sys/fs/cgroup/cgroup.subtree_control', 'utf8').catch(() => '')).split(/\s+/).includes('io')
  return {
    cpus,
    mems,
    ...(init !== undefined ? { initPath: init } : {}),
    cpuCount: Math.max(1, parseCpuset(cpus)?.length ?? 1),
    // (on cgroup v2 the weight files exist only below the root: not known here, so not claimed)
    blkioWeight: await anyOf(['/sys/fs/cgroup/blkio/blkio.weight', '/sys/fs/cgroup/blkio/blkio.bfq.weight']),
    blkioThrottle: v2io || await anyOf(['/sys/fs/cgroup/blkio/blkio.throttle.read_bps_device'])
  }
}
