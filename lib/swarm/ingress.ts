// Published ports of services (ingress mode) on one node: a TCP listener or a UDP socket per published port and
// protocol that hands each connection (TCP) or client address (UDP) to one of the service's running tasks in turn
// (the routing mesh's job, without IPVS). A TCP and a UDP port of the same number are two entries, as in dockerd.
import net from 'node:net'
import { logger } from '../log.js'
import { UdpIngressPort } from './ingress-udp.js'

const log = logger('swarm:ingress')

export type IngressProtocol = 'tcp' | 'udp'

interface TcpListener { server: net.Server, target: number, backends: string[], next: number, sockets: Set<net.Socket> }

/** The key of a published port: `<port>/<protocol>`. */
export function ingressKey (port: number, protocol: IngressProtocol): string { return `${port}/${protocol}` }

export class Ingress {
  private readonly tcp = new Map<number, TcpListener>()
  private readonly udp = new Map<number, UdpIngressPort>()

  /** Makes `port`/`protocol` forward to `target` on the given addresses (opens the port on first use). */
  async set (port: number, protocol: IngressProtocol, target: number, backends: string[]): Promise<void> {
    if (protocol === 'udp') {
      let u = this.udp.get(port)
      if (u === undefined) { u = await UdpIngressPort.open(port); this.udp.set(port, u) }
      u.target = target
      u.backends = backends
      return
    }
    let l = this.tcp.get(port)
    if (l === undefined) {
      const entry: TcpListener = { server: net.createServer(), target, backends, next: 0, sockets: new Set() }
      entry.server.on('connection', (s) => { this.forward(entry, s) })
      await new Promise<void>((resolve, reject) => {
        entry.server.once('error', reject)
        entry.server.listen({ port, host: '0.0.0.0' }, () => { entry.server.off('error', reject); resolve() })
      })
      entry.server.on('error', (err) => { log('port %d/tcp: %s', port, err.message) })
      this.tcp.set(port, entry)
      l = entry
    }
    l.target = target
    l.backends = backends
  }

  has (port: number, protocol: IngressProtocol = 'tcp'): boolean { return (protocol === 'udp' ? this.udp : this.tcp).has(port) }

  private forward (l: TcpListener, client: net.Socket): void {
    client.on('error', () => {})
    if (l.backends.length === 0) { client.destroy(); return }
    const addr = l.backends[l.next++ % l.backends.length] as string
    const upstream = net.connect({ host: addr, port: l.target })
    upstream.on('error', () => { client.destroy() })
    client.on('close', () => { upstream.destroy() })
    upstream.on('close', () => { client.destroy() })
    l.sockets.add(client)
    client.once('close', () => { l.sockets.delete(client) })
    client.pipe(upstream)
    upstream.pipe(client)
  }

  /** Closes the ports whose key (`ingressKey`) is not in `keep`. */
  async retain (keep: Set<string>): Promise<void> {
    for (const [port, l] of this.tcp) {
      if (keep.has(ingressKey(port, 'tcp'))) continue
      this.tcp.delete(port)
      for (const s of l.sockets) s.destroy()
      await new Promise<void>((resolve) => { l.server.close(() => { resolve() }) })
    }
    for (const [port, u] of this.udp) {
      if (keep.has(ingressKey(port, 'udp'))) continue
      this.udp.delete(port)
      await u.close()
    }
  }

  async close (): Promise<void> { await this.retain(new Set()) }
}
