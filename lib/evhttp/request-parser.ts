// Incremental HTTP/1.x request parser reproducing libevent 2.1.12 evhttp's server-side reading (request line,
// header lines, Content-Length and chunked bodies, trailers, Expect), limits included. Pure over Buffers: the
// connection feeds it bytes and acts on the status it returns. One instance per connection, reset per request.
// Long because it is one incremental state machine over libevent's reading states (request line, headers, the body
// kinds, trailers) with the pure line and number parsers it steps through; apart, the transitions would be hidden.

import { CMD, MAX_CHUNK_LINE } from './constants.js'
import { EventBuffer } from './event-buffer.js'
import { HeaderList } from './header-list.js'
import { latin1 } from './latin1.js'
import { parseRequestLine } from './request-line.js'
import { parseRequestTarget, type RequestTarget } from './request-target.js'

/** What execute() reports. */
export const PARSE = {
  /** All bytes before `offset` are consumed; the rest is an incomplete line or body. */
  MORE: 0,
  /** A whole request is parsed (bytes after `offset` belong to the next one). */
  COMPLETE: 1,
  /** The request is rejected with `req.errorCode` (400, 413 or 417). */
  ERROR: 2,
  /** Expect: 100-continue and no body byte buffered yet: send the interim reply, then call execute again. */
  CONTINUE: 3,
} as const
export type ParseStatus = typeof PARSE[keyof typeof PARSE]

const STATE = {
  FIRSTLINE: 0,
  HEADERS: 1,
  BODY: 2,
  CHUNK_SIZE: 3,
  CHUNK_DATA: 4,
  TRAILER: 5,
  DONE: 6,
} as const
type State = typeof STATE[keyof typeof STATE]

/** Decides whether the host of an absolute-form target names this server (else it is a proxy request). */
export interface ServerNames {
  isServerAlias (host: string): boolean
}

export interface ParserLimits {
  maxHeadersSize: number
  maxBodySize: number
}

/** One request as read from the wire. Fields are filled as far as parsing got (an error page needs them). */
export class ParsedRequest {
  ok = false
  cmd = 0
  major = 0
  minor = 0
  uri = ''
  target: RequestTarget | null = null
  /** Absolute-form http(s) target whose host is not a server alias. */
  proxy = false
  readonly headers = new HeaderList()
  body: EventBuffer | null = null
  errorCode = 0
  /** Index of the first header of each name that framing depends on, -1 when absent. */
  connection = -1
  proxyConnection = -1
  contentLength = -1
  expect = -1
  host = -1
  contentLengthCount = 0
  transferEncodingCount = 0
}

function noteSpecialHeader (req: ParsedRequest, key: string, index: number): void {
  switch (key.length) {
    case 4:
      if (req.host === -1 && key.toLowerCase() === 'host') req.host = index
      break
    case 6:
      if (req.expect === -1 && key.toLowerCase() === 'expect') req.expect = index
      break
    case 10:
      if (req.connection === -1 && key.toLowerCase() === 'connection') req.connection = index
      break
    case 14:
      if (key.toLowerCase() === 'content-length') {
        if (req.contentLength === -1) req.contentLength = index
        req.contentLengthCount++
      }
      break
    case 16:
      if (req.proxyConnection === -1 && key.toLowerCase() === 'proxy-connection') req.proxyConnection = index
      break
    case 17:
      if (key.toLowerCase() === 'transfer-encoding') req.transferEncodingCount++
      break
  }
}

/** Header line (no continuation): appends to `list`; false when evhttp rejects the line. */
function parseHeaderLine (buf: Buffer, start: number, end: number, list: HeaderList): boolean {
  let i = start
  for (; i < end; i++) {
    const c = buf[i]
    if (c === 58) break
    // A NUL ends the C string before any ':' (no separator); a CR in the name makes evhttp_add_header refuse it.
    if (c === 0 || c === 13) return false
  }
  if (i === end) return false
  const key = latin1(buf, start, i)
  let vs = i + 1
  while (vs < end && buf[vs] === 32) vs++
  let ve = vs
  for (; ve < end; ve++) {
    const c = buf[ve]
    if (c === 0) break
    if (c === 13) return false
  }
  while (ve > vs && (buf[ve - 1] === 32 || buf[ve - 1] === 9)) ve--
  list.push(key, latin1(buf, vs, ve))
  return true
}

/** obs-fold line: stripped and appended to the previous value with one space; false when there is none. */
function appendContinuation (buf: Buffer, start: number, end: number, list: HeaderList): boolean {
  const last = list.length - 1
  if (last < 0) return false
  const nul = buf.indexOf(0, start)
  if (nul !== -1 && nul < end) end = nul
  while (start < end && (buf[start] === 32 || buf[start] === 9)) start++
  while (end > start && (buf[end - 1] === 32 || buf[end - 1] === 9)) end--
  list.values[last] = list.values[last] + ' ' + latin1(buf, start, end)
  return true
}

function isCSpace (c: number | undefined): boolean {
  return c === 32 || (c !== undefined && c >= 9 && c <= 13)
}

/** strtoll(value, &end, 10) and the checks of evhttp_get_body_length: -1 when invalid. */
function parseContentLength (value: string): number {
  let i = 0
  while (i < value.length && isCSpace(value.charCodeAt(i))) i++
  let neg = false
  if (value[i] === '+' || value[i] === '-') {
    neg = value[i] === '-'
    i++
  }
  const digits = i
  let n = 0
  while (i < value.length) {
    const c = value.charCodeAt(i)
    if (c < 48 || c > 57) break
    n = n * 10 + (c - 48)
    i++
  }
  if (value.length === 0 || i === digits || i !== value.length) return -1
  if (neg && n !== 0) return -1
  return n > Number.MAX_SAFE_INTEGER ? Number.MAX_SAFE_INTEGER : n
}

function hexDigit (c: number): number {
  if (c >= 48 && c <= 57) return c - 48
  const l = c | 32
  return l >= 97 && l <= 102 ? l - 87 : -1
}

/** strtoll(line, &end, 16) and evhttp_handle_chunked_read's checks: the size, or -1 when corrupt. */
function parseChunkSize (buf: Buffer, start: number, end: number): number {
  let i = start
  while (i < end && isCSpace(buf[i])) i++
  let neg = false
  if (i < end && (buf[i] === 43 || buf[i] === 45)) {
    neg = buf[i] === 45
    i++
  }
  // strtoll accepts a 0x prefix in base 16 only when a hex digit follows it.
  if (i + 2 < end && buf[i] === 48 && (buf[i + 1] === 120 || buf[i + 1] === 88) && hexDigit(buf[i + 2]!) !== -1) {
    i += 2
  }
  const digits = i
  let n = 0
  while (i < end) {
    const d = hexDigit(buf[i]!)
    if (d === -1) break
    n = n * 16 + d
    i++
  }
  const stop = i === digits ? start : i // no digits: strtoll leaves end at the start of the string
  if (stop < end && buf[stop] !== 32) return -1
  if (neg && n !== 0) return -1
  return n > Number.MAX_SAFE_INTEGER ? Number.MAX_SAFE_INTEGER : n
}

/** evhttp_check_transfer_encoding_ over every Transfer-Encoding line: 1 chunked, 0 not chunked, -1 invalid. */
function chunkedCoding (headers: HeaderList): number {
  let chunked = false
  for (let h = 0; h < headers.length; h++) {
    if (headers.keys[h]!.length !== 17 || headers.keys[h]!.toLowerCase() !== 'transfer-encoding') continue
    if (chunked) return -1
    const codings = headers.values[h]!.split(',')
    for (let i = 0; i < codings.length; i++) {
      const token = /^[ \t]*([^ \t;]*)/.exec(codings[i]!)![1]!
      if (token.length === 7 && token.toLowerCase() === 'chunked') {
        if (i < codings.length - 1) return -1
        chunked = true
      }
    }
  }
  return chunked ? 1 : 0
}

function mayHaveBody (cmd: number): boolean {
  return cmd === CMD.POST || cmd === CMD.PUT || cmd === CMD.PATCH || cmd === CMD.GET || cmd === CMD.DELETE ||
    cmd === CMD.OPTIONS || cmd === CMD.CONNECT
}

export class RequestParser {
  req = new ParsedRequest()
  /** Position after the bytes consumed by the last execute(). */
  offset = 0
  private state: State = STATE.FIRSTLINE
  /** Bytes of the current incomplete line already searched for LF (relative to the line's start). */
  private resume = 0
  private headersSize = 0
  private bodySize = 0
  private ntoread = 0
  private readonly names: ServerNames
  private readonly limits: ParserLimits

  /** Set by the connection while execute() reads a buffer that is lent only for the call (see takeBody). */
  borrowed = false

  constructor (names: ServerNames, limits: ParserLimits) {
    this.names = names
    this.limits = limits
  }

  /** True once a request line has started (bytes of a request are buffered or consumed). */
  get started (): boolean {
    return this.state !== STATE.FIRSTLINE || this.resume > 0
  }

  /** True while a request line or its header block is partly received (the head-deadline window). */
  get inHead (): boolean {
    return (this.state === STATE.FIRSTLINE && this.resume > 0) || this.state === STATE.HEADERS
  }

  reset (): void {
    this.req = new ParsedRequest()
    this.state = STATE.FIRSTLINE
    this.resume = 0
    this.headersSize = 0
    this.bodySize = 0
    this.ntoread = 0
  }

  /** Consumes bytes of `buf` from `off` (buf.length is the end of valid data). */
  execute (buf: Buffer, off: number): ParseStatus {
    for (;;) {
      switch (this.state) {
        case STATE.FIRSTLINE: {
          const lf = buf.indexOf(10, off + this.resume)
          if (lf === -1) {
            if (buf.length - off > this.limits.maxHeadersSize) return this.fail(off, 400)
            return this.more(buf, off)
          }
          this.resume = 0
          const lineEnd = lf > off && buf[lf - 1] === 13 ? lf - 1 : lf
          const len = lineEnd - off
          if (len > this.limits.maxHeadersSize) return this.fail(lf + 1, 400)
          this.headersSize = len
          if (!this.requestLine(buf, off, lineEnd)) return this.fail(lf + 1, 400)
          off = lf + 1
          this.state = STATE.HEADERS
          break
        }
        case STATE.HEADERS:
        case STATE.TRAILER: {
          const trailer = this.state === STATE.TRAILER
          const failCode = trailer ? 413 : 400
          const list = trailer ? new HeaderList() : this.req.headers
          for (;;) {
            const lf = buf.indexOf(10, off + this.resume)
            if (lf === -1) {
              if (this.headersSize + (buf.length - off) > this.limits.maxHeadersSize) return this.fail(off, failCode)
              return this.more(buf, off)
            }
            this.resume = 0
            const start = off
            const lineEnd = lf > off && buf[lf - 1] === 13 ? lf - 1 : lf
            off = lf + 1
            this.headersSize += lineEnd - start
            if (this.headersSize > this.limits.maxHeadersSize) return this.fail(off, failCode)
            // An empty line, or one whose first byte is NUL (an empty C string), ends the block.
            if (lineEnd === start || buf[start] === 0) break
            const c = buf[start]
            if (c === 32 || c === 9) {
              if (!appendContinuation(buf, start, lineEnd, list)) return this.fail(off, failCode)
            } else {
              if (!parseHeaderLine(buf, start, lineEnd, list)) return this.fail(off, failCode)
              if (!trailer) noteSpecialHeader(this.req, list.keys[list.length - 1]!, list.length - 1)
            }
          }
          if (trailer) return this.complete(off)
          const next = this.afterHeaders(buf, off)
          if (next !== -1) return next as ParseStatus
          break
        }
        case STATE.BODY: {
          const take = Math.min(buf.length - off, this.ntoread)
          if (take > 0) {
            this.takeBody(buf, off, take)
            this.ntoread -= take
            off += take
          }
          if (this.ntoread === 0) return this.complete(off)
          return this.more(buf, off)
        }
        case STATE.CHUNK_SIZE: {
          if (off === buf.length) return this.more(buf, off)
          const lf = buf.indexOf(10, off + this.resume)
          if (lf === -1) {
            if (buf.length - off > MAX_CHUNK_LINE) return this.fail(off, 413)
            return this.more(buf, off)
          }
          this.resume = 0
          const start = off
          let lineEnd = lf > off && buf[lf - 1] === 13 ? lf - 1 : lf
          off = lf + 1
          const nul = buf.indexOf(0, start)
          if (nul !== -1 && nul < lineEnd) lineEnd = nul
          if (lineEnd === start) break // a blank line (the CRLF after chunk data) is skipped
          const size = parseChunkSize(buf, start, lineEnd)
          if (size < 0) return this.fail(off, 413)
          if (this.bodySize + size > this.limits.maxBodySize) return this.fail(off, 413)
          this.bodySize += size
          if (size === 0) {
            this.state = STATE.TRAILER
          } else {
            this.ntoread = size
            this.state = STATE.CHUNK_DATA
          }
          break
        }
        case STATE.CHUNK_DATA: {
          const take = Math.min(buf.length - off, this.ntoread)
          if (take === 0) return this.more(buf, off)
          this.takeBody(buf, off, take)
          this.ntoread -= take
          off += take
          if (this.ntoread === 0) this.state = STATE.CHUNK_SIZE
          break
        }
        default:
          this.offset = off
          return PARSE.COMPLETE
      }
    }
  }

  private requestLine (buf: Buffer, start: number, end: number): boolean {
    const req = this.req
    parseRequestLine(buf, start, end, req)
    if (!req.ok) return false
    const target = parseRequestTarget(req.uri, req.cmd === CMD.CONNECT)
    if (target === null) {
      req.ok = false
      return false
    }
    req.target = target
    if (target.scheme !== null && target.host !== null && target.scheme.length <= 5) {
      const scheme = target.scheme.toLowerCase()
      if ((scheme === 'http' || scheme === 'https') && !this.names.isServerAlias(target.host)) req.proxy = true
    }
    return true
  }

  /** evhttp_read_header's tail and evhttp_get_body: -1 to go on reading the body, else a status. */
  private afterHeaders (buf: Buffer, off: number): number {
    const req = this.req
    const headers = req.headers
    if (req.transferEncodingCount > 0 && req.contentLengthCount > 0) return this.fail(off, 400)
    if (req.contentLengthCount > 1 && !sameContentLengths(headers)) {
      // Deliberate: libevent 2.1.12 (Debian) accepts differing duplicates and uses the first; RFC 9112 §6.3 and
      // the intent of the Debian smuggling patch say reject. Identical duplicates are still accepted.
      return this.fail(off, 400)
    }
    let chunked = false
    if (req.transferEncodingCount > 0) {
      const te = chunkedCoding(headers)
      if (te === -1) return this.fail(off, 400)
      chunked = te === 1
    }
    if (!mayHaveBody(req.cmd)) return this.complete(off)
    if (!chunked) {
      if (req.contentLength === -1) return this.complete(off) // no length, no body
      const n = parseContentLength(headers.values[req.contentLength]!)
      if (n === -1) return this.fail(off, 400)
      if (n === 0) return this.complete(off)
      this.ntoread = n
    }
    let status: number = -1
    if (req.expect !== -1 && (req.major > 1 || (req.major === 1 && req.minor >= 1))) {
      const expect = headers.values[req.expect]!
      if (expect.length !== 12 || expect.toLowerCase() !== '100-continue') return this.fail(off, 417)
      if (!chunked && this.ntoread > this.limits.maxBodySize) return this.fail(off, 413)
      if (off === buf.length) status = PARSE.CONTINUE
    }
    if (chunked) {
      this.state = STATE.CHUNK_SIZE
    } else {
      if (this.ntoread > this.limits.maxBodySize) return this.fail(off, 413)
      this.state = STATE.BODY
    }
    if (status !== -1) this.offset = off
    return status === -1 ? -1 : status
  }

  private takeBody (buf: Buffer, off: number, n: number): void {
    if (this.req.body === null) this.req.body = new EventBuffer()
    // a borrowed buffer is read into again after this call: the body keeps a copy
    this.req.body.pushChunk(this.borrowed ? Buffer.from(buf.subarray(off, off + n)) : buf.subarray(off, off + n))
  }

  private more (buf: Buffer, off: number): ParseStatus {
    if (this.state !== STATE.BODY && this.state !== STATE.CHUNK_DATA) this.resume = buf.length - off
    this.offset = off
    return PARSE.MORE
  }

  private complete (off: number): ParseStatus {
    this.state = STATE.DONE
    this.offset = off
    return PARSE.COMPLETE
  }

  private fail (off: number, code: number): ParseStatus {
    this.state = STATE.DONE
    this.req.errorCode = code
    this.offset = off
    return PARSE.ERROR
  }
}

function sameContentLengths (headers: HeaderList): boolean {
  let first: string | undefined
  for (let i = 0; i < headers.length; i++) {
    if (headers.keys[i]!.length !== 14 || headers.keys[i]!.toLowerCase() !== 'content-length') continue
    if (first === undefined) first = headers.values[i]
    else if (headers.values[i] !== first) return false
  }
  return true
}
