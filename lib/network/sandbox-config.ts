// A container's networking as recorded at create: its mode, the networks it is attached to (NetworkingConfig,
// --link, aliases, static IPs) and the ports it publishes, checked as dockerd checks them. Pure: the service passes
// the lookups.
import { invalidArgument } from '../errors.js'
import { parseIp, requirePrefix } from './cidr.js'
import { contains6, parseIp6, parsePrefix6 } from './cidr6.js'
import type { PortBindings } from './endpoint-request.js'
import type { Attachment, EndpointRequest, NetworkRecord, SandboxRecord } from './model.js'

export interface SandboxRequest {
  id: string
  /** Without the leading slash. */
  name: string
  /** HostConfig.NetworkMode ('' and 'default' are the default bridge). */
  mode: string
  /** NetworkingConfig.EndpointsConfig, by network name or ID. */
  endpoints: Record<string, EndpointRequest>
  /** HostConfig.PortBindings, decoded (endpoint-request.ts). */
  portBindings: PortBindings
  /** The image's and the config's ExposedPorts keys. */
  exposed: string[]
  publishAll: boolean
}

export function newAttachment (networkId: string, ep: EndpointRequest): Attachment {
  const a: Attachment = { networkId, aliases: ep.aliases, links: ep.links, staticIp: ep.ipv4, endpointId: '', ip: '', mac: '', hostIf: '', ifName: '' }
  if ((ep.ipv6 ?? '') !== '') a.staticIp6 = ep.ipv6
  if ((ep.mac ?? '') !== '') a.staticMac = ep.mac
  if ((ep.linkLocal ?? []).length > 0) a.linkLocal = ep.linkLocal
  if (ep.driverOpts !== undefined && Object.keys(ep.driverOpts).length > 0) a.driverOpts = ep.driverOpts
  return a
}

export function checkStaticIp (n: NetworkRecord, ip: string): void {
  const v = parseIp(ip)
  if (v === null) throw invalidArgument(`invalid IPv4 address: ${ip}`)
  const inside = n.pools.some((p) => { const s = requirePrefix(p.subnet); return ((v ^ s.base) >>> (32 - s.bits)) === 0 })
  if (!inside) throw invalidArgument(`Invalid address ${ip}: It does not belong to any of this network's subnets`)
}

/** An IPv6 address asked of a network: only in one of its IPv6 subnets, with EnableIPv6 (dockerd's words). */
export function checkStaticIp6 (n: NetworkRecord, ip: string): void {
  const v = parseIp6(ip)
  const inside = v !== null && n.enableIPv6 === true && (n.pools6 ?? []).some((p) => { const s = parsePrefix6(p.subnet); return s !== null && contains6(s, v) })
  if (!inside) throw invalidArgument(`no configured subnet contains IP address ${ip}`)
}

/** An endpoint's static addresses checked against its network (create, connect). */
export function checkEndpoint (n: NetworkRecord, ep: EndpointRequest): void {
  const v6 = ep.ipv6 ?? ''
  if ((ep.ipv4 !== '' || v6 !== '') && n.predefined) throw invalidArgument('user specified IP address is supported on user defined networks only')
  if (ep.ipv4 !== '') checkStaticIp(n, ep.ipv4)
  if (v6 !== '') checkStaticIp6(n, v6)
}

/**
 * The record, and the warnings create answers with. An unknown network is recorded by the name given (its ID
 * unknown): as with dockerd, the create succeeds and the start fails with `network X not found` (a 404 at create would
 * make the docker CLI try to pull the image).
 */
export function newSandbox (o: SandboxRequest, network: (ref: string) => NetworkRecord | undefined, containerExists: (ref: string) => boolean): { sb: SandboxRecord, warnings: string[] } {
  const mode = o.mode === '' || o.mode === 'default' ? 'bridge' : o.mode
  const sb: SandboxRecord = { id: o.id, name: o.name, mode, attachments: [], portBindings: structuredClone(o.portBindings), exposed: o.exposed, publishAll: o.publishAll, netns: '', ports: [], running: false }
  const warnings: string[] = []
  const publishes = Object.keys(sb.portBindings).length > 0
  if (mode.startsWith('container:')) {
    const ref = mode.slice('container:'.length)
    // dockerd's words, refused at create already; not a 404, which the docker CLI would take for a missing image
    if (!containerExists(ref)) throw invalidArgument(`No such container: ${ref}`)
    if (publishes) throw invalidArgument('conflicting options: port publishing and the container type network mode')
  } else if (mode === 'none') {
    if (publishes) throw invalidArgument('conflicting options: port publishing and the container type network mode')
  } else if (mode === 'host') {
    if (publishes || sb.publishAll) {
      warnings.push('Published ports are discarded when using host network mode')
      sb.portBindings = {}
      sb.publishAll = false
    }
  } else {
    const primary = network(mode)
    const primaryId = primary?.id ?? mode
    const reqs = Object.entries(o.endpoints)
    const wanted: Array<[string, EndpointRequest]> = reqs.length === 0 ? [[mode, { aliases: [], ipv4: '', links: [] }]] : reqs
    for (const [key, ep] of wanted) {
      const ref = key === 'default' ? 'bridge' : key
      const n = network(ref)
      if (n === undefined) {
        if (!sb.attachments.some((a) => a.networkId === ref)) sb.attachments.push(newAttachment(ref, ep))
        continue
      }
      if (n.driver === 'host' || n.driver === 'null') continue
      if (sb.attachments.some((a) => a.networkId === n.id)) continue
      if (ep.aliases.length > 0 && n.predefined) throw invalidArgument('network-scoped alias is supported only for containers in user defined networks')
      checkEndpoint(n, ep)
      sb.attachments.push(newAttachment(n.id, ep))
    }
    // --link on the default bridge names an existing container (checked again, running, at start)
    if (primary?.predefined === true) {
      for (const a of sb.attachments) {
        for (const l of a.links) {
          const target = (l.split(':')[0] ?? '').replace(/^\//, '')
          if (!containerExists(target)) throw invalidArgument(`could not get container for ${target}: No such container: ${target}`)
        }
      }
    }
    // the mode's network comes first: its address is the container's in /etc/hosts, its gateway the default route
    const i = sb.attachments.findIndex((a) => a.networkId === primaryId)
    if (i > 0) sb.attachments.unshift(...sb.attachments.splice(i, 1))
    else if (i === -1 && (primary === undefined || primary.driver === 'bridge' || primary.driver === 'overlay')) sb.attachments.unshift(newAttachment(primaryId, { aliases: [], ipv4: '', links: [] }))
  }
  return { sb, warnings }
}
