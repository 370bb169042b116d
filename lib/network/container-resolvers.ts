// The embedded DNS resolver of each container, as dockerd's: served by the container's monitor on 127.0.0.11 inside
// the container's own namespace (lib/runtime/shim/resolver.c), which relays each query here over its Unix socket.
// Here the names of every network the container is on are answered (dns-resolver.ts); the rest goes back to the
// monitor to forward to the container's upstreams: its --dns servers from its own namespace (a loopback one is the
// container's loopback), the host's resolvers from the host's namespace (dockerd's "host loopback" servers), none of
// those when the container has no way out (Internal networks only). No socket of the host's namespace serves queries.
import { errorMessage } from '../errors.js'
import { logger } from '../log.js'
import { nameTable, resolveQuery, type NameTable, type ResolverEndpoint, type ResolverView } from './dns-resolver.js'
import { hostNameservers } from './etc-files.js'
import type { Query, ResolverPeer, UpstreamServer } from '../runtime/resolver-peer.js'
import type { Attachment, NetworkRecord, SandboxRecord } from './model.js'

const log = logger('engine:network:resolver')

/** How often and how far apart a refused connection to a monitor is tried again (as the supervisor's). */
const CONNECT_ATTEMPTS = 50
const CONNECT_RETRY_MS = 20

/** The resolver's address in every container's namespace (dockerd's). */
export const RESOLVER_ADDRESS = '127.0.0.11'

/** What the resolvers read of the rest of the network service. */
export interface ResolverSources {
  network (id: string): NetworkRecord | undefined
  endpointsOf (networkId: string): Array<{ sb: SandboxRecord, a: Attachment }>
  sandbox (id: string): SandboxRecord | undefined
  /** The host's resolv.conf text. */
  hostResolv (): string
}

/** How the service reaches a running container's monitor (the engine knows where it lives). */
export interface ContainerMonitors {
  /** A new connection to the container's monitor for its resolver, or null when it is not running. */
  resolver (containerId: string): Promise<ResolverPeer | null>
  /** The file the container's /etc/resolv.conf is bound from (rewritten in place when it joins a user network). */
  resolvConfFile (containerId: string): string | undefined
}

/**
 * Whether a network's containers resolve each other's names: user-defined bridge (and single-node overlay) networks;
 * not the swarm's ingress network (routing only, as dockerd's).
 */
export function resolvesNames (n: NetworkRecord | undefined): boolean {
  return n !== undefined && !n.predefined && n.ingress !== true && (n.driver === 'bridge' || n.driver === 'overlay')
}

/** `target:alias`, `target` (alias = target), `/target:/parent/alias`: alias → target, lower case. */
function linkAliases (links: string[]): Map<string, string> {
  const out = new Map<string, string>()
  for (const l of links) {
    const [target = '', alias = ''] = l.split(':')
    const t = target.replace(/^\//, '').toLowerCase()
    const a = (alias === '' ? t : alias.split('/').pop() ?? '').toLowerCase()
    if (t !== '' && a !== '') out.set(a, t)
  }
  return out
}

export class ContainerResolvers {
  private readonly src: ResolverSources
  private readonly monitors: ContainerMonitors | undefined
  private readonly peers = new Map<string, ResolverPeer>()
  private readonly tables = new Map<string, NameTable>()
  private closed = false

  constructor (src: ResolverSources, monitors: ContainerMonitors | undefined) {
    this.src = src
    this.monitors = monitors
  }

  /** Whether a container on these attachments gets the resolver: one of its networks resolves names. */
  wants (sb: SandboxRecord): boolean {
    return sb.attachments.some((a) => resolvesNames(this.src.network(a.networkId)))
  }

  /**
   * The container's monitor runs (just started, or found running after a daemon restart): its resolver's queries
   * are answered from now on (the monitor holds those that come first). A monitor without a resolver is left alone.
   * A connection refused while the container runs is tried again (a busy machine), as the supervisor's is.
   */
  async serve (id: string): Promise<void> {
    for (let attempt = 0; attempt < CONNECT_ATTEMPTS && !this.closed; attempt++) {
      const sb = this.src.sandbox(id)
      if (sb === undefined || sb.resolver !== true || !sb.running || this.monitors === undefined) return
      const peer = await this.monitors.resolver(id)
      if (peer !== null) { this.adopt(id, peer); return }
      await new Promise((resolve) => { setTimeout(resolve, CONNECT_RETRY_MS).unref() })
    }
    log('resolver of %s: its monitor did not take the connection', id)
  }

  private adopt (id: string, peer: ResolverPeer): void {
    this.peers.get(id)?.close()
    this.peers.set(id, peer)
    peer.on('query', (q: Query) => { this.onQuery(id, peer, q) })
    peer.on('close', () => {
      if (this.peers.get(id) !== peer) return
      this.peers.delete(id)
      // not our doing (forget and close remove it first): while the container runs, connect again
      log('resolver connection of %s closed', id)
      void this.serve(id)
    })
    this.sendUpstreams(id)
  }

  /**
   * A running container without a resolver joined a network that resolves names (docker network connect): its
   * monitor opens one in the container's namespace now. Throws when the monitor cannot.
   */
  async enable (sb: SandboxRecord): Promise<void> {
    if (this.monitors === undefined || sb.netns === '') return
    let peer = this.peers.get(sb.id) ?? null
    if (peer === null || peer.closed) {
      peer = await this.monitors.resolver(sb.id)
      if (peer === null) return
    }
    try { await peer.start(sb.netns) } catch (err) {
      peer.close()
      throw err
    }
    sb.resolver = true
    if (this.peers.get(sb.id) !== peer) this.adopt(sb.id, peer)
  }

  /** The names of a network changed (an endpoint came, went or was renamed): its table is made again when asked. */
  refreshOf (networkId: string): void { this.tables.delete(networkId) }

  /** A running container joined or left a network: its way out (its upstreams) may have changed. */
  attachmentsChanged (id: string): void {
    if (this.peers.has(id)) this.sendUpstreams(id)
  }

  /** A network was removed. */
  drop (networkId: string): void { this.tables.delete(networkId) }

  /** The container stopped: its monitor (and the resolver in it) is going away. */
  forget (id: string): void {
    const peer = this.peers.get(id)
    this.peers.delete(id)
    peer?.close()
  }

  close (): void {
    this.closed = true
    const peers = [...this.peers.values()]
    this.peers.clear()
    for (const p of peers) p.close()
    this.tables.clear()
  }

  /**
   * Where the container's other queries go (dockerd's ExtServers): its --dns servers, asked from its namespace;
   * otherwise the host's resolvers, asked from the host's namespace, and only when the container has a way out.
   */
  upstreams (sb: SandboxRecord): UpstreamServer[] {
    const own = sb.dnsConfig?.servers ?? sb.dns ?? []
    if (own.length > 0) return own.map((address) => ({ address, port: 53, hostNamespace: false }))
    const out = sb.attachments.some((a) => {
      const n = this.src.network(a.networkId)
      return a.ip !== '' && n !== undefined && !n.internal && (n.driver === 'bridge' || n.driver === 'overlay')
    })
    if (!out) return []
    return hostNameservers(this.src.hostResolv(), true).map((address) => ({ address, port: 53, hostNamespace: true }))
  }

  private sendUpstreams (id: string): void {
    const sb = this.src.sandbox(id)
    const peer = this.peers.get(id)
    if (sb !== undefined && peer !== undefined) peer.setUpstreams(this.upstreams(sb))
  }

  private table (n: NetworkRecord): NameTable {
    let t = this.tables.get(n.id)
    if (t === undefined) {
      const entries: Array<{ names: string[], name: string, v4: string, v6: string }> = []
      for (const { sb, a } of this.src.endpointsOf(n.id)) {
        if (a.ip === '' && (a.ip6 ?? '') === '') continue
        entries.push({ names: [sb.name, ...a.aliases, sb.id.slice(0, 12)], name: sb.name, v4: a.ip, v6: a.ip6 ?? '' })
      }
      t = nameTable(entries)
      this.tables.set(n.id, t)
    }
    return t
  }

  /** What the container's resolver knows: its endpoints on networks that resolve names, in attachment order. */
  view (sb: SandboxRecord): ResolverView {
    const endpoints: ResolverEndpoint[] = []
    for (const a of sb.attachments) {
      const n = this.src.network(a.networkId)
      if (!resolvesNames(n) || a.ip === '') continue
      endpoints.push({ network: (n as NetworkRecord).name, links: linkAliases(a.links), table: this.table(n as NetworkRecord) })
    }
    const options = (sb.dnsConfig?.options.length ?? 0) > 0 ? sb.dnsConfig?.options ?? [] : hostOptions(this.src.hostResolv())
    return { endpoints, ndots: options.some((o) => o.startsWith('ndots:')), forwards: this.upstreams(sb).length > 0 }
  }

  private onQuery (id: string, peer: ResolverPeer, q: Query): void {
    const sb = this.src.sandbox(id)
    try {
      const r = sb === undefined ? { forward: true as const } : resolveQuery(q.message, q.tcp, this.view(sb))
      if ('reply' in r) peer.answer(q.token, r.reply)
      else peer.forward(q.token)
    } catch (err) {
      log('query of %s: %s', id, errorMessage(err))
      peer.forward(q.token)
    }
  }
}

/** The `options` of a resolv.conf text. */
export function hostOptions (text: string): string[] {
  const out: string[] = []
  for (const line of text.split('\n')) {
    const m = /^\s*options\s+(.*)$/.exec(line)
    if (m?.[1] !== undefined) out.push(...m[1].trim().split(/\s+/))
  }
  return out
}
