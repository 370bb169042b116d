// The volume replies kept as bytes while the volumes stay as they were: GET /volumes is a concatenation of each
// record's cached JSON (the whole unfiltered reply reused), and `system df`'s volume rows are joined from cached text
// (the whole text reused while no volume, user or remembered size changed).
import type { Filters } from '../../http/query.js'
import type { VolumeRecord } from '../../volumes/volume-record.js'
import type { VolumeBackend, VolumeUsageBackend } from './backend.js'
import { listFilter, toVolumeWire } from './wire.js'

const LIST_HEAD = Buffer.from('{"Volumes":[')
const LIST_COMMA = Buffer.from(',')
const LIST_TAIL = Buffer.from('],"Warnings":null}\n')

export class VolumeListCache {
  /** Each record's wire bytes (records do not change once written). */
  private readonly bytes = new WeakMap<VolumeRecord, Buffer>()
  /** The whole unfiltered reply, as of the backend's counter. */
  private reply: { seq: number, bytes: Buffer } | null = null

  /** GET /volumes as JSON bytes. */
  list (b: VolumeBackend, f: Filters): Buffer {
    const test = listFilter(f, (name) => b.refCount(name))
    const sorted = b.byName()
    if (test === null && this.reply?.seq === sorted.seq) return this.reply.bytes
    const parts: Buffer[] = [LIST_HEAD]
    for (const v of sorted.list) {
      if (test !== null && !test(v)) continue
      if (parts.length > 1) parts.push(LIST_COMMA)
      parts.push(this.itemBytes(b, v))
    }
    parts.push(LIST_TAIL)
    const reply = Buffer.concat(parts)
    if (test === null) this.reply = { seq: sorted.seq, bytes: reply }
    return reply
  }

  private itemBytes (b: VolumeBackend, v: VolumeRecord): Buffer {
    let bytes = this.bytes.get(v)
    if (bytes === undefined) { bytes = Buffer.from(JSON.stringify(toVolumeWire(v, b.mountpoint(v.name)))); this.bytes.set(v, bytes) }
    return bytes
  }
}

export class VolumeUsageCache {
  private text: { key: string, text: string } | undefined
  /** Each record's JSON without its closing brace. */
  private readonly heads = new WeakMap<VolumeRecord, string>()

  /** `system df`'s Volumes as JSON text (an array): each record's cached text with its usage appended. */
  async usageJson (b: VolumeUsageBackend): Promise<string> {
    const key = await b.usageKey()
    if (this.text?.key === key) return this.text.text
    const parts: string[] = []
    let reusable = true
    for (const v of b.byName().list) {
      // as dockerd's LocalVolumesSize: volumes with driver options (their data is elsewhere) are left out
      if (v.options !== null && Object.keys(v.options).length > 0) continue
      let head = this.heads.get(v)
      if (head === undefined) { head = JSON.stringify(toVolumeWire(v, b.mountpoint(v.name))).slice(0, -1); this.heads.set(v, head) }
      const size = b.cachedSize(v.name) ?? await b.size(v)
      if (b.cachedSize(v.name) === undefined) reusable = false
      parts.push(`${head},"UsageData":{"RefCount":${b.refCount(v.name)},"Size":${size}}}`)
    }
    const text = `[${parts.join(',')}]`
    if (reusable && key === b.currentUsageKey()) this.text = { key, text }
    return text
  }
}
