// Reads a container log (the shim's record format, see lib/stream/log-record.ts) and writes it to a client as
// stdcopy frames (non-TTY) or raw bytes (TTY), streaming from the file: never the whole file in memory.
// With follow it waits for the shim's output ticks and ends once the container has stopped and the file is drained.
// Logs read lines (a line the program wrote in pieces is one message, lib/stream/log-lines.ts), as dockerd's log
// reader gives the messages its copier cut; attach reads every piece as it was written, as dockerd's attach streams
// output as it is read (a prompt without newline shows at once).
import { open, stat, type FileHandle } from 'node:fs/promises'
import type { Writable } from 'node:stream'
import { LOG_LINE, RECORD_HEADER_LENGTH, formatTimestampNs, recordFlags, recordPayload, recordSize, recordTime, scanRecords, type RecordSpan } from '../stream/log-record.js'
import { LineJoiner, PARTIAL_MESSAGE_SIZE, type MessageSink } from '../stream/log-lines.js'
import { FrameBatch } from '../stream/frame-batch.js'

const READ_SIZE = 1024 * 1024

/**
 * A log's files, oldest first: with rotation (max-file N > 1) the monitor renames the live file to .1, .1 to .2, ...
 * up to .N-1, so a full read goes .N-1 … .1 and then the live file.
 */
export function logFiles (path: string, maxFiles: number): string[] {
  const out: string[] = []
  for (let i = Math.max(1, maxFiles) - 1; i >= 1; i--) out.push(`${path}.${i}`)
  out.push(path)
  return out
}

export interface LogReadOptions {
  /** The live log file. */
  path: string
  /** Rotated files to read first, oldest first (see logFiles); startOffset applies to the first file read. */
  rotated?: string[]
  /** Byte offset to start at (attach starts at the current end). */
  startOffset: number
  stdout: boolean
  stderr: boolean
  tty: boolean
  timestamps: boolean
  /** Bytes put before each line, after its timestamp (the log attributes of `details`). */
  prefix?: Buffer
  sinceNs?: bigint
  untilNs?: bigint
  /** Only the last N lines; undefined for all. */
  tail?: number
  /**
   * `lines`: one message per line, its pieces joined (logs; what a running container has not finished is held until
   * it does); `pieces`: every record as the monitor wrote it, at once (attach, exec).
   */
  unit: 'lines' | 'pieces'
  /** Keep reading as the file grows, until done() says the writer is gone. */
  follow: boolean
  /** True once no more output can come (container stopped, shim closed). */
  done: () => boolean
  /** Resolves when more output may be available or done() may have changed. */
  waitMore: () => Promise<void>
  signal: AbortSignal
}

/**
 * A waitMore for a follower whose signals are counted (`count`): resolves at once when a signal came since it last
 * returned, else at the next one (`next`). A signal that comes while the reader reads the file (after it found
 * nothing new, before it waits) is not missed: the reader looks again instead of sleeping until a later one.
 */
export function countedWaiter (count: () => number, next: () => Promise<void>): () => Promise<void> {
  let seen = count()
  return async () => {
    if (count() === seen) await next()
    seen = count()
  }
}

async function waitDrain (out: Writable, signal: AbortSignal): Promise<void> {
  if (!out.writableNeedDrain) return
  await new Promise<void>((resolve) => {
    const finish = (): void => {
      out.off('drain', finish); out.off('close', finish); signal.removeEventListener('abort', finish)
      resolve()
    }
    out.on('drain', finish); out.on('close', finish); signal.addEventListener('abort', finish)
  })
}

function linesIn (payload: Buffer): number {
  let n = 0
  let i = payload.indexOf(10)
  while (i !== -1) { n++; i = payload.indexOf(10, i + 1) }
  if (payload.length > 0 && payload[payload.length - 1] !== 10) n++
  return n
}

/** Splits a payload into lines (each keeps its \n; a trailing partial line is its own piece). */
function splitLines (payload: Buffer): Buffer[] {
  const out: Buffer[] = []
  let start = 0
  let i = payload.indexOf(10)
  while (i !== -1) { out.push(payload.subarray(start, i + 1)); start = i + 1; i = payload.indexOf(10, start) }
  if (start < payload.length) out.push(payload.subarray(start))
  return out
}

class RecordCursor {
  private fh: FileHandle | null = null
  private buf: Buffer = Buffer.allocUnsafe(READ_SIZE)
  private have = 0
  offset: number
  /** The files to read in order; the last one is the live file (it may be rotated away while read). */
  private readonly paths: string[]
  private idx = 0
  constructor (paths: string[], start: number) { this.paths = paths; this.offset = start }

  private get path (): string { return this.paths[this.idx] as string }

  async openIfExists (): Promise<boolean> {
    if (this.fh !== null) return true
    try { this.fh = await open(this.path, 'r'); return true } catch { return false }
  }

  private async moveTo (idx: number): Promise<void> {
    await this.close()
    this.idx = idx
    this.offset = 0
    this.have = 0
    this.consumed = 0
  }

  /**
   * At the end of the file read: go on with the next file, or, on the live file, notice that the monitor rotated it
   * (renamed it away: the path names a new file) or truncated it (max-file 1), and start over on the new one.
   */
  private async switchFile (): Promise<boolean> {
    if (this.idx < this.paths.length - 1) { await this.moveTo(this.idx + 1); return true }
    if (this.fh === null) return false
    const mine = await this.fh.stat()
    const now = await stat(this.path).catch(() => null)
    if (now !== null && now.ino !== mine.ino) { await this.moveTo(this.idx); return true }
    if (mine.size < this.offset) { this.offset = 0; this.have = 0; return true }
    return false
  }

  /** Reads more bytes; returns the complete records available as a batch (the buffer is reused afterwards). */
  async next (): Promise<RecordSpan[] | null> {
    for (let i = 0; i <= this.paths.length + 1; i++) {
      const recs = await this.nextInFile()
      if (recs !== null) return recs
      if (!(await this.switchFile())) return null
    }
    return null
  }

  private async nextInFile (): Promise<RecordSpan[] | null> {
    if (!(await this.openIfExists())) return null
    const fh = this.fh as FileHandle
    if (this.have === this.buf.length) {
      // one record larger than the buffer: grow to fit it
      const need = recordSize(this.buf, 0)
      const bigger = Buffer.allocUnsafe(Math.max(need, this.buf.length * 2))
      this.buf.copy(bigger, 0, 0, this.have)
      this.buf = bigger
    }
    const { bytesRead } = await fh.read(this.buf, this.have, this.buf.length - this.have, this.offset + this.have)
    if (bytesRead === 0 && this.have < RECORD_HEADER_LENGTH) return null
    this.have += bytesRead
    const recs: RecordSpan[] = []
    const off = scanRecords(this.buf, 0, this.have, recs)
    if (recs.length === 0 && bytesRead === 0) return null
    this.consumed = off
    return recs
  }

  private consumed = 0
  get buffer (): Buffer { return this.buf }

  /** Drops the records returned by the last next(), keeping a partial tail. */
  advance (): void {
    const off = this.consumed
    this.offset += off
    // a new buffer for the next read: writes still queued may hold slices of this one; only a partial tail is copied
    const next = Buffer.allocUnsafe(Math.max(READ_SIZE, this.have - off))
    this.buf.copy(next, 0, off, this.have)
    this.buf = next
    this.have -= off
    this.consumed = 0
  }

  // best effort: a handle only read loses nothing when its close fails
  async close (): Promise<void> { await this.fh?.close().catch(() => {}); this.fh = null }
}

/**
 * The messages of the log, both streams, at any time: dockerd's log files take the last `tail` messages first and
 * filter by stream, since and until afterwards (tail=2 of stdout after a stdout and a stderr line gives one line).
 */
async function countLines (o: LogReadOptions): Promise<number> {
  const cur = new RecordCursor([...(o.rotated ?? []), o.path], o.startOffset)
  const joiner = new LineJoiner()
  let total = 0
  const count: MessageSink = (_stream, _ts, data) => { total += linesIn(data) }
  try {
    for (;;) {
      const recs = await cur.next()
      if (recs === null) break
      const buf = cur.buffer
      for (const [off, stream, len] of recs) {
        // a line whose record nothing is held before (the common case) counts without the joiner
        if (recordFlags(buf, off) === LOG_LINE && !joiner.holding && len <= PARTIAL_MESSAGE_SIZE) { total += linesIn(recordPayload(buf, off, len)); continue }
        joiner.push(stream, recordFlags(buf, off), recordTime(buf, off), recordPayload(buf, off, len), count)
      }
      cur.advance()
    }
    if (o.done()) joiner.flush(count)
  } finally { await cur.close() }
  return total
}

function streamSelected (o: LogReadOptions, stream: number): boolean {
  return stream === 1 ? o.stdout : stream === 2 ? o.stderr : false
}

function inTime (o: LogReadOptions, ts: bigint): boolean {
  if (o.sinceNs !== undefined && ts < o.sinceNs) return false
  if (o.untilNs !== undefined && ts > o.untilNs) return false
  return true
}

/** Timestamps as dockerd prints them before a line, remembered for the records of one read (they share one). */
class StampCache {
  private ns = -1n
  private value: Buffer = Buffer.alloc(0)
  text (ns: bigint): Buffer {
    if (ns !== this.ns) { this.ns = ns; this.value = Buffer.from(formatTimestampNs(ns) + ' ', 'latin1') }
    return this.value
  }
}

/** Streams the log to `out`. Returns when done (or the client left). */
export async function streamLog (out: Writable, o: LogReadOptions): Promise<void> {
  let skipLines = 0
  if (o.tail !== undefined) {
    if (o.tail <= 0 && !o.follow) return
    const total = await countLines(o)
    skipLines = Math.max(0, total - Math.max(0, o.tail))
  }
  const simple = !o.timestamps && o.prefix === undefined && skipLines === 0
  const joiner = o.unit === 'lines' ? new LineJoiner() : null
  const cur = new RecordCursor([...(o.rotated ?? []), o.path], o.startOffset)
  // frames are made in place in the read buffer; attach merges what one stream wrote together into one frame
  const batch = new FrameBatch(o.tty, o.unit === 'pieces')
  const stamps = new StampCache()
  // the offset of the record being sent, for a message that is exactly its payload
  let recOff = 0
  const frame = (stream: number, data: Buffer): Buffer => {
    if (o.tty) return data
    const f = Buffer.allocUnsafe(8 + data.length)
    f[0] = stream; f[1] = 0; f[2] = 0; f[3] = 0
    f.writeUInt32BE(data.length, 4)
    data.copy(f, 8)
    return f
  }
  const send: MessageSink = (stream, ts, data, whole) => {
    if (data.length === 0) return
    if (simple) {
      if (!streamSelected(o, stream) || !inTime(o, ts)) return
      if (whole) batch.record(recOff, stream, data.length)
      else batch.bytes(frame(stream, data))
      return
    }
    const wanted = streamSelected(o, stream) && inTime(o, ts)
    for (const line of splitLines(data)) {
      if (skipLines > 0) { skipLines--; continue }
      if (!wanted) continue
      const head = o.timestamps ? (o.prefix !== undefined ? [stamps.text(ts), o.prefix] : [stamps.text(ts)]) : o.prefix !== undefined ? [o.prefix] : []
      batch.bytes(frame(stream, head.length === 0 ? line : Buffer.concat([...head, line])))
    }
  }
  const flush = (): void => {
    const parts = batch.take()
    if (parts.length === 0) return
    out.cork()
    for (const p of parts) out.write(p)
    out.uncork()
  }
  try {
    let sawDone = false
    for (;;) {
      if (o.signal.aborted || out.destroyed) return
      // done before this read began: the read sees all the writer wrote (it wrote everything before it was done)
      if (o.follow && !sawDone && o.done()) sawDone = true
      const recs = await cur.next()
      if (recs === null) {
        // what the writer left mid-line once it is gone: the lines' last pieces (dockerd's copier logs them at EOF)
        const finished = !o.follow || sawDone ? o.done() : false
        if (finished && joiner?.holding === true) { joiner.flush(send); flush() }
        if (!o.follow) return
        // done() is checked synchronously right before waiting, so an exit cannot slip between check and wait;
        // once done, one more pass drains what the shim wrote last (none when it was done before this pass began).
        if (o.done()) {
          if (sawDone) return
          sawDone = true
          continue
        }
        await o.waitMore()
        continue
      }
      const buf = cur.buffer
      batch.begin(buf)
      for (const [off, stream, len] of recs) {
        // with a tail, the other stream's lines count too (countLines)
        if (skipLines === 0 && !streamSelected(o, stream)) continue
        recOff = off
        const payload = recordPayload(buf, off, len)
        // lines before the tail whose record nothing is held before are skipped without the joiner
        if (skipLines > 0 && recordFlags(buf, off) === LOG_LINE && joiner?.holding !== true && len <= PARTIAL_MESSAGE_SIZE) {
          const n = linesIn(payload)
          if (n <= skipLines) { skipLines -= n; continue }
        }
        const ts = recordTime(buf, off)
        if (joiner !== null) joiner.push(stream, recordFlags(buf, off), ts, payload, send)
        else send(stream, ts, payload, true)
      }
      flush()
      cur.advance()
      await waitDrain(out, o.signal)
    }
  } finally {
    // (a file only read: its close need not hold up the stream's end, which an attached client waits for)
    void cur.close()
  }
}
