// Password checks under guard. scrypt runs on the thread pool that every file read shares, so hashing is capped: a
// few at a time, a short queue, a few in flight per client; beyond that a login is refused at once with 429 and
// Retry-After. Failed logins are counted per client address and per user in a fixed window; past the limit that
// client (or that user, from anywhere) is refused without hashing until the window ends.
import { registryError } from '../codes.js'

export interface LoginGuardOptions {
  /** Hashes running at once (default 2: the thread pool has 4 threads). */
  maxConcurrent?: number
  /** Logins waiting for a hashing slot (default 32). */
  maxQueued?: number
  /** Logins in flight (running or queued) per client address (default 4). */
  maxPerClient?: number
  /** Failed logins allowed per client address per window (default 20). */
  failuresPerClient?: number
  /** Failed logins allowed per user name per window (default 10). */
  failuresPerUser?: number
  /** The failure window in milliseconds (default 60 s). */
  windowMs?: number
}

interface Window { count: number, resetAt: number }

/** Most distinct keys remembered per table; the oldest go first (a flood of new addresses cannot grow memory). */
const MAX_KEYS = 10_000

class FailureTable {
  private readonly items = new Map<string, Window>()
  private readonly limit: number
  private readonly windowMs: number
  constructor (limit: number, windowMs: number) {
    this.limit = limit
    this.windowMs = windowMs
  }

  /** Seconds until the key may try again, or 0. */
  blockedFor (key: string, now: number): number {
    const w = this.items.get(key)
    if (w === undefined) return 0
    if (w.resetAt <= now) { this.items.delete(key); return 0 }
    return w.count >= this.limit ? Math.ceil((w.resetAt - now) / 1000) : 0
  }

  fail (key: string, now: number): void {
    const w = this.items.get(key)
    if (w !== undefined && w.resetAt > now) { w.count++; return }
    this.items.delete(key)
    if (this.items.size >= MAX_KEYS) {
      const oldest = this.items.keys().next()
      if (oldest.done !== true) this.items.delete(oldest.value)
    }
    this.items.set(key, { count: 1, resetAt: now + this.windowMs })
  }

  clear (key: string): void { this.items.delete(key) }
}

function throttled (message: string, retryAfter: number): Error {
  return registryError('TOOMANYREQUESTS', { message, detail: { retryAfter } })
}

export class LoginGuard {
  private readonly maxConcurrent: number
  private readonly maxQueued: number
  private readonly maxPerClient: number
  private readonly byClient: FailureTable
  private readonly byUser: FailureTable
  private running = 0
  private readonly queue: Array<() => void> = []
  private readonly inFlight = new Map<string, number>()

  constructor (opts: LoginGuardOptions = {}) {
    this.maxConcurrent = opts.maxConcurrent ?? 2
    this.maxQueued = opts.maxQueued ?? 32
    this.maxPerClient = opts.maxPerClient ?? 4
    const windowMs = opts.windowMs ?? 60_000
    this.byClient = new FailureTable(opts.failuresPerClient ?? 20, windowMs)
    this.byUser = new FailureTable(opts.failuresPerUser ?? 10, windowMs)
  }

  /**
   * Runs `check` (true when the password is right) for `user` from `client` under the caps above; throws 429
   * TOOMANYREQUESTS (with detail.retryAfter) when refused. Records the outcome.
   */
  async check (client: string, user: string, check: () => Promise<boolean>): Promise<boolean> {
    const now = Date.now()
    const wait = Math.max(this.byClient.blockedFor(client, now), this.byUser.blockedFor(user, now))
    if (wait > 0) throw throttled(`too many failed logins: try again in ${wait} s`, wait)
    const mine = this.inFlight.get(client) ?? 0
    if (mine >= this.maxPerClient) throw throttled('too many logins in progress from this client', 1)
    if (this.running >= this.maxConcurrent && this.queue.length >= this.maxQueued) throw throttled('too many logins in progress', 1)
    this.inFlight.set(client, mine + 1)
    try {
      await this.acquire()
      let ok: boolean
      try { ok = await check() } finally { this.release() }
      const at = Date.now()
      if (ok) {
        this.byUser.clear(user)
      } else {
        this.byClient.fail(client, at)
        this.byUser.fail(user, at)
      }
      return ok
    } finally {
      const n = (this.inFlight.get(client) ?? 1) - 1
      if (n <= 0) this.inFlight.delete(client); else this.inFlight.set(client, n)
    }
  }

  private async acquire (): Promise<void> {
    if (this.running < this.maxConcurrent) { this.running++; return }
    await new Promise<void>((resolve) => { this.queue.push(resolve) })
  }

  private release (): void {
    const next = this.queue.shift()
    if (next !== undefined) next() // the slot passes to the next waiter
    else this.running--
  }
}
