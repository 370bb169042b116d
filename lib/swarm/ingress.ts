// Published ports of services (ingress mode) on one node: a TCP listener per published port that hands each
// connection to one of the service's running tasks in turn (the routing mesh's job, without IPVS).
import net from 'node:net'
import { logger } from '../log.js'

const log = logger('swarm:ingress')

interface Listener { server: net.Server, target: number, backends: string[], next: number, sockets: Set<net.Socket> }

export class Ingress {
  private readonly ports = new Map<number, Listener>()

  /** Makes `port` forward to `target` on the given addresses (opens the listener on first use). */
  async set (port: number, target: number, backends: string[]): Promise<void> {
    let l = this.ports.get(port)
    if (l === undefined) {
      const entry: Listener = { server: net.createServer(), target, backends, next: 0, sockets: new Set() }
      entry.server.on('connection', (s) => { this.forward(entry, s) })
      await new Promise<void>((resolve, reject) => {
        entry.server.once('error', reject)
        entry.server.listen({ port, host: '0.0.0.0' }, () => { entry.server.off('error', reject); resolve() })
      })
      entry.server.on('error', (err) => { log('port %d: %s', port, err.message) })
      this.ports.set(port, entry)
      l = entry
    }
    l.target = target
    l.backends = backends
  }

  has (port: number): boolean { return this.ports.has(port) }

  private forward (l: Listener, client: net.Socket): void {
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

  /** Closes the ports not in `keep`. */
  async retain (keep: Set<number>): Promise<void> {
    for (const [port, l] of this.ports) {
      if (keep.has(port)) continue
      this.ports.delete(port)
      for (const s of l.sockets) s.destroy()
      await new Promise<void>((resolve) => { l.server.close(() => { resolve() }) })
    }
  }

  async close (): Promise<void> { await this.retain(new Set()) }
}
