// A container's NetworkSettings parts (inspect) and its list item's Ports, as dockerd spells them, from its networking
// as lib/network keeps it (the sandbox and its networks).
import type { Attachment, SandboxView, NetworkRecord } from '../../network/model.js'

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
export function toContainerNetworkView (view: SandboxView, exposed: string[]): ContainerNetworkView {
  const sb = view.sandbox
  const networkOf = view.network
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
