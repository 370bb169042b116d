// evhttp_parse_request_line() over bytes: method, request-target and version, with libevent 2.1's exact
// acceptance rules (C string semantics included: a NUL ends the line for everything after the length check).

import { CMD, CMD_UNKNOWN } from './constants.js'
import { latin1 } from './latin1.js'

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
  return METHODS.get(latin1(buf, start, end)) ?? CMD_UNKNOWN
}

function isSpace (c: number | undefined): boolean {
  return c === 32 || (c !== undefined && c >= 9 && c <= 13)
}

/**
 * sscanf's %d: optional white space, optional sign, at least one digit; stored into a C int the way glibc does
 * (through a 64-bit long, clamped on overflow, then truncated to 32 bits). Returns the value and sets scanEnd,
 * or returns null.
 */
let scanEnd = 0

function scanInt (buf: Buffer, i: number, end: number): number | null {
  while (i < end && isSpace(buf[i])) i++
  let neg = false
  if (i < end && (buf[i] === 43 || buf[i] === 45)) {
    neg = buf[i] === 45
    i++
  }
  const digits = i
  let v = 0
  while (i < end) {
    const c = buf[i]!
    if (c < 48 || c > 57) break
    v = v * 10 + (c - 48)
    i++
  }
  if (i === digits) return null
  scanEnd = i
  if (i - digits <= 9) return neg ? -v : v
  let big = BigInt(latin1(buf, digits, i))
  if (neg) big = -big
  const LONG_MAX = (1n << 63n) - 1n
  if (big > LONG_MAX) big = LONG_MAX
  if (big < -LONG_MAX - 1n) big = -LONG_MAX - 1n
  return Number(BigInt.asIntN(32, big))
}

/** sscanf(version, "HTTP/%d.%d%c") must convert exactly two values, and the major must not exceed 1. */
function parseVersion (buf: Buffer, start: number, end: number, out: RequestLine): boolean {
  if (end - start < 5 || buf[start] !== 72 || buf[start + 1] !== 84 || buf[start + 2] !== 84 ||
    buf[start + 3] !== 80 || buf[start + 4] !== 47) return false
  const major = scanInt(buf, start + 5, end)
  if (major === null || scanEnd >= end || buf[scanEnd] !== 46) return false
  const minor = scanInt(buf, scanEnd + 1, end)
  if (minor === null || scanEnd !== end) return false
  if (major > 1) return false
  out.major = major
  out.minor = minor
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
  // One pass: the first space, the last space, and a NUL (which ends the C string the rest is parsed from).
  let sp = -1
  let last = -1
  for (let i = start; i < end; i++) {
    const c = buf[i]
    if (c === 32) {
      if (sp === -1) sp = i
      last = i
    } else if (c === 0) {
      end = i
      break
    }
  }
  if (sp === -1) return
  const uriStart = sp + 1
  // strrchr found no space after the method, or only the one the target starts with.
  if (last <= uriStart) return
  out.cmd = methodOf(buf, start, sp)
  if (!parseVersion(buf, last + 1, end, out)) return
  out.uri = latin1(buf, uriStart, last)
  out.ok = true
}
