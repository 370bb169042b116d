// Gzip for layer uploads with a compression level that follows the data. zlib's deflate spends ~35 MiB/s on random or
// already-compressed bytes (packed binaries, .gz files, images inside a layer) to save nothing, where stored blocks
// cost a copy.
//
// The input is cut into windows. Each window is deflated on its own on the thread pool (zlib's deflateRaw with a sync
// flush: the output is byte-aligned and not final, so windows simply follow one another; only back-references across
// a window boundary are lost). A window that shrank by less than 3% switches the stream to stored blocks, written
// here; after a run of stored windows one window is deflated again as a probe, so compressible data gets deflate
// back. The framing is RFC 1952's: header, the deflate blocks, a final empty stored block, CRC-32 and size.
import { Transform, type TransformCallback } from 'node:stream'
import zlib, { constants } from 'node:zlib'
import { promisify } from 'node:util'

const WINDOW = 2 * 1024 * 1024
/** Stored windows before the next probe. */
const STORED_RUN = 4
const INCOMPRESSIBLE = 0.97

const deflateRaw = promisify(zlib.deflateRaw) as (buf: Buffer, opts: zlib.ZlibOptions) => Promise<Buffer>

// zlib.crc32 arrived in Node 20.15; a table-driven one serves earlier 20.x
type Crc32 = (data: Buffer, value: number) => number
const nativeCrc32 = (zlib as unknown as { crc32?: Crc32 }).crc32
let table: Uint32Array | null = null
function tableCrc32 (data: Buffer, value: number): number {
  if (table === null) {
    table = new Uint32Array(256)
    for (let n = 0; n < 256; n++) {
      let c = n
      for (let k = 0; k < 8; k++) c = (c & 1) !== 0 ? 0xedb88320 ^ (c >>> 1) : c >>> 1
      table[n] = c >>> 0
    }
  }
  let c = ~value >>> 0
  for (let i = 0; i < data.length; i++) c = (table[(c ^ (data[i] as number)) & 0xff] as number) ^ (c >>> 8)
  return ~c >>> 0
}
export const crc32: Crc32 = nativeCrc32 ?? tableCrc32

/** The gzip header of RFC 1952: deflate, no name, no mtime, OS unknown. */
const HEADER = Buffer.from([0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff])
/** A final empty stored block: ends the deflate stream after byte-aligned blocks. */
const LAST_BLOCK = Buffer.from([0x01, 0x00, 0x00, 0xff, 0xff])

/** Non-final stored blocks (at most 65535 bytes each) carrying `data`. */
export function storedBlocks (data: Buffer): Buffer[] {
  const out: Buffer[] = []
  for (let off = 0; off < data.length; off += 0xffff) {
    const piece = data.subarray(off, off + 0xffff)
    const h = Buffer.allocUnsafe(5)
    h[0] = 0
    h.writeUInt16LE(piece.length, 1)
    h.writeUInt16LE(~piece.length & 0xffff, 3)
    out.push(h, piece)
  }
  return out
}

export class AdaptiveGzip extends Transform {
  private readonly level: number
  private parts: Buffer[] = []
  private held = 0
  private crc = 0
  private size = 0
  private mode: 'deflate' | 'stored'
  private storedWindows = 0
  /** Windows deflated and stored so far (for tests and logs). */
  readonly windows = { deflated: 0, stored: 0 }

  constructor (level: number) {
    super()
    this.level = level
    this.mode = level === 0 ? 'stored' : 'deflate'
    this.push(HEADER)
  }

  override _transform (chunk: Buffer, _enc: BufferEncoding, cb: TransformCallback): void {
    this.crc = crc32(chunk, this.crc)
    this.size += chunk.length
    this.parts.push(chunk)
    this.held += chunk.length
    if (this.held < WINDOW) { cb(); return }
    this.window().then(() => { cb() }, cb)
  }

  override _flush (cb: TransformCallback): void {
    this.window().then(() => {
      const trailer = Buffer.allocUnsafe(8)
      trailer.writeUInt32LE(this.crc >>> 0, 0)
      trailer.writeUInt32LE(this.size % 0x100000000, 4)
      this.push(LAST_BLOCK)
      cb(null, trailer)
    }, cb)
  }

  private async window (): Promise<void> {
    if (this.held === 0) return
    const data = this.parts.length === 1 ? this.parts[0] as Buffer : Buffer.concat(this.parts, this.held)
    this.parts = []
    this.held = 0
    if (this.mode === 'stored' && (this.level === 0 || ++this.storedWindows <= STORED_RUN)) {
      this.windows.stored++
      for (const b of storedBlocks(data)) this.push(b)
      return
    }
    const out = await deflateRaw(data, { level: this.level, finishFlush: constants.Z_SYNC_FLUSH })
    this.windows.deflated++
    this.push(out)
    this.storedWindows = 0
    this.mode = out.length > data.length * INCOMPRESSIBLE ? 'stored' : 'deflate'
  }
}
