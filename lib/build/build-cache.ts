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
 * Removes unused intermediate images, oldest leaves first; `untilMs` (ms epoch) keeps newer ones, `keepBytes` stops
 * once the cache is no larger (`keep-storage`).
 */
export async function pruneBuildCache (b: BuildBackend, o: { untilMs?: number, keepBytes?: number } = {}): Promise<PruneResult> {
  const deleted: string[] = []
  let reclaimed = 0
  let total = buildCacheRecords(b).reduce((n, r) => n + r.size, 0)
  const keep = o.keepBytes ?? 0
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
