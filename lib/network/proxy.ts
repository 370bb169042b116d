// A userland port forwarder (dockerd's docker-proxy): listens on a host address and port and relays TCP connections
// or UDP datagrams to a container's address. Run as its own process (`berth port-proxy`), so published ports keep
// answering while the daemon is down. With iptables it holds the host port (DNAT serves the traffic it catches).
import net from 'node:net'
import dgram from 'node:dgram'
import { pipeline } from 'node:stream'

export interface ProxySpec { proto: 'tcp' | 'udp', hostIp: string, hostPort: number, containerIp: string, containerPort: number }

const UDP_IDLE_MS = 30_000
const MAX_UDP_FLOWS = 1024

export interface Proxy { close: () => void }

/** Binds and relays; resolves once listening, rejects with the bind error. */
export async function startProxy (s: ProxySpec): Promise<Proxy> {
  return s.proto === 'tcp' ? await tcpProxy(s) : await udpProxy(s)
}

async function tcpProxy (s: ProxySpec): Promise<Proxy> {
  const open = new Set<net.Socket>()
  const server = net.createServer((client) => {
    const upstream = net.connect(s.containerPort, s.containerIp)
    open.add(client)
    pipeline(client, upstream, client, () => { client.destroy(); upstream.destroy(); open.delete(client) })
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen({ port: s.hostPort, host: s.hostIp, exclusive: true }, () => { server.off('error', reject); resolve() })
  })
  // closing ends the relayed connections too: a stopped forwarder's process exits at once
  return { close: () => { server.close(); for (const c of open) c.destroy() } }
}

async function udpProxy (s: ProxySpec): Promise<Proxy> {
  const sock = dgram.createSocket('udp4')
  // one upstream socket per client address, so answers find their way back
  const flows = new Map<string, { up: dgram.Socket, timer: NodeJS.Timeout }>()
  const drop = (key: string): void => {
    const f = flows.get(key)
    if (f === undefined) return
    clearTimeout(f.timer)
    f.up.close()
    flows.delete(key)
  }
  sock.on('message', (msg, rinfo) => {
    const key = `${rinfo.address}:${rinfo.port}`
    let f = flows.get(key)
    if (f === undefined) {
      if (flows.size >= MAX_UDP_FLOWS) drop(flows.keys().next().value as string)
      const up = dgram.createSocket('udp4')
      up.on('message', (reply) => { sock.send(reply, rinfo.port, rinfo.address) })
      up.on('error', () => { drop(key) })
      f = { up, timer: setTimeout(() => { drop(key) }, UDP_IDLE_MS) }
      flows.set(key, f)
    }
    f.timer.refresh()
    f.up.send(msg, s.containerPort, s.containerIp)
  })
  await new Promise<void>((resolve, reject) => {
    sock.once('error', reject)
    sock.bind(s.hostPort, s.hostIp, () => { sock.off('error', reject); resolve() })
  })
  return { close: () => { for (const k of [...flows.keys()]) drop(k); sock.close() } }
}
