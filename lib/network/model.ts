// The networking records and requests (internal, camelCase). The Engine API's shapes are lib/api/networks' (and the
// container's NetworkSettings lib/api/containers'); endpoint-request.ts decodes what a container asks for.
import type { PoolConfig } from './ipam.js'

export type Driver = 'bridge' | 'host' | 'null' | 'overlay'

export interface NetworkRecord {
  id: string
  name: string
  driver: Driver
  created: string
  internal: boolean
  attachable: boolean
  /** bridge, host and none: created by the daemon, never removed. */
  predefined: boolean
  options: Record<string, string>
  labels: Record<string, string>
  ipamDriver: string
  ipamOptions: Record<string, string>
  pools: PoolConfig[]
  /** EnableIPv6: its containers get addresses of `pools6` (dockerd's). */
  enableIPv6?: boolean
  /** IPv6 IPAM configs (kept and shown without EnableIPv6 too, as dockerd; used only with it). */
  pools6?: PoolConfig[]
  /** The Linux bridge ('' for host and none). */
  bridge: string
  icc: boolean
  /**
   * A swarm-scoped network removed while task containers of removed services still shut down on it: gone from the API
   * at once (as the cluster's network is), torn down when its last endpoint leaves.
   */
  removing?: boolean
  /** The swarm's routing-mesh network (`ingress`, made at swarm init; at most one). */
  ingress?: boolean
}

export interface PortBinding { hostIp: string, hostPort: string }

export interface PortMapping {
  proto: 'tcp' | 'udp'
  containerPort: number
  hostIp: string
  hostPort: number
  /** The userland forwarder's PID (without iptables), 0 otherwise. */
  proxyPid?: number
}

export interface Attachment {
  networkId: string
  aliases: string[]
  links: string[]
  staticIp: string
  /** IPAMConfig.IPv6Address as asked ('' or absent: none). */
  staticIp6?: string
  /** MacAddress as asked ('' or absent: derived from the address, 02:42:…). */
  staticMac?: string
  /** IPAMConfig.LinkLocalIPs: added to the interface (/16, /64), as dockerd does. */
  linkLocal?: string[]
  /** DriverOpts as given (kept and shown; the bridge driver reads none of them, as dockerd's). */
  driverOpts?: Record<string, string>
  endpointId: string
  /** Set while the container runs. */
  ip: string
  /** Its IPv6 address on a network with IPv6, while the container runs. */
  ip6?: string
  mac: string
  hostIf: string
  ifName: string
}

export interface SandboxRecord {
  id: string
  /** Without the leading slash. */
  name: string
  /** The NetworkMode as given: bridge, host, none, container:<ref>, or a network name or ID. */
  mode: string
  attachments: Attachment[]
  portBindings: Record<string, PortBinding[] | null>
  exposed: string[]
  publishAll: boolean
  /** While it runs (bridge-like modes): the namespace file and the ports mapped. */
  netns: string
  /** --dns servers as a previous version recorded them (dnsConfig now). */
  dns?: string[]
  /** --dns, --dns-search, --dns-option as given at the last start: its resolv.conf and its resolver's upstreams. */
  dnsConfig?: { servers: string[], search: string[], options: string[] }
  /** Its monitor runs the embedded DNS resolver (on a user network at start, or connected to one since). */
  resolver?: boolean
  ports: PortMapping[]
  running: boolean
  /**
   * Counts the record's changes. A start's change is written only in the record its container's own record carries
   * (ContainerRecord.sandbox: one record written on the start's path): at boot the copy with the higher count wins.
   */
  seq?: number
}

/** A container's endpoint on one network as asked for (NetworkingConfig entries, network connect). */
export interface EndpointRequest {
  aliases: string[]
  ipv4: string
  /** IPAMConfig.IPv6Address ('' when not given). */
  ipv6?: string
  /** MacAddress, canonical ('' when not given). */
  mac?: string
  /** IPAMConfig.LinkLocalIPs. */
  linkLocal?: string[]
  driverOpts?: Record<string, string>
  links: string[]
}

/** A container's networking as inspect and the list show it: its sandbox, and its networks by ID. */
export interface SandboxView {
  sandbox: SandboxRecord
  network: (id: string) => NetworkRecord | undefined
}
