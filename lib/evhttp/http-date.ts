// The Date header value (RFC 1123, GMT, as evutil_date_rfc1123 writes it), computed at most once per second:
// the cached string is dropped by an unref'd timer at the next second boundary, so the hot path is one check.
// Written from Date's getUTC* fields, not toUTCString: that looks up the local time zone first, which loads ICU's
// zone data into the embedding process (~1 MiB of RSS for its life; lib/util/time.ts does the same for the engine,
// which this module may not import).

const DAYS = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat']
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec']

let cached: string | null = null

function expire (): void {
  cached = null
}

function two (n: number): string {
  return n < 10 ? `0${n}` : String(n)
}

/** RFC 1123 text of a time in ms (years 1000-9999, which the clock gives). */
export function rfc1123 (ms: number): string {
  const d = new Date(ms)
  return `${DAYS[d.getUTCDay()] as string}, ${two(d.getUTCDate())} ${MONTHS[d.getUTCMonth()] as string} ${d.getUTCFullYear()} ${two(d.getUTCHours())}:${two(d.getUTCMinutes())}:${two(d.getUTCSeconds())} GMT`
}

export function httpDate (): string {
  if (cached === null) {
    const now = Date.now()
    cached = rfc1123(now - (now % 1000))
    setTimeout(expire, 1000 - (now % 1000)).unref()
  }
  return cached
}
