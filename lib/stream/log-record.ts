// The on-disk container log format written by the shim (lib/runtime/shim/berth-shim.c, log-lines.c, shim-log.h):
// 16-byte header [stream u8][flags u8][0,0][length u32 BE][timestamp ns u64 BE] + payload, cut at newlines.
// Its first 8 bytes are a stdcopy frame header once the flags byte is zeroed, so a log can be served with one header
// rewrite at most.
import { isoSeconds, rfc3339Nano, ZERO_TIME } from '../util/time.js'

export const RECORD_HEADER_LENGTH = 16

/** Record flags (byte 1). LINE: the payload ends a line (every record of logs written before flags existed too). */
export const LOG_LINE = 0
/** The payload is a piece of a line that goes on in the stream's next record. */
export const LOG_CONT = 1
/** Zero-length: the stream ended in the middle of a line (its last record was LOG_CONT). */
export const LOG_END = 2

export interface LogRecord {
  stream: number
  flags: number
  timeNs: bigint
  payload: Buffer
}

/** Encodes one record (the shim writes them; the daemon writes them for its own messages and in tests). Pure. */
export function encodeRecord (stream: 1 | 2, timeNs: bigint, payload: Buffer, flags = LOG_LINE): Buffer {
  const out = Buffer.allocUnsafe(RECORD_HEADER_LENGTH + payload.length)
  out[0] = stream; out[1] = flags; out[2] = 0; out[3] = 0
  out.writeUInt32BE(payload.length, 4)
  out.writeBigUInt64BE(timeNs, 8)
  payload.copy(out, RECORD_HEADER_LENGTH)
  return out
}

/** A whole record found in a buffer, read in place: where it starts, its stream, its payload's length. */
export type RecordSpan = [offset: number, stream: number, length: number]

/** The bytes the record at `off` takes, header and payload (read from its header). */
export function recordSize (buf: Buffer, off: number): number { return RECORD_HEADER_LENGTH + buf.readUInt32BE(off + 4) }

/** The flags of the record at `off` (LOG_LINE, LOG_CONT, LOG_END). */
export function recordFlags (buf: Buffer, off: number): number { return buf[off + 1] as number }

/** The timestamp of the record at `off` (ns since the epoch). */
export function recordTime (buf: Buffer, off: number): bigint { return buf.readBigUInt64BE(off + 8) }

/** The payload of the record at `off` whose length is `length`: a view of `buf`, not a copy. */
export function recordPayload (buf: Buffer, off: number, length: number): Buffer {
  return buf.subarray(off + RECORD_HEADER_LENGTH, off + RECORD_HEADER_LENGTH + length)
}

/**
 * The one reader of the format: finds the whole records in buf[start, end) and appends them to `out` in order (read
 * in place, nothing copied); returns where the first incomplete record starts (`end` when there is none). The
 * decoder below and the log reader (lib/engine/log-reader.ts) both scan with it. Pure.
 */
export function scanRecords (buf: Buffer, start: number, end: number, out: RecordSpan[]): number {
  let off = start
  while (end - off >= RECORD_HEADER_LENGTH) {
    const size = recordSize(buf, off)
    if (end - off < size) break
    out.push([off, buf[off] as number, size - RECORD_HEADER_LENGTH])
    off += size
  }
  return off
}

/**
 * Incremental record decoder: feed() returns the complete records (their payloads views of the chunk when it holds
 * them whole); a partial tail stays buffered (the shim may be mid-write when we read) and is joined to the next chunk.
 */
export class RecordDecoder {
  private buf: Buffer = Buffer.alloc(0)

  /** Bytes held that do not yet form a whole record. */
  get pending (): number { return this.buf.length }

  feed (chunk: Buffer): LogRecord[] {
    const data = this.buf.length === 0 ? chunk : Buffer.concat([this.buf, chunk])
    const spans: RecordSpan[] = []
    const end = scanRecords(data, 0, data.length, spans)
    this.buf = end === data.length ? Buffer.alloc(0) : Buffer.from(data.subarray(end))
    return spans.map(([off, stream, length]) => ({ stream, flags: recordFlags(data, off), timeNs: recordTime(data, off), payload: recordPayload(data, off, length) }))
  }
}

/** RFC 3339 with 9 fixed fraction digits, as dockerd prints log timestamps. */
export function formatTimestampNs (ns: bigint): string {
  const sec = ns / 1_000_000_000n
  const frac = (ns % 1_000_000_000n).toString().padStart(9, '0')
  return `${isoSeconds(Number(sec) * 1000).slice(0, -1)}.${frac}Z`
}

/** RFC 3339 nano with trailing zeros trimmed, as Go's time.RFC3339Nano prints (inspect times). */
export function formatRfc3339Nano (ns: bigint): string {
  return ns === 0n ? ZERO_TIME : rfc3339Nano(ns)
}
