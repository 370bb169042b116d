// evhttp_make_header_response() and the keep-alive decision of evhttp_send_done(): which headers a reply gets,
// in which order, and whether the connection closes after it (libevent 2.1.12, §4.1 of the reference).

import { CMD } from './constants.js'
import { httpDate } from './http-date.js'
import type { HeaderList } from './header-list.js'

/** What framing reads from a request. */
export interface ReplySubject {
  major: number
  minor: number
  cmd: number
  proxy: boolean
  code: number
  reason: string
  readonly output: HeaderList
  /** First value of the named input header (case-insensitive), or undefined. */
  inputHeader (name: 'Connection' | 'Proxy-Connection'): string | undefined
}

/** evhttp_response_needs_body(): no body for 1xx, 204, 304, or a HEAD / CONNECT request. */
export function needsBody (code: number, cmd: number): boolean {
  return code !== 204 && code !== 304 && (code < 100 || code >= 200) && cmd !== CMD.CONNECT && cmd !== CMD.HEAD
}

/** The first Connection value starts with "keep-alive" (case-insensitive prefix, as strncasecmp(…, 10)). */
export function isKeepAliveValue (value: string | undefined): boolean {
  return value !== undefined && value.length >= 10 && value.slice(0, 10).toLowerCase() === 'keep-alive'
}

function isCloseValue (value: string | undefined): boolean {
  return value !== undefined && value.length === 5 && value.toLowerCase() === 'close'
}

/** evhttp_is_connection_close() for the input side. */
function inputAsksClose (r: ReplySubject): boolean {
  if (r.proxy) {
    const pc = r.inputHeader('Proxy-Connection')
    return pc === undefined || pc.toLowerCase() !== 'keep-alive'
  }
  return isCloseValue(r.inputHeader('Connection'))
}

function outputAsksClose (r: ReplySubject): boolean {
  if (r.proxy) {
    const pc = r.output.find('Proxy-Connection')
    return pc === undefined || pc.toLowerCase() !== 'keep-alive'
  }
  return isCloseValue(r.output.find('Connection'))
}

/**
 * Adds evhttp's automatic headers to `r.output` and returns the status line plus header block.
 * `closeDelimited` drops the HTTP/1.0 keep-alive treatment (used for streamed 1.0 replies, see the request).
 */
export function buildReplyHead (r: ReplySubject, bodyLength: number, defaultContentType: string,
  closeDelimited: boolean): string {
  const out = r.output
  const keepAlive = !closeDelimited && isKeepAliveValue(r.inputHeader('Connection'))
  const body = needsBody(r.code, r.cmd)
  if (r.major === 1) {
    if (r.minor >= 1 && !out.has('Date')) out.push('Date', httpDate())
    if (r.minor === 0 && keepAlive) out.push('Connection', 'keep-alive')
    if ((r.minor >= 1 || keepAlive) && body && !out.has('Transfer-Encoding') && !out.has('Content-Length')) {
      out.push('Content-Length', String(bodyLength))
    }
  }
  if (body && !out.has('Content-Type')) out.push('Content-Type', defaultContentType)
  if (inputAsksClose(r)) {
    out.remove('Connection')
    if (!r.proxy) out.push('Connection', 'close')
    out.remove('Proxy-Connection')
  }
  let head = 'HTTP/' + r.major + '.' + r.minor + ' ' + r.code + ' ' + r.reason + '\r\n'
  const keys = out.keys
  const values = out.values
  for (let i = 0; i < keys.length; i++) head += keys[i] + ': ' + values[i] + '\r\n'
  return head + '\r\n'
}

/** evhttp_send_done()'s need_close. */
export function closesAfterReply (r: ReplySubject): boolean {
  if ((r.major < 1 || (r.major === 1 && r.minor < 1)) && !isKeepAliveValue(r.inputHeader('Connection'))) return true
  if (r.cmd === CMD.CONNECT) return false
  return inputAsksClose(r) || outputAsksClose(r)
}
