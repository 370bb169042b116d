// One published UDP port of a service (ingress mode): a datagram socket on 0.0.0.0 that maps each client address to
// one of the service's running tasks in turn and relays the task's answers back to that client, through a per-flow
// upstream socket (so the task sees one peer per client). The flow table is bounded and idle flows are dropped.
import dgram from 'node:dgram'
import { logger } from '../log.js'

const log = logger('swarm:ingress')

const FLOW_IDLE_MS = 45_000
const MAX_FLOWS = 1024

interface Flow { up: dgram.Socket, backend: string, timer: NodeJS.Timeout }

export class UdpIngressPort {
  target = 0
  backends: string[] = []
  private next = 0
  private readonly flows = new Map<string, Flow>()

  private readonly sock: dgram.Socket

  private constructor (port: number, sock: dgram.Socket) {
    this.sock = sock
    sock.on('message', (msg, rinfo) => { this.relay(msg, rinfo) })
    sock.on('error', (err) => { log('port %d/udp: %s', port, err.message) })
  }

  /** Binds 0.0.0.0:port; rejects with the bind error. */
  static async open (port: number): Promise<UdpIngressPort> {
    const sock = dgram.createSocket('udp4')
    await new Promise<void>((resolve, reject) => {
      sock.once('error', (err) => { sock.close(); reject(err) })
      sock.bind(port, '0.0.0.0', () => { sock.removeAllListeners('error'); resolve() })
    })
    return new UdpIngressPort(port, sock)
  }

  private relay (msg: Buffer, client: dgram.RemoteInfo): void {
    const key = `${client.address}:${client.port}`
    let f = this.flows.get(key)
    // a flow whose task is gone moves to a running one
    if (f !== undefined && !this.backends.includes(f.backend)) { this.drop(key); f = undefined }
    if (f === undefined) {
      if (this.backends.length === 0) return
      if (this.flows.size >= MAX_FLOWS) this.drop(this.flows.keys().next().value as string)
      const backend = this.backends[this.next++ % this.backends.length] as string
      const up = dgram.createSocket('udp4')
      up.on('message', (reply) => { this.sock.send(reply, client.port, client.address) })
      up.on('error', () => { if (this.flows.get(key)?.up === up) this.drop(key) })
      f = { up, backend, timer: setTimeout(() => { this.drop(key) }, FLOW_IDLE_MS) }
      this.flows.set(key, f)
    } else {
      // most recently used last, so a full table lets go of the flow idle the longest
      this.flows.delete(key)
      this.flows.set(key, f)
    }
    f.timer.refresh()
    f.up.send(msg, this.target, f.backend)
  }

  private drop (key: string): void {
    const f = this.flows.get(key)
    if (f === undefined) return
    clearTimeout(f.timer)
    this.flows.delete(key)
    try { f.up.close() } catch { /* already closed */ }
  }

  async close (): Promise<void> {
    for (const k of [...this.flows.keys()]) this.drop(k)
    await new Promise<void>((resolve) => { this.sock.close(() => { resolve() }) })
  }
}
