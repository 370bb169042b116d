// EventBase: the loop object of PHP's event extension, on top of Node's own event loop. Node's loop always runs,
// so dispatch() cannot block: it returns a Promise that settles when the loop is left (exit(), stop(), or an
// exception thrown by a callback, which PHP turns into event_base_loopbreak). While dispatching, the listeners
// keep the process alive; before dispatch() and after the loop ends they do not, so a script that never
// dispatches, or that exits the loop, lets the process end.

import { LOOP } from './constants.js'
import type { EventHttpRequest, HttpCallback } from './event-http-request.js'
import { log } from './log.js'

/** How long exit() lets connections flush replies already queued before dropping them. */
const EXIT_GRACE_MS = 2000

/** What the loop needs of an EventHttp attached to it (event-http.ts implements it). */
export interface LoopMember {
  /** Whether its listeners and connections keep the process alive. */
  setRef (ref: boolean): void
  /** Closes its listeners and connections, letting queued replies flush for graceMs. */
  shutdown (graceMs: number): Promise<void>
}

interface PendingLoop {
  resolve: (value: boolean) => void
  reject: (err: unknown) => void
  once: boolean
}

export class EventBase {
  static readonly LOOP_ONCE = LOOP.ONCE
  static readonly LOOP_NONBLOCK = LOOP.NONBLOCK

  private readonly https = new Set<LoopMember>()
  private pending: PendingLoop | null = null
  private exitTimer: NodeJS.Timeout | null = null
  private exited = false
  private stopped = false

  /** An EventConfig is accepted for signature compatibility and ignored. */
  constructor (config?: unknown) {
    void config
  }

  /** @internal */
  get dispatching (): boolean {
    return this.pending !== null
  }

  /** @internal */
  attach (http: LoopMember): void {
    this.https.add(http)
  }

  /** Runs until exit() or stop(); resolves true then. False when the loop is already running. */
  dispatch (): Promise<boolean> {
    return this.loop()
  }

  /**
   * No flags: as dispatch(). LOOP_NONBLOCK: one round of pending events (resolves after the I/O phase).
   * LOOP_ONCE: resolves after the next request callback has run.
   */
  loop (flags = 0): Promise<boolean> {
    if (this.pending !== null) return Promise.resolve(false)
    this.exited = false
    this.stopped = false
    return new Promise<boolean>((resolve, reject) => {
      this.pending = { resolve, reject, once: (flags & LOOP.ONCE) !== 0 }
      for (const http of this.https) http.setRef(true)
      if ((flags & LOOP.NONBLOCK) !== 0) setImmediate(leaveLoop, this)
    })
  }

  /**
   * Leaves the loop after `timeout` seconds (default: once pending callbacks have run), closing every listener
   * and connection of the EventHttp objects on this base, so the process can exit. Replies already queued get
   * a short grace period to flush.
   */
  exit (timeout?: number): boolean {
    if (this.exitTimer !== null) clearTimeout(this.exitTimer)
    const ms = timeout !== undefined && timeout > 0 ? timeout * 1000 : 0
    this.exitTimer = setTimeout(shutdownBase, ms, this, 'exit', null)
    return true
  }

  /** Leaves the loop right after the running callback, closing listeners and connections as exit() does. */
  stop (): boolean {
    process.nextTick(shutdownBase, this, 'stop', null)
    return true
  }

  gotExit (): boolean {
    return this.exited
  }

  gotStop (): boolean {
    return this.stopped
  }

  /** Closes everything now. */
  free (): Promise<void> {
    return this.shutdown('stop', null)
  }

  /**
   * @internal Calls a request callback. A throw while dispatching breaks the loop (PHP calls
   * event_base_loopbreak) and the dispatch() Promise rejects with it; outside dispatch() it propagates to the
   * caller, as an exception in a node:http handler does.
   */
  runCallback (cb: HttpCallback, req: EventHttpRequest, arg: unknown): void {
    const pending = this.pending
    if (pending === null) {
      cb(req, arg)
      return
    }
    try {
      cb(req, arg)
    } catch (err) {
      log('callback for %s threw: %O', req.getUri(), err)
      void this.shutdown('stop', err)
      return
    }
    if (pending.once && this.pending === pending) leaveLoop(this)
  }

  /** @internal Ends a LOOP_ONCE / LOOP_NONBLOCK round without closing anything. */
  leave (): void {
    const pending = this.pending
    if (pending === null) return
    this.pending = null
    for (const http of this.https) http.setRef(false)
    pending.resolve(true)
  }

  /** @internal */
  async shutdown (kind: 'exit' | 'stop', failure: unknown): Promise<void> {
    this.exitTimer = null
    if (kind === 'exit') this.exited = true
    else this.stopped = true
    const pending = this.pending
    this.pending = null
    await Promise.all([...this.https].map((http) => http.shutdown(EXIT_GRACE_MS)))
    if (pending === null) return
    if (failure !== null) pending.reject(failure)
    else pending.resolve(true)
  }
}

function leaveLoop (base: EventBase): void {
  base.leave()
}

function shutdownBase (base: EventBase, kind: 'exit' | 'stop', failure: unknown): void {
  void base.shutdown(kind, failure)
}
