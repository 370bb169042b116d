// Buffers of one size, handed out and taken back, for streams that read into a buffer and wait until it has been
// written before reading into it again (lib/stream/send-file.ts). A fresh buffer per chunk would make every
// transfer as much new external memory as it moves bytes: V8 answers with full collections and the allocator with
// page faults. The pool keeps at most `keep` spare buffers, and lets them go once it has been idle for `idleMs`
// (an idle process does not carry them).
export class BufferPool {
  readonly size: number
  private readonly keep: number
  private readonly idleMs: number
  private readonly spare: Buffer[] = []
  private lastTaken = 0
  private timer: NodeJS.Timeout | null = null

  constructor (size: number, opts: { keep?: number, idleMs?: number } = {}) {
    this.size = size
    this.keep = opts.keep ?? 4
    this.idleMs = opts.idleMs ?? 5000
  }

  /** Spare buffers held right now. */
  get held (): number { return this.spare.length }

  take (): Buffer {
    this.lastTaken = Date.now()
    return this.spare.pop() ?? Buffer.allocUnsafeSlow(this.size)
  }

  /** Takes a buffer back; the caller must not touch it afterwards (nothing may still be reading from it). */
  give (buf: Buffer): void {
    if (buf.length !== this.size || this.spare.length >= this.keep) return
    this.spare.push(buf)
    this.arm(this.idleMs)
  }

  /** Drops the spare buffers and stops the idle timer. */
  clear (): void {
    this.spare.length = 0
    if (this.timer !== null) clearTimeout(this.timer)
    this.timer = null
  }

  private arm (ms: number): void {
    if (this.timer !== null) return
    this.timer = setTimeout(() => {
      this.timer = null
      const idle = Date.now() - this.lastTaken
      if (idle >= this.idleMs) this.spare.length = 0
      else if (this.spare.length > 0) this.arm(this.idleMs - idle)
    }, ms)
    this.timer.unref()
  }
}
