// Build wire shapes: /system/df BuildCache items and the /build/prune reply.
import type { BuildCacheRecord, PruneResult } from '../build/build-cache.js'

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
