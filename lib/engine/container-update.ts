// `docker update`: the body's checks and the record it changes (pure, decodeUpdate), then the live cgroup.
import { invalidArgument, conflict } from '../errors.js'
import type { ResourceUpdate } from '../runtime/cgroups.js'
import type { ContainerResources, RestartPolicy } from './container.js'
import { checkResources } from './resource-checks.js'
import { limitsOf } from './container-settings.js'
import { checkCpuset, type HostFacts } from './run-options.js'
import { KERNEL_MEMORY_WARNING } from './host-config-support.js'

/** The update body's fields Berth applies; the other resource fields of the body are named in a Warning. */
const APPLIED = ['Memory', 'MemorySwap', 'MemoryReservation', 'NanoCpus', 'CpuShares', 'CpuPeriod', 'CpuQuota',
  'CpusetCpus', 'CpusetMems', 'PidsLimit', 'BlkioWeight', 'RestartPolicy', 'KernelMemory'] as const

export interface DecodedUpdate {
  /** The record's resource settings to set. */
  patch: Partial<ContainerResources>
  /** What the live cgroup takes. */
  resources: ResourceUpdate
  /** The new restart policy, when the body sets one. */
  restartPolicy?: RestartPolicy
  warnings: string[]
}

function int (body: Record<string, unknown>, k: string): number | undefined {
  const v = body[k]
  if (v === undefined || v === null) return undefined
  if (typeof v !== 'number' || !Number.isInteger(v)) throw invalidArgument(`json: cannot unmarshal ${typeof v} into Go struct field UpdateConfig.${k} of type int64`)
  return v
}

function isEmpty (v: unknown): boolean {
  return v === undefined || v === null || v === 0 || v === '' || v === false || (Array.isArray(v) && v.length === 0) ||
    (typeof v === 'object' && Object.keys(v as object).length === 0)
}

/** dockerd's update rules (zero means unchanged) against the container's current settings. */
export function decodeUpdate (body: Record<string, unknown>, current: { resources: ContainerResources, autoRemove: boolean }, host: HostFacts): DecodedUpdate {
  const patch: Partial<ContainerResources> = {}
  const cur = current.resources
  const autoRemove = current.autoRemove
  let restartPolicy: RestartPolicy | undefined
  const resources: ResourceUpdate = {}
  const memory = int(body, 'Memory') ?? 0
  const swap = int(body, 'MemorySwap') ?? 0
  const reservation = int(body, 'MemoryReservation') ?? 0
  for (const k of ['NanoCpus', 'CpuQuota', 'CpuPeriod', 'BlkioWeight', 'KernelMemory']) int(body, k)
  // dockerd checks the body as it checks a create's HostConfig first (a weight the host lacks is dropped from it)
  const checked = limitsOf(body)
  const warnings = checkResources(checked, host, true)
  checkCpuset(body.CpusetCpus, host.cpus, 'cpus')
  checkCpuset(body.CpusetMems, host.mems, 'mems')
  if ((int(body, 'KernelMemory') ?? 0) !== 0) warnings.push(KERNEL_MEMORY_WARNING)
  if (memory !== 0) {
    const curSwap = cur.memorySwap
    if (curSwap > 0 && memory > curSwap && swap === 0) {
      throw conflict('Memory limit should be smaller than already set memoryswap limit, update the memoryswap at the same time')
    }
    patch.memory = memory
    resources.memory = memory
  }
  if (swap !== 0) {
    const mem = memory !== 0 ? memory : cur.memory
    if (swap > 0 && mem === 0) throw invalidArgument('You should always set the Memory limit when using Memoryswap limit, see usage')
    // stricter than dockerd, which lets the runtime refuse a swap limit below the current memory limit (and records
    // it for a stopped container, whose next start then fails)
    if (swap > 0 && swap < mem) throw invalidArgument('Minimum memoryswap limit should be larger than memory limit, see usage')
    patch.memorySwap = swap
    resources.memorySwap = swap
  }
  if (reservation !== 0) { patch.memoryReservation = reservation; resources.memoryReservation = reservation }
  const nano = int(body, 'NanoCpus') ?? 0
  const quota = int(body, 'CpuQuota') ?? 0
  const period = int(body, 'CpuPeriod') ?? 0
  if (nano !== 0) {
    if (cur.cpuPeriod > 0) throw conflict('Conflicting options: Nano CPUs cannot be updated as CPU Period has already been set')
    if (cur.cpuQuota > 0) throw conflict('Conflicting options: Nano CPUs cannot be updated as CPU Quota has already been set')
    patch.nanoCpus = nano
    resources.cpuPeriod = 100000
    resources.cpuQuota = Math.round(nano * 100000 / 1e9)
  }
  if (quota !== 0 || period !== 0) {
    if (period > 0 && cur.nanoCpus > 0) throw conflict('Conflicting options: CPU Period cannot be updated as NanoCPUs has already been set')
    if (cur.nanoCpus > 0) throw conflict('Conflicting options: CPU Quota cannot be updated as NanoCPUs has already been set')
    if (quota !== 0) { patch.cpuQuota = quota; resources.cpuQuota = quota }
    if (period !== 0) { patch.cpuPeriod = period; resources.cpuPeriod = period }
  }
  const shares = int(body, 'CpuShares') ?? 0
  if (shares !== 0) { patch.cpuShares = shares; resources.cpuShares = shares }
  for (const k of ['CpusetCpus', 'CpusetMems'] as const) {
    const v = body[k]
    if (typeof v === 'string' && v !== '') {
      if (k === 'CpusetCpus') { patch.cpusetCpus = v; resources.cpusetCpus = v } else { patch.cpusetMems = v; resources.cpusetMems = v }
    }
  }
  const pids = int(body, 'PidsLimit')
  if (pids !== undefined) {
    // 0 and -1 both mean unlimited
    patch.pidsLimit = pids <= 0 ? 0 : pids
    resources.pidsLimit = pids <= 0 ? -1 : pids
  }
  const blkio = checked.resources.blkioWeight ?? 0
  if (blkio !== 0) {
    patch.blkioWeight = blkio
    resources.blkioWeight = blkio
  }
  const rp = body.RestartPolicy as { Name?: unknown, MaximumRetryCount?: unknown } | undefined | null
  if (rp !== undefined && rp !== null && typeof rp === 'object' && typeof rp.Name === 'string' && rp.Name !== '') {
    if (!['no', 'always', 'unless-stopped', 'on-failure'].includes(rp.Name)) throw invalidArgument(`invalid restart policy '${rp.Name}'`)
    if (autoRemove && rp.Name !== 'no') throw invalidArgument('Restart policy cannot be updated because AutoRemove is enabled for the container')
    const max = typeof rp.MaximumRetryCount === 'number' ? rp.MaximumRetryCount : 0
    if (max !== 0 && rp.Name !== 'on-failure') throw invalidArgument(`invalid restart policy: maximum retry count can only be used with 'on-failure'`)
    restartPolicy = { name: rp.Name as RestartPolicy['name'], maximumRetryCount: max }
  }
  const ignored = Object.keys(body).filter((k) => !(APPLIED as readonly string[]).includes(k) && !isEmpty(body[k]))
  if (ignored.length > 0) warnings.push(`Berth does not update ${ignored.sort().join(', ')}; these settings are unchanged`)
  return { patch, resources, warnings, ...(restartPolicy !== undefined ? { restartPolicy } : {}) }
}
