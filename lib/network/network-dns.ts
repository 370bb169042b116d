// The embedded DNS servers of user-defined networks, one per network on its gateway, port 53, while its bridge exists:
// each answers the names of the containers with an endpoint on its network and forwards the rest.
import { DnsServer } from './dns-server.js'
import { hostNameservers } from './etc-files.js'
import type { NetworkHost } from './network-host.js'
import type { Attachment, NetworkRecord, SandboxRecord } from './model.js'

/** What the servers read of the other parts of the service. */
export interface DnsSources {
  network (id: string): NetworkRecord | undefined
  endpointsOf (networkId: string): Array<{ sb: SandboxRecord, a: Attachment }>
  /** Whether the bridges are up (Networks.ensureHost ran). */
  hostUp (): boolean
}

export class NetworkDns {
  private readonly host: NetworkHost
  private readonly src: DnsSources
  private readonly servers = new Map<string, DnsServer>()

  constructor (host: NetworkHost, src: DnsSources) {
    this.host = host
    this.src = src
  }

  refreshOf (networkId: string): void {
    const n = this.src.network(networkId)
    if (n !== undefined) this.refresh(n)
  }

  /** Gives the network's server (started on first need) the names of its endpoints now. */
  refresh (n: NetworkRecord): void {
    if (n.predefined || (n.driver !== 'bridge' && n.driver !== 'overlay') || this.host.links === null || !this.src.hostUp()) return
    const names = new Map<string, string[]>()
    const forwarders = new Map<string, string[]>()
    for (const { sb, a } of this.src.endpointsOf(n.id)) {
      if (a.ip === '') continue
      if (sb.dns !== undefined && sb.dns.length > 0 && !n.internal) forwarders.set(a.ip, sb.dns)
      for (const name of [sb.name, sb.id.slice(0, 12), ...a.aliases]) {
        // as dockerd: a name, and the name qualified with the network's (web.app)
        for (const key of [name.toLowerCase(), `${name}.${n.name}`.toLowerCase()]) names.set(key, [...(names.get(key) ?? []), a.ip])
      }
    }
    let server = this.servers.get(n.id)
    if (server === undefined) {
      const gw = n.pools[0]?.gateway
      if (gw === undefined) return
      // the server lives in the host's namespace: the host's loopback resolvers (a local cache) are reachable from it
      // an Internal network has no way out: like dockerd, its server answers the network's names only
      server = new DnsServer({ address: gw, forwarders: n.internal ? [] : hostNameservers(this.host.hostResolv, true) })
      server.listen()
      this.servers.set(n.id, server)
    }
    server.setRecords(names, forwarders)
  }

  /** The nameserver a container's resolv.conf names: the server of its first user-defined network, if any. */
  embeddedFor (sb: SandboxRecord | undefined): string | null {
    if (sb === undefined) return null
    for (const a of sb.attachments) {
      const n = this.src.network(a.networkId)
      if (n !== undefined && !n.predefined && this.servers.has(n.id)) return n.pools[0]?.gateway ?? null
    }
    return null
  }

  /** A removed network's server stops. */
  drop (networkId: string): void {
    this.servers.get(networkId)?.close()
    this.servers.delete(networkId)
  }

  close (): void {
    for (const s of this.servers.values()) s.close()
    this.servers.clear()
  }
}
