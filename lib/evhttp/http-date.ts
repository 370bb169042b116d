// The Date header value (RFC 1123, GMT, as evutil_date_rfc1123 writes it), computed at most once per second.

let cachedSecond = -1
let cachedValue = ''

export function httpDate (): string {
  const now = Date.now()
  const second = Math.floor(now / 1000)
  if (second !== cachedSecond) {
    cachedSecond = second
    cachedValue = new Date(second * 1000).toUTCString()
  }
  return cachedValue
}
