// The Engine API's volume shapes: the create body decoded, records encoded (PascalCase, dockerd's field order), the
// list and prune filters.
import { invalidArgument } from '../../errors.js'
import { boolFilter, filterMatch, type Filters } from '../../http/query.js'
import type { LinearRegexp } from '../../util/linear-regexp.js'
import type { VolumeRecord } from '../../volumes/volume-record.js'
import type { CreateVolumeRequest } from '../../volumes/volume-store.js'

function stringMap (v: unknown, field: string): Record<string, string> | null {
  if (v === undefined || v === null) return null
  if (typeof v !== 'object' || Array.isArray(v)) throw invalidArgument(`json: cannot unmarshal ${Array.isArray(v) ? 'array' : typeof v} into Go struct field CreateOptions.${field} of type map[string]string`)
  const out: Record<string, string> = {}
  for (const [k, x] of Object.entries(v as Record<string, unknown>)) {
    if (typeof x !== 'string') throw invalidArgument(`json: cannot unmarshal ${typeof x} into Go struct field CreateOptions.${field} of type string`)
    out[k] = x
  }
  return out
}

/** POST /volumes/create's body (keys case-insensitive, as Go decodes them). */
export function decodeCreateVolume (body: Record<string, unknown>): CreateVolumeRequest {
  const b: Record<string, unknown> = {}
  for (const [k, v] of Object.entries(body)) b[k.toLowerCase()] = v
  const name = b.name ?? ''
  if (typeof name !== 'string') throw invalidArgument('json: cannot unmarshal into Go struct field CreateOptions.Name of type string')
  const driver = b.driver ?? ''
  if (typeof driver !== 'string') throw invalidArgument('json: cannot unmarshal into Go struct field CreateOptions.Driver of type string')
  if (b.clustervolumespec !== undefined && b.clustervolumespec !== null) throw invalidArgument('cluster volumes need a swarm manager: this node is not one')
  const opts = stringMap(b.driveropts, 'DriverOpts')
  return { name, driver, labels: stringMap(b.labels, 'Labels') ?? {}, options: opts === null || Object.keys(opts).length === 0 ? null : opts }
}

export function toVolumeWire (v: VolumeRecord, mountpoint: string, usage?: { size: number, refCount: number }): Record<string, unknown> {
  const out: Record<string, unknown> = {
    CreatedAt: v.createdAt,
    Driver: v.driver,
    Labels: Object.keys(v.labels).length === 0 ? null : v.labels,
    Mountpoint: mountpoint,
    Name: v.name,
    Options: v.options,
    Scope: 'local'
  }
  if (usage !== undefined) out.UsageData = { RefCount: usage.refCount, Size: usage.size }
  return out
}

/** The label filter's test: `key` or `key=value`. */
export function labelMatch (labels: Record<string, string>, filter: string): boolean {
  const i = filter.indexOf('=')
  return i === -1 ? labels[filter] !== undefined : labels[filter.slice(0, i)] === filter.slice(i + 1)
}

function lastBool (key: string, values: string[]): boolean {
  const v = values[values.length - 1] as string
  if (!['true', 'false', '1', '0'].includes(v.toLowerCase())) throw invalidArgument(`invalid filter '${key}=${v}'`)
  return v === 'true' || v === '1'
}

/** GET /volumes' filters (dangling, name, driver, label) as a test of one volume; null when nothing is filtered. */
export function listFilter (f: Filters, refCount: (name: string) => number): ((v: VolumeRecord) => boolean) | null {
  const dangling = f.has('dangling') ? boolFilter(f, 'dangling', false) : undefined
  if ([...f.values()].every((v) => v.length === 0)) return null
  const regexps = new Map<string, LinearRegexp | null>()
  return (v) => {
    if (dangling !== undefined && (refCount(v.name) === 0) !== dangling) return false
    const names = f.get('name') ?? []
    if (names.length > 0 && !filterMatch(names, v.name, regexps)) return false
    const drivers = f.get('driver') ?? []
    if (drivers.length > 0 && !drivers.includes(v.driver)) return false
    return (f.get('label') ?? []).every((l) => labelMatch(v.labels, l))
  }
}

/**
 * POST /volumes/prune's filters (label, label!, all) as a test of one volume: API ≥ 1.42 removes only anonymous
 * volumes unless `all=true`; older clients get every unused volume removed.
 */
export function pruneFilter (f: Filters, anonymousOnly: boolean): (v: VolumeRecord) => boolean {
  const all = f.has('all') ? lastBool('all', f.get('all') as string[]) : false
  const only = anonymousOnly && !all
  return (v) => {
    if (only && !v.anonymous) return false
    for (const l of f.get('label') ?? []) if (!labelMatch(v.labels, l)) return false
    for (const l of f.get('label!') ?? []) if (labelMatch(v.labels, l)) return false
    return true
  }
}

export function toPruneReply (r: { deleted: string[], reclaimed: number }): { VolumesDeleted: string[] | null, SpaceReclaimed: number } {
  return { VolumesDeleted: r.deleted.length === 0 ? null : r.deleted, SpaceReclaimed: r.reclaimed }
}
