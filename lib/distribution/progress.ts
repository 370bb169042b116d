// The JSON progress stream of pull and push (moby pkg/jsonmessage + pkg/streamformatter): one record per line
// ending `\r\n`, keys in Go's struct order, `<`, `>`, `&` escaped as Go's encoder does, and the pre-rendered bar of
// JSONProgress.String() at the daemon's width (200). The reply starts with the first record, so anything that fails
// before it can still be answered with a real status.
import type { ServerResponse } from 'node:http'
import { Transform } from 'node:stream'
import { startStream } from '../http/reply.js'
import { errorMessage } from '../errors.js'

const UNITS = ['B', 'kB', 'MB', 'GB', 'TB', 'PB', 'EB', 'ZB', 'YB']

/** go-units HumanSize: four significant digits, decimal units, no space (`36.58kB`, `1.057MB`). */
export function humanSize (bytes: number): string {
  let size = bytes
  let i = 0
  while (size >= 1000 && i < UNITS.length - 1) { size /= 1000; i++ }
  return `${Number(size.toPrecision(4))}${UNITS[i] as string}`
}

/** JSONProgress.String() for a byte count, at a width over 110 columns (bar included, no time estimate). */
export function progressBar (current: number, total: number): string {
  if (current <= 0 && total <= 0) return ''
  if (total <= 0) return humanSize(current).padStart(8)
  const pct = Math.min(50, Math.floor(Math.floor((current / total) * 100) / 2))
  const bar = `[${'='.repeat(pct)}>${' '.repeat(Math.max(0, 50 - pct))}] `
  const numbers = current > total ? humanSize(current).padStart(8) : `${humanSize(current).padStart(8)}/${humanSize(total)}`
  return bar + numbers
}

/** JSON.stringify plus Go's HTML-safe escapes. */
export function goJson (value: unknown): string {
  return JSON.stringify(value)
    .replace(/</g, '\\u003c').replace(/>/g, '\\u003e').replace(/&/g, '\\u0026')
    .replace(/\u2028/g, '\\u2028').replace(/\u2029/g, '\\u2029')
}

export interface ProgressRecord {
  stream?: string
  status?: string
  progressDetail?: { current?: number, total?: number }
  progress?: string
  id?: string
  errorDetail?: { code?: number, message: string }
  error?: string
  aux?: unknown
}

export class ProgressStream {
  private readonly res: ServerResponse
  private begun = false

  constructor (res: ServerResponse) { this.res = res }

  /** True once the 200 and a first record are out: errors can only go in-band from here on. */
  get started (): boolean { return this.begun }

  /** A plain message: `Pulling from …` (with the tag as id), `Digest: …`, `Status: …`. */
  message (status: string, id?: string): void {
    this.write(id !== undefined && id !== '' ? { status, id } : { status })
  }

  /** A per-layer state change (`Pulling fs layer`, `Download complete`…): progressDetail {} as dockerd sends it. */
  update (id: string, status: string): void {
    this.write({ status, progressDetail: {}, id })
  }

  /** A progress update; dropped rather than queued when the client reads slower than we produce. */
  progress (id: string, status: string, current: number, total: number): void {
    if (this.res.writableNeedDrain) return
    const bar = progressBar(current, total)
    const detail = total > 0 ? { current, total } : { current }
    this.write(bar !== '' ? { status, progressDetail: detail, progress: bar, id } : { status, progressDetail: detail, id })
  }

  aux (value: unknown): void {
    this.write({ progressDetail: {}, aux: value })
  }

  error (err: unknown): void {
    const message = errorMessage(err)
    this.write({ errorDetail: { message }, error: message })
  }

  /** Any record (the build stream's `{"stream": …}` and `{"aux": …}` lines). */
  record (rec: ProgressRecord): void { this.write(rec) }

  protected write (rec: ProgressRecord): void {
    if (this.res.destroyed || this.res.writableEnded) return
    if (!this.begun) {
      this.begun = true
      startStream(this.res)
    }
    this.res.write(goJson(rec) + '\r\n')
  }

  end (): void {
    if (!this.res.destroyed && !this.res.writableEnded) this.res.end()
  }
}

/** How often a layer's byte progress is reported at most (the last byte always is). */
export const PROGRESS_INTERVAL_MS = 100

/** A pass-through that counts bytes and reports `(current, total)` at most every PROGRESS_INTERVAL_MS. */
export function progressCounter (total: number, report: (current: number, total: number) => void): Transform {
  let current = 0
  let last = 0
  return new Transform({
    transform (chunk: Buffer, _enc, cb) {
      current += chunk.length
      const now = Date.now()
      if (now - last >= PROGRESS_INTERVAL_MS || current === total) { last = now; report(current, total) }
      cb(null, chunk)
    }
  })
}
