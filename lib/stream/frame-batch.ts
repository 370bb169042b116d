// Frames made in place over a batch of log records (log-record.ts): each record's 16-byte header shrinks to the 8-byte
// stdcopy header (to nothing for raw TTY output) and the payloads move left over the gap, so a run of records leaves
// as one contiguous slice of the read buffer: one write for the run instead of one per line, and nothing copied out of
// the buffer. With `merge`, consecutive payloads of one stream share one frame (attach: what was written together
// goes out together, as dockerd streams what it read). Other bytes (a joined line, a timestamped one) cut the run and
// go in order. Pure over the buffer it is given; the records it rewrites must not be read again.

export class FrameBatch {
  private buf: Buffer = Buffer.alloc(0)
  private start = -1
  private w = 0
  private head = -1
  private headStream = 0
  private readonly parts: Buffer[] = []
  private readonly raw: boolean
  private readonly merge: boolean

  constructor (raw: boolean, merge: boolean) { this.raw = raw; this.merge = merge }

  /** Starts on a new read buffer (whatever was taken from the last one is written already). */
  begin (buf: Buffer): void {
    this.cut()
    this.buf = buf
  }

  /** The record at `off` (stream, payload length `len`, header already read) as the next frame. */
  record (off: number, stream: number, len: number): void {
    const src = off + 16
    if (this.start < 0) {
      this.start = this.raw ? src : off + 8
      this.w = this.start
      this.head = -1
    }
    const b = this.buf
    if (this.raw) {
      if (this.w !== src) b.copyWithin(this.w, src, src + len)
      this.w += len
      return
    }
    if (this.merge && this.head >= 0 && this.headStream === stream) {
      b.copyWithin(this.w, src, src + len)
      this.w += len
      b.writeUInt32BE(b.readUInt32BE(this.head + 4) + len, this.head + 4)
      return
    }
    // the header goes where the write cursor is: never past this record's own header bytes (read already)
    const h = this.w
    b[h] = stream; b[h + 1] = 0; b[h + 2] = 0; b[h + 3] = 0
    b.writeUInt32BE(len, h + 4)
    if (h + 8 !== src) b.copyWithin(h + 8, src, src + len)
    this.head = h
    this.headStream = stream
    this.w = h + 8 + len
  }

  /** Bytes ready to go (a framed message, or raw output), after what came before. */
  bytes (chunk: Buffer): void {
    this.cut()
    this.parts.push(chunk)
  }

  /** What to write, in order; the batch starts empty again. */
  take (): Buffer[] {
    this.cut()
    return this.parts.splice(0)
  }

  private cut (): void {
    if (this.start >= 0 && this.w > this.start) this.parts.push(this.buf.subarray(this.start, this.w))
    this.start = -1
    this.head = -1
  }
}
