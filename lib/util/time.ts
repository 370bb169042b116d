// Wall-clock nanoseconds: the wall clock read once, advanced by the monotonic clock, so that records written in
// the same millisecond keep their order.
const BASE_NS = BigInt(Date.now()) * 1_000_000n - process.hrtime.bigint()

export function nowNs (): bigint {
  return BASE_NS + process.hrtime.bigint()
}

export const ZERO_TIME = '0001-01-01T00:00:00Z'

/** go-units HumanDuration, as dockerd uses it in container Status strings. */
export function humanDuration (ms: number): string {
  const seconds = Math.round(ms / 1000)
  if (seconds < 1) return 'Less than a second'
  if (seconds === 1) return '1 second'
  if (seconds < 60) return `${seconds} seconds`
  const minutes = Math.round(ms / 60000)
  if (minutes === 1) return 'About a minute'
  if (minutes < 60) return `${minutes} minutes`
  const hours = Math.round(ms / 3600000)
  if (hours === 1) return 'About an hour'
  if (hours < 48) return `${hours} hours`
  if (hours < 24 * 7 * 2) return `${Math.floor(hours / 24)} days`
  if (hours < 24 * 30 * 2) return `${Math.floor(hours / 24 / 7)} weeks`
  if (hours < 24 * 365 * 2) return `${Math.floor(hours / 24 / 30)} months`
  return `${Math.floor(hours / 24 / 365)} years`
}
