// A container's OCI bundle from its RunSpec: the /etc files it bind-mounts and config.json, with what the host and the
// image hold resolved here (the user and groups from the container's /etc files, device nodes, block devices, the init
// binary, this machine's seccomp architecture). An exec'd process's process.json from its container's config.json.
import { readFile } from 'node:fs/promises'
import os from 'node:os'
import { join } from 'node:path'
import { buildRuntimeSpec, capabilities, ociParse, DEFAULT_PATH_ENV, type MountSpec } from './oci-spec.js'
import { blockIOLimits, deviceNode, hostDevices, initMount, INIT_DEST } from './host-facts.js'
import { containerCgroupPath } from './cgroups.js'
import { goArch } from './seccomp.js'
import { resolveUser, readUserFiles, checkUserFiles, supplementaryGids, type UserFiles } from './user.js'
import type { ExecSpec, RunSpec } from './run-spec.js'
import type { StartFile } from './shim-client.js'
import { CONTAINER_READ_FILE } from '../util/private-modes.js'

/** What every bundle takes from the host (read when the engine starts). */
export interface BundleHost {
  hostNofileHard: number
  /** The capabilities --privileged and --cap-add ALL grant (this host's bounding set). */
  allCaps: readonly string[]
  /** The init binary --init runs (undefined: none installed). */
  initPath?: string
}

/** hostname, hosts and resolv.conf in the container's directory (bind-mounted by the spec). */
export function etcFiles (spec: RunSpec): StartFile[] {
  return [
    { path: join(spec.dir, 'hosts'), mode: CONTAINER_READ_FILE, data: spec.etc.hosts },
    { path: join(spec.dir, 'hostname'), mode: CONTAINER_READ_FILE, data: spec.hostname + '\n' },
    { path: join(spec.dir, 'resolv.conf'), mode: CONTAINER_READ_FILE, data: spec.etc.resolvConf }
  ]
}

/** The network namespace entry of the spec: a path to join, null for the host's, undefined for a new empty one. */
function netnsOf (spec: RunSpec): string | null | undefined {
  const n = spec.namespaces.net
  switch (n.kind) {
    case 'host': return null
    case 'new': return undefined
    case 'join': case 'create': return n.path
  }
}

/**
 * The OCI config. Users and groups resolve from `userFiles` when given (the image's, while the root filesystem is not
 * mounted yet and its writable layer has no /etc), else from the mounted root filesystem.
 */
export async function ociSpec (spec: RunSpec, host: BundleHost, userFiles: UserFiles | undefined): Promise<Record<string, unknown>> {
  const rootfs = spec.rootfs.paths.merged
  const p = spec.process
  // the runtime reads these files itself (runc init, blocking reads): refused before it could hang on them
  const files = userFiles ?? await readUserFiles(rootfs)
  checkUserFiles(files)
  const user = await resolveUser(files, p.user)
  const groupFile = p.groupAdd.length === 0 ? '' : files.group
  const devices = [
    ...(spec.privileged ? (await hostDevices()).map((node) => ({ node, access: 'rwm' })) : []),
    ...await Promise.all(spec.devices.map(async (d) => ({ node: await deviceNode(d.pathOnHost, d.pathInContainer), access: d.permissions })))
  ]
  const initPath = p.init ? host.initPath : undefined
  // a bare NAME (`-e NAME` with NAME unset in the client) is left out of the environment, as dockerd does
  const env = p.env.filter((e) => e.includes('='))
  if (!env.some((e) => e.startsWith('PATH='))) env.unshift(DEFAULT_PATH_ENV)
  if (!env.some((e) => e.startsWith('HOSTNAME='))) env.push(`HOSTNAME=${spec.hostname}`)
  if (p.tty && !env.some((e) => e.startsWith('TERM='))) env.push('TERM=xterm')
  if (!env.some((e) => e.startsWith('HOME='))) env.push(`HOME=${user.home === '' ? '/' : user.home}`)
  const etc: MountSpec[] = [
    { destination: '/etc/resolv.conf', type: 'bind', source: join(spec.dir, 'resolv.conf'), options: ['rbind', 'rprivate'] },
    { destination: '/etc/hostname', type: 'bind', source: join(spec.dir, 'hostname'), options: ['rbind', 'rprivate'] },
    { destination: '/etc/hosts', type: 'bind', source: join(spec.dir, 'hosts'), options: ['rbind', 'rprivate'] }
  ]
  const netns = netnsOf(spec)
  return buildRuntimeSpec({
    rootfs,
    readonlyRootfs: spec.readonlyRootfs,
    hostname: spec.hostname,
    domainname: spec.domainname,
    process: {
      args: initPath !== undefined ? [INIT_DEST, '--', ...p.args] : p.args,
      env,
      cwd: p.cwd === '' ? '/' : p.cwd,
      uid: user.uid,
      gid: user.gid,
      additionalGids: supplementaryGids(user, p.groupAdd, groupFile),
      terminal: p.tty,
      ...(p.consoleSize !== undefined ? { consoleSize: p.consoleSize } : {})
    },
    mounts: [...etc, ...spec.mounts, ...(initPath !== undefined ? [initMount(initPath)] : [])],
    resources: { ...spec.resources, blockIO: await blockIOLimits(spec.blkio.weight, spec.blkio.devices) },
    cgroupsPath: containerCgroupPath(spec.id, spec.cgroupParent),
    hostNofileHard: host.hostNofileHard,
    privileged: spec.privileged,
    capAdd: spec.capAdd,
    capDrop: spec.capDrop,
    shmSize: spec.shmSize,
    ...(netns !== undefined ? { netns } : {}),
    pidNs: spec.namespaces.pid,
    ipcNs: spec.namespaces.ipc,
    utsNs: spec.namespaces.uts,
    shm: spec.namespaces.shm,
    rlimits: spec.rlimits,
    sysctl: spec.sysctls,
    devices,
    deviceRules: spec.deviceRules,
    noNewPrivileges: spec.noNewPrivileges,
    oomScoreAdj: spec.oomScoreAdj,
    unmaskedPaths: spec.unmaskedPaths,
    ...(spec.maskedPaths !== undefined ? { maskedPaths: spec.maskedPaths } : {}),
    ...(spec.readonlyPaths !== undefined ? { readonlyPaths: spec.readonlyPaths } : {}),
    cgroupNs: spec.namespaces.cgroup,
    seccomp: { choice: spec.seccomp, arch: goArch(), kernel: os.release() }
  }, host.allCaps)
}

/** An exec'd process: its container's process with the exec's command, environment, directory, user and terminal. */
export async function execProcess (e: ExecSpec, allCaps: readonly string[]): Promise<Record<string, unknown>> {
  const bundle = ociParse(await readFile(join(e.dir, 'config.json'), 'utf8')) as { process: Record<string, unknown> }
  const base = bundle.process
  // the runtime reads them for every exec, even without a user: refused before it could hang on them
  const files = await readUserFiles(e.rootfs)
  checkUserFiles(files)
  const userFiles = e.user === '' ? null : files
  const user = userFiles === null ? null : await resolveUser(userFiles, e.user)
  const env = [...(base.env as string[])]
  for (const kv of e.env) {
    const k = kv.split('=')[0]
    const i = env.findIndex((x) => x.split('=')[0] === k)
    if (i === -1) env.push(kv); else env[i] = kv
  }
  const proc: Record<string, unknown> = {
    ...base,
    terminal: e.tty,
    args: e.args,
    env,
    cwd: e.cwd !== '' ? e.cwd : base.cwd
  }
  // another user keeps the container's --group-add groups, as in dockerd
  if (user !== null && userFiles !== null) {
    proc.user = { uid: user.uid, gid: user.gid, additionalGids: supplementaryGids(user, e.groupAdd, userFiles.group) }
  }
  if (e.privileged) {
    const caps = capabilities({ privileged: true }, allCaps)
    proc.capabilities = { bounding: caps, effective: caps, permitted: caps, inheritable: caps }
  }
  if (e.tty && e.consoleSize !== null && e.consoleSize.height > 0) proc.consoleSize = e.consoleSize
  else delete proc.consoleSize
  return proc
}
