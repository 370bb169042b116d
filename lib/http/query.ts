// Query-string helpers with Go's semantics (the daemon's httputils.BoolValue and friends).
import { invalidArgument } from '../errors.js'
import { parseJson } from '../util/json-depth.js'
import { compileRegexp, type LinearRegexp } from '../util/linear-regexp.js'

const FALSY = new Set(['', '0', 'no', 'false', 'none'])

/** Go's BoolValue: trimmed, lower-cased; '', 0, no, false, none are false, anything else true. */
export function boolValue (q: URLSearchParams, key: string, dflt = false): boolean {
  const v = q.get(key)
  if (v === null) return dflt
  return !FALSY.has(v.trim().toLowerCase())
}

/** Like boolValue, but an empty value counts as absent (BoolValueOrDefault). */
export function boolOrDefault (q: URLSearchParams, key: string, dflt: boolean): boolean {
  const v = q.get(key)
  if (v === null || v === '') return dflt
  return !FALSY.has(v.trim().toLowerCase())
}

export function intValue (q: URLSearchParams, key: string): number | undefined {
  const v = q.get(key)
  if (v === null || v === '') return undefined
  if (!/^-?\d+$/.test(v.trim())) throw invalidArgument(`invalid value for ${key}: ${JSON.stringify(v)}`)
  return Number.parseInt(v, 10)
}

/**
 * The logs `tail` as dockerd's container logs read it (strconv.Atoi, anything that is not an integer, `all` or a
 * negative number meaning every line): the number of last lines, or undefined for all.
 */
export function tailValue (q: URLSearchParams): number | undefined {
  const v = q.get('tail')
  if (v === null || !/^[+-]?\d+$/.test(v)) return undefined
  const n = Number.parseInt(v, 10)
  return n < 0 || !Number.isSafeInteger(n) ? undefined : n
}

export type Filters = Map<string, string[]>

/** Parses `filters` in both shapes: {"k":{"v":true}} (Go) and {"k":["v"]} (docker-py, dockerode users). */
export function parseFilters (raw: string | null, allowed: ReadonlySet<string>): Filters {
  const out: Filters = new Map()
  if (raw === null || raw === '') return out
  let parsed: unknown
  try { parsed = parseJson(raw) } catch (err) {
    throw invalidArgument(`invalid filter: ${(err as Error).message}`)
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw invalidArgument('invalid filter: expected a JSON object')
  for (const [key, value] of Object.entries(parsed as Record<string, unknown>)) {
    if (!allowed.has(key)) throw invalidArgument(`invalid filter '${key}'`)
    const values: string[] = []
    if (Array.isArray(value)) {
      for (const v of value) values.push(String(v))
    } else if (value !== null && typeof value === 'object') {
      for (const [v, on] of Object.entries(value as Record<string, unknown>)) if (on !== false) values.push(v)
    } else if (typeof value === 'string') {
      values.push(value)
    } else {
      throw invalidArgument(`invalid filter '${key}'`)
    }
    out.set(key, values)
  }
  return out
}

/**
 * A boolean filter as dockerd's filters.Args.GetBoolOrDefault reads it: absent is `dflt`; `true`/`1` or `false`/`0`
 * (exactly those) say which; no value, another value, or both at once are refused with its wording.
 */
export function boolFilter (f: Filters, key: string, dflt: boolean): boolean {
  const values = f.get(key)
  if (values === undefined) return dflt
  if (values.length === 0) throw invalidArgument(`invalid filter '${key}'`)
  const isTrue = values.includes('true') || values.includes('1')
  const isFalse = values.includes('false') || values.includes('0')
  if (isTrue === isFalse) throw invalidArgument(`invalid filter '${key}=[${values.join(' ')}]'`)
  return isTrue
}

/** A filter value as a Go regexp (RE2, linear time here too), compiled once per list; null when RE2 would refuse it. */
export function filterRegexp (pattern: string, cache: Map<string, LinearRegexp | null>): LinearRegexp | null {
  let re = cache.get(pattern)
  if (re === undefined) {
    try { re = compileRegexp(pattern) } catch { re = null }
    cache.set(pattern, re)
  }
  return re
}

/**
 * filters.Args.Match for one key's values: one equal to the source, or one that as a regexp matches it anywhere
 * (`web` and `^web` both match `web2`); a value that is no valid regexp matches only exactly.
 */
export function filterMatch (values: readonly string[], source: string, cache: Map<string, LinearRegexp | null>): boolean {
  return values.some((v) => v === source || filterRegexp(v, cache)?.test(source) === true)
}

/** Docker timestamps: `seconds[.fraction]` (fraction scaled to nanoseconds) or RFC 3339. Returns ns as bigint. */
export function parseTimestamp (value: string, key: string): bigint {
  const v = value.trim()
  const m = /^(-?\d+)(?:\.(\d{1,9}))?$/.exec(v)
  if (m !== null) {
    const sec = BigInt(m[1] as string)
    const frac = BigInt(((m[2] ?? '') + '000000000').slice(0, 9))
    return sec * 1_000_000_000n + (sec < 0n ? -frac : frac)
  }
  const ms = Date.parse(v)
  if (Number.isNaN(ms)) throw invalidArgument(`invalid value for ${key}: ${JSON.stringify(value)}`)
  const fm = /\.(\d+)/.exec(v)
  const nsFrac = fm !== null ? BigInt(((fm[1] as string) + '000000000').slice(0, 9)) : 0n
  return BigInt(Math.floor(ms / 1000)) * 1_000_000_000n + nsFrac
}
