// The volume API's operations over the store, in wire shapes: what lib/engine/routes/volumes.ts calls.
import { invalidArgument } from '../errors.js'
import { dirSize } from '../util/du.js'
import type { VolumeStore } from './volume-store.js'
import { isMountedKind, type VolumeRecord } from './volume-record.js'
import { decodeCreateVolume, labelMatch, toVolumeWire } from './volume-wire.js'

export type VolumeFilters = Map<string, string[]>

function boolFilter (key: string, values: string[]): boolean {
  const v = values[values.length - 1] as string
  if (!['true', 'false', '1', '0'].includes(v.toLowerCase())) throw invalidArgument(`invalid filter '${key}=${v}'`)
  return v === 'true' || v === '1'
}

export class VolumeApi {
  private readonly s: VolumeStore
  constructor (s: VolumeStore) { this.s = s }

  private wire (v: VolumeRecord): Record<string, unknown> { return toVolumeWire(v, this.s.mountpoint(v.name)) }

  async listVolumes (f: VolumeFilters): Promise<{ Volumes: unknown[], Warnings: null }> {
    const dangling = f.has('dangling') && (f.get('dangling') ?? []).length > 0 ? boolFilter('dangling', f.get('dangling') as string[]) : undefined
    const out: unknown[] = []
    for (const v of this.s.all().sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
      if (dangling !== undefined && (this.s.usedBy(v.name).length === 0) !== dangling) continue
      if (!(f.get('name') ?? []).every((n) => v.name.includes(n))) continue
      const drivers = f.get('driver') ?? []
      if (drivers.length > 0 && !drivers.includes(v.driver)) continue
      if (!(f.get('label') ?? []).every((l) => labelMatch(v.labels, l))) continue
      out.push(this.wire(v))
    }
    return { Volumes: out, Warnings: null }
  }

  async inspectVolume (name: string): Promise<Record<string, unknown>> { return this.wire(this.s.get(name)) }

  async createVolume (body: Record<string, unknown>): Promise<Record<string, unknown>> {
    const { volume } = await this.s.create(decodeCreateVolume(body))
    return this.wire(volume)
  }

  async removeVolume (name: string, force: boolean): Promise<void> { await this.s.remove(name, force) }

  /** API ≥ 1.42 removes only anonymous volumes unless `all=true`; older clients get every unused volume removed. */
  async pruneVolumes (f: VolumeFilters, anonymousOnly: boolean): Promise<{ VolumesDeleted: string[] | null, SpaceReclaimed: number }> {
    const all = f.has('all') ? boolFilter('all', f.get('all') as string[]) : false
    const only = anonymousOnly && !all
    const r = await this.s.prune((v) => {
      if (only && !v.anonymous) return false
      for (const l of f.get('label') ?? []) if (!labelMatch(v.labels, l)) return false
      for (const l of f.get('label!') ?? []) if (labelMatch(v.labels, l)) return false
      return true
    }, async (v) => await this.size(v))
    return { VolumesDeleted: r.deleted.length === 0 ? null : r.deleted, SpaceReclaimed: r.reclaimed }
  }

  /** Bytes in a volume; -1 where the local driver mounts something else over it (dockerd reports those so). */
  async size (v: VolumeRecord): Promise<number> {
    return isMountedKind(v) ? -1 : await dirSize(this.s.mountpoint(v.name))
  }

  /** `system df`'s Volumes, with UsageData. */
  async usage (): Promise<Array<Record<string, unknown>>> {
    const out: Array<Record<string, unknown>> = []
    for (const v of this.s.all()) out.push(toVolumeWire(v, this.s.mountpoint(v.name), { size: await this.size(v), refCount: this.s.usedBy(v.name).length }))
    return out
  }
}
