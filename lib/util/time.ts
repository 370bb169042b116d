// Wall-clock nanoseconds: the wall clock read once, advanced by the monotonic clock, so that records written in
// the same millisecond keep their order.
const BASE_NS = BigInt(Date.now()) * 1_000_000n - process.hrtime.bigint()

export function nowNs (): bigint {
  return BASE_NS + process.hrtime.bigint()
}

export const ZERO_TIME = '0001-01-01T00:00:00Z'

/**
 * go-units HumanDuration, as dockerd uses it in container Status strings: seconds and minutes truncated (152 s is
 * "2 minutes"), hours rounded to the nearest, days, weeks and months from those hours, years truncated.
 */
export function humanDuration (ms: number): string {
  const seconds = Math.trunc(ms / 1000)
  if (seconds < 1) return 'Less than a second'
  if (seconds === 1) return '1 second'
  if (seconds < 60) return `${seconds} seconds`
  const minutes = Math.trunc(ms / 60_000)
  if (minutes === 1) return 'About a minute'
  if (minutes < 60) return `${minutes} minutes`
  const hours = Math.trunc(ms / 3_600_000 + 0.5)
  if (hours === 1) return 'About an hour'
  if (hours < 48) return `${hours} hours`
  if (hours < 24 * 7 * 2) return `${Math.trunc(hours / 24)} days`
  if (hours < 24 * 30 * 2) return `${Math.trunc(hours / 24 / 7)} weeks`
  if (hours < 24 * 365 * 2) return `${Math.trunc(hours / 24 / 30)} months`
  return `${Math.trunc(Math.trunc(ms / 3_600_000) / 24 / 365)} years`
}

/** Go's time.Time JSON form (RFC 3339 with nanoseconds, trailing zeros trimmed), in UTC. */
export function rfc3339Nano (ns: bigint): string {
  const sec = ns / 1_000_000_000n
  const frac = ns % 1_000_000_000n
  const f = frac === 0n ? '' : '.' + frac.toString().padStart(9, '0').replace(/0+$/, '')
  return `${utcSeconds(new Date(Number(sec) * 1000))}${f}Z`
}

// UTC times written without Date's formatting methods. V8's toISOString, toUTCString and toJSON look up the local
// time zone's offset before they format (even for a UTC form), which initialises ICU's time-zone support: ~1 MiB of
// a daemon's RSS (ICU data and code pages, its zone objects), paid at the first log line or the first reply of Node's
// HTTP server (its Date header). Date's getUTC* methods do not (tools/bench/README.md, "Memory").

const pad2 = (n: number): string => n < 10 ? `0${n}` : String(n)
const DAYS = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat']
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec']

/** `YYYY-MM-DDTHH:MM:SS` of a UTC time; years outside 0-9999 as toISOString writes them. */
function utcSeconds (d: Date): string {
  const y = d.getUTCFullYear()
  if (!(y >= 0 && y <= 9999)) return d.toISOString().slice(0, -5) // throws RangeError for an invalid time, as it does
  return `${String(y).padStart(4, '0')}-${pad2(d.getUTCMonth() + 1)}-${pad2(d.getUTCDate())}T${pad2(d.getUTCHours())}:${pad2(d.getUTCMinutes())}:${pad2(d.getUTCSeconds())}`
}

/** `new Date(ms).toISOString()` (`2026-11-28T07:37:12.345Z`), without the time-zone lookup. */
export function isoTime (ms: number = Date.now()): string {
  const d = new Date(ms)
  return `${utcSeconds(d)}.${String(d.getUTCMilliseconds()).padStart(3, '0')}Z`
}

/** `isoTime` without the milliseconds (`2026-11-28T07:37:12Z`), as dockerd writes volume and image times. */
export function isoSeconds (ms: number = Date.now()): string {
  return `${utcSeconds(new Date(ms))}Z`
}

/** An HTTP date (IMF-fixdate, `Sat, 28 Nov 2026 07:37:12 GMT`): `new Date(ms).toUTCString()` without the lookup. */
export function httpDate (ms: number = Date.now()): string {
  const d = new Date(ms)
  const y = d.getUTCFullYear()
  if (!(y >= 0 && y <= 9999)) return d.toUTCString()
  return `${DAYS[d.getUTCDay()] as string}, ${pad2(d.getUTCDate())} ${MONTHS[d.getUTCMonth()] as string} ${String(y).padStart(4, '0')} ${pad2(d.getUTCHours())}:${pad2(d.getUTCMinutes())}:${pad2(d.getUTCSeconds())} GMT`
}
