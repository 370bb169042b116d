// Docker's multiplexed stream ("stdcopy"): 8-byte header [type, 0, 0, 0, uint32 BE length] + payload.
// frame() is a pure codec; StdWriter is a thin adapter that respects backpressure; Demuxer decodes from a chunk
// list without concatenating per chunk (the one decoder: demuxSink is its stream adapter).
import { Writable } from 'node:stream'

export const HEADER_LENGTH = 8
export const STREAM_STDIN = 0
export const STREAM_STDOUT = 1
export const STREAM_STDERR = 2
export const STREAM_SYSTEMERR = 3
export type StreamType = 1 | 2 | 3

const MAX_PAYLOAD = 0xffffffff

/** Builds the header for a payload. Pure. */
export function frameHeader (type: StreamType, length: number): Buffer {
  const h = Buffer.allocUnsafe(HEADER_LENGTH)
  h[0] = type; h[1] = 0; h[2] = 0; h[3] = 0
  h.writeUInt32BE(length, 4)
  return h
}

/** Splits a payload into frames: [header, payload] pairs. Never emits type 0; empty payloads give nothing. */
export function frame (type: StreamType, payload: Buffer): Buffer[] {
  if (type !== 1 && type !== 2 && type !== 3) throw new RangeError(`invalid stream type ${String(type)}`)
  if (payload.length === 0) return []
  if (payload.length <= MAX_PAYLOAD) return [frameHeader(type, payload.length), payload]
  const out: Buffer[] = []
  for (let off = 0; off < payload.length; off += MAX_PAYLOAD) {
    const part = payload.subarray(off, Math.min(off + MAX_PAYLOAD, payload.length))
    out.push(frameHeader(type, part.length), part)
  }
  return out
}

/** Writes frames to a writable; write() returns the destination's boolean so producers can wait for 'drain'. */
export class StdWriter {
  readonly dest: Writable
  constructor (dest: Writable) { this.dest = dest }

  write (type: StreamType, payload: Buffer): boolean {
    const parts = frame(type, payload)
    if (parts.length === 0) return true
    this.dest.cork()
    let ok = true
    for (const p of parts) ok = this.dest.write(p)
    this.dest.uncork()
    return ok
  }
}

export interface DemuxedChunk { type: number, payload: Buffer }

/**
 * Incremental decoder. push() chunks as they arrive (split anywhere); it calls onFrame for every complete frame,
 * with payloads assembled from the chunk list only when a frame spans chunks.
 */
export class Demuxer {
  private readonly chunks: Buffer[] = []
  private buffered = 0
  private readonly onFrame: (type: number, payload: Buffer) => void

  constructor (onFrame: (type: number, payload: Buffer) => void) { this.onFrame = onFrame }

  get pending (): number { return this.buffered }

  push (chunk: Buffer): void {
    if (chunk.length === 0) return
    this.chunks.push(chunk)
    this.buffered += chunk.length
    for (;;) {
      if (this.buffered < HEADER_LENGTH) return
      const header = this.peek(HEADER_LENGTH)
      const length = header.readUInt32BE(4)
      if (this.buffered < HEADER_LENGTH + length) return
      this.consume(HEADER_LENGTH)
      const payload = this.consume(length)
      this.onFrame(header[0] as number, payload)
    }
  }

  private peek (n: number): Buffer {
    const first = this.chunks[0] as Buffer
    if (first.length >= n) return first.subarray(0, n)
    return Buffer.concat(this.chunks, Math.max(n, 0)).subarray(0, n)
  }

  private consume (n: number): Buffer {
    this.buffered -= n
    const first = this.chunks[0]
    if (first !== undefined && first.length >= n) {
      if (first.length === n) this.chunks.shift()
      else this.chunks[0] = first.subarray(n)
      return first.subarray(0, n)
    }
    const out = Buffer.allocUnsafe(n)
    let off = 0
    while (off < n) {
      const c = this.chunks[0] as Buffer
      const take = Math.min(c.length, n - off)
      c.copy(out, off, 0, take)
      off += take
      if (take === c.length) this.chunks.shift()
      else this.chunks[0] = c.subarray(take)
    }
    return out
  }
}

/** A Writable whose bytes are decoded as they come: onFrame gets every complete frame (a log or exec output read back). */
export function demuxSink (onFrame: (type: number, payload: Buffer) => void): Writable {
  const d = new Demuxer(onFrame)
  return new Writable({
    write (chunk: Buffer, _enc, cb) {
      try { d.push(chunk) } catch (err) { cb(err as Error); return }
      cb()
    }
  })
}

/** Decodes a whole buffer (tests and tools). */
export function demuxAll (buf: Buffer): { stdout: Buffer, stderr: Buffer, frames: DemuxedChunk[] } {
  const frames: DemuxedChunk[] = []
  new Demuxer((type, payload) => { frames.push({ type, payload }) }).push(buf)
  const pick = (t: number): Buffer => Buffer.concat(frames.filter((f) => f.type === t).map((f) => f.payload))
  return { stdout: pick(1), stderr: pick(2), frames }
}
