// A container's requests of networking in their Engine API shapes, checked as dockerd checks them: an endpoint
// (NetworkingConfig's EndpointsConfig entries, network connect's EndpointConfig) and HostConfig.PortBindings. Used by
// the container create decoder (lib/containers/create-request.ts) and the network connect route; networking itself
// only ever sees the typed requests.
import { invalidArgument } from '../errors.js'
import type { EndpointRequest, PortBinding } from './model.js'
import { parseIp } from './cidr.js'
import { formatIp6, parseIp6 } from './cidr6.js'

/** Published ports asked for, keyed `port/proto` (null: the key was given without bindings). */
export type PortBindings = Record<string, PortBinding[] | null>

/** A Go map[string]string field as encoding/json decodes it (null or absent: empty; values as strings). */
export function strMap (v: unknown, field: string): Record<string, string> {
  if (v === undefined || v === null) return {}
  if (typeof v !== 'object' || Array.isArray(v)) throw invalidArgument(`json: cannot unmarshal ${Array.isArray(v) ? 'array' : typeof v} into Go struct field ${field} of type map[string]string`)
  const out: Record<string, string> = {}
  for (const [k, x] of Object.entries(v as Record<string, unknown>)) out[k] = String(x)
  return out
}

/** A MAC address as Go's net.ParseMAC takes one (six octets, `:` or `-`), lower case with colons; '' stays ''. */
export function canonicalMac (s: string): string {
  if (s === '') return ''
  if (!/^[0-9a-fA-F]{2}([:-])[0-9a-fA-F]{2}(\1[0-9a-fA-F]{2}){4}$/.test(s)) throw invalidArgument(`address ${s}: invalid MAC address`)
  return s.toLowerCase().replace(/-/g, ':')
}

/** A link-local unicast address (169.254.0.0/16, fe80::/10), as dockerd requires of IPAMConfig.LinkLocalIPs. */
function linkLocalAddress (s: string): string {
  const v6 = parseIp6(s)
  const v4 = parseIp(s)
  const ok = v4 !== null ? (v4 >>> 16) === 0xa9fe : v6 !== null && (v6 >> 118n) === 0x3fan
  if (!ok) throw invalidArgument(`invalid link local IP address: ${s}`)
  return v6 !== null ? formatIp6(v6) : s
}

/** An EndpointSettings body (NetworkingConfig entries, connect's EndpointConfig), checked as dockerd checks it. */
export function decodeEndpoint (v: unknown): EndpointRequest {
  const e = (v ?? {}) as Record<string, unknown>
  const ipam = (e.IPAMConfig ?? {}) as Record<string, unknown>
  const aliases = Array.isArray(e.Aliases) ? (e.Aliases as unknown[]).map(String) : []
  const links = Array.isArray(e.Links) ? (e.Links as unknown[]).map(String) : []
  const ipv6 = typeof ipam.IPv6Address === 'string' ? ipam.IPv6Address : ''
  if (ipv6 !== '') {
    const n = parseIp6(ipv6)
    // not an IPv4-mapped one, not ::, no zone
    if (n === null || n === 0n || (n >> 32n) === 0xffffn) throw invalidArgument(`invalid IPv6 address: ${ipv6}`)
  }
  const linkLocal = Array.isArray(ipam.LinkLocalIPs) ? (ipam.LinkLocalIPs as unknown[]).map((x) => linkLocalAddress(String(x))) : []
  return {
    aliases,
    links,
    ipv4: typeof ipam.IPv4Address === 'string' ? ipam.IPv4Address : '',
    ipv6: ipv6 === '' ? '' : formatIp6(parseIp6(ipv6) as bigint),
    mac: canonicalMac(typeof e.MacAddress === 'string' ? e.MacAddress : ''),
    linkLocal,
    driverOpts: strMap(e.DriverOpts, 'EndpointSettings.DriverOpts')
  }
}

/** A port or a `lo-hi` range of ports as dockerd's nat package takes them: 16-bit numbers, lo not above hi. */
function portRange (s: string): boolean {
  const m = /^(\d{1,5})(?:-(\d{1,5}))?$/.exec(s)
  if (m === null) return false
  const lo = Number(m[1]); const hi = Number(m[2] ?? m[1])
  return hi <= 65535 && lo <= hi
}

/** HostConfig.PortBindings ({"80/tcp": [{HostIp, HostPort}]}) checked and keyed `port/proto`. */
export function decodePortBindings (raw: Record<string, unknown>): PortBindings {
  const given: PortBindings = {}
  for (const [key, v] of Object.entries(raw ?? {})) {
    const list = Array.isArray(v) ? v as Array<{ HostIp?: string, HostPort?: string }> : []
    given[key] = list.map((b) => ({ hostIp: b.HostIp ?? '', hostPort: b.HostPort ?? '' }))
  }
  return checkPortBindings(given)
}

/** Published ports as asked for (a create's decoded body, or a typed request of swarm's) checked as dockerd checks them, keyed `port/proto`. */
export function checkPortBindings (given: Readonly<PortBindings>): PortBindings {
  const out: PortBindings = {}
  for (const [key, list] of Object.entries(given)) {
    const m = /^(\d+)(?:\/(tcp|udp|sctp))?$/.exec(key)
    if (m === null || !portRange(m[1] as string)) {
      // dockerd names the port without its protocol when the port is what is wrong (`abc/tcp` is "abc")
      const port = key.split('/')[0] as string
      throw invalidArgument(`invalid port specification: "${/^\d+$/.test(port) && portRange(port) ? key : port}"`)
    }
    if (m[2] === 'sctp') throw invalidArgument('sctp ports are not supported by this engine')
    const k = `${m[1] as string}/${m[2] ?? 'tcp'}`
    out[k] = (list ?? []).map((b) => {
      const hostPort = b.hostPort
      if (hostPort !== '' && !portRange(hostPort)) throw invalidArgument(`invalid port specification: "${hostPort}"`)
      let hostIp = b.hostIp
      const v6 = hostIp.includes(':') ? parseIp6(hostIp.replace(/^\[(.*)\]$/, '$1')) : null
      if (hostIp !== '' && v6 === null && parseIp(hostIp) === null) throw invalidArgument(`invalid IP address: ${hostIp}`)
      // an IPv6 host address in its canonical form (served by the container's monitor: -p [::1]:8080:80)
      if (v6 !== null) hostIp = formatIp6(v6)
      return { hostIp, hostPort }
    })
  }
  return out
}
