// Build wire shapes: /system/df BuildCache items, the /build/prune reply, RUN containers' HostConfig from the query.
import { intValue } from '../../http/query.js'
import { invalidArgument } from '../../errors.js'
import type { BuildCacheRecord, PruneResult } from '../../build/build-cache.js'
import { parseJson } from '../../util/json-depth.js'

export function toBuildCacheItem (r: BuildCacheRecord): Record<string, unknown> {
  return {
    ID: r.id.replace(/^sha256:/, ''),
    Parents: r.parent !== '' ? [r.parent.replace(/^sha256:/, '')] : null,
    Type: 'regular',
    Description: r.description,
    InUse: r.inUse,
    Shared: false,
    Size: r.size,
    CreatedAt: r.created,
    LastUsedAt: r.created,
    UsageCount: 1
  }
}

export function toBuildPruneReply (r: PruneResult): Record<string, unknown> {
  return { CachesDeleted: r.deleted.length > 0 ? r.deleted.map((d) => d.replace(/^sha256:/, '')) : null, SpaceReclaimed: r.reclaimed }
}

/** The RUN containers' HostConfig from POST /build's query (networkmode, extrahosts, shmsize, memory, cpu*…). */
export function hostConfigFromQuery (q: URLSearchParams): Record<string, unknown> {
  const hc: Record<string, unknown> = {}
  const mode = q.get('networkmode')
  hc.NetworkMode = mode === null || mode === '' || mode === 'default' ? 'default' : mode
  const extra = q.getAll('extrahosts').flatMap((e) => e.split(',')).filter((e) => e !== '')
  if (extra.length > 0) hc.ExtraHosts = extra
  const ints: Array<[string, string]> = [['shmsize', 'ShmSize'], ['memory', 'Memory'], ['memswap', 'MemorySwap'], ['cpushares', 'CpuShares'], ['cpuperiod', 'CpuPeriod'], ['cpuquota', 'CpuQuota']]
  for (const [k, field] of ints) {
    const v = intValue(q, k)
    if (v !== undefined && v !== 0) hc[field] = v
  }
  for (const [k, field] of [['cpusetcpus', 'CpusetCpus'], ['cpusetmems', 'CpusetMems'], ['cgroupparent', 'CgroupParent']] as const) {
    const v = q.get(k)
    if (v !== null && v !== '') hc[field] = v
  }
  const rawUlimits = q.get('ulimits')
  if (rawUlimits !== null && rawUlimits !== '') {
    let ulimits: unknown
    try { ulimits = parseJson(rawUlimits) } catch { ulimits = null }
    if (!Array.isArray(ulimits)) throw invalidArgument('invalid ulimits parameter: a JSON array expected')
    if (ulimits.length > 0) hc.Ulimits = ulimits
  }
  return hc
}
