// The volume API's operations over the store, in wire shapes: what lib/engine/routes/volumes.ts calls.
import { invalidArgument } from '../errors.js'
import { VolumeSizes } from './size-cache.js'
import type { VolumeStore } from './volume-store.js'
import { isMountedKind, type VolumeRecord } from './volume-record.js'
import { decodeCreateVolume, labelMatch, toVolumeWire } from './volume-wire.js'

export type VolumeFilters = Map<string, string[]>

function boolFilter (key: string, values: string[]): boolean {
  const v = values[values.length - 1] as string
  if (!['true', 'false', '1', '0'].includes(v.toLowerCase())) throw invalidArgument(`invalid filter '${key}=${v}'`)
  return v === 'true' || v === '1'
}

const LIST_HEAD = Buffer.from('{"Volumes":[')
const LIST_COMMA = Buffer.from(',')
const LIST_TAIL = Buffer.from('],"Warnings":null}\n')

export class VolumeApi {
  private readonly s: VolumeStore
  /** Each record's wire bytes (records do not change once written). */
  private readonly bytes = new WeakMap<VolumeRecord, Buffer>()
  /** The records in name order, and the whole unfiltered reply, as of store.seq. */
  private sorted: { seq: number, list: VolumeRecord[], reply: Buffer | null } = { seq: -1, list: [], reply: null }

  private readonly sizes = new VolumeSizes()

  constructor (s: VolumeStore) { this.s = s }

  /** Drops the inotify watches behind the remembered sizes. */
  close (): void { this.sizes.close() }

  private wire (v: VolumeRecord): Record<string, unknown> { return toVolumeWire(v, this.s.mountpoint(v.name)) }

  private wireBytes (v: VolumeRecord): Buffer {
    let b = this.bytes.get(v)
    if (b === undefined) { b = Buffer.from(JSON.stringify(this.wire(v))); this.bytes.set(v, b) }
    return b
  }

  private sortedList (): typeof this.sorted {
    if (this.sorted.seq !== this.s.seq) {
      const list = this.s.all().sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
      this.sorted = { seq: this.s.seq, list, reply: null }
    }
    return this.sorted
  }

  /** GET /volumes as JSON bytes: a concatenation of cached items (the unfiltered reply itself is cached). */
  async listVolumes (f: VolumeFilters): Promise<Buffer> {
    const dangling = f.has('dangling') && (f.get('dangling') ?? []).length > 0 ? boolFilter('dangling', f.get('dangling') as string[]) : undefined
    const sorted = this.sortedList()
    const unfiltered = [...f.values()].every((v) => v.length === 0)
    if (unfiltered && sorted.reply !== null) return sorted.reply
    const parts: Buffer[] = [LIST_HEAD]
    for (const v of sorted.list) {
      if (!unfiltered) {
        if (dangling !== undefined && (this.s.usedBy(v.name).length === 0) !== dangling) continue
        if (!(f.get('name') ?? []).every((n) => v.name.includes(n))) continue
        const drivers = f.get('driver') ?? []
        if (drivers.length > 0 && !drivers.includes(v.driver)) continue
        if (!(f.get('label') ?? []).every((l) => labelMatch(v.labels, l))) continue
      }
      if (parts.length > 1) parts.push(LIST_COMMA)
      parts.push(this.wireBytes(v))
    }
    parts.push(LIST_TAIL)
    const reply = Buffer.concat(parts)
    if (unfiltered) sorted.reply = reply
    return reply
  }

  async inspectVolume (name: string): Promise<Record<string, unknown>> { return this.wire(this.s.get(name)) }

  async createVolume (body: Record<string, unknown>): Promise<Record<string, unknown>> {
    const { volume } = await this.s.create(decodeCreateVolume(body))
    return this.wire(volume)
  }

  async removeVolume (name: string, force: boolean): Promise<void> {
    await this.s.remove(name, force)
    this.sizes.forget(name)
  }

  /** API ≥ 1.42 removes only anonymous volumes unless `all=true`; older clients get every unused volume removed. Announces a `prune` event. */
  async pruneVolumes (f: VolumeFilters, anonymousOnly: boolean): Promise<{ VolumesDeleted: string[] | null, SpaceReclaimed: number }> {
    const all = f.has('all') ? boolFilter('all', f.get('all') as string[]) : false
    const only = anonymousOnly && !all
    const r = await this.s.prune((v) => {
      if (only && !v.anonymous) return false
      for (const l of f.get('label') ?? []) if (!labelMatch(v.labels, l)) return false
      for (const l of f.get('label!') ?? []) if (labelMatch(v.labels, l)) return false
      return true
    }, async (v) => await this.size(v))
    for (const name of r.deleted) this.sizes.forget(name)
    this.s.notify('prune', '', { reclaimed: String(r.reclaimed) })
    return { VolumesDeleted: r.deleted.length === 0 ? null : r.deleted, SpaceReclaimed: r.reclaimed }
  }

  /** Bytes in a volume; -1 where the local driver mounts something else over it (dockerd reports those so). */
  async size (v: VolumeRecord): Promise<number> {
    return isMountedKind(v) ? -1 : await this.sizes.size(v.name, this.s.mountpoint(v.name))
  }

  /**
   * `system df`'s Volumes as JSON text (an array): cached item text with the usage appended; the whole text is
   * reused while no volume, reference or remembered size changed.
   */
  async usageJson (): Promise<string> {
    // one turn of the event loop first: change notifications already queued (a write just before this request) are
    // seen before any remembered size is used
    await new Promise<void>((resolve) => { setImmediate(resolve) })
    const key = `${this.s.seq}:${this.s.refSeq}:${this.sizes.version}`
    if (this.usageText?.key === key) return this.usageText.text
    const parts: string[] = []
    let reusable = true
    for (const v of this.sortedList().list) {
      // as dockerd's LocalVolumesSize: volumes with driver options (their data is elsewhere) are left out
      if (v.options !== null && Object.keys(v.options).length > 0) continue
      let head = this.usageHeads.get(v)
      if (head === undefined) { head = JSON.stringify(this.wire(v)).slice(0, -1); this.usageHeads.set(v, head) }
      const size = this.sizes.cached(v.name) ?? await this.size(v)
      if (this.sizes.cached(v.name) === undefined) reusable = false
      parts.push(`${head},"UsageData":{"RefCount":${this.s.usedBy(v.name).length},"Size":${size}}}`)
    }
    const text = `[${parts.join(',')}]`
    if (reusable && key === `${this.s.seq}:${this.s.refSeq}:${this.sizes.version}`) this.usageText = { key, text }
    return text
  }

  private usageText: { key: string, text: string } | undefined

  private readonly usageHeads = new WeakMap<VolumeRecord, string>()


}
