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
  const base = new Date(Number(sec) * 1000).toISOString().slice(0, 19)
  const f = frac === 0n ? '' : '.' + frac.toString().padStart(9, '0').replace(/0+$/, '')
  return `${base}${f}Z`
}
