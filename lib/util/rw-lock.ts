// A small readers-writer lock for async code: many shared holders or one exclusive holder, writers not starved
// (holders are let in in the order they asked).

export class RwLock {
  private readers = 0
  private writer = false
  private readonly queue: Array<{ exclusive: boolean, wake: () => void }> = []

  async shared<T> (fn: () => Promise<T>): Promise<T> {
    const leave = await this.enterShared()
    try { return await fn() } finally { leave() }
  }

  async exclusive<T> (fn: () => Promise<T>): Promise<T> {
    const leave = await this.enterExclusive()
    try { return await fn() } finally { leave() }
  }

  /** Enters as one of the shared holders (a use that outlives one call: a stream); the returned function leaves, once. */
  async enterShared (): Promise<() => void> {
    if (this.writer || this.queue.length > 0) await new Promise<void>((resolve) => { this.queue.push({ exclusive: false, wake: resolve }) })
    else this.readers++
    return once(() => { this.readers--; this.drain() })
  }

  /** Enters as the exclusive holder; the returned function leaves, once. */
  async enterExclusive (): Promise<() => void> {
    if (this.writer || this.readers > 0 || this.queue.length > 0) await new Promise<void>((resolve) => { this.queue.push({ exclusive: true, wake: resolve }) })
    else this.writer = true
    return once(() => { this.writer = false; this.drain() })
  }

  private drain (): void {
    while (this.queue.length > 0 && !this.writer) {
      const next = this.queue[0] as { exclusive: boolean, wake: () => void }
      if (next.exclusive) {
        if (this.readers > 0) return
        this.queue.shift()
        this.writer = true
        next.wake()
        return
      }
      this.queue.shift()
      this.readers++
      next.wake()
    }
  }
}

function once (fn: () => void): () => void {
  let done = false
  return () => { if (!done) { done = true; fn() } }
}
