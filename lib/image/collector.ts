// The image collector: content blobs and unpacked layers no image references go after removals (debounced, off the
// request path) and at prune. Work about to reference blobs and layers (pulls, commits, builds, loads, imports)
// enters the gate first; a sweep runs only while none is inside, and work arriving during a sweep waits for its end,
// so nothing such work found in the stores is swept from under it.
import { levelLogger, logger } from '../log.js'
import { describeError } from '../errors.js'

const log = logger('engine:gc')
const ops = levelLogger('engine:gc')

export class CollectorGate {
  private inside = 0
  private sweeping: Promise<void> | null = null
  private idle: Array<() => void> = []

  /** Enters (after a sweep in progress ends); the returned function leaves, once. */
  async enter (): Promise<() => void> {
    while (this.sweeping !== null) await this.sweeping
    this.inside++
    let left = false
    return () => {
      if (left) return
      left = true
      if (--this.inside === 0) for (const wake of this.idle.splice(0)) wake()
    }
  }

  /** Runs `work` inside the gate. */
  async within<T> (work: () => Promise<T>): Promise<T> {
    const leave = await this.enter()
    try { return await work() } finally { leave() }
  }

  /** Runs `fn` alone: null (not run) while work is inside. */
  async sweep<T> (fn: () => Promise<T>): Promise<T | null> {
    while (this.sweeping !== null) await this.sweeping
    if (this.inside > 0) return null
    let done = (): void => {}
    this.sweeping = new Promise<void>((resolve) => { done = resolve })
    try { return await fn() } finally { this.sweeping = null; done() }
  }

  /** Calls `fn` once no work is inside (at once when none is). */
  whenIdle (fn: () => void): void {
    if (this.inside === 0) fn()
    else this.idle.push(fn)
  }
}

/** Runs a sweep a short while after removals, once no work is inside the gate. */
export class Collector {
  private readonly gate: CollectorGate
  private readonly sweep: () => Promise<number>
  private readonly delayMs: number
  private timer: NodeJS.Timeout | null = null
  private pending = false
  private running: Promise<unknown> = Promise.resolve()
  private closed = false

  constructor (gate: CollectorGate, sweep: () => Promise<number>, delayMs = 250) {
    this.gate = gate
    this.sweep = sweep
    this.delayMs = delayMs
  }

  /** Asks for a sweep soon (many asks in a row make one sweep). */
  schedule (): void {
    if (this.closed || this.pending) return
    this.pending = true
    this.timer = setTimeout(() => {
      this.timer = null
      this.gate.whenIdle(() => { this.running = this.run() })
    }, this.delayMs)
    this.timer.unref()
  }

  /** A sweep now when no work is inside the gate (prune); otherwise one is scheduled and null returned. */
  async now (): Promise<number | null> {
    const bytes = await this.gate.sweep(this.sweep)
    if (bytes === null) this.schedule()
    return bytes
  }

  private async run (): Promise<void> {
    this.pending = false
    if (this.closed) return
    try {
      const bytes = await this.gate.sweep(this.sweep)
      if (bytes === null) this.schedule()
      else if (bytes > 0) log('collected %d bytes', bytes)
    } catch (err) {
      ops.warn('collecting unused layers and blobs failed (tried again after the next removal): %s', describeError(err))
    }
  }

  async close (): Promise<void> {
    this.closed = true
    if (this.timer !== null) clearTimeout(this.timer)
    this.timer = null
    await this.running
  }
}
