// Gathers small chunks (a socket's 64 KiB reads) into larger ones before costly per-chunk stages: each chunk a
// gunzip sees is one trip to the thread pool, and each one a file sees is one write. Holds at most `size` bytes.
import { Transform, type TransformCallback } from 'node:stream'

export class Coalesce extends Transform {
  private readonly size: number
  private parts: Buffer[] = []
  private held = 0

  constructor (size: number) {
    super()
    this.size = size
  }

  override _transform (chunk: Buffer, _enc: BufferEncoding, cb: TransformCallback): void {
    this.parts.push(chunk)
    this.held += chunk.length
    if (this.held >= this.size) this.release()
    cb()
  }

  override _flush (cb: TransformCallback): void {
    if (this.held > 0) this.release()
    cb()
  }

  private release (): void {
    const out = this.parts.length === 1 ? this.parts[0] as Buffer : Buffer.concat(this.parts, this.held)
    this.parts = []
    this.held = 0
    this.push(out)
  }
}
