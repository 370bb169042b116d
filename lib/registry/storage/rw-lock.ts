// A small readers-writer lock for async code: many shared holders or one exclusive holder, writers not starved.

export class RwLock {
  private readers = 0
  private writer = false
  private readonly queue: Array<{ exclusive: boolean, wake: () => void }> = []

  async shared<T> (fn: () => Promise<T>): Promise<T> {
    if (this.writer || this.queue.length > 0) await new Promise<void>((resolve) => { this.queue.push({ exclusive: false, wake: resolve }) })
    else this.readers++
    try { return await fn() } finally { this.readers--; this.drain() }
  }

  async exclusive<T> (fn: () => Promise<T>): Promise<T> {
    if (this.writer || this.readers > 0 || this.queue.length > 0) await new Promise<void>((resolve) => { this.queue.push({ exclusive: true, wake: resolve }) })
    else this.writer = true
    try { return await fn() } finally { this.writer = false; this.drain() }
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
