// Blob upload sessions. A session is an UploadWriter (hashing while it writes into the driver's ingest area) plus the
// repository it belongs to; requests on one session run one at a time. Sessions live in memory: a restart forgets
// them (the driver drops their bytes at start) and clients start over, as with any registry restart. Idle sessions
// are cancelled after `idleMs`.
import { randomUUID } from 'node:crypto'
import { logger } from '../log.js'
import { errorMessage } from '../errors.js'
import { registryError } from './codes.js'
import type { StorageDriver, UploadWriter } from './storage/driver.js'

const log = logger('registry:storage')
const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

export class UploadSession {
  readonly id: string
  readonly repository: string
  readonly writer: UploadWriter
  readonly startedAt = Date.now()
  touched = Date.now()
  /** Requests running or queued on this session. */
  active = 0
  private tail: Promise<unknown> = Promise.resolve()
  constructor (id: string, repository: string, writer: UploadWriter) {
    this.id = id
    this.repository = repository
    this.writer = writer
  }

  /** Runs fn after every earlier request on this session has finished. */
  async exclusive<T> (fn: () => Promise<T>): Promise<T> {
    this.active++
    const run = this.tail.then(fn, fn)
    this.tail = run.catch(() => {})
    try { return await run } finally { this.active--; this.touched = Date.now() }
  }
}

export interface UploadSessionsOptions {
  idleMs: number
  maxSessions: number
}

export class UploadSessions {
  private readonly sessions = new Map<string, UploadSession>()
  private readonly driver: StorageDriver
  private readonly opts: UploadSessionsOptions
  private readonly timer: NodeJS.Timeout

  constructor (driver: StorageDriver, opts: UploadSessionsOptions) {
    this.driver = driver
    this.opts = opts
    this.timer = setInterval(() => { void this.sweep() }, Math.max(1000, Math.min(opts.idleMs, 60_000)))
    this.timer.unref()
  }

  get size (): number { return this.sessions.size }

  async start (repository: string): Promise<UploadSession> {
    if (this.sessions.size >= this.opts.maxSessions) throw registryError('TOOMANYREQUESTS', { message: 'too many uploads in progress' })
    const s = new UploadSession(randomUUID(), repository, await this.driver.createUpload())
    this.sessions.set(s.id, s)
    return s
  }

  /** The session with this id in this repository; BLOB_UPLOAD_UNKNOWN otherwise. */
  get (repository: string, id: string): UploadSession {
    const s = UUID_RE.test(id) ? this.sessions.get(id) : undefined
    if (s === undefined || s.repository !== repository) throw registryError('BLOB_UPLOAD_UNKNOWN', { detail: { uuid: id } })
    return s
  }

  /** Forgets a session whose writer was committed or aborted. */
  forget (s: UploadSession): void { this.sessions.delete(s.id) }

  async cancel (s: UploadSession): Promise<void> {
    this.sessions.delete(s.id)
    await s.writer.abort()
  }

  private async sweep (): Promise<void> {
    const limit = Date.now() - this.opts.idleMs
    for (const s of this.sessions.values()) {
      if (s.touched >= limit || s.active > 0) continue
      log('cancelling idle upload %s in %s', s.id, s.repository)
      await s.exclusive(async () => { await this.cancel(s) }).catch((err) => { log('cancel %s: %s', s.id, errorMessage(err)) })
    }
  }

  async close (): Promise<void> {
    clearInterval(this.timer)
    const all = [...this.sessions.values()]
    this.sessions.clear()
    await Promise.all(all.map(async (s) => { await s.writer.abort().catch(() => {}) }))
  }
}
