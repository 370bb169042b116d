// Transport over a bare libuv TCP handle, for connections accepted by listeners that bind() created. It does
// what net.Socket does underneath (readStart / onread, WriteWrap writes, ShutdownWrap, close) without building a
// Duplex stream per connection: with short-lived connections (HTTP/1.0, Connection: close) that stream is most
// of the per-connection CPU. Semantics kept: backpressure through the handle's writeQueueSize against a 16 KiB
// high-water mark (net.Socket's default), read pause/resume, half-close after queued writes, an unref'd
// inactivity timer refreshed by reads and writes. Reads go into one buffer shared by the server's connections
// (useUserBuffer), lent to the connection for the duration of the read callback: without it, every read allocated a
// 64 KiB buffer, shrank it to the bytes read and wrapped it in a new ArrayBuffer for V8 to track and sweep.

import { getSystemErrorName } from 'node:util'
import type { Transport, TransportOwner } from './transport.js'
import type { StreamBinding, TcpHandle } from './uv-binding.js'

const HIGH_WATER_MARK = 16 * 1024

interface Req extends Record<string, unknown> {
  transport?: HandleTransport
}

/** The client handle, with the transport that owns it (set by the constructor, read by its callbacks). */
interface OwnedHandle extends TcpHandle {
  transport?: HandleTransport
}

export class HandleTransport implements Transport {
  private readonly handle: OwnedHandle
  private readonly owner: TransportOwner
  private readonly stream: StreamBinding
  private readonly eof: number
  private closed = false
  private ending = false
  private ended = false
  private destroyOnEnd = false
  private peerEnded = false
  private wantDrain = false
  private timer: NodeJS.Timeout | null = null
  private readonly readBuffer: Buffer | null

  /** `readBuffer`: where reads land, shared by the connections of one server (null: a new buffer per read). */
  constructor (handle: TcpHandle, owner: TransportOwner, stream: StreamBinding, eof: number, readBuffer: Buffer | null) {
    this.handle = handle
    this.owner = owner
    this.stream = stream
    this.eof = eof
    this.handle.transport = this
    this.handle.onread = handleOnRead
    this.readBuffer = readBuffer !== null && typeof handle.useUserBuffer === 'function' ? readBuffer : null
    if (this.readBuffer !== null) this.handle.useUserBuffer!(this.readBuffer)
    const err = this.handle.readStart()
    if (err !== 0) process.nextTick(failNT, this, 'read', err)
  }

  get queued (): number {
    return this.closed ? 0 : this.handle.writeQueueSize
  }

  get full (): boolean {
    return this.queued >= HIGH_WATER_MARK
  }

  write (data: string | Buffer): boolean {
    if (this.closed || this.ending) return false
    const req: Req = new this.stream.WriteWrap()
    req.handle = this.handle
    req.oncomplete = writeOnComplete
    req.transport = this
    // The request keeps the bytes alive until libuv has written them (an async write uses them in place; strings
    // are copied natively).
    if (typeof data !== 'string') req.buffer = data
    const err = typeof data === 'string' ? this.handle.writeLatin1String(req, data) : this.handle.writeBuffer(req, data)
    if (err !== 0) {
      this.fail('write', err)
      return false
    }
    this.timer?.refresh()
    return this.handle.writeQueueSize < HIGH_WATER_MARK
  }

  notifyDrain (): void {
    this.wantDrain = true
  }

  pause (): void {
    if (!this.closed && !this.peerEnded) this.handle.readStop()
  }

  resume (): void {
    if (!this.closed && !this.peerEnded) this.handle.readStart()
  }

  end (): void {
    if (this.closed || this.ending) return
    this.ending = true
    const req: Req = new this.stream.ShutdownWrap()
    req.handle = this.handle
    req.oncomplete = shutdownOnComplete
    req.transport = this
    const err = this.handle.shutdown(req)
    if (err === 1) this.shutDown() // completed synchronously
    else if (err !== 0) this.shutDown() // not connected any more: nothing left to flush
  }

  destroyAfterEnd (): void {
    if (this.ended) this.destroy()
    else this.destroyOnEnd = true
  }

  destroy (): void {
    if (this.closed) return
    this.closed = true
    if (this.timer !== null) clearTimeout(this.timer)
    // onread stays set: it is a native accessor that only takes a function, and a closed handle reads no more.
    this.handle.close(handleOnClose)
  }

  setTimeout (ms: number): void {
    if (ms <= 0) return
    this.timer = setTimeout(timerOnTimeout, ms, this)
    this.timer.unref()
  }

  /** @internal */
  onRead (arrayBuffer: ArrayBuffer | undefined): void {
    const state = this.stream.streamBaseState
    const nread = state[this.stream.kReadBytesOrError]!
    if (nread > 0) {
      this.timer?.refresh()
      if (this.readBuffer !== null) this.owner.receive(this.readBuffer.subarray(0, nread), true)
      else this.owner.receive(Buffer.from(arrayBuffer!, state[this.stream.kArrayBufferOffset]!, nread), false)
    } else if (nread === this.eof) {
      this.peerEnded = true
      this.owner.peerEnd()
    } else if (nread < 0) {
      this.fail('read', nread)
    }
  }

  /** @internal */
  afterWrite (status: number): void {
    if (this.closed) return
    if (status < 0) {
      this.fail('write', status)
      return
    }
    this.timer?.refresh()
    if (this.wantDrain && this.handle.writeQueueSize < HIGH_WATER_MARK) {
      this.wantDrain = false
      this.owner.drained()
    }
  }

  /** @internal */
  shutDown (): void {
    this.ended = true
    if (this.destroyOnEnd) this.destroy()
  }

  /** @internal */
  closedHandle (): void {
    this.owner.onClose()
  }

  /** @internal */
  timedOut (): void {
    if (!this.closed) this.owner.timeout()
  }

  /** @internal */
  fail (syscall: string, err: number): void {
    if (this.closed) return
    this.owner.transportError(`${syscall} ${getSystemErrorName(err)}`)
    this.destroy()
  }
}

function handleOnRead (this: OwnedHandle, arrayBuffer?: ArrayBuffer): void {
  this.transport!.onRead(arrayBuffer)
}

function writeOnComplete (this: Req, status: number): void {
  this.transport!.afterWrite(status)
}

function shutdownOnComplete (this: Req): void {
  const t = this.transport!
  // A failed shutdown (the peer reset) still ends the wait: the close below is all that is left to do.
  t.shutDown()
}

function handleOnClose (this: OwnedHandle): void {
  this.transport!.closedHandle()
}

function timerOnTimeout (t: HandleTransport): void {
  t.timedOut()
}

function failNT (t: HandleTransport, syscall: string, err: number): void {
  t.fail(syscall, err)
}
