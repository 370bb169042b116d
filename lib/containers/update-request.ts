// The `POST /containers/{id}/update` body (PascalCase, as the client sends it) decoded into a typed camelCase update
// (pure): the same limit families the record keeps (ContainerResources, BlkioDevices), the restart policy as given,
// and the names of the body's fields Berth does not apply. The wire's type errors are dockerd's; the update's rules
// (container-update.ts) read the typed values only. The route decodes; ContainerService.update takes the request.
import { invalidArgument } from '../errors.js'
import type { ResourceLimits } from './resource-checks.js'
import { limitsOf } from './container-settings.js'

/** The update body's fields Berth applies; the other resource fields of the body are named in a Warning. */
const APPLIED = ['Memory', 'MemorySwap', 'MemoryReservation', 'NanoCpus', 'CpuShares', 'CpuPeriod', 'CpuQuota',
  'CpusetCpus', 'CpusetMems', 'PidsLimit', 'BlkioWeight', 'RestartPolicy', 'KernelMemory'] as const

/** The integer fields of the body, in the order their type is checked. */
const INTEGERS = ['Memory', 'MemorySwap', 'MemoryReservation', 'NanoCpus', 'CpuQuota', 'CpuPeriod', 'BlkioWeight',
  'KernelMemory', 'CpuShares', 'PidsLimit'] as const

/** A decoded update body: zero (or absent) means unchanged, as in dockerd. */
export interface UpdateRequest {
  /** The resource limits of the body, in the record's families (pidsLimit null: not given). */
  limits: ResourceLimits
  kernelMemory: number
  /** The restart policy, when the body names one (not yet checked). */
  restartPolicy?: { name: string, maximumRetryCount: number }
  /** The body's non-empty fields Berth does not update (wire names, sorted). */
  unapplied: string[]
}

function isEmpty (v: unknown): boolean {
  return v === undefined || v === null || v === 0 || v === '' || v === false || (Array.isArray(v) && v.length === 0) ||
    (typeof v === 'object' && Object.keys(v as object).length === 0)
}

/** Decodes an update body; throws dockerd's error for a field of the wrong type. */
export function decodeUpdateBody (body: Record<string, unknown>): UpdateRequest {
  for (const k of INTEGERS) {
    const v = body[k]
    if (v !== undefined && v !== null && (typeof v !== 'number' || !Number.isInteger(v))) {
      throw invalidArgument(`json: cannot unmarshal ${typeof v} into Go struct field UpdateConfig.${k} of type int64`)
    }
  }
  for (const k of ['CpusetCpus', 'CpusetMems'] as const) {
    const v = body[k]
    if (v !== undefined && v !== null && typeof v !== 'string') throw invalidArgument(`json: cannot unmarshal ${typeof v} into Go struct field HostConfig.${k} of type string`)
  }
  const rp = body.RestartPolicy as { Name?: unknown, MaximumRetryCount?: unknown } | undefined | null
  const named = rp !== undefined && rp !== null && typeof rp === 'object' && typeof rp.Name === 'string' && rp.Name !== ''
  return {
    limits: limitsOf(body),
    kernelMemory: typeof body.KernelMemory === 'number' ? body.KernelMemory : 0,
    ...(named ? { restartPolicy: { name: rp.Name as string, maximumRetryCount: typeof rp.MaximumRetryCount === 'number' ? rp.MaximumRetryCount : 0 } } : {}),
    unapplied: Object.keys(body).filter((k) => !(APPLIED as readonly string[]).includes(k) && !isEmpty(body[k])).sort()
  }
}
