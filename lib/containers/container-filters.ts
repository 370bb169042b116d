// The filters of GET /containers/json (and the label filter of prune), as dockerd applies them. Pure over the
// container records.
import { notFound } from '../errors.js'
import type { Filters } from '../http/query.js'
import { compileRegexp, type LinearRegexp } from '../util/linear-regexp.js'
import type { ContainerHandle } from './container-handle.js'
import { mountMatches } from '../volumes/mount-spec.js'

/** A name filter's pattern; null when RE2 would refuse it (then it matches nothing, as in dockerd). */
function nameRegexp (pattern: string, cache: Map<string, LinearRegexp | null>): LinearRegexp | null {
  let re = cache.get(pattern)
  if (re === undefined) {
    try { re = compileRegexp(pattern) } catch { re = null }
    cache.set(pattern, re)
  }
  return re
}

export function matchContainer (c: ContainerHandle, f: Filters, findContainer: (ref: string) => ContainerHandle | undefined, imageId: (ref: string) => string | undefined, regexps = new Map<string, LinearRegexp | null>()): boolean {
  for (const [key, values] of f) {
    if (values.length === 0) continue
    const r = c.rec
    let ok: boolean
    switch (key) {
      case 'status': ok = values.includes(r.state.status); break
      case 'id': ok = values.some((v) => r.id.startsWith(v)); break
      // filters.Args.Match against the name with its leading '/' and without (so `^/web$` is an exact match, as in
      // dockerd): an exact name, or Go's regexp (RE2, linear time here too); a bad pattern matches nothing
      case 'name': ok = values.some((v) => {
        if (v === r.name || v === r.name.slice(1)) return true
        const re = nameRegexp(v, regexps)
        return re !== null && (re.test(r.name) || re.test(r.name.slice(1)))
      }); break
      case 'label': ok = values.every((v) => {
        const i = v.indexOf('=')
        return i === -1 ? r.config.labels[v] !== undefined : r.config.labels[v.slice(0, i)] === v.slice(i + 1)
      }); break
      case 'exited': ok = r.state.status === 'exited' && values.some((v) => Number(v) === r.state.exitCode); break
      case 'ancestor': ok = values.some((v) => v === r.image || imageId(v) === r.imageId || r.imageId.startsWith(v) || r.imageId.slice(7).startsWith(v)); break
      case 'before': { const o = findContainer(values[0] as string); if (o === undefined) throw notFound(`No such container: ${values[0] as string}`); ok = BigInt(r.created) < BigInt(o.rec.created); break }
      case 'since': { const o = findContainer(values[0] as string); if (o === undefined) throw notFound(`No such container: ${values[0] as string}`); ok = BigInt(r.created) > BigInt(o.rec.created); break }
      case 'is-task': ok = values.some((v) => (v === 'true') === (r.config.labels['com.docker.swarm.task.id'] !== undefined)); break
      case 'volume': ok = values.some((v) => (r.mounts ?? []).some((m) => mountMatches(m, v))); break
      case 'network': ok = values.includes(r.networkMode); break
      case 'health': ok = values.includes(r.state.health?.status ?? 'none'); break
      case 'expose': case 'publish': ok = values.some((v) => (r.config.exposedPorts ?? []).some((p) => p === v || p.split('/')[0] === v)); break
      case 'isolation': ok = values.includes('default'); break
      default: ok = true
    }
    if (!ok) return false
  }
  return true
}
