// Where a container's cgroup lives on this host (cgroup v2 unified, or v1 controllers with an optional cgroup2
// mount beside them) and the live resource update, which the OCI runtime's `update` applies.
import { access, readFile, readdir, rmdir, writeFile } from 'node:fs/promises'
import { basename } from 'node:path'
import type { Runc } from './runc.js'
import { internal, errorMessage } from '../errors.js'

const CGROUP_ROOT = '/sys/fs/cgroup'

/** True when /sys/fs/cgroup is a cgroup v2 (unified) mount. */
export async function isCgroup2 (): Promise<boolean> {
  try { await access(`${CGROUP_ROOT}/cgroup.controllers`); return true } catch { return false }
}

/**
 * A container's cgroup path below each controller's root: /berth/ID, or under the container's --cgroup-parent
 * (always taken from the root, as dockerd's cgroupfs driver takes an absolute one).
 */
export function containerCgroupPath (id: string, parent = ''): string {
  const p = parent.replace(/^\/+|\/+$/g, '')
  return `/${p === '' ? 'berth' : p}/${id}`
}

/** A --cgroup-parent Berth accepts: path segments of letters, digits, '_', '-', '.', never '..' (and not too long). */
export function validCgroupParent (parent: string): boolean {
  const segs = parent.replace(/^\/+|\/+$/g, '').split('/')
  return parent.length <= 256 && segs.every((s) => /^[A-Za-z0-9_.-]+$/.test(s) && s !== '.' && s !== '..')
}

/** The file whose "oom_kill N" line counts the kernel's OOM kills in the cgroup at `cgroupsPath` (e.g. /berth/ID). */
export function oomCounterFile (cgroupsPath: string, cgroup2: boolean): string {
  return cgroup2 ? `${CGROUP_ROOT}${cgroupsPath}/memory.events` : `${CGROUP_ROOT}/memory${cgroupsPath}/memory.oom_control`
}

/** The directories of the cgroup at `cgroupsPath` (one per v1 controller hierarchy, or the v2 one). */
async function cgroupDirs (cgroupsPath: string, cgroup2: boolean): Promise<string[]> {
  if (cgroup2) return [`${CGROUP_ROOT}${cgroupsPath}`]
  const roots = await readdir(CGROUP_ROOT).catch(() => [] as string[])
  return roots.filter((r) => r !== 'unified').map((r) => `${CGROUP_ROOT}/${r}${cgroupsPath}`)
}

/**
 * Ends every process in the cgroup at `cgroupsPath` (SIGKILL; cgroup.kill where the kernel has it), looking again
 * until it is empty (a process may fork meanwhile; bounded), then removes the cgroup's directories. For a container
 * whose runtime is stuck before its process runs (`runc init` blocked): nothing of it remains. Returns the pids killed.
 */
export async function killCgroup (cgroupsPath: string, cgroup2: boolean): Promise<number[]> {
  const dirs = await cgroupDirs(cgroupsPath, cgroup2)
  const killed = new Set<number>()
  // best effort: a kernel without cgroup.kill (before 5.14), or a cgroup not made yet; the loop below kills one by one
  if (cgroup2) await writeFile(`${dirs[0] as string}/cgroup.kill`, '1').catch(() => {})
  for (let round = 0; round < 50; round++) {
    const pids = new Set<number>()
    for (const d of dirs) {
      const text = await readFile(`${d}/cgroup.procs`, 'utf8').catch(() => '')
      for (const l of text.split('\n')) if (/^\d+$/.test(l)) pids.add(Number(l))
    }
    if (pids.size === 0) break
    for (const pid of pids) {
      try { process.kill(pid, 'SIGKILL'); killed.add(pid) } catch { /* gone */ }
    }
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
  // an emptied cgroup can go (a kernel still reaping the last task answers EBUSY for a moment)
  for (const d of dirs) {
    for (let i = 0; i < 25; i++) {
      const err = await rmdir(d).then(() => null, (e: NodeJS.ErrnoException) => e)
      if (err === null || err.code === 'ENOENT') break
      if (err.code !== 'EBUSY') break
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
  }
  return [...killed]
}

/** Resource settings a running container's cgroup takes at once (`docker update`); undefined: unchanged. */
export interface ResourceUpdate {
  memory?: number
  /** -1: unlimited */
  memorySwap?: number
  memoryReservation?: number
  cpuShares?: number
  cpuQuota?: number
  cpuPeriod?: number
  cpusetCpus?: string
  cpusetMems?: string
  /** -1: unlimited */
  pidsLimit?: number
  blkioWeight?: number
}

/** The runtime's `update` arguments for `u` (the runtime writes the controllers' files in the order they need). */
export function updateArgs (u: ResourceUpdate): string[] {
  const out: string[] = []
  const add = (flag: string, v: number | string | undefined): void => { if (v !== undefined) out.push(flag, String(v)) }
  add('--memory', u.memory)
  add('--memory-swap', u.memorySwap)
  add('--memory-reservation', u.memoryReservation)
  add('--cpu-share', u.cpuShares)
  add('--cpu-quota', u.cpuQuota)
  add('--cpu-period', u.cpuPeriod)
  add('--cpuset-cpus', u.cpusetCpus)
  add('--cpuset-mems', u.cpusetMems)
  add('--pids-limit', u.pidsLimit)
  add('--blkio-weight', u.blkioWeight)
  return out
}

/** Applies `u` to the running container `id`'s cgroup; a refusal reads as dockerd reports the runtime's. */
export async function updateResources (runc: Runc, id: string, u: ResourceUpdate): Promise<void> {
  const args = updateArgs(u)
  if (args.length === 0) return
  try {
    await runc.run(['update', ...args, id])
  } catch (err) {
    throw internal(runtimeFailure(basename(runc.binary), err), { cause: err })
  }
}

/** "runc did not terminate successfully: exit status N: <the runtime's own error message>", as containerd words it. */
export function runtimeFailure (binary: string, err: unknown): string {
  const text = errorMessage(err)
  const last = [...text.matchAll(/level=error msg="((?:[^"\\]|\\.)*)"/g)].pop()?.[1]
  const code = (err as { cause?: { code?: unknown } }).cause?.code
  const message = last !== undefined ? last.replace(/\\(.)/g, '$1') : text
  return `${binary} did not terminate successfully: exit status ${typeof code === 'number' ? code : 1}: ${message}`
}
