// The HostConfig fields Berth neither applies through another module nor can apply: each one set is a Warnings
// entry at create, or a 400 where running without it would be unsafe or misleading (pure, over the record's typed
// families, before the record exists). See the README table.
import { invalidArgument } from '../errors.js'
import { validCgroupParent } from '../runtime/cgroups.js'
import type { ContainerRecord } from './container.js'

/** dockerd's deprecation warning, and what Berth does with the field. */
export const KERNEL_MEMORY_WARNING = 'Specifying a kernel memory limit is deprecated and will be removed in a future release. Berth does not apply KernelMemory; the setting is discarded'

function set (v: unknown): boolean {
  if (v === undefined || v === null || v === '' || v === 0 || v === false) return false
  if (Array.isArray(v)) return v.length > 0
  if (typeof v === 'object') return Object.keys(v as object).length > 0
  return true
}

/** What the checks read: the record's typed families. */
export type SupportInputs = Pick<ContainerRecord, 'namespaces' | 'devices' | 'mountRequests' | 'unapplied' | 'cgroupParent'>

/** Throws for refused fields; returns the Warnings of fields not applied. `knownRuntime`: whether a runtime name is configured. */
export function checkHostConfigSupport (s: SupportInputs, knownRuntime: (name: string) => boolean): string[] {
  const n = s.namespaces
  const u = s.unapplied
  if (n.runtime !== '' && !knownRuntime(n.runtime)) throw invalidArgument(`unknown or invalid runtime name: ${n.runtime}`)
  if (n.isolation !== '' && n.isolation !== 'default') throw invalidArgument(`Invalid isolation: "${n.isolation}" - linux only supports 'default'`)
  const userns = n.usernsMode ?? ''
  if (userns !== '' && userns !== 'host') throw invalidArgument(`Berth runs every container in the host's user namespace (no remapping): UsernsMode "${userns}" is not supported`)
  if (set(u.storageOpt)) throw invalidArgument("--storage-opt is supported only for overlay over xfs with 'pquota' mount option")
  if (set(n.cgroup)) throw invalidArgument(`Berth cannot run a container in another container's cgroup (Cgroup "${n.cgroup}")`)
  const parent = s.cgroupParent ?? ''
  if (parent !== '' && !validCgroupParent(parent)) throw invalidArgument(`invalid cgroup parent "${parent}": path segments of letters, digits, '_', '-' and '.' only`)
  // VolumeDriver is looked up only for the volumes it creates (lib/volumes' prepare), as in dockerd: a container without
  // such volumes accepts any name
  const r = s.devices.requests?.[0]
  if (r !== undefined) {
    const caps = `[${(r.capabilities ?? []).map((c) => `[${c.join(' ')}]`).join(' ')}]`
    throw invalidArgument(`could not select device driver "${r.driver}" with capabilities: ${caps}`)
  }
  const warnings: string[] = []
  // the docker CLI prints each entry after "WARNING: " itself
  const notApplied = (field: string, what: string): void => { warnings.push(`Berth does not apply ${field} (${what}); the setting is discarded`) }
  if (set(u.annotations)) notApplied('Annotations', 'OCI annotations')
  // dockerd warns that kernel memory limits are deprecated (and ignores them for API >= 1.42); Berth never applies them
  if (set(u.kernelMemory)) warnings.push(KERNEL_MEMORY_WARNING)
  // the runtime (runc 1.1) ignores kernel memory limits
  if (set(u.kernelMemoryTCP)) notApplied('KernelMemoryTCP', 'kernel TCP buffer limits')
  // Blkio*: applied where the kernel has them, else dockerd's warning (resource-checks.ts)
  for (const [f, v] of [['CpuRealtimePeriod', u.cpuRealtimePeriod], ['CpuRealtimeRuntime', u.cpuRealtimeRuntime]] as const) if (set(v)) notApplied(f, 'the real-time scheduler')
  for (const [f, v] of [['CpuCount', u.cpuCount], ['CpuPercent', u.cpuPercent], ['IOMaximumIOps', u.ioMaximumIOps], ['IOMaximumBandwidth', u.ioMaximumBandwidth]] as const) if (set(v)) notApplied(f, 'Windows only')
  return warnings
}
