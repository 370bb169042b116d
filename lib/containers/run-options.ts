// The `docker run` settings of HostConfig beyond networking and binds, checked and decoded once from the record's typed
// families (decodeRunOptions, pure: at create, for the reply's errors and Warnings), then resolved against the host and
// the other containers at start (resolveNamespaces) into what the runtime spec takes. What the host has (devices,
// cpusets, the init binary) is read by lib/runtime (host-facts.ts).
import { seccompChoice } from '../runtime/seccomp.js'
import { invalidArgument, conflict } from '../errors.js'
import type { DeviceRule, NamespaceMode } from '../runtime/oci-spec.js'
import { parseCpuset, type HostFacts } from '../runtime/host-facts.js'
import type { DeviceMapping } from '../runtime/run-spec.js'
import type { ContainerRecord, DeviceMappingSetting, RunOptions, Ulimit } from './container.js'

/** The rlimits `--ulimit` names (RLIMIT_<NAME>). */
export const ULIMIT_NAMES: ReadonlySet<string> = new Set(['as', 'core', 'cpu', 'data', 'fsize', 'locks', 'memlock', 'msgqueue', 'nice', 'nofile', 'nproc',
  'rss', 'rtprio', 'rttime', 'sigpending', 'stack'])

/** Sysctls of the IPC namespace (besides fs.mqueue.*), as the runtime's validator lists them. */
const IPC_SYSCTLS = new Set(['kernel.msgmax', 'kernel.msgmnb', 'kernel.msgmni', 'kernel.sem', 'kernel.shmall',
  'kernel.shmmax', 'kernel.shmmni', 'kernel.shm_rmid_forced'])


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

