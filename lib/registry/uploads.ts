// Blob upload sessions. A session is an UploadWriter (hashing while it writes into the driver's ingest area) plus the
// repository it belongs to; requests on one session run one at a time. Sessions live in memory: a restart forgets
// them (the driver drops their bytes at start) and clients start over, as with any registry restart. Idle sessions
// are cancelled after `idleMs`. Caps: `maxSessions` in all, `maxPerRepository` per repository and `maxPerOwner` per
// user (the client's address when anonymous), so one pusher cannot lock every other one out.
import { randomUUID } from 'node:crypto'
import { levelLogger, logger } from '../log.js'
import { describeError } from '../errors.js'
import { registryError } from './codes.js'
import type { StorageDriver, UploadWriter } from './storage/driver.js'

const log = logger('registry:storage')
const ops = levelLogger('registry:storage')
const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

export class UploadSession {
  readonly id: string
  readonly repository: string
  /** Who opened it: the user, or `addr:<client address>` when anonymous. */
  readonly owner: string
  readonly writer: UploadWriter
  readonly startedAt = Date.now()
  touched = Date.now()
  /** Requests running or queued on this session. */
  active = 0
  private tail: Promise<unknown> = Promise.resolve()
  constructor (id: string, repository: string, owner: string, writer: UploadWriter) {
    this.id = id
    this.repository = repository
    this.owner = owner
    this.writer = writer
  }

  /** Runs fn after every earlier request on this session has finished. */
  async exclusive<T> (fn: () => Promise<T>): Promise<T> {
    this.active++
    const run = this.tail.then(fn, fn)
    this.tail = run.catch(() => {}) // the chain only orders the requests: each caller gets its own error below
    try { return await run } finally { this.active--; this.touched = Date.now() }
  }
}

export interface UploadSessionsOptions {
  idleMs: number
  maxSessions: number
  maxPerRepository: number
  maxPerOwner: number
}

export class UploadSessions {
  private readonly sessions = new Map<string, UploadSession>()
  private readonly perRepository = new Map<string, number>()
  private readonly perOwner = new Map<string, number>()
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

  async start (repository: string, owner: string): Promise<UploadSession> {
    if (this.sessions.size >= this.opts.maxSessions) throw registryError('TOOMANYREQUESTS', { message: 'too many uploads in progress' })
    if ((this.perRepository.get(repository) ?? 0) >= this.opts.maxPerRepository) {
      throw registryError('TOOMANYREQUESTS', { message: `too many uploads in progress in ${repository} (limit ${this.opts.maxPerRepository})` })
    }
    if ((this.perOwner.get(owner) ?? 0) >= this.opts.maxPerOwner) {
      throw registryError('TOOMANYREQUESTS', { message: `too many uploads in progress for one user (limit ${this.opts.maxPerOwner})` })
    }
    // counted before the await, so concurrent starts cannot all pass the checks
    this.count(repository, owner, 1)
    let writer: UploadWriter
    try {
      writer = await this.driver.createUpload()
    } catch (err) {
      this.count(repository, owner, -1)
      throw err
    }
    const s = new UploadSession(randomUUID(), repository, owner, writer)
    this.sessions.set(s.id, s)
    return s
  }

  private count (repository: string, owner: string, by: 1 | -1): void {
    for (const [map, key] of [[this.perRepository, repository], [this.perOwner, owner]] as const) {
      const n = (map.get(key) ?? 0) + by
      if (n <= 0) map.delete(key); else map.set(key, n)
    }
  }

  private remove (s: UploadSession): void {
    if (this.sessions.delete(s.id)) this.count(s.repository, s.owner, -1)
  }

  /** The session with this id in this repository; BLOB_UPLOAD_UNKNOWN otherwise. */
  get (repository: string, id: string): UploadSession {
    const s = UUID_RE.test(id) ? this.sessions.get(id) : undefined
    if (s === undefined || s.repository !== repository) throw registryError('BLOB_UPLOAD_UNKNOWN', { detail: { uuid: id } })
    return s
  }

  /** Forgets a session whose writer was committed or aborted. */
  forget (s: UploadSession): void { this.remove(s) }

  async cancel (s: UploadSession): Promise<void> {
    this.remove(s)
    await s.writer.abort()
  }

  private async sweep (): Promise<void> {
    const limit = Date.now() - this.opts.idleMs
    for (const s of this.sessions.values()) {
      if (s.touched >= limit || s.active > 0) continue
      log('cancelling idle upload %s in %s', s.id, s.repository)
      await s.exclusive(async () => { await this.cancel(s) }).catch((err) => { ops.warn('cancelling idle upload %s: %s', s.id, describeError(err)) })
    }
  }

  async close (): Promise<void> {
    clearInterval(this.timer)
    const all = [...this.sessions.values()]
    this.sessions.clear()
    this.perRepository.clear()
    this.perOwner.clear()
    // best effort: an upload's temp file that outlives a failed abort is removed at the next start (ingest cleanup)
    await Promise.all(all.map(async (s) => { await s.writer.abort().catch(() => {}) }))
  }
}
