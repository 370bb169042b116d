// Wire shapes of the network API and of a container's NetworkSettings (PascalCase), and the create/connect bodies
// decoded into internal requests. The only file of lib/network that spells Engine API keys.
import { invalidArgument } from '../errors.js'
import type { NetworkRecord, SandboxRecord, Attachment, EndpointRequest } from './model.js'
import { decodeEndpoint } from './endpoint-request.js'
import type { CreateNetworkRequest } from './network-create.js'
import type { PoolRequest } from './ipam.js'

const DRIVER_WIRE: Record<string, string> = { bridge: 'bridge', host: 'host', null: 'null', overlay: 'overlay' }

function strMap (v: unknown, field: string): Record<string, string> {
  if (v === undefined || v === null) return {}
  if (typeof v !== 'object' || Array.isArray(v)) throw invalidArgument(`json: cannot unmarshal ${Array.isArray(v) ? 'array' : typeof v} into Go struct field ${field} of type map[string]string`)
  const out: Record<string, string> = {}
  for (const [k, x] of Object.entries(v as Record<string, unknown>)) out[k] = String(x)
  return out
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

const EMPTY_ENDPOINT = {
  IPAMConfig: null, Links: null, Aliases: null, MacAddress: '', DriverOpts: null, GwPriority: 0, NetworkID: '',
  EndpointID: '', Gateway: '', IPAddress: '', IPPrefixLen: 0, IPv6Gateway: '', GlobalIPv6Address: '',
  GlobalIPv6PrefixLen: 0, DNSNames: null
}

export interface ContainerNetworkView {
  networks: Record<string, Record<string, unknown>>
  ports: Record<string, Array<{ HostIp: string, HostPort: string }> | null>
  summaryPorts: Array<Record<string, unknown>>
  sandboxKey: string
  /** The first endpoint's fields, for the deprecated top-level NetworkSettings keys. */
  primary: Record<string, unknown>
}

/** A running endpoint's IPv6 fields on a network with IPv6 (empty otherwise, as dockerd). */
function ipv6Wire (a: Attachment, n: NetworkRecord): Record<string, unknown> {
  const pool6 = n.pools6?.[0]
  if ((a.ip6 ?? '') === '' || pool6 === undefined) return {}
  return { IPv6Gateway: pool6.gateway, GlobalIPv6Address: a.ip6, GlobalIPv6PrefixLen: Number(pool6.subnet.split('/')[1] ?? 0) }
}

/** An endpoint's IPAMConfig as given (dockerd's omitempty fields), null when nothing was. */
function ipamConfigWire (a: Attachment): Record<string, unknown> | null {
  const out: Record<string, unknown> = {}
  if (a.staticIp !== '') out.IPv4Address = a.staticIp
  if ((a.staticIp6 ?? '') !== '') out.IPv6Address = a.staticIp6
  if ((a.linkLocal ?? []).length > 0) out.LinkLocalIPs = a.linkLocal
  return Object.keys(out).length > 0 ? out : null
}

/** NetworkSettings parts of a container as dockerd reports them. */
export function toContainerNetworkView (sb: SandboxRecord, networkOf: (id: string) => NetworkRecord | undefined, exposed: string[]): ContainerNetworkView {
  const networks: Record<string, Record<string, unknown>> = {}
  let primary: Record<string, unknown> = {}
  if (sb.mode === 'host' || sb.mode === 'none') networks[sb.mode] = { ...EMPTY_ENDPOINT }
  for (const a of sb.attachments) {
    const n = networkOf(a.networkId)
    if (n === undefined) continue
    const pool = n.pools[0]
    const running = a.ip !== ''
    const ep = {
      ...EMPTY_ENDPOINT,
      IPAMConfig: ipamConfigWire(a),
      Links: a.links.length > 0 ? a.links : null,
      Aliases: a.aliases.length > 0 ? a.aliases : null,
      // the address in use, or the one asked for while it does not run
      MacAddress: running ? a.mac : a.staticMac ?? '',
      DriverOpts: a.driverOpts !== undefined && Object.keys(a.driverOpts).length > 0 ? a.driverOpts : null,
      NetworkID: n.id,
      EndpointID: a.endpointId,
      Gateway: running ? pool?.gateway ?? '' : '',
      IPAddress: a.ip,
      IPPrefixLen: running ? Number(pool?.subnet.split('/')[1] ?? 0) : 0,
      ...ipv6Wire(a, n),
      DNSNames: n.predefined ? null : [sb.name, ...a.aliases, sb.id.slice(0, 12)]
    }
    networks[n.name] = ep
    if (Object.keys(primary).length === 0 && n.predefined) primary = ep
  }
  const ports: ContainerNetworkView['ports'] = {}
  const summaryPorts: Array<Record<string, unknown>> = []
  const mapped = new Set<string>()
  if (sb.running) {
    for (const p of sb.ports) {
      const key = `${p.containerPort}/${p.proto}`
      mapped.add(key)
      ;(ports[key] ??= [])?.push({ HostIp: p.hostIp, HostPort: String(p.hostPort) })
      summaryPorts.push({ IP: p.hostIp, PrivatePort: p.containerPort, PublicPort: p.hostPort, Type: p.proto })
    }
  }
  for (const key of new Set([...exposed, ...Object.keys(sb.portBindings)])) {
    if (mapped.has(key)) continue
    if (sb.running || sb.mode !== 'none') ports[key] = null
    const [port = '0', type = 'tcp'] = key.split('/')
    summaryPorts.push({ PrivatePort: Number(port), Type: type })
  }
  return { networks, ports: sb.running ? ports : {}, summaryPorts, sandboxKey: sb.netns, primary }
}
