// What a container's run takes from the host, read when the engine starts or at a start: the CPUs and memory nodes
// of the host's cpuset, the block I/O controllers, the init binary `--init` runs, device nodes (a --device, a
// privileged container's /dev, the block devices of the I/O limits).
import { stat, readdir, readFile, access } from 'node:fs/promises'
import { constants as fsc } from 'node:fs'
import os from 'node:os'
import { join } from 'node:path'
import { invalidArgument, errorMessage } from '../errors.js'
import type { BlockIODevice, BlockIOLimits, DeviceNode, MountSpec } from './oci-spec.js'

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
