// sha256 of large streams on a second thread. Hashing runs at about 1.3 GB/s, and a pull hashes every layer twice
// (the compressed blob and its tar) besides gunzip and unpacking: on the main thread hashing is most of a pull's CPU
// time, on a worker it runs beside the event loop on the other core. (The registry hashes its uploads in place: its
// event loop is not the limit there, and the copies to a worker would take CPU from the client on the same machine.)
//
// A hash starts local: the first LOCAL_LIMIT bytes are only gathered, and a stream that ends within them (configs,
// manifests, small layers such as busybox's) is hashed in place with no thread. A longer one is copied in STAGE-sized
// buffers transferred to the worker, which sends each back when it is hashed; at most IN_FLIGHT buffers are out, and
// update() returns a promise to wait on when that bound is reached. The worker starts on first need, is unref'd,
// and stops after IDLE_MS with nothing to hash (an idle daemon does not carry it).
import { createRequire } from 'node:module'
import type { Worker } from 'node:worker_threads'
import { createHash } from 'node:crypto'
import { internal } from '../errors.js'
import { logger } from '../log.js'

const log = logger('hash')

const STAGE = 1024 * 1024
/** Streams up to this long are hashed on the calling thread (a few ms), without starting the worker. */
const LOCAL_LIMIT = 4 * STAGE
const IN_FLIGHT = 8
const IDLE_MS = 3000

export type ToWorker =
  | { op: 'update', id: number, buf: ArrayBuffer, len: number }
  | { op: 'digest', id: number }
  | { op: 'drop', id: number }

type FromWorker =
  | { op: 'ack', id: number, buf: ArrayBuffer }
  | { op: 'digest', id: number, hex: string }

/** An incremental sha256. */
export interface StreamHash {
  /** Null when the caller may go on at once; otherwise a promise to wait for before the next update. */
  update (chunk: Buffer): Promise<void> | null
  /** The hex digest; the hash is finished. */
  digest (): Promise<string>
  /** Abandons the hash. */
  drop (): void
}

interface Deferred<T> { promise: Promise<T>, resolve: (v: T) => void, reject: (err: Error) => void }

function deferred<T> (): Deferred<T> {
  let resolve!: (v: T) => void
  let reject!: (err: Error) => void
  const promise = new Promise<T>((res, rej) => { resolve = res; reject = rej })
  // a waiter may be abandoned (its stream destroyed): its rejection must not go unhandled
  promise.catch(() => {})
  return { promise, resolve, reject }
}

interface Pending {
  inFlight: number
  drain: Deferred<void> | null
  done: Deferred<string> | null
}

/** A StreamHash on the calling thread (for owners whose event loop has time to spare). */
export function localHash (): StreamHash {
  const h = createHash('sha256')
  let finished = false
  return {
    update (chunk) { h.update(chunk); return null },
    async digest () {
      if (finished) throw internal('hash already finished')
      finished = true
      return h.digest('hex')
    },
    drop () { finished = true }
  }
}

/** The worker and its hashes; one per store owner, closed with it. */
export class HashThread {
  private worker: Worker | null = null
  private nextId = 1
  private readonly pending = new Map<number, Pending>()
  private readonly spare: ArrayBuffer[] = []
  private idleTimer: NodeJS.Timeout | null = null
  private closed = false

  create (): StreamHash { return new StagedHash(this) }

  /** @internal */
  open (): number {
    const id = this.nextId++
    this.pending.set(id, { inFlight: 0, drain: null, done: null })
    if (this.idleTimer !== null) { clearTimeout(this.idleTimer); this.idleTimer = null }
    return id
  }

  /** @internal */
  buffer (): ArrayBuffer { return this.spare.pop() ?? new ArrayBuffer(STAGE) }

  /** @internal */
  send (id: number, buf: ArrayBuffer, len: number): Promise<void> | null {
    const p = this.pending.get(id)
    if (p === undefined) return null
    this.ensure().postMessage({ op: 'update', id, buf, len } satisfies ToWorker, [buf])
    p.inFlight++
    if (p.inFlight < IN_FLIGHT) return null
    p.drain ??= deferred<void>()
    return p.drain.promise
  }

  /** @internal */
  async finish (id: number): Promise<string> {
    const p = this.pending.get(id)
    if (p === undefined) throw internal('hash thread: the hash was lost')
    p.done = deferred<string>()
    this.ensure().postMessage({ op: 'digest', id } satisfies ToWorker)
    return await p.done.promise
  }

  /** @internal */
  drop (id: number): void {
    if (!this.pending.delete(id)) return
    this.worker?.postMessage({ op: 'drop', id } satisfies ToWorker)
    this.idleCheck()
  }

  private ensure (): Worker {
    if (this.closed) throw internal('hash thread: closed')
    if (this.worker !== null) return this.worker
    // node:worker_threads at the first stream hashed here, not at every start (never import() a node: module in lib/:
    // the bundle is compiled by vm, where it cannot run); the worker's file spelt from lib/ so that it resolves the
    // same from the bundle, dist/lib/cli/berth.cjs
    const { Worker } = createRequire(import.meta.url)('node:worker_threads') as typeof import('node:worker_threads')
    const w = new Worker(new URL('../util/hash-thread-worker.js', import.meta.url))
    w.unref()
    w.on('message', (m: FromWorker) => { this.onMessage(m) })
    const lost = (err: Error): void => {
      if (this.worker !== w) return
      this.worker = null
      log('hash thread lost: %s', err.message)
      for (const [id, p] of this.pending) { this.pending.delete(id); p.drain?.reject(err); p.done?.reject(err) }
    }
    w.on('error', lost)
    w.on('exit', (code) => { lost(internal(`hash thread exited with code ${code}`)) })
    this.worker = w
    log('hash thread started')
    return w
  }

  private onMessage (m: FromWorker): void {
    if (m.op === 'ack') {
      if (this.spare.length < IN_FLIGHT) this.spare.push(m.buf)
      const p = this.pending.get(m.id)
      if (p === undefined) return
      p.inFlight--
      if (p.drain !== null && p.inFlight < IN_FLIGHT) { const d = p.drain; p.drain = null; d.resolve() }
      return
    }
    const p = this.pending.get(m.id)
    this.pending.delete(m.id)
    p?.done?.resolve(m.hex)
    this.idleCheck()
  }

  private idleCheck (): void {
    if (this.pending.size > 0 || this.worker === null || this.idleTimer !== null) return
    this.idleTimer = setTimeout(() => {
      this.idleTimer = null
      if (this.pending.size > 0) return
      const w = this.worker
      this.worker = null
      this.spare.length = 0
      void w?.terminate()
    }, IDLE_MS)
    this.idleTimer.unref()
  }

  async close (): Promise<void> {
    this.closed = true
    if (this.idleTimer !== null) { clearTimeout(this.idleTimer); this.idleTimer = null }
    const w = this.worker
    this.worker = null
    for (const [id, p] of this.pending) { this.pending.delete(id); const err = internal('hash thread: closed'); p.drain?.reject(err); p.done?.reject(err) }
    await w?.terminate()
  }
}

/**
 * Gathers bytes into STAGE-sized buffers. The first LOCAL_LIMIT bytes are only kept: a stream that ends within them
 * is hashed here, at once; a longer one sends them and everything after to the thread.
 */
class StagedHash implements StreamHash {
  private readonly thread: HashThread
  private id = 0
  private stage: Buffer | null = null
  private filled = 0
  /** Full buffers kept while the stream is still short enough to hash locally. */
  private kept: Buffer[] = []
  private finished = false

  constructor (thread: HashThread) { this.thread = thread }

  update (chunk: Buffer): Promise<void> | null {
    if (this.finished) throw internal('hash already finished')
    let wait: Promise<void> | null = null
    let off = 0
    while (off < chunk.length) {
      if (this.stage === null) { this.stage = Buffer.from(this.thread.buffer()); this.filled = 0 }
      const n = chunk.copy(this.stage, this.filled, off)
      this.filled += n
      off += n
      if (this.filled === this.stage.length) wait = this.full() ?? wait
    }
    return wait
  }

  private full (): Promise<void> | null {
    const stage = this.stage as Buffer
    this.stage = null
    if (this.id === 0) {
      this.kept.push(stage)
      if (this.kept.length * STAGE <= LOCAL_LIMIT) return null
      // long: everything so far goes to the thread, in order
      this.id = this.thread.open()
      const kept = this.kept
      this.kept = []
      let wait: Promise<void> | null = null
      for (const b of kept) wait = this.thread.send(this.id, b.buffer as ArrayBuffer, b.length) ?? wait
      return wait
    }
    return this.thread.send(this.id, stage.buffer as ArrayBuffer, stage.length)
  }

  async digest (): Promise<string> {
    if (this.finished) throw internal('hash already finished')
    this.finished = true
    if (this.id === 0) {
      // short: never left this thread
      const h = createHash('sha256')
      for (const b of this.kept) h.update(b)
      if (this.stage !== null) h.update(this.stage.subarray(0, this.filled))
      this.kept = []
      this.stage = null
      return h.digest('hex')
    }
    if (this.stage !== null && this.filled > 0) {
      const stage = this.stage
      this.stage = null
      // no need to wait for room: the digest request queues behind this buffer, and a failure rejects it too
      void this.thread.send(this.id, stage.buffer as ArrayBuffer, this.filled)?.catch(() => {})
    }
    return await this.thread.finish(this.id)
  }

  drop (): void {
    this.finished = true
    this.stage = null
    this.kept = []
    if (this.id !== 0) this.thread.drop(this.id)
  }
}
