// The build cache of the classic builder is its intermediate images: untagged images the builder made (they carry a
// container_config). `builder prune` removes those no container uses and no other image builds on, leaves first,
// until none is left; `system df` lists them.
import type { BuildBackend, BuildImage } from './backend.js'

export interface BuildCacheRecord {
  id: string
  parent: string
  description: string
  inUse: boolean
  size: number
  created: string
}

export function isBuildCache (img: BuildImage): boolean {
  return img.repoTags.length === 0 && img.repoDigests.length === 0 && img.config.container_config !== undefined
}

function ownSize (b: BuildBackend, img: BuildImage): number {
  const parent = img.parent !== '' ? b.imageById(img.parent) : undefined
  return Math.max(0, img.size - (parent?.size ?? 0))
}

export function buildCacheRecords (b: BuildBackend): BuildCacheRecord[] {
  return b.allImages().filter(isBuildCache).map((img) => ({
    id: img.id,
    parent: img.parent,
    description: img.config.history?.[img.config.history.length - 1]?.created_by ?? '',
    inUse: b.imageInUse(img.id),
    size: ownSize(b, img),
    created: img.config.created ?? ''
  }))
}

export interface PruneResult { deleted: string[], reclaimed: number }

/**
 * How much space a prune may leave the cache (POST /build/prune): `reservedBytes` is never pruned into (the
 * `keep-storage` of API < 1.48, `reserved-space` since); `maxUsedBytes` is what the cache may keep, `minFreeBytes` the
 * disk space that must be free after it. 0: not set.
 */
export interface PruneSpace { reservedBytes: number, maxUsedBytes: number, minFreeBytes: number }

/**
 * The bytes of cache a prune keeps (0: none, prune all it may), as BuildKit reckons it: the maximum, lowered so the
 * disk gets its free space (with only a free-space floor that the disk already has, everything), never below the
 * reserve.
 */
export function keptBytes (space: PruneSpace, totalBytes: number, freeBytes: number): number {
  let keep = space.maxUsedBytes
  const excess = space.minFreeBytes - freeBytes
  if (space.minFreeBytes > 0 && excess > 0) keep = keep === 0 ? totalBytes - excess : Math.min(keep, totalBytes - excess)
  // only a free-space floor, and the disk has that free: nothing to prune
  else if (space.minFreeBytes > 0 && keep === 0) keep = totalBytes
  return Math.max(keep, space.reservedBytes, 0)
}

/**
 * Removes unused intermediate images, oldest leaves first; `untilMs` (ms epoch) keeps newer ones, `keepBytes` stops
 * once the cache is no larger (or the bytes `space` keeps, with the disk's free bytes).
 */
export async function pruneBuildCache (b: BuildBackend, o: { untilMs?: number, keepBytes?: number, space?: PruneSpace, freeBytes?: () => Promise<number> } = {}): Promise<PruneResult> {
  const deleted: string[] = []
  let reclaimed = 0
  let total = buildCacheRecords(b).reduce((n, r) => n + r.size, 0)
  const keep = o.space !== undefined
    ? keptBytes(o.space, total, o.space.minFreeBytes > 0 && o.freeBytes !== undefined ? await o.freeBytes() : Number.MAX_SAFE_INTEGER)
    : o.keepBytes ?? 0
  for (;;) {
    if (keep > 0 && total <= keep) break
    const all = b.allImages()
    const parents = new Set(all.map((i) => i.parent))
    const leaves = all.filter((img) => isBuildCache(img) && !parents.has(img.id) && !b.imageInUse(img.id) &&
      (o.untilMs === undefined || Date.parse(img.config.created ?? '') < o.untilMs))
      .sort((x, y) => (x.config.created ?? '') < (y.config.created ?? '') ? -1 : 1)
    if (leaves.length === 0) break
    for (const img of leaves) {
      if (keep > 0 && total <= keep) break
      const size = ownSize(b, img)
      await b.removeImage(img.id)
      deleted.push(img.id)
      reclaimed += size
      total -= size
    }
  }
  return { deleted, reclaimed }
}
