// Listening on Unix sockets (with stale-socket cleanup and mode) and TCP, and closing everything on close().
import http from 'node:http'
import type https from 'node:https'
import type tls from 'node:tls'
import net from 'node:net'
import { chmodSync, chownSync, fstat, lstatSync, mkdirSync, unlinkSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { promisify } from 'node:util'
import { dirname } from 'node:path'
import { createRequire } from 'node:module'
import type { Duplex } from 'node:stream'
import { invalidArgument, conflict } from '../errors.js'
import { applyTimeouts, ConnectionGate, guardBodies, resolveLimits, type ConnectionLimits, type TimeoutReply } from './limits.js'
import { dateReplies } from './dated-response.js'

export type ListenAddress =
  | { kind: 'unix', path: string, fd?: number }
  | { kind: 'tcp', host: string, port: number, fd?: number }

/** What a listener is asked for: an address, or a listening socket inherited from the service manager. */
export type ListenTarget = ListenAddress | { kind: 'fd', fd: number }

/** A `-H` value: an address, or `fd://` (every socket systemd passed), `fd://N` or `fd://NAME` (one of them). */
export type HostSpec = ListenAddress | { kind: 'fd', selector: string }

/** The longest Unix socket path (sockaddr_un's 108 bytes, less the terminating NUL). */
export const MAX_SOCKET_PATH = 107

/** Parses a -H value, fd:// included. */
export function parseHostSpec (spec: string): HostSpec {
  if (spec.startsWith('fd://')) return { kind: 'fd', selector: spec.slice('fd://'.length) }
  return parseHost(spec)
}

/** Parses dockerd's -H address forms: unix:///path, /path, tcp://host:port (fd:// is parseHostSpec's). */
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

export function formatAddress (addr: ListenAddress | HostSpec): string {
  if (addr.kind === 'fd') return `fd://${addr.selector}`
  if (addr.kind === 'unix' && addr.path === '' && addr.fd !== undefined) return `fd://${addr.fd}`
  return addr.kind === 'unix' ? `unix://${addr.path}` : `tcp://${addr.host.includes(':') ? `[${addr.host}]` : addr.host}:${addr.port}`
}

async function socketInUse (path: string): Promise<boolean> {
  return await new Promise((resolve) => {
    const s = net.connect(path)
    s.once('connect', () => { s.destroy(); resolve(true) })
    s.once('error', () => { resolve(false) })
  })
}

/**
 * Whether a Unix socket may be created at `path`: 'absent', or 'stale' (a socket nobody answers on, which listenOn
 * replaces). Refuses a path longer than the kernel takes, a live socket, and anything that is not a socket: such a
 * file is never removed.
 */
export async function checkSocketPath (path: string): Promise<'absent' | 'stale'> {
  if (socketPathKind(path) === 'absent') return 'absent'
  if (await socketInUse(path)) throw conflict(`${path} is in use by another daemon`)
  return 'stale'
}

/**
 * What is at a Unix socket path, synchronously (the start checks): 'absent', or 'socket' (live or stale:
 * checkSocketPath asks). Refuses a path longer than the kernel takes and anything that is not a socket.
 */
export function socketPathKind (path: string): 'absent' | 'socket' {
  const bytes = Buffer.byteLength(path)
  if (bytes > MAX_SOCKET_PATH) throw invalidArgument(`socket path ${path} is too long: ${bytes} bytes, a Unix socket path takes at most ${MAX_SOCKET_PATH}`)
  let st
  try {
    st = lstatSync(path)
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code
    if (code === 'ENOENT') return 'absent'
    if (code === 'ENOTDIR') throw invalidArgument(`socket path ${path}: a parent is not a directory`)
    throw invalidArgument(`socket path ${path}: ${(err as Error).message}`, { cause: err })
  }
  if (!st.isSocket()) throw invalidArgument(`${path} exists and is not a socket (${fileKind(st)}): refusing to replace it`)
  return 'socket'
}

function fileKind (st: { isFile: () => boolean, isDirectory: () => boolean, isSymbolicLink: () => boolean, isFIFO: () => boolean }): string {
  return st.isFile() ? 'a regular file' : st.isDirectory() ? 'a directory' : st.isSymbolicLink() ? 'a symbolic link' : st.isFIFO() ? 'a FIFO' : 'a device'
}

/** The path a Unix socket descriptor is bound to ('' when unnamed or abstract), from /proc/net/unix by inode. */
async function unixSocketPath (fd: number): Promise<string> {
  try {
    const ino = String((await promisify(fstat)(fd)).ino)
    for (const line of (await readFile('/proc/net/unix', 'utf8')).split('\n')) {
      const cols = line.trim().split(/\s+/)
      if (cols[6] === ino && cols[7] !== undefined && cols[7].startsWith('/')) return cols[7]
    }
  } catch { /* unknown: shown as fd://N */ }
  return ''
}

export interface ListenOptions {
  /** Group of a Unix socket (mode 0660); unset: the daemon's own. */
  group?: number
  /** Called with the first directory created for a Unix socket's parent (a failed start removes it). */
  createdDir?: (dir: string) => void
}

/**
 * Listens on one address, or on an inherited listening socket (fd). A Unix socket path is checked first
 * (checkSocketPath): a stale socket is replaced, a live one or a non-socket refused.
 */
export async function listenOn (server: net.Server, target: ListenTarget, o: ListenOptions = {}): Promise<ListenAddress> {
  // a Unix socket's file calls are synchronous (a few µs each; as promises, a trip through libuv's pool each on a
  // restart's way to /_ping)
  if (target.kind === 'unix') {
    const created = mkdirSync(dirname(target.path), { recursive: true })
    if (created !== undefined) o.createdDir?.(created)
    if (await checkSocketPath(target.path) === 'stale') unlinkSync(target.path)
  }
  await new Promise<void>((resolve, reject) => {
    const onError = (err: Error): void => { reject(err) }
    server.once('error', onError)
    const done = (): void => { server.off('error', onError); resolve() }
    if (target.kind === 'unix') server.listen(target.path, done)
    else if (target.kind === 'fd') server.listen({ fd: target.fd }, done)
    else server.listen(target.port, target.host, done)
  })
  if (target.kind === 'unix') {
    chmodSync(target.path, 0o660)
    if (o.group !== undefined) chownSync(target.path, -1, o.group)
    return target
  }
  const a = server.address()
  if (target.kind === 'fd') {
    // the service manager made it (path, mode, group): it is only used; Node does not say a Unix one's path
    if (a === null || typeof a === 'string') return { kind: 'unix', path: typeof a === 'string' ? a : await unixSocketPath(target.fd), fd: target.fd }
    return { kind: 'tcp', host: a.address, port: a.port, fd: target.fd }
  }
  return { kind: 'tcp', host: target.host, port: (a as net.AddressInfo).port }
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
  // node:https (and node:tls under it) is loaded only for a TLS listener: a daemon on a Unix socket does not pay for it
  const server = tlsOptions === undefined ? http.createServer(options) : (createRequire(import.meta.url)('node:https') as typeof https).createServer({ ...options, ...tlsOptions }) as unknown as http.Server
  server.keepAliveTimeout = 10 * 60_000
  // the Date header written without Date's toUTCString (its time-zone lookup loads ICU: dated-response.ts)
  dateReplies(server)
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

  /** Directories made for Unix sockets' parents (a failed start removes them). */
  readonly createdDirs: string[] = []

  async listen (addr: ListenTarget, setup: (server: http.Server) => void, tlsOptions?: tls.TlsOptions, o: ListenOptions = {}): Promise<ListenAddress> {
    const server = createHttpServer(tlsOptions)
    applyTimeouts(server, this.limits)
    this.gate.watch(server)
    const sockets = trackSockets(server)
    guardBodies(server, this.limits, this.timeoutReply)
    setup(server)
    this.servers.push({ server, sockets })
    const bound = await listenOn(server, addr, { ...o, createdDir: (d) => { this.createdDirs.push(d) } })
    this.addresses.push(bound)
    return bound
  }

  async close (): Promise<void> {
    await Promise.all(this.servers.map(async ({ server, sockets }) => {
      if (server.listening) await closeServer(server, sockets)
    }))
  }
}
