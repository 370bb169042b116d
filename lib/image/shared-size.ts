// What each image has in common with the others (dockerd's SharedSize, of `docker images` with shared-size=1 and
// of `docker system df`): the sizes of its layers that another image is built on too. Pure.
import { chainIds } from './layer-store.js'
import type { ImageRecord } from './types.js'

/**
 * Image ID → the bytes of its layers that another of `images` uses too; `layerSize` gives a layer's size from its
 * chain ID, or from the image and the layer's index (an image record keeps its layers' sizes).
 */
export function sharedSizes (images: readonly ImageRecord[], layerSize: (chainId: string, img: ImageRecord, index: number) => number): Map<string, number> {
  const users = new Map<string, number>()
  const chainsOf = new Map<ImageRecord, string[]>()
  for (const img of images) {
    const chains = chainIds(img.config.rootfs.diff_ids)
    chainsOf.set(img, chains)
    for (const c of new Set(chains)) users.set(c, (users.get(c) ?? 0) + 1)
  }
  const out = new Map<string, number>()
  for (const [img, chains] of chainsOf) {
    let shared = 0
    const seen = new Set<string>()
    chains.forEach((c, i) => {
      if (seen.has(c)) return
      seen.add(c)
      if ((users.get(c) ?? 0) > 1) shared += layerSize(c, img, i)
    })
    out.set(img.id, shared)
  }
  return out
}
