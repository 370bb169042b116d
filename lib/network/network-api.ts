// The network API's operations over the service, in wire shapes: what lib/engine/routes/networks.ts calls.
import { invalidArgument, notFound } from '../errors.js'
import type { NetworkService } from './network-service.js'
import type { NetworkRecord } from './model.js'
import { decodeCreateNetwork, decodeConnect, decodeDisconnect, toNetworkWire, toCreateResponse, toPruneResponse } from './network-wire.js'

export type NetworkFilters = Map<string, string[]>




export class NetworkApi {
  private readonly s: NetworkService
  constructor (s: NetworkService) { this.s = s }

  async listNetworks (f: NetworkFilters): Promise<unknown[]> {
    const out: unknown[] = []
    for (const n of this.s.all()) {
      if (!this.match(n, f)) continue
      out.push(toNetworkWire(n, this.s.endpointsOf(n.id)))
    }
    return out
  }

  private match (n: NetworkRecord, f: NetworkFilters): boolean {
    for (const [key, values] of f) {
      if (values.length === 0) continue
      let ok: boolean
      switch (key) {
        case 'name': ok = values.some((v) => n.name.includes(v)); break
        case 'id': ok = values.some((v) => n.id.startsWith(v)); break
        case 'driver': ok = values.includes(n.driver); break
        case 'scope': ok = values.includes(scopeOf(n)); break
        case 'type':
          for (const v of values) if (v !== 'custom' && v !== 'builtin') throw invalidArgument(`invalid filter: 'type'='${v}'`)
          ok = values.includes(n.predefined ? 'builtin' : 'custom'); break
        case 'dangling': {
          const v = values[0] as string
          if (!['true', 'false', '1', '0'].includes(v)) throw invalidArgument(`invalid filter 'dangling=${v}'`)
          const dangling = !n.predefined && this.s.activeEndpoints(n.id) === 0
          ok = (v === 'true' || v === '1') === dangling; break
        }
        case 'label': ok = values.every((v) => labelMatch(n.labels, v)); break
        default: ok = true
      }
      if (!ok) return false
    }
    return true
  }

  /** GET /networks/{id}: `scope` (local, swarm, global), when given, must be the network's, as dockerd filters by it. */
  async inspectNetwork (ref: string, scope = ''): Promise<Record<string, unknown>> {
    const n = this.s.get(ref)
    if (scope !== '' && scopeOf(n) !== scope) throw notFound(`network ${ref} not found`)
    return toNetworkWire(n, this.s.endpointsOf(n.id))
  }

  async createNetwork (body: Record<string, unknown>): Promise<{ Id: string, Warning: string }> {
    const r = await this.s.create(decodeCreateNetwork(body))
    return toCreateResponse(r.id, r.warning)
  }

  async removeNetwork (ref: string): Promise<void> { await this.s.remove(ref) }

  async connectNetwork (ref: string, body: Record<string, unknown>): Promise<void> {
    const c = decodeConnect(body)
    await this.s.connect(ref, c.container, c.endpoint)
  }

  async disconnectNetwork (ref: string, body: Record<string, unknown>): Promise<void> {
    const d = decodeDisconnect(body)
    await this.s.disconnect(ref, d.container, d.force)
  }

  async pruneNetworks (f: NetworkFilters): Promise<{ NetworksDeleted: string[] }> {
    const until = f.get('until')?.[0]
    const untilMs = until === undefined ? undefined : /^\d+(\.\d+)?$/.test(until) ? Number(until) * 1000 : Date.parse(until)
    const deleted = await this.s.prune((n) => {
      if (untilMs !== undefined && Date.parse(n.created) > untilMs) return false
      for (const v of f.get('label') ?? []) if (!labelMatch(n.labels, v)) return false
      for (const v of f.get('label!') ?? []) if (labelMatch(n.labels, v)) return false
      return true
    })
    return toPruneResponse(deleted)
  }
}

function scopeOf (n: NetworkRecord): string { return n.driver === 'overlay' ? 'swarm' : 'local' }

function labelMatch (labels: Record<string, string>, v: string): boolean {
  const i = v.indexOf('=')
  return i === -1 ? labels[v] !== undefined : labels[v.slice(0, i)] === v.slice(i + 1)
}
