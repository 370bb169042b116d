// Test helpers for networking specs: HTTP and UDP clients of published ports, free host ports, a UDP echo server run
// in a busybox container, and a tiny DNS responder. Traffic goes only to loopback and to addresses the test made.
import http from 'node:http'
import net from 'node:net'
import dgram from 'node:dgram'
import { parseQuery, buildReply, TYPE_A } from '../../lib/network/dns-codec.js'

/** GET http://host:port/path; rejects on a reset, an aborted answer or timeoutMs (5 s) without one. */
export async function httpGet (port: number, path = '/', host = '127.0.0.1', timeoutMs = 5000): Promise<string> {
  return await new Promise((resolve, reject) => {
    const req = http.get({ host, port, path, timeout: timeoutMs }, (res) => {
      let body = ''
      res.setEncoding('utf8')
      res.on('data', (d: string) => { body += d })
      res.on('end', () => { resolve(body) })
      // a connection reset mid-answer (the container still starting) must not leave the promise pending
      res.on('error', reject)
      res.on('close', () => { if (!res.complete) reject(new Error('response aborted')) })
    })
    req.on('timeout', () => { req.destroy(new Error('timeout')) })
    req.on('error', reject)
  })
}

/**
 * Ports handed out lately by this process, per protocol: the kernel may give the same ephemeral port to two listen(0)
 * calls in a row once the first socket is closed, and a test asking for two free ports needs two different ones.
 */
const handedOut = { tcp: [] as number[], udp: [] as number[] }
const REMEMBERED = 64

async function freshPort (proto: 'tcp' | 'udp', ask: () => Promise<number>): Promise<number> {
  const recent = handedOut[proto]
  let port = await ask()
  for (let i = 0; i < 20 && recent.includes(port); i++) port = await ask()
  recent.push(port)
  if (recent.length > REMEMBERED) recent.shift()
  return port
}

export async function freeTcpPort (): Promise<number> {
  return await freshPort('tcp', async () => await new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => { const p = (s.address() as net.AddressInfo).port; s.close(() => { resolve(p) }) })
  }))
}

export async function freeUdpPort (): Promise<number> {
  return await freshPort('udp', async () => await new Promise((resolve) => {
    const s = dgram.createSocket('udp4')
    s.bind(0, '0.0.0.0', () => { const p = s.address().port; s.close(() => { resolve(p) }) })
  }))
}

/**
 * Sends `msg` to 127.0.0.1:port from a fresh socket (a new flow), again every 100 ms, and resolves with the first
 * answer; rejects after `tries` sends without one.
 */
export async function udpAsk (port: number, msg: string, tries = 50, host = '127.0.0.1'): Promise<string> {
  const sock = dgram.createSocket('udp4')
  try {
    return await new Promise<string>((resolve, reject) => {
      let sent = 0
      const send = (): void => {
        if (sent++ >= tries) { clearInterval(timer); reject(new Error(`no UDP answer from ${host}:${port}`)); return }
        sock.send(msg, port, host)
      }
      const timer = setInterval(send, 100)
      sock.once('message', (m) => { clearInterval(timer); resolve(m.toString()) })
      sock.on('error', () => { /* a refused send: the next try */ })
      send()
    })
  } finally { sock.close() }
}

/**
 * `docker run` arguments (after the options) of a UDP server answering `pong <message>` on `port`: busybox has none,
 * so node from the host's /usr runs in the container.
 */
export function udpEchoArgs (port: number): string[] {
  return ['-v', '/usr:/usr:ro', '-v', '/lib:/lib:ro', '-v', '/lib64:/lib64:ro', 'busybox',
    process.execPath, '-e', `const s = require('dgram').createSocket('udp4'); s.on('message', (m, r) => { s.send('pong ' + m, r.port, r.address) }); s.bind(${port})`]
}

export interface FakeDns { address: string, queries: string[], close: () => void }

/** A DNS responder on address:53 answering the names of `answers` (A records) and NXDOMAIN for the rest. */
export async function fakeDns (address: string, names: Record<string, string>): Promise<FakeDns> {
  // reuseAddr: a host resolver listening on 0.0.0.0:53 does not keep it from binding one address
  const sock = dgram.createSocket({ type: 'udp4', reuseAddr: true })
  const queries: string[] = []
  sock.on('message', (msg, r) => {
    const q = parseQuery(msg)
    if (q === null) return
    const name = q.name.replace(/\.$/, '')
    queries.push(name)
    const ip = names[name]
    const answers = ip !== undefined && q.type === TYPE_A ? [{ type: TYPE_A, data: Buffer.from(ip.split('.').map(Number)) }] : []
    sock.send(buildReply(msg, q, { answers, rcode: ip !== undefined ? 0 : 3 }), r.port, r.address)
  })
  await new Promise<void>((resolve, reject) => {
    sock.once('error', (err) => { sock.close(); reject(err) })
    sock.bind(53, address, () => { resolve() })
  })
  return { address, queries, close: () => { sock.close() } }
}
