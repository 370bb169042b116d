// Joins the pieces of a line that the monitor wrote as several records (LOG_CONT records, then the record that ends
// the line, or a LOG_END one) into one log message, as dockerd's log copier makes one message per line. A line longer
// than 16 KiB becomes 16 KiB partial messages and the rest, as the copier's buffer cuts it, all with the first
// partial's timestamp. Pure: records in, messages out.
import { LOG_CONT, LOG_END } from './log-record.js'

/** dockerd's log copier buffer: a line that fills it without a newline is logged as a partial message. */
export const PARTIAL_MESSAGE_SIZE = 16 * 1024

/** One message: stream, timestamp, bytes; `whole` when the bytes are exactly one record's payload (not copied). */
export type MessageSink = (stream: number, timeNs: bigint, data: Buffer, whole: boolean) => void

interface Held { pieces: Buffer[], length: number, lastNs: bigint, partialNs: bigint | null }

export class LineJoiner {
  private readonly held = new Map<number, Held>()

  /** Whether pieces of a line wait for the rest. */
  get holding (): boolean { return this.held.size > 0 }

  push (stream: number, flags: number, timeNs: bigint, payload: Buffer, emit: MessageSink): void {
    let h = this.held.get(stream)
    if (flags === LOG_END) {
      if (h !== undefined) this.release(stream, h, h.partialNs ?? timeNs, emit)
      return
    }
    if (h === undefined) {
      if (flags !== LOG_CONT && payload.length <= PARTIAL_MESSAGE_SIZE) { emit(stream, timeNs, payload, true); return }
      h = { pieces: [], length: 0, lastNs: timeNs, partialNs: null }
      this.held.set(stream, h)
    }
    // copied: a held piece must not keep the reader's whole read buffer alive
    if (payload.length > 0) { h.pieces.push(Buffer.from(payload)); h.length += payload.length }
    h.lastNs = timeNs
    const cont = flags === LOG_CONT
    while (h.length > PARTIAL_MESSAGE_SIZE || (cont && h.length === PARTIAL_MESSAGE_SIZE)) {
      const all = h.pieces.length === 1 ? h.pieces[0] as Buffer : Buffer.concat(h.pieces, h.length)
      h.partialNs ??= timeNs
      emit(stream, h.partialNs, all.subarray(0, PARTIAL_MESSAGE_SIZE), false)
      const rest = all.subarray(PARTIAL_MESSAGE_SIZE)
      h.pieces = rest.length > 0 ? [rest] : []
      h.length = rest.length
    }
    if (!cont) this.release(stream, h, h.partialNs ?? timeNs, emit)
  }

  /** The writer is gone: what is held goes out as the lines' last (partial) messages. */
  flush (emit: MessageSink): void {
    for (const [stream, h] of [...this.held]) this.release(stream, h, h.partialNs ?? h.lastNs, emit)
  }

  private release (stream: number, h: Held, ts: bigint, emit: MessageSink): void {
    this.held.delete(stream)
    if (h.length > 0) emit(stream, ts, h.pieces.length === 1 ? h.pieces[0] as Buffer : Buffer.concat(h.pieces, h.length), false)
  }
}
