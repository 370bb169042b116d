// What the volume routes need: method-only, in lib/volumes' own vocabulary (VolumeService implements it).
import type { VolumeRecord } from '../../volumes/volume-record.js'
import type { CreateVolumeRequest } from '../../volumes/volume-store.js'

export interface VolumeBackend {
  /** Every volume in name order, and a counter that moves whenever one is created or removed. */
  byName (): { seq: number, list: readonly VolumeRecord[] }
  /** The volume by name; throws not-found. */
  get (name: string): VolumeRecord
  mountpoint (name: string): string
  /** How many containers use the volume. */
  refCount (name: string): number
  create (req: CreateVolumeRequest): Promise<VolumeRecord>
  /** Throws conflict while a container uses it (unless forced), not-found for an unknown name. */
  remove (name: string, force: boolean): Promise<void>
  /** Removes the unused volumes `pick` chooses (and announces it); their names and the bytes reclaimed. */
  prune (pick: (v: VolumeRecord) => boolean): Promise<{ deleted: string[], reclaimed: number }>
}

/** What `system df` needs of the volumes besides the list: sizes (remembered while true) and when they may change. */
export interface VolumeUsageBackend {
  byName (): { seq: number, list: readonly VolumeRecord[] }
  mountpoint (name: string): string
  refCount (name: string): number
  size (v: VolumeRecord): Promise<number>
  cachedSize (name: string): number | undefined
  /** Changes whenever a volume, its users or a remembered size may have (after queued change notifications). */
  usageKey (): Promise<string>
  /** The same key as of now. */
  currentUsageKey (): string
}
