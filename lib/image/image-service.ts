// The image side of the engine: import, tag, remove with dockerd's conflict rules, and what containers need
// (resolveImage, layerPaths). Pull/push/commit build on the same stores.
import { Readable } from 'node:stream'
import { join } from 'node:path'
import { conflict, describeError, invalidArgument } from '../errors.js'
import { levelLogger } from '../log.js'
import { ContentStore } from './content-store.js'
import { LayerStore, chainIds } from './layer-store.js'
import { ImageStore } from './image-store.js'
import type { ContainerUsage, ImageConfigBlob, ImageProvider, ImageRecord, ImageRunConfig } from './types.js'
import { parseReference, withDefaultTag, familiarString, familiarName } from './reference.js'
import type { EventBus } from '../events/event-bus.js'
import { applyChanges } from './changes.js'
import { hostArch } from './platform.js'
import { CollectorGate } from './collector.js'
import { decompressed } from '../stream/decompressed.js'
import { isoTime } from '../util/time.js'

const ops = levelLogger('engine:images')

export interface ImageServiceOptions { dataRoot: string, events: EventBus, usage: ContainerUsage }

export type DeleteRecord = { Untagged: string } | { Deleted: string }

export class ImageService implements ImageProvider {
  readonly content: ContentStore
  readonly layers: LayerStore
  readonly store: ImageStore
  /** Work about to reference blobs and layers (pull, commit, build, load, import) runs inside it; sweeps alone. */
  readonly gate = new CollectorGate()
  private readonly o: ImageServiceOptions
  private readonly unpacking = new Map<string, Promise<void>>()
  /** Removals under way: a container create that counts as a user from now on waits for them (removalsSettled). */
  private readonly removals = new Set<Promise<unknown>>()

  constructor (o: ImageServiceOptions) {
    this.o = o
    this.content = new ContentStore(join(o.dataRoot, 'content'), { hashThread: true })
    this.layers = new LayerStore(join(o.dataRoot, 'layers'))
    this.store = new ImageStore(join(o.dataRoot, 'image'), this.content)
  }

  async init (): Promise<void> {
    await this.content.init()
    await this.layers.init()
    await this.store.init()
    // records written before layer sizes were kept per image (and were the tars' sizes): measured once
    for (const img of this.store.all()) {
      if (img.layerSizes === undefined) await this.store.setLayerSizes(img, await this.layerSizesOf(img.config))
    }
  }

  async resolveImage (ref: string): Promise<ImageRecord> {
    return this.store.lookup(ref).img
  }

  /**
   * The image's unpacked layer directories, lowest first. A layer whose tar is stored but not unpacked yet (commit
   * stores its layer only; a layer store emptied by an earlier removal) is unpacked here, once even when several
   * containers ask at the same time.
   */
  async layerPaths (image: ImageRecord): Promise<string[]> {
    const diffIds = image.config.rootfs.diff_ids
    const chains = chainIds(diffIds)
    for (let i = 0; i < chains.length; i++) {
      const chain = chains[i] as string
      if (await this.layers.has(chain)) continue
      let job = this.unpacking.get(chain)
      if (job === undefined) {
        const diffId = diffIds[i] as string
        const parent = i === 0 ? '' : chains[i - 1] as string
        job = (async () => {
          const size = await this.content.size(diffId)
          await this.layers.unpack(chain, { diffId, parent, size }, () => this.content.stream(diffId))
        })().finally(() => { this.unpacking.delete(chain) })
        this.unpacking.set(chain, job)
      }
      await job
    }
    return chains.map((c) => this.layers.diffPath(c))
  }

  /**
   * A layer's size as dockerd reports it (image Size, history): what its unpacked files hold. From its unpacked
   * record, else from what the layer's writer counted (commit), else its stored tar's size.
   */
  async layerSize (chainId: string, diffId: string): Promise<number> {
    // a layer's record never changes once written: its size is remembered (and forgotten when it is removed)
    const known = this.layerSizes.get(chainId)
    if (known !== undefined) return known
    const measured = await this.layers.contentSize(chainId)
    if (measured !== null) { this.layerSizes.set(chainId, measured); return measured }
    return await this.content.size(diffId).catch(() => 0)
  }

  /** The sizes of an image's layers, lowest first (kept in its record: ImageRecord.layerSizes). */
  async layerSizesOf (config: ImageConfigBlob): Promise<number[]> {
    const chains = chainIds(config.rootfs.diff_ids)
    const out: number[] = []
    for (let i = 0; i < chains.length; i++) out.push(await this.layerSize(chains[i] as string, config.rootfs.diff_ids[i] as string))
    return out
  }

  private readonly layerSizes = new Map<string, number>()

  /** Stores one uncompressed layer tar (from a stream), unpacks it on top of `parentChain`, returns its diff ID. */
  async addLayer (tar: Readable, parentChain: string | null, opts: { unpack?: boolean, fill?: (diffDir: string) => Promise<void>, contentSize?: () => number } = {}): Promise<{ diffId: string, chainId: string, size: number }> {
    if (opts.fill !== undefined) {
      // the caller writes the tree itself while the tar is stored and hashed
      const [ingested, staged] = await Promise.allSettled([this.content.ingest(tar), this.layers.stage(opts.fill)])
      if (ingested.status === 'rejected' || staged.status === 'rejected') {
        if (staged.status === 'fulfilled') await staged.value.abort()
        throw ingested.status === 'rejected' ? ingested.reason : (staged as PromiseRejectedResult).reason
      }
      const { digest: diffId, size } = ingested.value
      const chainId = parentChain === null ? diffId : chainIds([parentChain, diffId])[1] as string
      await staged.value.commit(chainId, { diffId, parent: parentChain ?? '', size })
      return { diffId, chainId, size }
    }
    const { digest: diffId, size } = await this.content.ingest(tar)
    const chainId = parentChain === null ? diffId : chainIds([parentChain, diffId])[1] as string
    // without unpack, the first container that needs the layer unpacks it (layerPaths); its size is the writer's count
    if (opts.unpack === false && opts.contentSize !== undefined && !await this.layers.has(chainId)) this.layerSizes.set(chainId, opts.contentSize())
    if (opts.unpack !== false) await this.layers.unpack(chainId, { diffId, parent: parentChain ?? '', size }, () => this.content.stream(diffId))
    return { diffId, chainId, size }
  }

  /** Registers an image from its config; tags it when `ref` is given. */
  async addImage (config: ImageConfigBlob, parent: string, ref?: string): Promise<ImageRecord> {
    const raw = Buffer.from(JSON.stringify(config))
    const id = await this.content.put(raw)
    const img = await this.store.add(id, config, parent, await this.layerSizesOf(config))
    if (ref !== undefined) await this.tagRef(img, ref)
    return img
  }

  async tagRef (img: ImageRecord, ref: string): Promise<void> {
    const r = parseReference(ref)
    if (r.digest !== undefined) throw invalidArgument('refusing to create a tag with a digest reference')
    if (familiarName(r) === 'sha256' || r.path === 'library/sha256') throw invalidArgument(`refusing to create an ambiguous tag using digest algorithm as name`)
    const name = familiarString(withDefaultTag(r))
    await this.store.tag(img, name)
    this.o.events.emit('image', 'tag', img.id, { name })
  }

  /** POST /images/create?fromSrc=-: a root filesystem tar (plain or gzip) becomes a one-layer image. */
  async importTar (src: Readable, opts: { repo?: string, tag?: string, message?: string, changes?: string[], platform?: string }): Promise<ImageRecord> {
    let ref: string | undefined
    if (opts.repo !== undefined && opts.repo !== '') {
      const r = parseReference(opts.repo)
      const tag = opts.tag !== undefined && opts.tag !== '' ? opts.tag : r.tag
      ref = familiarString(withDefaultTag({ ...r, ...(tag !== undefined ? { tag } : {}) }))
    }
    const tar = await decompressed(src)
    return await this.gate.within(async () => await this.importLayer(tar, opts, ref))
  }

  private async importLayer (tar: Readable, opts: { message?: string, changes?: string[], platform?: string }, ref: string | undefined): Promise<ImageRecord> {
    const { diffId } = await this.addLayer(tar, null)
    const now = isoTime()
    const runConfig: ImageRunConfig = applyChanges({}, opts.changes ?? [])
    const [os = 'linux', arch = hostArch()] = (opts.platform ?? '').split('/').filter((x) => x !== '')
    // the image's Comment and its history entry's, as dockerd's import writes both (`Imported from -` by default)
    const comment = opts.message !== undefined && opts.message !== '' ? opts.message : 'Imported from -'
    const config: ImageConfigBlob = {
      architecture: arch,
      os,
      created: now,
      comment,
      config: runConfig,
      rootfs: { type: 'layers', diff_ids: [diffId] },
      history: [{ created: now, created_by: '', comment }]
    }
    const img = await this.addImage(config, '', ref)
    this.o.events.emit('image', 'import', img.id, { name: ref ?? img.id })
    return img
  }

  /** DELETE /images/{name}: dockerd's rules (daemon/images/image_delete.go), simplified where it has no effect here. */
  async remove (ref: string, force: boolean, noprune: boolean): Promise<DeleteRecord[]> {
    const p = this.removeNow(ref, force, noprune)
    this.removals.add(p)
    try { return await p } finally { this.removals.delete(p) }
  }

  /**
   * Resolves once the removals under way now are over. A removal looks at the image's users once, at its start: a
   * container create that registered itself as a user waits for the removals that may have looked before, then
   * looks whether its image is still there.
   */
  async removalsSettled (): Promise<void> {
    if (this.removals.size > 0) await Promise.allSettled([...this.removals])
  }

  private async removeNow (ref: string, force: boolean, noprune: boolean): Promise<DeleteRecord[]> {
    const { img, via, name } = this.store.lookup(ref)
    const records: DeleteRecord[] = []
    const users = this.o.usage.containersUsingImage(img.id)
    if (via !== 'id') {
      // removing one reference; the last one (digests of the same repository count as one) is protected while a
      // container uses the image
      if (isSingleReference(img) && users.length > 0 && !force) {
        const u = users.find((x) => x.running) ?? users[0] as { id: string, running: boolean }
        throw conflict(`conflict: unable to remove repository reference "${ref}" (must force) - container ${u.id.slice(0, 12)} is using its referenced image ${img.id.slice(7, 19)}`)
      }
      const removed = name as string
      await this.untagOne(img, removed, records)
      // a tag removed with no other tag of its repository left takes that repository's digest references along
      // (dockerd's image_delete.go): no <none> image is left behind by `rmi name:tag` of a pulled image
      if (via === 'tag') {
        const repo = repoOf(removed)
        if (!img.repoTags.some((t) => repoOf(t) === repo)) {
          for (const d of img.repoDigests.filter((x) => repoOf(x) === repo)) await this.untagOne(img, d, records)
        }
      }
      if (img.repoTags.length + img.repoDigests.length > 0 || users.length > 0) return records
      await this.deleteImage(img, records, noprune)
      return records
    }
    const running = users.find((u) => u.running)
    if (running !== undefined) throw conflict(`conflict: unable to delete ${img.id.slice(7, 19)} (cannot be forced) - image is being used by running container ${running.id.slice(0, 12)}`)
    if (users.length > 0 && !force) throw conflict(`conflict: unable to delete ${img.id.slice(7, 19)} (must be forced) - image is being used by stopped container ${(users[0] as { id: string }).id.slice(0, 12)}`)
    const repos = this.store.reposOf(img)
    if (repos.size > 1 && !force) throw conflict(`conflict: unable to delete ${img.id.slice(7, 19)} (must be forced) - image is referenced in multiple repositories`)
    if (this.store.all().some((i) => i.parent === img.id) && !force) throw conflict(`conflict: unable to delete ${img.id.slice(7, 19)} (cannot be forced) - image has dependent child images`)
    for (const t of [...img.repoTags]) await this.untagOne(img, t, records)
    for (const d of [...img.repoDigests]) await this.untagOne(img, d, records)
    if (users.length > 0) return records
    await this.deleteImage(img, records, noprune)
    return records
  }

  private async untagOne (img: ImageRecord, ref: string, records: DeleteRecord[]): Promise<void> {
    if (img.repoTags.includes(ref)) await this.store.untag(ref)
    else await this.store.removeDigest(img, ref)
    records.push({ Untagged: ref })
    this.o.events.emit('image', 'untag', img.id, { name: ref })
  }

  private async deleteImage (img: ImageRecord, records: DeleteRecord[], noprune: boolean): Promise<void> {
    await this.store.delete(img.id)
    records.push({ Deleted: img.id })
    this.o.events.emit('image', 'delete', img.id, { name: img.id })
    // at once unless work inside the gate may be about to use these layers: then the collector takes them afterwards
    await this.gate.sweep(async () => { await this.releaseLayers(img) })
    if (!noprune && img.parent !== '') {
      const parent = this.store.byId(img.parent)
      if (parent !== undefined && parent.repoTags.length === 0 && parent.repoDigests.length === 0 &&
        this.o.usage.containersUsingImage(parent.id).length === 0 && !this.store.all().some((i) => i.parent === parent.id)) {
        await this.deleteImage(parent, records, noprune)
      }
    }
  }

  /** Removes the unpacked layers and stored layer tars no remaining image uses, and the config blob. */
  private async releaseLayers (img: ImageRecord): Promise<void> {
    const chainsInUse = new Set<string>()
    const blobsInUse = new Set<string>()
    for (const other of this.store.all()) {
      blobsInUse.add(other.id)
      for (const d of other.config.rootfs.diff_ids) blobsInUse.add(d)
      for (const c of chainIds(other.config.rootfs.diff_ids)) chainsInUse.add(c)
    }
    const chains = chainIds(img.config.rootfs.diff_ids)
    for (let i = 0; i < chains.length; i++) {
      const c = chains[i] as string
      if (chainsInUse.has(c) || this.unpacking.has(c)) continue
      this.freed += (await this.layers.meta(c))?.size ?? 0
      this.layerSizes.delete(c)
      await this.layers.remove(c)
    }
    // a blob that cannot go now is unused: the collector's next sweep tries again
    const left = (err: unknown, d: string): void => { ops.warn('removing image %s leaves blob %s: %s', img.id.slice(7, 19), d, describeError(err)) }
    for (const d of img.config.rootfs.diff_ids) if (!blobsInUse.has(d)) await this.content.delete(d).catch((err) => { left(err, d) })
    if (!blobsInUse.has(img.id)) await this.content.delete(img.id).catch((err) => { left(err, img.id) })
  }

  /** Unpacked layer bytes removed so far (prune reports what it frees as the difference). */
  freed = 0

  /**
   * The collector's sweep: content blobs and unpacked layers that no image references (left by interrupted imports,
   * failed pulls, a crash between a removal's steps). Call it through gate.sweep (the Collector does): work inside
   * the gate may be about to reference anything unreferenced now.
   */
  async collectGarbage (): Promise<number> {
    const chainsInUse = new Set<string>()
    const blobsInUse = new Set<string>()
    for (const img of this.store.all()) {
      blobsInUse.add(img.id)
      for (const d of img.config.rootfs.diff_ids) blobsInUse.add(d)
      for (const c of chainIds(img.config.rootfs.diff_ids)) chainsInUse.add(c)
    }
    for (const c of this.unpacking.keys()) chainsInUse.add(c)
    let bytes = 0
    for (const c of await this.layers.list()) {
      if (chainsInUse.has(c)) continue
      bytes += (await this.layers.meta(c))?.size ?? 0
      this.layerSizes.delete(c)
      await this.layers.remove(c)
    }
    for (const d of await this.content.list()) {
      if (blobsInUse.has(d)) continue
      bytes += await this.content.size(d).catch(() => 0)
      await this.content.delete(d)
    }
    this.freed += bytes
    return bytes
  }

}

/** The repository part of a familiar reference (`name:tag` or `name@sha256:…`). */
function repoOf (ref: string): string {
  const at = ref.indexOf('@')
  if (at !== -1) return ref.slice(0, at)
  const colon = ref.lastIndexOf(':')
  return colon > ref.lastIndexOf('/') ? ref.slice(0, colon) : ref
}

/** dockerd's isSingleReference: one tag (digests of its repository aside), or digests of one repository only. */
function isSingleReference (img: ImageRecord): boolean {
  const refs = [...img.repoTags, ...img.repoDigests]
  if (refs.length <= 1) return refs.length === 1
  if (img.repoTags.length > 1) return false
  const repos = new Set(refs.map(repoOf))
  return repos.size === 1
}
