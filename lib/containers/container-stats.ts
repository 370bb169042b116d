// A running container's processes and resource usage: GET /containers/{id}/top (the host's ps, filtered to the
// container's processes) and GET /containers/{id}/stats (its cgroup, sampled once a second).
import { execFile } from 'node:child_process'
import { conflict, invalidArgument, internal } from '../errors.js'
import { blkioStats, cpuSample, memoryAndPids, type CpuSample } from '../runtime/cgroup-stats.js'
import { interfaceStats } from '../runtime/net-stats.js'
import { containerCgroupPath } from '../runtime/cgroups.js'
import { isCgroup2 } from '../runtime/cgroups.js'
import { rfc3339Nano, ZERO_TIME } from '../util/time.js'
import type { ContainerHandle } from './container-handle.js'
import { isRunning, goneFromRuntime } from './container.js'

export interface ContainerStatsOptions {
  /** A container by full ID, name or unique ID prefix; throws not-found. */
  container (ref: string): ContainerHandle
  /** The host PIDs of a running container's processes (the runtime's `ps`). */
  pids (id: string): Promise<number[]>
  /** The interfaces of a container's network namespace (none for the host's and for none). */
  interfaces?: (id: string) => string[]
}

export interface TopResult { Titles: string[], Processes: string[][] }

/** The argument check dockerd applies to ps_args (a `pid` column under another name would hide the PID). */
function validatePsArgs (psArgs: string): void {
  for (const m of psArgs.matchAll(/\s+([^\s]*)=\s*(PID[^\s]*)/g)) {
    if (m[1] !== 'pid') throw invalidArgument(`specifying "${m[1] as string}=${m[2] as string}" is not allowed`)
  }
}

/** dockerd's parsePSOutput: keep the rows of the container's PIDs (and their thread rows), merge overhanging fields. */
export function parsePsOutput (output: string, pids: number[]): TopResult {
  const lines = output.split('\n')
  const titles = (lines[0] ?? '').split(/[\t\n\f\r ]+/).filter((f) => f !== '')
  const pidIndex = titles.indexOf('PID')
  if (pidIndex === -1) throw internal("Couldn't find PID field in ps output")
  const want = new Set(pids)
  const processes: string[][] = []
  const append = (fields: string[]): void => {
    processes.push([...fields.slice(0, titles.length - 1), fields.slice(titles.length - 1).join(' ')])
  }
  let inContainer = false
  for (const line of lines.slice(1)) {
    if (line === '') continue
    const fields = line.split(/[\t\n\f\r ]+/).filter((f) => f !== '')
    const pidField = fields[pidIndex] ?? ''
    if (pidField === '-') { if (inContainer) append(fields); continue }
    if (!/^\d+$/.test(pidField)) throw internal(`Unexpected pid '${pidField}'`)
    inContainer = want.has(Number(pidField))
    if (inContainer) append(fields)
  }
  return { Titles: titles, Processes: processes }
}

async function run (cmd: string, args: string[]): Promise<string> {
  return await new Promise((resolve, reject) => {
    execFile(cmd, args, { maxBuffer: 64 * 1024 * 1024, timeout: 30_000 }, (err, stdout, stderr) => {
      if (err !== null) {
        const first = String(stderr).split('\n')[0] ?? ''
        reject(internal(`${cmd}: ${first !== '' ? first : err.message}`, { cause: err }))
      } else resolve(String(stdout))
    })
  })
}

function zeroCpu (): Record<string, unknown> {
  return { cpu_usage: { total_usage: 0, usage_in_kernelmode: 0, usage_in_usermode: 0 }, throttling_data: { periods: 0, throttled_periods: 0, throttled_time: 0 } }
}

function cpuJson (s: CpuSample): Record<string, unknown> {
  return {
    cpu_usage: { total_usage: s.total, ...(s.percpu.length > 0 ? { percpu_usage: s.percpu } : {}), usage_in_kernelmode: s.kernel, usage_in_usermode: s.user },
    system_cpu_usage: s.system,
    online_cpus: s.online,
    throttling_data: s.throttling
  }
}

export class ContainerStats {
  private readonly o: ContainerStatsOptions
  private readonly cgroup2: Promise<boolean>

  constructor (o: ContainerStatsOptions) {
    this.o = o
    this.cgroup2 = isCgroup2()
  }

  /** GET /containers/{id}/top: the host's ps, filtered to the container's processes (as dockerd does). */
  async top (ref: string, psArgsRaw: string): Promise<TopResult> {
    const psArgs = psArgsRaw === '' ? '-ef' : psArgsRaw
    validatePsArgs(psArgs)
    const c = this.o.container(ref)
    if (!isRunning(c.rec) || c.conn === null) throw conflict(`container ${c.id} is not running`)
    if (c.rec.state.status === 'restarting') throw conflict(`Container ${c.id} is restarting, wait until the container is running`)
    // (an exit not applied yet: the runtime no longer knows the container)
    const pids = await this.o.pids(c.id).catch((err) => { throw goneFromRuntime(err) ? conflict(`container ${c.id} is not running`, { cause: err }) : err })
    const args = psArgs.split(' ')
    let output: string
    try {
      output = await run('ps', [...args, `-q${pids.join(',')}`])
    } catch {
      // some ps options (f, for one) cannot be combined with -q
      output = await run('ps', args)
    }
    return parsePsOutput(output, pids)
  }

  private async statsObject (c: ContainerHandle, pre: { cpu: CpuSample, read: bigint } | null): Promise<{ json: Record<string, unknown>, cpu: CpuSample, read: bigint }> {
    const read = BigInt(Date.now()) * 1_000_000n
    const path = containerCgroupPath(c.id, c.rec.cgroupParent ?? '')
    const cpu = await cpuSample(path, await this.cgroup2)
    const { memory, pids } = await memoryAndPids(path, await this.cgroup2)
    const blkio = await blkioStats(path, await this.cgroup2)
    // per interface, from the container's namespace (dockerd leaves the key out when there is none)
    const ifs = this.o.interfaces?.(c.id) ?? []
    const networks = ifs.length === 0 ? null : await interfaceStats(c.rec.state.pid, ifs)
    const json = {
      read: rfc3339Nano(read),
      preread: pre === null ? ZERO_TIME : rfc3339Nano(pre.read),
      pids_stats: pids,
      blkio_stats: blkio,
      num_procs: 0,
      storage_stats: {},
      cpu_stats: cpuJson(cpu),
      precpu_stats: pre === null ? zeroCpu() : cpuJson(pre.cpu),
      memory_stats: memory,
      ...(networks !== null && Object.keys(networks).length > 0 ? { networks } : {}),
      name: c.rec.name,
      id: c.id
    }
    return { json, cpu, read }
  }

  /**
   * GET /containers/{id}/stats: calls `write` with one stats object per second while the container runs (one
   * object when `stream` is false: two samples a second apart, so precpu_stats is filled, unless `oneShot`). A
   * container that does not run gets one object of zeros, as from dockerd.
   */
  async stats (ref: string, o: { stream: boolean, oneShot: boolean, signal: AbortSignal, write: (json: Record<string, unknown>) => Promise<void> }): Promise<void> {
    const c = this.o.container(ref)
    if (!isRunning(c.rec)) {
      await o.write({ read: ZERO_TIME, preread: ZERO_TIME, pids_stats: {}, blkio_stats: {}, num_procs: 0, storage_stats: {}, cpu_stats: zeroCpu(), precpu_stats: zeroCpu(), memory_stats: {}, name: c.rec.name, id: c.id })
      return
    }
    const exitSeq = c.exitSeq
    const stopped = (): boolean => o.signal.aborted || c.exitSeq !== exitSeq || c.removed
    let pre: { cpu: CpuSample, read: bigint } | null = null
    if (!o.stream && !o.oneShot) {
      const first = await this.statsObject(c, null)
      pre = { cpu: first.cpu, read: first.read }
      await tick(c, o.signal)
      if (o.signal.aborted) return
    }
    for (;;) {
      const s = await this.statsObject(c, pre)
      await o.write(s.json)
      if (!o.stream || stopped()) return
      pre = { cpu: s.cpu, read: s.read }
      await tick(c, o.signal)
      if (stopped()) return
    }
  }
}

/** Resolves after one second, or at once when the container stops or the client leaves. */
async function tick (c: ContainerHandle, signal: AbortSignal): Promise<void> {
  await new Promise<void>((resolve) => {
    const done = (): void => {
      clearTimeout(timer)
      c.off('exit', done); c.off('removed', done)
      signal.removeEventListener('abort', done)
      resolve()
    }
    const timer = setTimeout(done, 1000)
    timer.unref()
    c.on('exit', done); c.on('removed', done)
    signal.addEventListener('abort', done)
  })
}
