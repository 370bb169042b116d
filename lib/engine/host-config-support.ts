// The HostConfig fields Berth neither applies through another module nor can apply: each one set is a Warnings
// entry at create, or a 400 where running without it would be unsafe or misleading (pure). See the README table.
import { invalidArgument } from '../errors.js'
import { validCgroupParent } from '../runtime/cgroups.js'

/** dockerd's deprecation warning, and what Berth does with the field. */
export const KERNEL_MEMORY_WARNING = 'Specifying a kernel memory limit is deprecated and will be removed in a future release. Berth does not apply KernelMemory; the setting is discarded'

function set (v: unknown): boolean {
  if (v === undefined || v === null || v === '' || v === 0 || v === false) return false
  if (Array.isArray(v)) return v.length > 0
  if (typeof v === 'object') return Object.keys(v as object).length > 0
  return true
}

/** Throws for refused fields; returns the Warnings of fields not applied. `runtimes`: the runtime names accepted. */
export function checkHostConfigSupport (hc: Record<string, unknown>, config: { MacAddress?: unknown }, runtimes: string[]): string[] {
  const rt = typeof hc.Runtime === 'string' ? hc.Runtime : ''
  if (rt !== '' && !runtimes.includes(rt)) throw invalidArgument(`unknown or invalid runtime name: ${rt}`)
  const iso = typeof hc.Isolation === 'string' ? hc.Isolation : ''
  if (iso !== '' && iso !== 'default') throw invalidArgument(`Invalid isolation: "${iso}" - linux only supports 'default'`)
  const userns = typeof hc.UsernsMode === 'string' ? hc.UsernsMode : ''
  if (userns !== '' && userns !== 'host') throw invalidArgument(`Berth runs every container in the host's user namespace (no remapping): UsernsMode "${userns}" is not supported`)
  if (set(hc.StorageOpt)) throw invalidArgument("--storage-opt is supported only for overlay over xfs with 'pquota' mount option")
  if (set(hc.Cgroup)) throw invalidArgument(`Berth cannot run a container in another container's cgroup (Cgroup "${String(hc.Cgroup)}")`)
  const parent = typeof hc.CgroupParent === 'string' ? hc.CgroupParent : ''
  if (parent !== '' && !validCgroupParent(parent)) throw invalidArgument(`invalid cgroup parent "${parent}": path segments of letters, digits, '_', '-' and '.' only`)
  const vd = typeof hc.VolumeDriver === 'string' ? hc.VolumeDriver : ''
  if (vd !== '' && vd !== 'local') throw invalidArgument(`error looking up volume plugin ${vd}: plugin "${vd}" not found`)
  if (Array.isArray(hc.DeviceRequests) && hc.DeviceRequests.length > 0) {
    const r = hc.DeviceRequests[0] as { Driver?: string, Capabilities?: string[][] }
    const caps = `[${(r.Capabilities ?? []).map((c) => `[${c.join(' ')}]`).join(' ')}]`
    throw invalidArgument(`could not select device driver "${r.Driver ?? ''}" with capabilities: ${caps}`)
  }
  const warnings: string[] = []
  // the docker CLI prints each entry after "WARNING: " itself
  const notApplied = (field: string, what: string): void => { warnings.push(`Berth does not apply ${field} (${what}); the setting is discarded`) }
  if (set(hc.Annotations)) notApplied('Annotations', 'OCI annotations')
  // dockerd warns that kernel memory limits are deprecated (and ignores them for API >= 1.42); Berth never applies them
  if (set(hc.KernelMemory)) warnings.push(KERNEL_MEMORY_WARNING)
  // the runtime (runc 1.1) ignores kernel memory limits
  if (set(hc.KernelMemoryTCP)) notApplied('KernelMemoryTCP', 'kernel TCP buffer limits')
  // Blkio*: applied where the kernel has them, else dockerd's warning (resource-checks.ts)
  for (const f of ['CpuRealtimePeriod', 'CpuRealtimeRuntime']) if (set(hc[f])) notApplied(f, 'the real-time scheduler')
  for (const f of ['CpuCount', 'CpuPercent', 'IOMaximumIOps', 'IOMaximumBandwidth']) if (set(hc[f])) notApplied(f, 'Windows only')
  if (set(config.MacAddress)) notApplied('MacAddress', 'addresses are assigned by the network')
  return warnings
}
