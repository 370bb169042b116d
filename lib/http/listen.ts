// Listening on Unix sockets (with stale-socket cleanup and mode) and TCP, and closing everything on close().
import http from 'node:http'
import https from 'node:https'
import type tls from 'node:tls'
import net from 'node:net'
import { chmod, mkdir, unlink } from 'node:fs/promises'
import { dirname } from 'node:path'
import type { Duplex } from 'node:stream'
import { invalidArgument, conflict } from '../errors.js'
import { applyTimeouts, ConnectionGate, guardBodies, resolveLimits, type ConnectionLimits, type TimeoutReply } from './limits.js'

export type ListenAddress =
  | { kind: 'unix', path: string }
  | { kind: 'tcp', host: string, port: number }

/** Parses dockerd's -H forms: unix:///path, /path, tcp://host:port, fd:// is not supported. */
export function parseHost (spec: string): ListenAddress {
  if (spec.startsWith('unix://')) {
    const path = spec.slice('unix://'.length)
    if (path === '') throw invalidArgument(`invalid host ${spec}`)
    return { kind: 'unix', path }
  }
  if (spec.startsWith('/')) return { kind: 'unix', path: spec }
  if (spec.startsWith('tcp://')) {
    const rest = spec.slice('tcp://'.length)
    const m = /^(?:\[([^\]]+)\]|([^:]*))(?::(\d+))?$/.exec(rest)
    if (m === null) throw invalidArgument(`invalid host ${spec}`)
    const host = m[1] ?? m[2] ?? ''
    const port = m[3] === undefined ? 2375 : Number(m[3])
    if (port > 65535) throw invalidArgument(`invalid port in ${spec}`)
    return { kind: 'tcp', host: host === '' ? '127.0.0.1' : host, port }
  }
  throw invalidArgument(`invalid host ${spec}: use unix:///path or tcp://host:port`)
}

export function formatAddress (addr: ListenAddress): string {
  return addr.kind === 'unix' ? `unix://${addr.path}` : `tcp://${addr.host.includes(':') ? `[${addr.host}]` : addr.host}:${addr.port}`
}

async function socketInUse (path: string): Promise<boolean> {
  return await new Promise((resolve) => {
    const s = net.connect(path)
    s.once('connect', () => { s.destroy(); resolve(true) })
    s.once('error', () => { resolve(false) })
  })
}

/** Listens on one address; for Unix sockets removes a stale file first and refuses a live one. */
export async function listenOn (server: net.Server, addr: ListenAddress): Promise<ListenAddress> {
  if (addr.kind === 'unix') {
    await mkdir(dirname(addr.path), { recursive: true })
    if (await socketInUse(addr.path)) throw conflict(`${addr.path} is in use by another daemon`)
    await unlink(addr.path).catch(() => {})
  }
  await new Promise<void>((resolve, reject) => {
    const onError = (err: Error): void => { reject(err) }
    server.once('error', onError)
    const done = (): void => { server.off('error', onError); resolve() }
    if (addr.kind === 'unix') server.listen(addr.path, done)
    else server.listen(addr.port, addr.host, done)
  })
  if (addr.kind === 'unix') {
    await chmod(addr.path, 0o660)
    return addr
  }
  const a = server.address() as net.AddressInfo
  return { kind: 'tcp', host: addr.host, port: a.port }
}

/**
 * Server settings for Docker clients (client-protocol §1.1): long-lived keep-alive (Go and urllib3 keep idle
 * connections far longer than Node's 5 s), no whole-request timeout (long uploads; limits.ts times out bodies that
 * stop moving instead), large headers (X-Registry-Auth, dockerode's query-string copies of create options).
 */
export function createHttpServer (tlsOptions?: tls.TlsOptions): http.Server {
  const options = {
    maxHeaderSize: 1024 * 1024,
    requestTimeout: 0,
    headersTimeout: 60_000,
    keepAliveTimeout: 10 * 60_000,
    noDelay: true
  }
  // an https.Server is an http.Server to everything that uses it here (request, upgrade, clientError, close)
  const server = tlsOptions === undefined ? http.createServer(options) : https.createServer({ ...options, ...tlsOptions }) as unknown as http.Server
  server.keepAliveTimeout = 10 * 60_000
  return server
}

/** Closes a server: stops listening, ends idle keep-alive sockets, destroys the rest. Resolves when closed. */
export async function closeServer (server: http.Server, sockets: Set<net.Socket>): Promise<void> {
  const closed = new Promise<void>((resolve) => { server.close(() => { resolve() }) })
  server.closeIdleConnections()
  for (const s of sockets) s.destroy()
  sockets.clear()
  server.closeAllConnections()
  await closed
}

/** Tracks every socket a server accepts (including hijacked ones) so close() can end them. */
export function trackSockets (server: net.Server): Set<net.Socket> {
  const sockets = new Set<net.Socket>()
  server.on('connection', function serverOnConnection (s: net.Socket) {
    sockets.add(s)
    s.once('close', () => { sockets.delete(s) })
  })
  return sockets
}

/** Answers a request Node could not parse with a bare 400 (431 for oversized headers) and closes. */
export function replyToClientError (err: NodeJS.ErrnoException, socket: Duplex): void {
  if (!socket.writable || err.code === 'ECONNRESET') { socket.destroy(); return }
  const status = err.code === 'HPE_HEADER_OVERFLOW' ? 431 : 400
  socket.end(`HTTP/1.1 ${status} ${http.STATUS_CODES[status] ?? ''}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`)
}

/**
 * The listeners of one service: an http.Server per address (each with the Docker-client settings above and its
 * sockets tracked), set up by the owner's callback, closed together.
 */
export class HttpListeners {
  readonly addresses: ListenAddress[] = []
  private readonly servers: Array<{ server: http.Server, sockets: Set<net.Socket> }> = []
  private readonly limits: Required<ConnectionLimits>
  private readonly gate: ConnectionGate
  private readonly timeoutReply: TimeoutReply

  /** `limits`: connection caps and timeouts (limits.ts has the defaults); `timeoutReply` answers an idle body. */
  constructor (opts: { limits?: ConnectionLimits, timeoutReply?: TimeoutReply } = {}) {
    this.limits = resolveLimits(opts.limits)
    this.gate = new ConnectionGate(this.limits)
    this.timeoutReply = opts.timeoutReply ?? ((res, message) => {
      const body = JSON.stringify({ message })
      res.writeHead(408, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body), Connection: 'close' })
      res.end(body)
    })
  }

  async listen (addr: ListenAddress, setup: (server: http.Server) => void, tlsOptions?: tls.TlsOptions): Promise<ListenAddress> {
    const server = createHttpServer(tlsOptions)
    applyTimeouts(server, this.limits)
    this.gate.watch(server)
    const sockets = trackSockets(server)
    guardBodies(server, this.limits, this.timeoutReply)
    setup(server)
    this.servers.push({ server, sockets })
    const bound = await listenOn(server, addr)
    this.addresses.push(bound)
    return bound
  }

  async close (): Promise<void> {
    await Promise.all(this.servers.map(async ({ server, sockets }) => {
      if (server.listening) await closeServer(server, sockets)
    }))
  }
}
