// One accepted connection: feeds the parser, hands complete requests to the server one at a time (reads are
// paused while a request is being answered, as evhttp disables EV_READ), writes replies, keeps the connection
// alive or closes it, and applies the read/write timeout. The bytes move through a Transport (transport.ts).
// With a timeout set (EventHttp.setTimeout), a request's line and headers must also arrive within that time from
// their first byte, so a client trickling a header block one byte at a time cannot hold the connection forever.

import type { EventBuffer } from './event-buffer.js'
import { EventHttpRequest, type ReplySink } from './event-http-request.js'
import { log } from './log.js'
import { PARSE, RequestParser, type ParserLimits, type ServerNames } from './request-parser.js'
import type { Transport, TransportOwner } from './transport.js'

/** What a connection needs from the server that accepted it. */
export interface ConnectionOwner extends ServerNames {
  readonly defaultContentType: string
  /** Dispatches a complete (or rejected) request: callback, default callback, 404 or error page. */
  handleRequest (req: EventHttpRequest): void
  connectionClosed (conn: Connection): void
}

/** Copy at most this much of a body into one contiguous reply write; larger bodies go out as separate buffers. */
const COALESCE_LIMIT = 64 * 1024

/** How long a closing connection keeps draining input after its last reply when the peer does not close. */
const LINGER_MS = 2000

export class Connection implements ReplySink, TransportOwner {
  readonly defaultContentType: string
  closed = false
  private transport: Transport | null = null
  private readonly owner: ConnectionOwner
  private readonly parser: RequestParser
  /** Unconsumed input: bytes [inOff, inEnd) of inBuf. inBuf is either a received chunk or a buffer we own. */
  private inBuf: Buffer | null = null
  private inOff = 0
  private inEnd = 0
  private inOwned = false
  private current: EventHttpRequest | null = null
  private processing = false
  private paused = false
  private peerEnded = false
  private closing = false
  /** A reply is queued above the high-water mark: no new request is read until the transport drains. */
  private draining = false
  private lingerTimer: NodeJS.Timeout | null = null
  private timeoutMs = 0
  private headTimer: NodeJS.Timeout | null = null
  private closeWaiters: Array<() => void> | null = null

  constructor (owner: ConnectionOwner, limits: ParserLimits) {
    this.owner = owner
    this.defaultContentType = owner.defaultContentType
    this.parser = new RequestParser(owner, limits)
  }

  /** Starts reading from `transport` (made with this connection as its owner). */
  attach (transport: Transport, timeoutMs: number): void {
    this.transport = transport
    this.timeoutMs = timeoutMs
    if (timeoutMs > 0) transport.setTimeout(timeoutMs)
  }

  /** Starts the head deadline when a request head begins, stops it once the head is in (see the file comment). */
  private watchHead (): void {
    if (this.timeoutMs <= 0 || this.closed) return
    const inHead = this.current === null && !this.closing && this.parser.inHead
    if (inHead && this.headTimer === null) {
      this.headTimer = setTimeout(headTimedOut, this.timeoutMs, this)
      this.headTimer.unref()
    } else if (!inHead && this.headTimer !== null) {
      clearTimeout(this.headTimer)
      this.headTimer = null
    }
  }

  /** @internal The head deadline passed: close silently, as evhttp's timeouts do. */
  headExpired (): void {
    this.headTimer = null
    if (this.closed || this.current !== null || !this.parser.inHead) return
    log('request head not complete within %d ms', this.timeoutMs)
    this.destroy()
  }

  /** Resolves once the connection is closed. */
  whenClosed (): Promise<void> {
    if (this.closed) return Promise.resolve()
    return new Promise((resolve) => {
      if (this.closeWaiters === null) this.closeWaiters = []
      this.closeWaiters.push(resolve)
    })
  }

  receive (chunk: Buffer, borrowed: boolean): void {
    if (this.closed || this.closing) return
    if (this.inBuf === null) {
      this.inBuf = chunk
      this.inOff = 0
      this.inEnd = chunk.length
      this.inOwned = false
    } else {
      this.append(chunk)
    }
    if (this.current === null && !this.draining) {
      this.parser.borrowed = borrowed && this.inBuf === chunk
      this.process()
      this.parser.borrowed = false
    } else {
      this.pause()
    }
    // the chunk is read into again once this call returns: keep what is left of it in a buffer of our own
    if (borrowed && this.inBuf === chunk) this.keepInput()
  }

  /** Moves the unconsumed input into a buffer of our own. */
  private keepInput (): void {
    const have = this.inEnd - this.inOff
    const own = Buffer.allocUnsafe(Math.max(have, 1024))
    this.inBuf!.copy(own, 0, this.inOff, this.inEnd)
    this.inBuf = own
    this.inOff = 0
    this.inEnd = have
    this.inOwned = true
  }

  /** The peer half-closed: finish the requests already received, then close. */
  peerEnd (): void {
    this.peerEnded = true
    if (this.closing) this.transport!.destroyAfterEnd()
    else if (this.current === null && !this.draining) this.process()
  }

  /** Read/write timeout: close silently, unless a handler holds the request and nothing is queued. */
  timeout (): void {
    if (this.current !== null && this.transport!.queued === 0) return
    log('connection timed out')
    this.destroy()
  }

  drained (): void {
    this.draining = false
    this.continueReading()
  }

  transportError (message: string): void {
    log('connection error: %s', message)
    this.destroy()
  }

  onClose (): void {
    if (this.closed) return
    this.closed = true
    this.inBuf = null
    if (this.lingerTimer !== null) clearTimeout(this.lingerTimer)
    if (this.headTimer !== null) clearTimeout(this.headTimer)
    if (this.current !== null) {
      this.current.detach()
      this.current = null
    }
    this.owner.connectionClosed(this)
    const waiters = this.closeWaiters
    this.closeWaiters = null
    if (waiters !== null) for (const w of waiters) w()
  }

  writeReply (head: string, body: EventBuffer | null): boolean {
    const transport = this.transport!
    if (body === null || body.length === 0) return transport.write(head)
    if (body.length <= COALESCE_LIMIT) {
      const out = Buffer.allocUnsafe(head.length + body.length)
      out.write(head, 0, 'latin1')
      body.toBuffer().copy(out, head.length)
      return transport.write(out)
    }
    transport.write(head)
    let ok = true
    for (const chunk of body.takeChunks()) ok = transport.write(chunk)
    return ok
  }

  writeData (data: Buffer): boolean {
    return this.transport!.write(data)
  }

  requestDone (req: EventHttpRequest, close: boolean): void {
    if (req !== this.current) return
    this.current = null
    req.detach()
    if (close) {
      this.closeAfterWrites()
      return
    }
    this.parser.reset()
    if (this.transport!.full) {
      // Backpressure: read the next request only once the client has taken this reply.
      this.pause()
      this.draining = true
      this.transport!.notifyDrain()
      return
    }
    this.continueReading()
  }

  /** @internal */
  continueReading (): void {
    if (this.closed || this.current !== null || this.draining) return
    if (this.paused) {
      this.paused = false
      this.transport!.resume()
    }
    if (!this.processing && (this.inBuf !== null || this.peerEnded)) process.nextTick(processNT, this)
  }

  destroy (): void {
    if (!this.closed) this.transport!.destroy()
  }

  /** Used by EventBase.exit(): flush what is queued (bounded by a grace period), drop everything else. */
  shutdown (graceMs: number): void {
    if (this.closed) return
    if (this.transport!.queued === 0) {
      this.destroy()
      return
    }
    this.closeAfterWrites()
    setTimeout(destroyConnection, graceMs, this).unref()
  }

  /** Ends the connection once queued output is flushed. */
  closeAfterWrites (): void {
    if (this.closed || this.closing) return
    this.closing = true
    const transport = this.transport!
    if (transport.queued === 0 && this.inBuf === null) {
      // Everything is in the kernel and no input is left unread: close(2) now, as evhttp_connection_free does;
      // the kernel still delivers the queued reply before the FIN. Saves the shutdown round through the loop.
      transport.destroy()
      return
    }
    this.inBuf = null
    transport.end()
    if (this.peerEnded) {
      transport.destroyAfterEnd()
      return
    }
    // Lingering close: input still arriving is read and dropped until the peer closes too (or LINGER_MS pass),
    // so that unread request bytes do not turn our close into a reset that destroys the reply in flight.
    if (this.paused) {
      this.paused = false
      transport.resume()
    }
    this.lingerTimer = setTimeout(destroyConnection, LINGER_MS, this)
    this.lingerTimer.unref()
  }

  /** Parses buffered input and dispatches requests, strictly one at a time. */
  process (): void {
    if (this.processing || this.closed || this.closing) return
    this.processing = true
    try {
      while (this.current === null && !this.draining && this.inBuf !== null && !this.closing && !this.closed) {
        const buf = this.inEnd === this.inBuf.length ? this.inBuf : this.inBuf.subarray(0, this.inEnd)
        const status = this.parser.execute(buf, this.inOff)
        this.inOff = this.parser.offset
        if (this.inOff >= this.inEnd) this.inBuf = null
        if (status === PARSE.MORE) break
        if (status === PARSE.CONTINUE) {
          const req = this.parser.req
          this.transport!.write('HTTP/' + req.major + '.' + req.minor + ' 100 Continue\r\n\r\n')
          continue
        }
        this.dispatch()
      }
      if (this.peerEnded && this.current === null && !this.draining && !this.closed) {
        // EOF: nothing left but, at most, an incomplete request, which evhttp drops without a reply.
        this.closeAfterWrites()
      }
    } finally {
      this.processing = false
      this.watchHead()
    }
  }

  private dispatch (): void {
    const req = new EventHttpRequest(this, this.parser.req)
    this.current = req
    this.owner.handleRequest(req)
    // A handler that did not answer synchronously holds the connection: stop reading until it does.
    if (this.current === req) this.pause()
  }

  private pause (): void {
    if (!this.paused && !this.closed) {
      this.paused = true
      this.transport!.pause()
    }
  }

  private append (chunk: Buffer): void {
    const buf = this.inBuf!
    const have = this.inEnd - this.inOff
    if (!this.inOwned || buf.length - this.inEnd < chunk.length) {
      // Grow geometrically so a request trickling in byte by byte costs linear copying, not quadratic.
      const size = Math.max(have + chunk.length, have * 2, 1024)
      const grown = Buffer.allocUnsafe(size)
      buf.copy(grown, 0, this.inOff, this.inEnd)
      this.inBuf = grown
      this.inOff = 0
      this.inEnd = have
      this.inOwned = true
    }
    chunk.copy(this.inBuf!, this.inEnd)
    this.inEnd += chunk.length
  }
}

function headTimedOut (conn: Connection): void {
  conn.headExpired()
}

function destroyConnection (conn: Connection): void {
  conn.destroy()
}

function processNT (conn: Connection): void {
  conn.process()
}
