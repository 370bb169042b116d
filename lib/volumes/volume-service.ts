// The volume operations the API asks for, over the store and the remembered sizes: the volumes in name order,
// create, remove, prune (announced), and each volume's size and users for `system df`. Typed: the wire shapes are
// lib/api/volumes'.
import { VolumeSizes } from './size-cache.js'
import type { CreateVolumeRequest, VolumeStore } from './volume-store.js'
import { isMountedKind, type VolumeRecord } from './volume-record.js'

export class VolumeService {
  private readonly s: VolumeStore
  /** The records in name order, as of store.seq. */
  private sorted: { seq: number, list: VolumeRecord[] } = { seq: -1, list: [] }
  private readonly sizes = new VolumeSizes()

  constructor (s: VolumeStore) { this.s = s }

  /** Drops the inotify watches behind the remembered sizes. */
  close (): void { this.sizes.close() }

  /** Every volume in name order, and the store's change counter (the list is the same object while it holds). */
  byName (): { seq: number, list: readonly VolumeRecord[] } {
    if (this.sorted.seq !== this.s.seq) {
      const list = this.s.all().sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
      this.sorted = { seq: this.s.seq, list }
    }
    return this.sorted
  }

  /** The volume by name; throws not-found. */
  get (name: string): VolumeRecord { return this.s.get(name) }

  mountpoint (name: string): string { return this.s.mountpoint(name) }

  /** How many containers use the volume. */
  refCount (name: string): number { return this.s.usedBy(name).length }

  async create (req: CreateVolumeRequest): Promise<VolumeRecord> {
    return (await this.s.create(req)).volume
  }

  async remove (name: string, force: boolean): Promise<void> {
    await this.s.remove(name, force)
    this.sizes.forget(name)
  }

  /** Removes the unused volumes `pick` chooses, and announces a `prune` event with the space reclaimed. */
  async prune (pick: (v: VolumeRecord) => boolean): Promise<{ deleted: string[], reclaimed: number }> {
    const r = await this.s.prune(pick, async (v) => await this.size(v))
    for (const name of r.deleted) this.sizes.forget(name)
    this.s.notify('prune', '', { reclaimed: String(r.reclaimed) })
    return r
  }

  /** Bytes in a volume; -1 where the local driver mounts something else over it (dockerd reports those so). */
  async size (v: VolumeRecord): Promise<number> {
    return isMountedKind(v) ? -1 : await this.sizes.size(v.name, this.s.mountpoint(v.name))
  }

  /** The size remembered and still true, if any (no walk). */
  cachedSize (name: string): number | undefined { return this.sizes.cached(name) }

  /**
   * A key that changes whenever a volume, a volume's users or a remembered size may have: what `system df`'s volume
   * rows were made from. Change notifications already queued (a write just before this request) are seen first.
   */
  async usageKey (): Promise<string> {
    await new Promise<void>((resolve) => { setImmediate(resolve) })
    return this.currentUsageKey()
  }

  /** The usage key as of now, without waiting for queued change notifications. */
  currentUsageKey (): string { return `${this.s.seq}:${this.s.refSeq}:${this.sizes.version}` }
}
