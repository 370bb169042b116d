// The request-target as evhttp 2.1 reads it: evhttp_uri_parse_with_flags(EVHTTP_URI_NONCONFORMANT) for every
// method but CONNECT (authority form), then the %-decoded path used for dispatch. Strings here are latin1 (one
// char per byte), so the decoded path is a byte string.

import { isIPv6 } from 'node:net'

export interface RequestTarget {
  /** The scheme of an absolute-form target (case kept), else null. */
  scheme: string | null
  /** The authority's host (case kept; '' for an empty authority), else null. */
  host: string | null
  /** The raw path: everything before '?' or '#'. */
  path: string
}

const UNRESERVED = new Uint8Array(256)
for (let c = 0; c < 256; c++) {
  UNRESERVED[c] = (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) ||
    c === 45 || c === 46 || c === 95 || c === 126 ? 1 : 0
}
const SUBDELIMS = "!$&'()*+,;="

function isHex (c: number): boolean {
  return (c >= 48 && c <= 57) || (c >= 65 && c <= 70) || (c >= 97 && c <= 102)
}

function isDigit (c: number): boolean {
  return c >= 48 && c <= 57
}

function isAlpha (c: number): boolean {
  return (c >= 65 && c <= 90) || (c >= 97 && c <= 122)
}

function hexValue (c: number): number {
  return c <= 57 ? c - 48 : (c | 32) - 87
}

function schemeOk (s: string, end: number): boolean {
  if (end === 0 || !isAlpha(s.charCodeAt(0))) return false
  for (let i = 1; i < end; i++) {
    const c = s.charCodeAt(i)
    if (!(isAlpha(c) || isDigit(c) || c === 43 || c === 45 || c === 46)) return false
  }
  return true
}

function pctAt (s: string, i: number, end: number): boolean {
  return s.charCodeAt(i) === 37 && i + 2 < end && isHex(s.charCodeAt(i + 1)) && isHex(s.charCodeAt(i + 2))
}

function userinfoOk (s: string, start: number, end: number): boolean {
  let i = start
  while (i < end) {
    const c = s.charCodeAt(i)
    if (UNRESERVED[c] === 1 || SUBDELIMS.includes(s[i]!) || c === 58) i++
    else if (pctAt(s, i, end)) i += 3
    else return false
  }
  return true
}

function regnameOk (s: string, start: number, end: number): boolean {
  let i = start
  while (i < end) {
    const c = s.charCodeAt(i)
    if (UNRESERVED[c] === 1 || SUBDELIMS.includes(s[i]!)) i++
    // libevent checks the two hex digits without bounding them by the host's end, only by the string's.
    else if (c === 37 && isHex(s.charCodeAt(i + 1)) && isHex(s.charCodeAt(i + 2))) i += 3
    else return false
  }
  return true
}

function bracketAddrOk (s: string, start: number, end: number): boolean {
  if (start + 3 > end || s.charCodeAt(start) !== 91 || s.charCodeAt(end - 1) !== 93) return false
  if (s.charCodeAt(start + 1) === 118) { // IPvFuture: "v" 1*HEXDIG "." *( unreserved / sub-delims / ":" )
    let i = start + 2
    const last = end - 1
    if (!isHex(s.charCodeAt(i))) return false
    while (i < last && s.charCodeAt(i) !== 46) {
      if (!isHex(s.charCodeAt(i))) return false
      i++
    }
    if (s.charCodeAt(i) !== 46) return false
    for (i++; i < last; i++) {
      const c = s.charCodeAt(i)
      if (!(UNRESERVED[c] === 1 || SUBDELIMS.includes(s[i]!) || c === 58)) return false
    }
    return true
  }
  const inner = s.slice(start + 1, end - 1)
  return inner.length < 64 && !inner.includes('%') && isIPv6(inner)
}

/** parse_authority(): returns the host, or null when the authority is malformed. */
function parseAuthority (s: string, start: number, end: number): string | null {
  if (start === end) return ''
  let cp = start
  const at = s.indexOf('@', start)
  if (at !== -1 && at < end) {
    if (!userinfoOk(s, start, at)) return null
    cp = at + 1
  }
  let port = end - 1
  while (port >= cp && isDigit(s.charCodeAt(port))) port--
  if (port >= cp && s.charCodeAt(port) === 58) {
    if (port + 1 !== end) {
      let n = 0
      for (let i = port + 1; i < end; i++) {
        n = n * 10 + s.charCodeAt(i) - 48
        if (n > 65535) return null
      }
    }
    end = port
  }
  if (s.charCodeAt(cp) === 91 && end >= cp + 2 && s.charCodeAt(end - 1) === 93) {
    if (!bracketAddrOk(s, cp, end)) return null
  } else if (!regnameOk(s, cp, end)) {
    return null
  }
  return s.slice(cp, end)
}

function endOfAuthority (s: string, start: number): number {
  for (let i = start; i < s.length; i++) {
    const c = s.charCodeAt(i)
    if (c === 63 || c === 35 || c === 47) return i
  }
  return s.length
}

function endOfPath (s: string, start: number): number {
  for (let i = start; i < s.length; i++) {
    const c = s.charCodeAt(i)
    if (c === 63 || c === 35) return i
  }
  return s.length
}

/** Parses a request-target; null when evhttp would reject it (the request then gets 400). */
export function parseRequestTarget (uri: string, isConnect: boolean): RequestTarget | null {
  if (isConnect) {
    const host = parseAuthority(uri, 0, endOfAuthority(uri, 0))
    return host === null ? null : { scheme: null, host, path: '' }
  }
  // Fast path: origin form. A target starting with one '/' has no scheme and no authority.
  if (uri.charCodeAt(0) === 47 && uri.charCodeAt(1) !== 47) {
    return { scheme: null, host: null, path: uri.slice(0, endOfPath(uri, 0)) }
  }
  let readp = 0
  let scheme: string | null = null
  let host: string | null = null
  const colon = uri.indexOf(':')
  if (colon !== -1 && schemeOk(uri, colon)) {
    scheme = uri.slice(0, colon)
    readp = colon + 1
  }
  if (uri.charCodeAt(readp) === 47 && uri.charCodeAt(readp + 1) === 47) {
    const authEnd = endOfAuthority(uri, readp + 2)
    host = parseAuthority(uri, readp + 2, authEnd)
    if (host === null) return null
    readp = authEnd
  }
  const path = uri.slice(readp, endOfPath(uri, readp))
  if (scheme === null) {
    // Without a scheme, the first segment may not contain ':'.
    for (let i = 0; i < path.length; i++) {
      const c = path.charCodeAt(i)
      if (c === 58) return null
      if (c === 47) break
    }
  }
  return { scheme, host, path }
}

/**
 * evhttp_decode_uri_internal() without '+' decoding: %XX (either case) becomes the byte, malformed escapes stay
 * literal. The result is cut at the first NUL, as the C string comparison of the callback table does.
 */
export function decodePath (path: string): string {
  const pct = path.indexOf('%')
  if (pct === -1) return path
  let out = path.slice(0, pct)
  let i = pct
  const len = path.length
  while (i < len) {
    const c = path.charCodeAt(i)
    if (c === 37 && i + 2 < len && isHex(path.charCodeAt(i + 1)) && isHex(path.charCodeAt(i + 2))) {
      const byte = hexValue(path.charCodeAt(i + 1)) * 16 + hexValue(path.charCodeAt(i + 2))
      if (byte === 0) return out
      out += String.fromCharCode(byte)
      i += 3
    } else {
      out += path[i]
      i++
    }
  }
  return out
}

/** evhttp_request_get_host() for a Host header value: a trailing ":digits" is removed. */
export function hostFromHeader (value: string): string {
  let p = value.length - 1
  while (p > 0 && isDigit(value.charCodeAt(p))) p--
  return p > 0 && value.charCodeAt(p) === 58 ? value.slice(0, p) : value
}
