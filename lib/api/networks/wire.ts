// The network routes' wire shapes: the create, connect and disconnect bodies decoded into lib/network's requests, the
// list and prune filters, and networks encoded (PascalCase, dockerd's fields).
import { invalidArgument } from '../../errors.js'
import type { NetworkRecord, SandboxRecord, Attachment, EndpointRequest } from '../../network/model.js'
import { filterMatch, type Filters } from '../../http/query.js'
import type { LinearRegexp } from '../../util/linear-regexp.js'
import { decodeEndpoint, strMap } from '../../network/endpoint-request.js'
import type { CreateNetworkRequest } from '../../network/network-create.js'
import type { PoolRequest } from '../../network/ipam.js'

const DRIVER_WIRE: Record<string, string> = { bridge: 'bridge', host: 'host', null: 'null', overlay: 'overlay' }

/** What a create may ask that Berth's networks do not do: refused out loud rather than ignored. */
function refuseUnsupported (b: Record<string, unknown>): void {
  const from = (b.ConfigFrom ?? null) as { Network?: unknown } | null
  if (b.ConfigOnly === true || (typeof from?.Network === 'string' && from.Network !== '')) {
    throw invalidArgument('Berth does not support configuration-only networks (ConfigOnly, ConfigFrom): give the network its own configuration')
  }
  if (b.EnableIPv4 === false) throw invalidArgument('Berth does not support networks without IPv4 (EnableIPv4: false)')
  const scope = b.Scope
  if (scope !== undefined && scope !== null && scope !== '' && scope !== 'local' && !(scope === 'swarm' && b.Driver === 'overlay')) {
    throw invalidArgument(`Berth does not support the ${JSON.stringify(scope)} scope for a ${typeof b.Driver === 'string' && b.Driver !== '' ? b.Driver : 'bridge'} network: its networks are local, and overlay networks are the swarm's`)
  }
}

export function decodeCreateNetwork (b: Record<string, unknown>): CreateNetworkRequest {
  const ipam = (b.IPAM ?? {}) as Record<string, unknown>
  const cfg = ipam.Config ?? []
  if (!Array.isArray(cfg)) throw invalidArgument('json: cannot unmarshal object into Go struct field IPAM.IPAM.Config of type []network.IPAMConfig')
  const pools: PoolRequest[] = (cfg as Array<Record<string, unknown>>).map((c) => ({
    ...(typeof c.Subnet === 'string' ? { subnet: c.Subnet } : {}),
    ...(typeof c.Gateway === 'string' ? { gateway: c.Gateway } : {}),
    ...(typeof c.IPRange === 'string' ? { ipRange: c.IPRange } : {}),
    ...(c.AuxiliaryAddresses !== undefined && c.AuxiliaryAddresses !== null ? { auxAddresses: strMap(c.AuxiliaryAddresses, 'IPAMConfig.AuxAddress') } : {})
  }))
  if (typeof b.Name !== 'string') throw invalidArgument('network name is empty')
  refuseUnsupported(b)
  return {
    name: b.Name,
    driver: typeof b.Driver === 'string' ? b.Driver : '',
    internal: b.Internal === true,
    attachable: b.Attachable === true,
    enableIPv6: b.EnableIPv6 === true,
    ipamDriver: typeof ipam.Driver === 'string' ? ipam.Driver : '',
    ipamOptions: strMap(ipam.Options, 'IPAM.Options'),
    pools,
    options: strMap(b.Options, 'Options'),
    labels: strMap(b.Labels, 'Labels'),
    ingress: b.Ingress === true
  }
}

/** POST /networks/{id}/connect's body. */
export function decodeConnect (b: Record<string, unknown>): { container: string, endpoint: EndpointRequest } {
  if (typeof b.Container !== 'string' || b.Container === '') throw invalidArgument('no container specified')
  return { container: b.Container, endpoint: decodeEndpoint(b.EndpointConfig) }
}

/** POST /networks/{id}/disconnect's body. */
export function decodeDisconnect (b: Record<string, unknown>): { container: string, force: boolean } {
  if (typeof b.Container !== 'string' || b.Container === '') throw invalidArgument('no container specified')
  return { container: b.Container, force: b.Force === true }
}

export function toCreateResponse (id: string, warning: string): { Id: string, Warning: string } {
  return { Id: id, Warning: warning }
}

export function toPruneResponse (names: string[]): { NetworksDeleted: string[] } {
  return { NetworksDeleted: names }
}

export function toNetworkWire (n: NetworkRecord, containers: Array<{ sb: SandboxRecord, a: Attachment }> | null): Record<string, unknown> {
  const wireContainers: Record<string, unknown> = {}
  for (const { sb, a } of containers ?? []) {
    if (a.ip === '') continue
    const bits = n.pools[0]?.subnet.split('/')[1] ?? '32'
    const bits6 = n.pools6?.[0]?.subnet.split('/')[1] ?? '128'
    wireContainers[sb.id] = { Name: sb.name, EndpointID: a.endpointId, MacAddress: a.mac, IPv4Address: `${a.ip}/${bits}`, IPv6Address: (a.ip6 ?? '') !== '' ? `${a.ip6 as string}/${bits6}` : '' }
  }
  return {
    Name: n.name,
    Id: n.id,
    Created: n.created,
    Scope: n.driver === 'overlay' ? 'swarm' : 'local',
    Driver: DRIVER_WIRE[n.driver] ?? n.driver,
    EnableIPv4: true,
    EnableIPv6: n.enableIPv6 === true,
    IPAM: {
      Driver: n.ipamDriver,
      Options: Object.keys(n.ipamOptions).length > 0 ? n.ipamOptions : null,
      Config: [...n.pools, ...n.pools6 ?? []].map((p) => ({
        Subnet: p.subnet,
        ...(p.autoGateway === true ? {} : { Gateway: p.gateway }),
        ...(p.ipRange !== undefined ? { IPRange: p.ipRange } : {}),
        ...(p.auxAddresses !== undefined ? { AuxiliaryAddresses: p.auxAddresses } : {})
      }))
    },
    Internal: n.internal,
    Attachable: n.attachable,
    Ingress: n.ingress === true,
    ConfigFrom: { Network: '' },
    ConfigOnly: false,
    Containers: wireContainers,
    Options: n.options,
    Labels: n.labels
  }
}

/** A network's scope as dockerd reports it. */
export function scopeOf (n: NetworkRecord): string { return n.driver === 'overlay' ? 'swarm' : 'local' }

function labelMatch (labels: Record<string, string>, v: string): boolean {
  const i = v.indexOf('=')
  return i === -1 ? labels[v] !== undefined : labels[v.slice(0, i)] === v.slice(i + 1)
}

/** GET /networks' filters as a test of one network (`activeEndpoints` for dangling). */
export function listFilter (f: Filters, activeEndpoints: (networkId: string) => number): (n: NetworkRecord) => boolean {
  const regexps = new Map<string, LinearRegexp | null>()
  return (n) => {
    for (const [key, values] of f) {
      if (values.length === 0) continue
      let ok: boolean
      switch (key) {
        // filters.Args.Match, as dockerd: exact or a regexp (`^app` is a prefix)
        case 'name': ok = filterMatch(values, n.name, regexps); break
        case 'id': ok = filterMatch(values, n.id, regexps); break
        case 'driver': ok = values.includes(n.driver); break
        case 'scope': ok = values.includes(scopeOf(n)); break
        case 'type':
          for (const v of values) if (v !== 'custom' && v !== 'builtin') throw invalidArgument(`invalid filter: 'type'='${v}'`)
          ok = values.includes(n.predefined ? 'builtin' : 'custom'); break
        case 'dangling': {
          if (values.length > 1) throw invalidArgument('got more than one value for filter key "dangling"')
          const v = values[0] as string
          if (!['true', 'false', '1', '0'].includes(v)) throw invalidArgument('invalid value for filter \'dangling\', must be "true" (or "1"), or "false" (or "0")')
          const dangling = !n.predefined && activeEndpoints(n.id) === 0
          ok = (v === 'true' || v === '1') === dangling; break
        }
        case 'label': ok = values.every((v) => labelMatch(n.labels, v)); break
        default: ok = true
      }
      if (!ok) return false
    }
    return true
  }
}

/** POST /networks/prune's filters (until, label, label!) as a test of one network. */
export function pruneFilter (f: Filters): (n: NetworkRecord) => boolean {
  const until = f.get('until')?.[0]
  const untilMs = until === undefined ? undefined : /^\d+(\.\d+)?$/.test(until) ? Number(until) * 1000 : Date.parse(until)
  return (n) => {
    if (untilMs !== undefined && Date.parse(n.created) > untilMs) return false
    for (const v of f.get('label') ?? []) if (!labelMatch(n.labels, v)) return false
    for (const v of f.get('label!') ?? []) if (labelMatch(n.labels, v)) return false
    return true
  }
}
