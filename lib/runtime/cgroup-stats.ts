// Readings of a container's cgroup for stats (cgroup v2, or the v1 controllers): CPU time and throttling, memory
// and pids, and the host's CPU time they compare against.
import { readFile } from 'node:fs/promises'
import os from 'node:os'

async function readText (path: string): Promise<string | undefined> {
  try { return await readFile(path, 'utf8') } catch { return undefined }
}

function num (text: string | undefined): number {
  if (text === undefined) return 0
  const n = Number(text.trim())
  return Number.isFinite(n) ? n : 0
}

function keyValues (text: string | undefined): Record<string, number> {
  const out: Record<string, number> = {}
  for (const line of (text ?? '').split('\n')) {
    const [k, v] = line.trim().split(/\s+/)
    if (k !== undefined && k !== '' && v !== undefined) out[k] = Number(v)
  }
  return out
}

const CLOCK_TICKS = 100
const NS = 1_000_000_000

/** Host CPU time in ns, from the first line of /proc/stat (what dockerd reports as system_cpu_usage). */
async function systemCpuUsage (): Promise<number> {
  const line = (await readText('/proc/stat'))?.split('\n').find((l) => l.startsWith('cpu ')) ?? ''
  const ticks = line.trim().split(/\s+/).slice(1, 8).reduce((a, v) => a + Number(v), 0)
  return ticks * (NS / CLOCK_TICKS)
}

export interface CpuSample { total: number, percpu: number[], kernel: number, user: number, system: number, online: number, throttling: { periods: number, throttled_periods: number, throttled_time: number } }

/** `path`: the container's cgroup path (containerCgroupPath). */
export async function cpuSample (path: string, cgroup2: boolean): Promise<CpuSample> {
    const system = await systemCpuUsage()
    const online = os.cpus().length
    if (cgroup2) {
      const dir = `/sys/fs/cgroup${path}`
      const st = keyValues(await readText(`${dir}/cpu.stat`))
      return {
        total: (st.usage_usec ?? 0) * 1000,
        percpu: [],
        kernel: (st.system_usec ?? 0) * 1000,
        user: (st.user_usec ?? 0) * 1000,
        system,
        online,
        throttling: { periods: st.nr_periods ?? 0, throttled_periods: st.nr_throttled ?? 0, throttled_time: (st.throttled_usec ?? 0) * 1000 }
      }
    }
    const acct = `/sys/fs/cgroup/cpuacct${path}`
    const ticks = keyValues(await readText(`${acct}/cpuacct.stat`))
    const percpu = (await readText(`${acct}/cpuacct.usage_percpu`) ?? '').trim().split(/\s+/).filter((v) => v !== '').map(Number)
    const thr = keyValues(await readText(`/sys/fs/cgroup/cpu${path}/cpu.stat`))
    return {
      total: num(await readText(`${acct}/cpuacct.usage`)),
      percpu,
      kernel: (ticks.system ?? 0) * (NS / CLOCK_TICKS),
      user: (ticks.user ?? 0) * (NS / CLOCK_TICKS),
      system,
      online,
      throttling: { periods: thr.nr_periods ?? 0, throttled_periods: thr.nr_throttled ?? 0, throttled_time: thr.throttled_time ?? 0 }
    }
  }

export async function memoryAndPids (path: string, cgroup2: boolean): Promise<{ memory: Record<string, unknown>, pids: Record<string, unknown> }> {
    const total = os.totalmem()
    if (cgroup2) {
      const dir = `/sys/fs/cgroup${path}`
      const maxText = (await readText(`${dir}/memory.max`))?.trim()
      const limit = maxText === undefined || maxText === 'max' ? total : Math.min(Number(maxText), total)
      const pidsMax = (await readText(`${dir}/pids.max`))?.trim()
      return {
        memory: { usage: num(await readText(`${dir}/memory.current`)), stats: keyValues(await readText(`${dir}/memory.stat`)), limit },
        pids: { current: num(await readText(`${dir}/pids.current`)), ...(pidsMax !== undefined && pidsMax !== 'max' ? { limit: Number(pidsMax) } : {}) }
      }
    }
    const mem = `/sys/fs/cgroup/memory${path}`
    const limitRaw = num(await readText(`${mem}/memory.limit_in_bytes`))
    const pidsMax = (await readText(`/sys/fs/cgroup/pids${path}/pids.max`))?.trim()
    return {
      memory: {
        usage: num(await readText(`${mem}/memory.usage_in_bytes`)),
        max_usage: num(await readText(`${mem}/memory.max_usage_in_bytes`)),
        stats: keyValues(await readText(`${mem}/memory.stat`)),
        failcnt: num(await readText(`${mem}/memory.failcnt`)),
        limit: limitRaw === 0 || limitRaw > total ? total : limitRaw
      },
      pids: { current: num(await readText(`/sys/fs/cgroup/pids${path}/pids.current`)), ...(pidsMax !== undefined && pidsMax !== 'max' ? { limit: Number(pidsMax) } : {}) }
    }
  }

/** One line of a blkio file, as dockerd reports it (the op as the kernel spells it). */
export interface BlkioEntry { major: number, minor: number, op: string, value: number }

/** `8:0 Read 4096` lines (the bare `Total n` line is the sum, left out as containerd does). */
function blkioEntries (text: string | undefined): BlkioEntry[] {
  const out: BlkioEntry[] = []
  for (const line of (text ?? '').split('\n')) {
    const m = /^(\d+):(\d+)\s+(\S+)\s+(\d+)$/.exec(line.trim())
    if (m !== null) out.push({ major: Number(m[1]), minor: Number(m[2]), op: m[3] as string, value: Number(m[4]) })
  }
  return out
}

/** The v1 files of blkio_stats' lists, CFQ's first, in dockerd's keys (containerd's blkio controller's Stat). */
const CFQ_FILES: Array<[key: string, file: string]> = [
  ['io_service_bytes_recursive', 'io_service_bytes_recursive'], ['io_serviced_recursive', 'io_serviced_recursive'],
  ['io_queue_recursive', 'io_queued_recursive'], ['io_service_time_recursive', 'io_service_time_recursive'],
  ['io_wait_time_recursive', 'io_wait_time_recursive'], ['io_merged_recursive', 'io_merged_recursive'],
  ['io_time_recursive', 'time_recursive'], ['sectors_recursive', 'sectors_recursive']
]

/**
 * blkio_stats: on cgroup v1 the eight lists from the CFQ scheduler's files, or, where they are absent or empty (no
 * CFQ), the throttle files' two (the others empty), as containerd reads them; on cgroup v2 io.stat's bytes read and
 * written per device (the others null), as dockerd's statsV2.
 */
export async function blkioStats (path: string, cgroup2: boolean): Promise<Record<string, BlkioEntry[] | null>> {
  if (cgroup2) {
    const out: Record<string, BlkioEntry[] | null> = Object.fromEntries(CFQ_FILES.map(([k]) => [k, null]))
    const bytes: BlkioEntry[] = []
    for (const line of ((await readText(`/sys/fs/cgroup${path}/io.stat`)) ?? '').split('\n')) {
      const [dev, ...fields] = line.trim().split(/\s+/)
      const m = /^(\d+):(\d+)$/.exec(dev ?? '')
      if (m === null) continue
      const kv = Object.fromEntries(fields.map((f) => f.split('=')))
      bytes.push({ major: Number(m[1]), minor: Number(m[2]), op: 'read', value: Number(kv.rbytes ?? 0) },
        { major: Number(m[1]), minor: Number(m[2]), op: 'write', value: Number(kv.wbytes ?? 0) })
    }
    out.io_service_bytes_recursive = bytes.length === 0 ? null : bytes
    return out
  }
  const dir = `/sys/fs/cgroup/blkio${path}`
  const out: Record<string, BlkioEntry[] | null> = Object.fromEntries(CFQ_FILES.map(([k]) => [k, []]))
  const cfq = await readText(`${dir}/blkio.io_serviced_recursive`)
  if (cfq !== undefined) {
    let size = 0
    for (const [key, file] of CFQ_FILES) { const e = blkioEntries(await readText(`${dir}/blkio.${file}`)); out[key] = e; size += e.length }
    if (size > 0) return out
  }
  out.io_serviced_recursive = blkioEntries(await readText(`${dir}/blkio.throttle.io_serviced_recursive`))
  out.io_service_bytes_recursive = blkioEntries(await readText(`${dir}/blkio.throttle.io_service_bytes_recursive`))
  return out
}
