// The embedded DNS server of one user-defined network: answers container names, aliases and short IDs with their
// addresses on that network, forwards other names to the host's resolvers. A thin node:dgram adapter over dns-codec.
import dgram from 'node:dgram'
import { parseQuery, buildAnswer, TYPE_A, CLASS_IN } from './dns-codec.js'
import { logger } from '../log.js'

const log = logger('engine:network:dns')
const FORWARD_TIMEOUT_MS = 3000
const MAX_PENDING = 256

export class DnsServer {
  private readonly address: string
  private readonly forwarders: string[]
  private records = new Map<string, string[]>()
  /** Per client address: the container's own --dns servers, used instead of the host's. */
  private clientForwarders = new Map<string, string[]>()
  private sock: dgram.Socket | null = null
  private pending = 0
  private closed = false

  constructor (o: { address: string, forwarders: string[] }) {
    this.address = o.address
    this.forwarders = o.forwarders
  }

  setRecords (r: Map<string, string[]>, forwarders: Map<string, string[]> = new Map()): void {
    this.records = r
    this.clientForwarders = forwarders
  }

  listen (): void {
    const s = dgram.createSocket({ type: 'udp4', reuseAddr: true })
    this.sock = s
    s.on('error', (err) => { log('dns %s: %s', this.address, err.message); s.close(); if (this.sock === s) this.sock = null })
    s.on('message', (msg, rinfo) => { this.onQuery(msg, rinfo) })
    s.bind(53, this.address)
    s.unref()
  }

  private onQuery (msg: Buffer, rinfo: dgram.RemoteInfo): void {
    const q = parseQuery(msg)
    if (q === null || this.sock === null) return
    const name = q.name.toLowerCase().replace(/\.$/, '')
    const ips = this.records.get(name)
    if (ips !== undefined && q.cls === CLASS_IN) {
      this.sock.send(buildAnswer(msg, q, q.type === TYPE_A ? ips : []), rinfo.port, rinfo.address)
      return
    }
    const forwarders = this.clientForwarders.get(rinfo.address) ?? this.forwarders
    if (!name.includes('.') && forwarders.length === 0) {
      this.sock.send(buildAnswer(msg, q, [], 3), rinfo.port, rinfo.address)
      return
    }
    this.forward(msg, q, rinfo, forwarders)
  }

  private forward (msg: Buffer, q: NonNullable<ReturnType<typeof parseQuery>>, rinfo: dgram.RemoteInfo, forwarders: string[]): void {
    const server = forwarders[0]
    if (server === undefined || this.pending >= MAX_PENDING) { this.sock?.send(buildAnswer(msg, q, [], 2), rinfo.port, rinfo.address); return }
    this.pending++
    const up = dgram.createSocket('udp4')
    let done = false
    const finish = (): void => {
      if (done) return
      done = true
      this.pending--
      clearTimeout(timer)
      up.close()
    }
    const timer = setTimeout(() => { this.sock?.send(buildAnswer(msg, q, [], 2), rinfo.port, rinfo.address); finish() }, FORWARD_TIMEOUT_MS)
    timer.unref()
    up.unref()
    up.on('error', () => { this.sock?.send(buildAnswer(msg, q, [], 2), rinfo.port, rinfo.address); finish() })
    up.on('message', (reply) => { if (!this.closed) this.sock?.send(reply, rinfo.port, rinfo.address); finish() })
    up.send(msg, 53, server)
  }

  close (): void {
    this.closed = true
    this.sock?.close()
    this.sock = null
  }
}
