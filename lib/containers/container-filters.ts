// The filters of GET /containers/json (and the label filter of prune), as dockerd applies them. Pure over the
// container records.
import { invalidArgument, notFound } from '../errors.js'
import { boolFilter, filterRegexp, type Filters } from '../http/query.js'
import type { LinearRegexp } from '../util/linear-regexp.js'
import type { ContainerHandle } from './container-handle.js'
import { mountMatches } from '../volumes/mount-spec.js'

const STATES = ['created', 'running', 'paused', 'restarting', 'removing', 'exited', 'dead']
const HEALTHS = ['none', 'starting', 'healthy', 'unhealthy']

/**
 * Refuses the list filter values dockerd refuses before it looks at a container (its foldFilter), with its wording:
 * an exit code that is no integer, an unknown state or health, an is-task that is no boolean, a bad port.
 */
export function checkListFilters (f: Filters): void {
  for (const v of f.get('exited') ?? []) {
    if (!/^[+-]?\d+$/.test(v)) throw invalidArgument(`invalid filter 'exited=${v}': strconv.Atoi: parsing ${JSON.stringify(v)}: invalid syntax`)
  }
  for (const v of f.get('status') ?? []) {
    if (!STATES.includes(v)) throw invalidArgument(`invalid filter 'status=${v}': invalid value for state (${v}): must be one of ${STATES.join(', ')}`)
  }
  boolFilter(f, 'is-task', false)
  for (const v of f.get('health') ?? []) {
    if (!HEALTHS.includes(v)) throw invalidArgument(`invalid filter 'health=${v}': invalid value for health (${v}): must be one of ${HEALTHS.join(', ')}`)
  }
  portFilter(f, 'publish')
  portFilter(f, 'expose')
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
        const re = filterRegexp(v, regexps)
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
      case 'is-task': ok = boolFilter(f, 'is-task', false) === (r.config.labels['com.docker.swarm.task.id'] !== undefined); break
      case 'volume': ok = values.some((v) => (r.mounts ?? []).some((m) => mountMatches(m, v))); break
      case 'network': ok = values.includes(r.networkMode); break
      case 'health': ok = values.includes(r.state.health?.status ?? 'none'); break
      case 'expose': case 'publish': ok = true; break
      case 'isolation': ok = values.includes('default'); break
      default: ok = true
    }
    if (!ok) return false
  }
  return matchPorts(c, f)
}

/**
 * The publish and expose filters together, as dockerd's list: the container passes when one of its list item's ports
 * has its public port (`8080`, `8080/tcp`) among the published ones or its private port among the exposed ones.
 */
function matchPorts (c: ContainerHandle, f: Filters): boolean {
  const publish = portFilter(f, 'publish')
  const expose = portFilter(f, 'expose')
  if (publish.length === 0 && expose.length === 0) return true
  const sb = c.networkView?.()?.sandbox
  const mapped = new Set<string>()
  if (sb?.running === true) {
    for (const p of sb.ports) {
      mapped.add(`${p.containerPort}/${p.proto}`)
      if (inPorts(publish, p.hostPort, p.proto) || inPorts(expose, p.containerPort, p.proto)) return true
    }
  }
  // the ports exposed or bound but not mapped now are list items with their private port alone
  for (const exposed of [...(c.rec.config.exposedPorts ?? []), ...Object.keys(sb?.portBindings ?? {})]) {
    const [port = '0', proto = 'tcp'] = exposed.split('/')
    if (mapped.has(`${port}/${proto}`)) continue
    if (inPorts(expose, Number(port), proto) || inPorts(publish, 0, proto)) return true
  }
  return false
}

/** Ports of one protocol, from `start` to `end`. */
export interface PortRange { start: number, end: number, proto: string }

function inPorts (ranges: readonly PortRange[], port: number, proto: string): boolean {
  return ranges.some((r) => r.proto === proto && port >= r.start && port <= r.end)
}

/**
 * A publish or expose filter's values as port ranges: `80`, `80/udp`, `8000-8010/tcp` (dockerd's portOp); a range
 * stays a range, so a wide one costs no more to match than one port.
 */
export function portFilter (f: Filters, key: 'publish' | 'expose'): PortRange[] {
  const out: PortRange[] = []
  for (const value of f.get(key) ?? []) {
    if (value.includes(':')) throw invalidArgument(`filter for '${key}' should not contain ':': ${value}`)
    const slash = value.indexOf('/')
    const port = slash === -1 ? value : value.slice(0, slash)
    const proto = slash === -1 || value.slice(slash + 1) === '' ? 'tcp' : value.slice(slash + 1).split('/')[0] as string
    const dash = port.indexOf('-')
    const start = portNumber(key, value, dash === -1 ? port : port.slice(0, dash))
    const end = dash === -1 ? start : portNumber(key, value, port.slice(dash + 1).split('-')[0] as string)
    if (end < start) throw invalidArgument(`error while looking up for ${key} ${value}: invalid range specified for port: ${port}`)
    out.push({ start, end, proto })
  }
  return out
}

/** strconv.ParseUint(s, 10, 16) with Go's wording when it fails. */
function portNumber (key: string, value: string, s: string): number {
  if (!/^\d+$/.test(s)) throw invalidArgument(`error while looking up for ${key} ${value}: strconv.ParseUint: parsing ${JSON.stringify(s)}: invalid syntax`)
  const n = Number(s)
  if (n > 65535) throw invalidArgument(`error while looking up for ${key} ${value}: strconv.ParseUint: parsing ${JSON.stringify(s)}: value out of range`)
  return n
}
