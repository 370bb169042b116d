// The Date header value (RFC 1123, GMT, as evutil_date_rfc1123 writes it), computed at most once per second:
// the cached string is dropped by an unref'd timer at the next second boundary, so the hot path is one check.

let cached: string | null = null

function expire (): void {
  cached = null
}

export function httpDate (): string {
  if (cached === null) {
    const now = Date.now()
    cached = new Date(now - (now % 1000)).toUTCString()
    setTimeout(expire, 1000 - (now % 1000)).unref()
  }
  return cached
}
