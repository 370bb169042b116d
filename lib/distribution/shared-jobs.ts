// Two small concurrency tools for transfers: a counting semaphore (dockerd's max-concurrent-downloads/uploads) and
// shared jobs (concurrent pulls of the same layer share one download: late joiners see the latest event, and the job
// is cancelled only when every party has left).
import { EngineError } from '../errors.js'

function canceled (signal: AbortSignal): Error {
  const r = signal.reason as unknown
  return r instanceof EngineError ? r : new EngineError('canceled', 'operation canceled', { cause: r })
}

export class Semaphore {
  private free: number
  private readonly queue: Array<() => void> = []

  constructor (slots: number) { this.free = Math.max(1, slots) }

  /** Takes a slot now if one is free. */
  tryAcquire (): (() => void) | null {
    if (this.free === 0) return null
    this.free--
    return this.releaser()
  }

  async acquire (signal?: AbortSignal): Promise<() => void> {
    const now = this.tryAcquire()
    if (now !== null) return now
    return await new Promise<() => void>((resolve, reject) => {
      const grant = (): void => {
        signal?.removeEventListener('abort', onAbort)
        resolve(this.releaser())
      }
      const onAbort = (): void => {
        const i = this.queue.indexOf(grant)
        if (i !== -1) this.queue.splice(i, 1)
        reject(canceled(signal as AbortSignal))
      }
      if (signal?.aborted === true) { reject(canceled(signal)); return }
      signal?.addEventListener('abort', onAbort, { once: true })
      this.queue.push(grant)
    })
  }

  private releaser (): () => void {
    let done = false
    return () => {
      if (done) return
      done = true
      const next = this.queue.shift()
      if (next !== undefined) next()
      else this.free++
    }
  }
}

interface Party<E> { onEvent: (e: E) => void }

interface Job<T, E> {
  parties: Set<Party<E>>
  controller: AbortController
  promise: Promise<T>
  last: E | null
}

export class SharedJobs<T, E> {
  private readonly jobs = new Map<string, Job<T, E>>()

  /** Number of jobs running (for tests and idle checks). */
  get size (): number { return this.jobs.size }

  /**
   * Joins the job under `key`, starting it with `start` when none runs. Resolves with the job's result; rejects at
   * once when `signal` aborts (the job goes on while other parties wait for it).
   */
  async join (key: string, start: (signal: AbortSignal, emit: (e: E) => void) => Promise<T>, onEvent: (e: E) => void, signal: AbortSignal): Promise<T> {
    if (signal.aborted) throw canceled(signal)
    const party: Party<E> = { onEvent }
    let job = this.jobs.get(key)
    if (job === undefined) {
      const controller = new AbortController()
      // the first party is in before the job starts, so it sees the job's first events (`waiting`)
      const j: Job<T, E> = { parties: new Set([party]), controller, promise: Promise.resolve() as Promise<unknown> as Promise<T>, last: null }
      const emit = (e: E): void => {
        j.last = e
        for (const p of j.parties) p.onEvent(e)
      }
      this.jobs.set(key, j)
      j.promise = start(controller.signal, emit).finally(() => { if (this.jobs.get(key) === j) this.jobs.delete(key) })
      j.promise.catch(() => { /* every party gets the error through its own promise */ })
      job = j
    } else {
      if (job.last !== null) onEvent(job.last)
      job.parties.add(party)
    }
    const j = job
    return await new Promise<T>((resolve, reject) => {
      const leave = (): void => {
        j.parties.delete(party)
        signal.removeEventListener('abort', onAbort)
      }
      const onAbort = (): void => {
        leave()
        if (j.parties.size === 0) {
          // nobody wants it any more: stop it, and let a later request start afresh
          if (this.jobs.get(key) === j) this.jobs.delete(key)
          j.controller.abort(signal.reason)
        }
        reject(canceled(signal))
      }
      signal.addEventListener('abort', onAbort, { once: true })
      j.promise.then((v) => { leave(); resolve(v) }, (err: unknown) => { leave(); reject(err) })
    })
  }
}
