// EventHttpRequest: the server side of one request, with PHP's names and libevent's send semantics.

import { CMD, HEADER_TYPE } from './constants.js'
import { errorPage, notFoundPage } from './error-page.js'
import { EventBuffer } from './event-buffer.js'
import { HeaderList } from './header-list.js'
import { log } from './log.js'
import { reasonPhrase } from './reason-phrase.js'
import { buildReplyHead, closesAfterReply, isKeepAliveValue, needsBody, type ReplySubject } from './reply-head.js'
import type { ParsedRequest } from './request-parser.js'
import { hostFromHeader } from './request-target.js'

/** A request callback: `function (EventHttpRequest $req, mixed $arg)`. */
export type HttpCallback<A = unknown> = (req: EventHttpRequest, arg: A) => void

/** What a request needs from its connection to send a reply. */
export interface ReplySink {
  readonly closed: boolean
  readonly defaultContentType: string
  /** Writes a header block and an optional body in one write; returns socket.write()'s result. */
  writeReply (head: string, body: EventBuffer | null): boolean
  writeData (data: Buffer): boolean
  /** The reply is complete: go on with the next request or close. */
  requestDone (req: EventHttpRequest, close: boolean): void
  destroy (): void
}

const PHASE = { IDLE: 0, STREAMING: 1, DONE: 2 } as const
type Phase = typeof PHASE[keyof typeof PHASE]

const CRLF = Buffer.from('\r\n', 'latin1')
/** Chunks up to this size are framed in one buffer (one write); larger ones are written around the data. */
const COALESCE_LIMIT = 64 * 1024
const LAST_CHUNK = Buffer.from('0\r\n\r\n', 'latin1')
const EMPTY_HEADERS = new HeaderList()

function hasCrOrLf (s: string): boolean {
  return s.includes('\r') || s.includes('\n')
}

/**
 * The reason phrase a handler gave, or the table's when it gave none. A phrase with CR, LF or NUL would let a
 * handler that echoes client input split the reply (forged headers or a second response): it is replaced by the
 * table's phrase, as addHeader() refuses such header values.
 */
function safeReason (code: number, reason: string | null | undefined): string {
  if (reason === undefined || reason === null) return reasonPhrase(code)
  const text = String(reason)
  if (hasCrOrLf(text) || text.includes('\0')) {
    log('reason phrase with CR, LF or NUL replaced for %d', code)
    return reasonPhrase(code)
  }
  return text
}

export class EventHttpRequest implements ReplySubject {
  static readonly CMD_GET = CMD.GET
  static readonly CMD_POST = CMD.POST
  static readonly CMD_HEAD = CMD.HEAD
  static readonly CMD_PUT = CMD.PUT
  static readonly CMD_DELETE = CMD.DELETE
  static readonly CMD_OPTIONS = CMD.OPTIONS
  static readonly CMD_TRACE = CMD.TRACE
  static readonly CMD_CONNECT = CMD.CONNECT
  static readonly CMD_PATCH = CMD.PATCH
  static readonly INPUT_HEADER = HEADER_TYPE.INPUT
  static readonly OUTPUT_HEADER = HEADER_TYPE.OUTPUT

  major: number
  minor: number
  readonly cmd: number
  readonly proxy: boolean
  code = 0
  reason = ''
  private sink: ReplySink | null
  private readonly parsed: ParsedRequest
  private outputHeaders: HeaderList | null = null
  private inputBuffer: EventBuffer | null
  private outputBuffer: EventBuffer | null = null
  private phase: Phase = PHASE.IDLE
  private chunked = false
  private closeDelimited = false
  /** Set once input headers were changed through the API: the indices cached by the parser are then stale. */
  private inputTouched = false

  /** @internal Created by the server for each request it reads. */
  constructor (sink: ReplySink, parsed: ParsedRequest) {
    this.sink = sink
    this.parsed = parsed
    this.major = parsed.major
    this.minor = parsed.minor
    this.cmd = parsed.cmd
    this.proxy = parsed.proxy
    this.inputBuffer = parsed.body
  }

  /** @internal */
  get output (): HeaderList {
    if (this.outputHeaders === null) this.outputHeaders = new HeaderList()
    return this.outputHeaders
  }

  /** @internal First value of an input header, from the parser's index when the headers are untouched. */
  inputHeader (name: 'Connection' | 'Proxy-Connection'): string | undefined {
    const p = this.parsed
    if (this.inputTouched) return p.headers.find(name)
    const i = name === 'Connection' ? p.connection : p.proxyConnection
    return i === -1 ? undefined : p.headers.values[i]
  }

  /** @internal The %-undecoded path the callback table is matched against (after decoding). */
  get rawPath (): string {
    return this.parsed.target === null ? '' : this.parsed.target.path
  }

  /** @internal 400/413/417 when the request was rejected while reading, else 0. */
  get errorCode (): number {
    return this.parsed.errorCode
  }

  /** @internal The connection went away: later sends are dropped. */
  detach (): void {
    this.sink = null
  }

  /** The request-target exactly as received (query, fragment, escapes and absolute form kept). */
  getUri (): string {
    return this.parsed.uri
  }

  /** One of the CMD_* values (32768 for a method libevent does not know). */
  getCommand (): number {
    return this.cmd
  }

  /**
   * The host of an absolute-form target (case kept), else the Host header without a trailing ":digits"; null
   * when there is neither (PHP hands libevent's NULL to RETVAL_STRING, which is undefined behaviour).
   */
  getHost (): string | null {
    const target = this.parsed.target
    if (target !== null && target.host !== null) return target.host
    const host = this.inputTouched ? this.parsed.headers.find('Host')
      : this.parsed.host === -1 ? undefined : this.parsed.headers.values[this.parsed.host]
    return host === undefined ? null : hostFromHeader(host)
  }

  /** Input headers as PHP returns them: names as sent, wire order, an exactly repeated name keeps the last value. */
  getInputHeaders (): Record<string, string> {
    return this.parsed.headers.toRecord()
  }

  getOutputHeaders (): Record<string, string> {
    return (this.outputHeaders ?? EMPTY_HEADERS).toRecord()
  }

  /** The request body, de-chunked. */
  getInputBuffer (): EventBuffer {
    if (this.inputBuffer === null) this.inputBuffer = new EventBuffer()
    return this.inputBuffer
  }

  /** The reply body buffer; sendReply() without a buffer sends whatever it holds. */
  getOutputBuffer (): EventBuffer {
    if (this.outputBuffer === null) this.outputBuffer = new EventBuffer()
    return this.outputBuffer
  }

  /**
   * Appends a header (no replacement). OUTPUT_HEADER means the reply; any other type means the input headers.
   * False when the name or value contains CR or LF (Debian's libevent refuses them).
   */
  addHeader (key: string, value: string, type: number): boolean {
    key = String(key)
    value = String(value)
    if (hasCrOrLf(key) || hasCrOrLf(value)) return false
    if (type === HEADER_TYPE.OUTPUT) {
      this.output.push(key, value)
    } else {
      this.parsed.headers.push(key, value)
      this.inputTouched = true
    }
    return true
  }

  /** Removes the first header of that name (case-insensitive); false when there is none. */
  removeHeader (key: string, type: number): boolean {
    if (type === HEADER_TYPE.OUTPUT) return this.outputHeaders !== null && this.outputHeaders.remove(key)
    this.inputTouched = true
    return this.parsed.headers.remove(key)
  }

  /** Clears the output headers. */
  clearHeaders (): void {
    this.outputHeaders?.clear()
  }

  /**
   * First value of the header (case-insensitive), or null. PHP warns and returns false for a type other than
   * INPUT_HEADER / OUTPUT_HEADER; so does this (without the warning).
   */
  findHeader (key: string, type: number): string | null | false {
    if (type !== HEADER_TYPE.INPUT && type !== HEADER_TYPE.OUTPUT) return false
    const list = type === HEADER_TYPE.OUTPUT ? this.outputHeaders : this.parsed.headers
    return list?.find(key) ?? null
  }

  /** The code set by a send call (0 before). */
  getResponseCode (): number {
    return this.code
  }

  /** Moves `buf` (if given) into the body and sends the reply; the request is finished once written. */
  sendReply (code: number, reason: string, buf?: EventBuffer | null): void {
    if (!this.beginReply('sendReply')) return
    if (buf !== undefined && buf !== null) this.getOutputBuffer().addBuffer(buf)
    this.setStatus(code, reason)
    this.phase = PHASE.DONE
    this.send()
  }

  /**
   * Sends the headers now and streams the body with sendReplyChunk(): chunked on HTTP/1.1. Deliberate departure
   * from libevent: on an HTTP/1.0 keep-alive request without a Content-Length, libevent announces
   * `Connection: keep-alive` and `Content-Length: 0` and then streams the data anyway (broken framing); here the
   * reply carries neither and the connection closes after sendReplyEnd(), so the body is close-delimited as
   * HTTP/1.0 requires. Bytes already in the output buffer go out as the first chunk (libevent sends them unframed).
   */
  sendReplyStart (code: number, reason: string): void {
    if (!this.beginReply('sendReplyStart')) return
    this.setStatus(code, reason)
    this.phase = PHASE.STREAMING
    const out = this.output
    const body = needsBody(this.code, this.cmd)
    if (!out.has('Content-Length') && (this.major > 1 || (this.major === 1 && this.minor >= 1)) && body) {
      out.push('Transfer-Encoding', 'chunked')
      this.chunked = true
    } else if (this.major === 1 && this.minor === 0 && body && isKeepAliveValue(this.inputHeader('Connection')) &&
      !out.has('Content-Length') && !out.has('Transfer-Encoding')) {
      this.closeDelimited = true
    }
    const sink = this.sink
    if (sink === null || sink.closed) return this.dropped('sendReplyStart')
    const pending = this.outputBuffer
    if (this.chunked) {
      sink.writeReply(buildReplyHead(this, 0, sink.defaultContentType, false), null)
      if (pending !== null && pending.length > 0) this.sendReplyChunk(pending)
    } else {
      const head = buildReplyHead(this, pending === null ? 0 : pending.length, sink.defaultContentType,
        this.closeDelimited)
      sink.writeReply(head, body ? pending : null)
    }
    pending?.takeChunks()
  }

  /**
   * Sends `buf` as one chunk and drains it (an empty buffer is a no-op). Returns false when the socket's buffer
   * is above its high-water mark: a producer should slow down (an extension; PHP returns nothing).
   */
  sendReplyChunk (buf: EventBuffer): boolean {
    if (this.phase !== PHASE.STREAMING) return false
    const sink = this.sink
    if (sink === null || sink.closed) {
      this.dropped('sendReplyChunk')
      return false
    }
    const len = buf.length
    if (len === 0) return true
    if (!needsBody(this.code, this.cmd)) return true // libevent returns before touching the buffer
    if (!this.chunked) return sink.writeData(takeAll(buf))
    const prefix = len.toString(16) + '\r\n'
    if (len > COALESCE_LIMIT) {
      // Large chunk: frame it around the data instead of copying the data into one buffer.
      sink.writeData(Buffer.from(prefix, 'latin1'))
      for (const c of buf.takeChunks()) sink.writeData(c)
      return sink.writeData(CRLF)
    }
    const frame = Buffer.allocUnsafe(prefix.length + len + 2)
    frame.write(prefix, 0, 'latin1')
    let off = prefix.length
    for (const c of buf.takeChunks()) {
      c.copy(frame, off)
      off += c.length
    }
    CRLF.copy(frame, off)
    return sink.writeData(frame)
  }

  /** Ends a streamed reply (`0\r\n\r\n` when chunked), then the connection goes on or closes. */
  sendReplyEnd (): void {
    if (this.phase !== PHASE.STREAMING) return
    this.phase = PHASE.DONE
    const sink = this.sink
    if (sink === null || sink.closed) return this.dropped('sendReplyEnd')
    if (this.chunked) sink.writeData(LAST_CHUNK)
    sink.requestDone(this, this.closeDelimited || closesAfterReply(this))
  }

  /**
   * Sends evhttp's HTML error page: HTTP/1.1 when the request's major or minor version is 0, output headers
   * replaced by `Content-Type: text/html` and `Connection: close`, reason from the table when not given.
   */
  sendError (error: number, reason?: string | null): void {
    if (!this.beginReply('sendError')) return
    const code = Math.trunc(Number(error)) | 0
    const text = safeReason(code, reason)
    this.code = code
    this.reason = text
    this.sendPage(errorPage(code, text))
  }

  /** @internal The built-in 404 (no callback and no default callback). */
  sendNotFound (): void {
    if (!this.beginReply('sendNotFound')) return
    this.code = 404
    this.reason = 'Not Found'
    this.sendPage(notFoundPage(this.parsed.uri))
  }

  /** Closes the connection at once (PHP's EventHttpRequest::closeConnection). */
  closeConnection (): void {
    this.sink?.destroy()
  }

  /** Only meaningful for client requests in PHP; a no-op for server requests. */
  free (): void {}

  private beginReply (what: string): boolean {
    if (this.phase === PHASE.IDLE) return true
    log('%s ignored: a reply was already started for %s', what, this.parsed.uri)
    return false
  }

  private setStatus (code: number, reason: string): void {
    this.code = Math.trunc(Number(code)) | 0
    this.reason = safeReason(this.code, reason)
  }

  private sendPage (page: string): void {
    if (this.major === 0 || this.minor === 0) {
      this.major = 1
      this.minor = 1
    }
    const out = this.output
    out.clear()
    out.push('Content-Type', 'text/html')
    out.push('Connection', 'close')
    this.getOutputBuffer().add(Buffer.from(page, 'latin1'))
    this.phase = PHASE.DONE
    this.send()
  }

  /**
   * evhttp_send(): frames and writes the reply. Deliberate departure from libevent: when the reply may not have a
   * body (HEAD, CONNECT, 1xx, 204, 304) no body bytes are written, although libevent writes the output buffer
   * anyway (a HEAD reply with a body desynchronises every keep-alive client). Headers are unchanged.
   */
  private send (): void {
    const sink = this.sink
    if (sink === null || sink.closed) return this.dropped('reply')
    const body = this.outputBuffer
    const length = body === null ? 0 : body.length
    const head = buildReplyHead(this, length, sink.defaultContentType, false)
    sink.writeReply(head, length > 0 && needsBody(this.code, this.cmd) ? body : null)
    body?.takeChunks()
    sink.requestDone(this, closesAfterReply(this))
  }

  private dropped (what: string): void {
    log('%s for %s dropped: the connection is closed', what, this.parsed.uri)
  }
}

function takeAll (buf: EventBuffer): Buffer {
  const chunks = buf.takeChunks()
  return chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)
}
