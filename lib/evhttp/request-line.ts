// evhttp_parse_request_line() over bytes: method, request-target and version, with libevent 2.1's exact
// acceptance rules (C string semantics included: a NUL ends the line for everything after the length check).

import { CMD, CMD_UNKNOWN } from './constants.js'

const METHODS = new Map<string, number>([
  ['GET', CMD.GET], ['POST', CMD.POST], ['HEAD', CMD.HEAD], ['PUT', CMD.PUT], ['DELETE', CMD.DELETE],
  ['OPTIONS', CMD.OPTIONS], ['TRACE', CMD.TRACE], ['CONNECT', CMD.CONNECT], ['PATCH', CMD.PATCH],
])

/** Result fields of a parsed request line; `ok` false means 400. */
export interface RequestLine {
  ok: boolean
  cmd: number
  major: number
  minor: number
  uri: string
}

function methodOf (buf: Buffer, start: number, end: number): number {
  // GET is by far the most common: compare bytes before building a string.
  if (end - start === 3 && buf[start] === 71 && buf[start + 1] === 69 && buf[start + 2] === 84) return CMD.GET
  return METHODS.get(buf.toString('latin1', start, end)) ?? CMD_UNKNOWN
}

function isSpace (c: number | undefined): boolean {
  return c === 32 || (c !== undefined && c >= 9 && c <= 13)
}

/**
 * sscanf's %d: optional white space, optional sign, at least one digit; stored into a C int the way glibc does
 * (through a 64-bit long, clamped on overflow, then truncated to 32 bits). Returns [value, next] or null.
 */
function scanInt (buf: Buffer, i: number, end: number): [number, number] | null {
  while (i < end && isSpace(buf[i])) i++
  let neg = false
  if (i < end && (buf[i] === 43 || buf[i] === 45)) {
    neg = buf[i] === 45
    i++
  }
  const digits = i
  while (i < end && buf[i]! >= 48 && buf[i]! <= 57) i++
  if (i === digits) return null
  if (i - digits <= 9) {
    const v = Number(buf.toString('latin1', digits, i))
    return [neg ? -v : v, i]
  }
  let big = BigInt(buf.toString('latin1', digits, i))
  if (neg) big = -big
  const LONG_MAX = (1n << 63n) - 1n
  if (big > LONG_MAX) big = LONG_MAX
  if (big < -LONG_MAX - 1n) big = -LONG_MAX - 1n
  return [Number(BigInt.asIntN(32, big)), i]
}

/** sscanf(version, "HTTP/%d.%d%c") must convert exactly two values, and the major must not exceed 1. */
function parseVersion (buf: Buffer, start: number, end: number, out: RequestLine): boolean {
  if (end - start < 5 || buf[start] !== 72 || buf[start + 1] !== 84 || buf[start + 2] !== 84 ||
    buf[start + 3] !== 80 || buf[start + 4] !== 47) return false
  const major = scanInt(buf, start + 5, end)
  if (major === null || major[1] >= end || buf[major[1]] !== 46) return false
  const minor = scanInt(buf, major[1] + 1, end)
  if (minor === null || minor[1] !== end) return false
  if (major[0] > 1) return false
  out.major = major[0]
  out.minor = minor[0]
  return true
}

/**
 * Parses the line [start, end) (terminator already removed). Fills `out`; cmd/major/minor are set as far as
 * parsing got, since an error page depends on them.
 */
export function parseRequestLine (buf: Buffer, start: number, end: number, out: RequestLine): void {
  out.ok = false
  while (end > start && buf[end - 1] === 32) end--
  if (end - start < 14) return // strlen("GET / HTTP/1.0")
  const nul = buf.indexOf(0, start)
  if (nul !== -1 && nul < end) end = nul
  const sp = buf.indexOf(32, start)
  if (sp === -1 || sp >= end) return
  const uriStart = sp + 1
  const last = end > uriStart ? buf.lastIndexOf(32, end - 1) : -1
  if (last === -1 || last <= uriStart) {
    // strrchr found no space after the method, or only the one the target starts with.
    return
  }
  out.cmd = methodOf(buf, start, sp)
  if (!parseVersion(buf, last + 1, end, out)) return
  out.uri = buf.toString('latin1', uriStart, last)
  out.ok = true
}
