// dockerd's checks of a container's resource limits, the same at create and at `docker update` (pure): its refusals
// and wordings (verifyPlatformContainerResources), and the Warnings of limits this host cannot apply.
import { invalidArgument } from '../errors.js'
import type { ContainerResources } from './container.js'
import type { BlkioDevices } from '../runtime/host-facts.js'

const MIN_MEMORY = 6 * 1024 * 1024

/** What the checks need to know of the host. */
export interface ResourceHost {
  /** How many CPUs containers may use. */
  cpuCount: number
  /** The kernel has the block I/O weight controller (blkio.weight / io.weight). */
  blkioWeight: boolean
  /** ... the block I/O throttles (blkio.throttle.* / io.max). */
  blkioThrottle: boolean
}

/** The per-device block I/O throttles, and what dockerd says where the kernel lacks them. */
const THROTTLES = [
  ['readBps', 'BPS Block I/O read limit', 'Block I/O BPS read limit'],
  ['writeBps', 'BPS Block I/O write limit', 'Block I/O BPS write limit'],
  ['readIOps', 'IOPS Block I/O read limit', 'Block I/O IOPS read limit'],
  ['writeIOps', 'IOPS Block I/O write limit', 'Block I/O IOPS write limit']
] as const

function listed (v: unknown[] | null): boolean { return v !== null && v.length > 0 }

/**
 * dockerd's ValidateRestartPolicy (create and update): a retry count only with on-failure, never negative.
 * `name` is the policy as given ('' is no policy).
 */
export function checkRestartPolicy (name: string, maximumRetryCount: number): void {
  switch (name) {
    case 'always': case 'unless-stopped': case 'no':
      if (maximumRetryCount !== 0) throw invalidArgument(`invalid restart policy: maximum retry count can only be used with 'on-failure'${maximumRetryCount < 0 ? ' and cannot be negative' : ''}`)
      return
    case 'on-failure':
      if (maximumRetryCount < 0) throw invalidArgument('invalid restart policy: maximum retry count cannot be negative')
      return
    case '': return
    default: throw invalidArgument(`invalid restart policy '${name}'`)
  }
}

/** The limits the checks read, decoded (container-settings.ts' limitsOf: from a HostConfig or an update body). */
export interface ResourceLimits { resources: ContainerResources, blkio: BlkioDevices }

/**
 * Throws dockerd's error for a refused combination of the resource limits (a create's or an update's); returns the
 * Warnings. `update`: a swap limit may come without a memory limit (the container has one already). A block I/O
 * weight or device list the host cannot apply is removed from `l`, as dockerd discards it.
 */
export function checkResources (l: ResourceLimits, host: ResourceHost, update: boolean): string[] {
  const warnings: string[] = []
  const r = l.resources
  const nano = r.nanoCpus
  if (nano > 0 && r.cpuPeriod > 0) throw invalidArgument('Conflicting options: Nano CPUs and CPU Period cannot both be set')
  if (nano > 0 && r.cpuQuota > 0) throw invalidArgument('Conflicting options: Nano CPUs and CPU Quota cannot both be set')
  if (nano < 0 || nano > host.cpuCount * 1e9) {
    throw invalidArgument(`Range of CPUs is from 0.01 to ${host.cpuCount}.00, as there are only ${host.cpuCount} CPUs available`)
  }
  // dockerd refuses negative shares when it builds the runtime spec (getCPUResources: at start, as a 500); refused
  // here at create and update, in its words
  if (r.cpuShares < 0) throw invalidArgument(`invalid CPU shares (${r.cpuShares}): value must be a positive integer`)
  const period = r.cpuPeriod
  if (period !== 0 && (period < 1000 || period > 1000000)) throw invalidArgument('CPU cfs period can not be less than 1ms (i.e. 1000) or larger than 1s (i.e. 1000000)')
  const quota = r.cpuQuota
  if (quota > 0 && quota < 1000) throw invalidArgument('CPU cfs quota can not be less than 1ms (i.e. 1000)')
  const memory = r.memory
  const swap = r.memorySwap
  const reservation = r.memoryReservation ?? 0
  if (memory !== 0 && memory < MIN_MEMORY) throw invalidArgument('Minimum memory limit allowed is 6MB')
  if (memory > 0 && swap > 0 && swap < memory) throw invalidArgument('Minimum memoryswap limit should be larger than memory limit, see usage')
  if (memory === 0 && swap > 0 && !update) throw invalidArgument('You should always set the Memory limit when using Memoryswap limit, see usage')
  if (reservation > 0 && reservation < MIN_MEMORY) throw invalidArgument('Minimum memory reservation allowed is 6MB')
  if (memory > 0 && reservation > 0 && memory < reservation) throw invalidArgument('Minimum memory limit can not be less than memory reservation limit, see usage')
  const weight = r.blkioWeight ?? 0
  if (weight > 0 && !host.blkioWeight) {
    warnings.push('Your kernel does not support Block I/O weight or the cgroup is not mounted. Weight discarded.')
    r.blkioWeight = 0
  } else if (weight > 0 && (weight < 10 || weight > 1000)) throw invalidArgument('Range of blkio weight is from 10 to 1000')
  if (listed(l.blkio.weightDevice) && !host.blkioWeight) {
    warnings.push('Your kernel does not support Block I/O weight_device or the cgroup is not mounted. Weight-device discarded.')
    l.blkio.weightDevice = []
  }
  for (const [field, what, limit] of THROTTLES) {
    if (listed(l.blkio[field]) && !host.blkioThrottle) {
      warnings.push(`Your kernel does not support ${what} or the cgroup is not mounted. ${limit} discarded.`)
      l.blkio[field] = []
    }
  }
  return warnings
}
