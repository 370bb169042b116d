// `docker update`: dockerd's rules for a decoded update body (update-request.ts) against the container's
// current settings, and what changes in the record and the live cgroup (pure).
import { invalidArgument, conflict } from '../errors.js'
import type { ResourceUpdate } from '../runtime/cgroups.js'
import type { ContainerResources, RestartPolicy } from './container.js'
import { checkResources, checkRestartPolicy } from './resource-checks.js'
import type { UpdateRequest } from './update-request.js'
import { checkCpuset } from './run-options.js'
import type { HostFacts } from '../runtime/host-facts.js'
import { KERNEL_MEMORY_WARNING } from './host-config-support.js'

/** What an update changes. */
export interface UpdatePlan {
  /** The record's resource settings to set. */
  patch: Partial<ContainerResources>
  /** What the live cgroup takes. */
  resources: ResourceUpdate
  /** The new restart policy, when the body sets one. */
  restartPolicy?: RestartPolicy
  warnings: string[]
}

/** dockerd's update rules (zero means unchanged) against the container's current settings. */
export function planUpdate (req: UpdateRequest, current: { resources: ContainerResources, autoRemove: boolean }, host: HostFacts): UpdatePlan {
  const patch: Partial<ContainerResources> = {}
  const cur = current.resources
  const want = req.limits.resources
  const resources: ResourceUpdate = {}
  const { memory, memorySwap: swap } = want
  const reservation = want.memoryReservation ?? 0
  // dockerd checks the body as it checks a create's HostConfig first (a weight the host lacks is dropped from it)
  const warnings = checkResources(req.limits, host, true)
  const cpusetCpus = checkCpuset(want.cpusetCpus, host.cpus, 'cpus')
  const cpusetMems = checkCpuset(want.cpusetMems, host.mems, 'mems')
  if (req.kernelMemory !== 0) warnings.push(KERNEL_MEMORY_WARNING)
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
    // any negative swap limit is no limit (-1 to the runtime), as dockerd applies it
    resources.memorySwap = swap < 0 ? -1 : swap
  }
  if (reservation !== 0) { patch.memoryReservation = reservation; resources.memoryReservation = reservation }
  const { nanoCpus: nano, cpuQuota: quota, cpuPeriod: period } = want
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
  const shares = want.cpuShares
  if (shares !== 0) { patch.cpuShares = shares; resources.cpuShares = shares }
  if (cpusetCpus !== '') { patch.cpusetCpus = cpusetCpus; resources.cpusetCpus = cpusetCpus }
  if (cpusetMems !== '') { patch.cpusetMems = cpusetMems; resources.cpusetMems = cpusetMems }
  const pids = want.pidsLimit
  if (pids !== null) {
    // 0 and -1 both mean unlimited
    patch.pidsLimit = pids <= 0 ? 0 : pids
    resources.pidsLimit = pids <= 0 ? -1 : pids
  }
  const blkio = want.blkioWeight ?? 0
  if (blkio !== 0) {
    patch.blkioWeight = blkio
    resources.blkioWeight = blkio
  }
  let restartPolicy: RestartPolicy | undefined
  const rp = req.restartPolicy
  if (rp !== undefined) {
    checkRestartPolicy(rp.name, rp.maximumRetryCount)
    if (current.autoRemove && rp.name !== 'no') throw invalidArgument('Restart policy cannot be updated because AutoRemove is enabled for the container')
    restartPolicy = { name: rp.name as RestartPolicy['name'], maximumRetryCount: rp.maximumRetryCount }
  }
  if (req.unapplied.length > 0) warnings.push(`Berth does not update ${req.unapplied.join(', ')}; these settings are unchanged`)
  return { patch, resources, warnings, ...(restartPolicy !== undefined ? { restartPolicy } : {}) }
}
