// EventHttp: the server object (evhttp). Several listeners (bind / accept) share one callback table.

import { fstatSync } from 'node:fs'
import { Server, type Socket } from 'node:net'
import { Connection, type ConnectionOwner } from './connection.js'
import { HandleTransport } from './handle-transport.js'
import { SocketTransport } from './socket-transport.js'
import {
  DEFAULT_ALLOWED_METHODS, DEFAULT_CONTENT_TYPE, LISTEN_BACKLOG, SAFETY_MAX_BODY_SIZE, SAFETY_MAX_HEADERS_SIZE,
} from './constants.js'
import type { EventBase } from './event-base.js'
import type { EventHttpRequest, HttpCallback } from './event-http-request.js'
import { log } from './log.js'
import { decodePath } from './request-target.js'
import { listenSync, type BoundAddress } from './sync-listen.js'
import { streamBinding, type TcpHandle } from './uv-binding.js'


interface CallbackEntry {
  cb: HttpCallback
  arg: unknown
}

/** A listener made by bind(): the bound TCP handle, accepting connections itself. */
interface HandleListener {
  handle: ListeningHandle
  bound: BoundAddress
}

interface ListeningHandle extends TcpHandle {
  http?: EventHttp
}

/** A listener that is a net.Server: one given to accept(), or one made by accept(fd). */
interface ServerListener {
  server: Server
  /** Made by accept(fd): closed with the EventHttp. A server given to accept() is only detached. */
  owned: boolean
  onConnection: (socket: Socket) => void
}

/** Options for the net.Servers made here (accept(fd), or bind() without stream_wrap): half-open kept, so
 * requests already sent are answered after the client's FIN. */
const SERVER_OPTIONS = { allowHalfOpen: true }

/** libuv asks for 64 KiB per read; the same here, once per server. */
const READ_BUFFER_SIZE = 64 * 1024

/** The callback table is keyed by the path's bytes, as libevent's strcmp compares them. */
function pathKey (path: string): string {
  return Buffer.from(String(path), 'utf8').toString('latin1')
}

export class EventHttp implements ConnectionOwner {
  readonly defaultContentType = DEFAULT_CONTENT_TYPE
  /** The reason of the last failed bind() or accept() (also logged under DEBUG=berth:evhttp). */
  lastError: Error | null = null
  private readonly base: EventBase
  private readonly callbacks = new Map<string, CallbackEntry>()
  private gencb: CallbackEntry | null = null
  private allowedMethods: number = DEFAULT_ALLOWED_METHODS
  private maxHeadersSize = -1
  private maxBodySize = -1
  private timeoutMs = 0
  private readonly aliases: string[] = []
  private readonly handles: HandleListener[] = []
  private readonly servers: ServerListener[] = []
  private readonly connections = new Set<Connection>()
  /** The read buffer of the connections bind() listeners accept (a read is consumed before the next begins). */
  private readBuffer: Buffer | null = null

  constructor (base: EventBase, ctx?: unknown) {
    if (ctx !== undefined && ctx !== null) throw new TypeError('EventHttp: TLS (EventSslContext) is not supported')
    this.base = base
    base.attach(this)
  }

  /**
   * Binds and listens on address:port now. True only when the socket is bound and listening; false on a busy
   * port, an address that is not local, an empty or unresolvable address, a bracketed IPv6 literal (see
   * sync-listen.ts for the rules). Callable many times; every listener serves the same callbacks.
   */
  bind (address: string, port: number): boolean {
    const result = listenSync(address, port, LISTEN_BACKLOG)
    if (!result.ok) {
      this.lastError = result.error
      log('bind(%j, %j) failed: %s', address, port, result.error.message)
      return false
    }
    if (streamBinding() !== null) {
      const handle: ListeningHandle = result.handle
      handle.http = this
      handle.onconnection = handleOnConnection
      if (!this.base.dispatching) handle.unref()
      this.handles.push({ handle, bound: result.bound })
    } else {
      // No stream_wrap: net.Server adopts the listening handle and connections get net.Sockets.
      const server = new Server(SERVER_OPTIONS)
      server.listen(result.handle, LISTEN_BACKLOG)
      this.addServer(server, true)
    }
    log('listening on %s:%d', result.bound.address, result.bound.port)
    return true
  }

  /**
   * Serves an already listening socket: a listening net.Server (TCP or Unix socket; its sockets keep the
   * server's options, use `allowHalfOpen: true` to answer clients that half-close), or a listening socket's
   * file descriptor (owned from then on, closed with the server). False when it is neither.
   */
  accept (socket: Server | number): boolean {
    if (socket instanceof Server) {
      if (!socket.listening) {
        this.lastError = new Error('accept: the server is not listening')
        return false
      }
      this.addServer(socket, false)
      return true
    }
    if (typeof socket !== 'number' || !Number.isInteger(socket) || socket < 0) {
      this.lastError = new Error('accept: not a socket')
      return false
    }
    try {
      if (!fstatSync(socket).isSocket()) throw new Error(`fd ${socket} is not a socket`)
    } catch (err) {
      this.lastError = err as Error
      log('accept(%d) failed: %s', socket, (err as Error).message)
      return false
    }
    const server = new Server(SERVER_OPTIONS)
    server.listen({ fd: socket, backlog: LISTEN_BACKLOG })
    this.addServer(server, true)
    return true
  }

  /** Registers a callback for an exact (%-decoded) path; false when the path already has one. */
  setCallback<A = unknown> (path: string, cb: HttpCallback<A>, arg?: A): boolean {
    const key = pathKey(path)
    if (this.callbacks.has(key)) return false
    this.callbacks.set(key, { cb: cb as HttpCallback, arg })
    return true
  }

  /** Removes the callback of a path; false when there is none. */
  removeCallback (path: string): boolean {
    return this.callbacks.delete(pathKey(path))
  }

  /** Called for every path without a callback, instead of the built-in 404. */
  setDefaultCallback<A = unknown> (cb: HttpCallback<A>, arg?: A): void {
    this.gencb = { cb: cb as HttpCallback, arg }
  }

  /** Bitmask of EventHttpRequest.CMD_*; other methods (and unknown ones) get 501 Not Implemented. */
  setAllowedMethods (methods: number): void {
    this.allowedMethods = methods & 0xffff
  }

  /** Larger declared or received bodies get 413; negative means no limit of its own (the safety cap applies). */
  setMaxBodySize (value: number): void {
    this.maxBodySize = value
  }

  /** Request line + header lines (without CRLF) above this get 400; negative: no limit of its own. */
  setMaxHeadersSize (value: number): void {
    this.maxHeadersSize = value
  }

  /** Read/write timeout in seconds for new connections; on expiry the connection closes silently. */
  setTimeout (value: number): void {
    this.timeoutMs = value > 0 ? value * 1000 : 0
  }

  /** A host name that counts as this server for absolute-form request targets (case-insensitive). */
  addServerAlias (alias: string): boolean {
    this.aliases.push(String(alias))
    return true
  }

  removeServerAlias (alias: string): boolean {
    const i = this.aliases.findIndex((a) => sameHost(a, alias))
    if (i === -1) return false
    this.aliases.splice(i, 1)
    return true
  }

  /** The addresses this object listens on (port 0 binds report their ephemeral port). */
  getBoundAddresses (): BoundAddress[] {
    const out: BoundAddress[] = this.handles.map((l) => ({ ...l.bound }))
    for (const l of this.servers) {
      const a = l.server.address()
      if (a !== null && typeof a === 'object') out.push({ address: a.address, family: a.family, port: a.port })
      else if (typeof a === 'string') out.push({ address: a, family: 'unix', port: 0 })
    }
    return out
  }

  /** Closes the listeners (a server given to accept() is only detached) and every connection. */
  free (): Promise<void> {
    return this.shutdown(0)
  }

  /** @internal */
  isServerAlias (host: string): boolean {
    for (const a of this.aliases) if (sameHost(a, host)) return true
    return false
  }

  /** @internal evhttp_handle_request(). */
  handleRequest (req: EventHttpRequest): void {
    const error = req.errorCode
    if (error !== 0) {
      req.sendError(error)
      return
    }
    if ((this.allowedMethods & req.cmd) === 0) {
      req.sendError(501)
      return
    }
    const entry = this.callbacks.get(decodePath(req.rawPath)) ?? this.gencb
    if (entry === null) {
      req.sendNotFound()
      return
    }
    this.base.runCallback(entry.cb, req, entry.arg)
  }

  /** @internal */
  connectionClosed (conn: Connection): void {
    this.connections.delete(conn)
  }

  /** @internal Keeps the process alive through the listeners only while the base dispatches. */
  setRef (ref: boolean): void {
    for (const l of this.handles) {
      if (ref) l.handle.ref()
      else l.handle.unref()
    }
    for (const l of this.servers) {
      if (!l.owned) continue
      if (ref) l.server.ref()
      else l.server.unref()
    }
  }

  /** @internal Closes listeners; connections flush queued output for at most graceMs. */
  shutdown (graceMs: number): Promise<void> {
    const waits: Array<Promise<void>> = []
    for (const l of this.handles.splice(0)) {
      l.handle.onconnection = ignoreConnection
      waits.push(new Promise((resolve) => l.handle.close(() => resolve())))
    }
    for (const l of this.servers.splice(0)) {
      l.server.removeListener('connection', l.onConnection)
      if (l.owned) waits.push(new Promise((resolve) => l.server.close(() => resolve())))
    }
    for (const conn of this.connections) {
      waits.push(conn.whenClosed())
      if (graceMs > 0) conn.shutdown(graceMs)
      else conn.destroy()
    }
    return Promise.all(waits).then(() => undefined)
  }

  /** @internal A connection accepted by a bind() listener. */
  connectHandle (client: TcpHandle): void {
    const stream = streamBinding()!
    const conn = new Connection(this, this.limits())
    this.connections.add(conn)
    if (this.readBuffer === null) this.readBuffer = Buffer.allocUnsafe(READ_BUFFER_SIZE)
    conn.attach(new HandleTransport(client, conn, stream.binding, stream.eof, this.readBuffer), this.timeoutMs)
  }

  /** @internal A connection from a net.Server given to accept(). */
  connectSocket (socket: Socket): void {
    const conn = new Connection(this, this.limits())
    this.connections.add(conn)
    conn.attach(new SocketTransport(socket, conn), this.timeoutMs)
  }

  /** Limits are taken when a connection is accepted, as libevent copies them into each evhttp_connection. */
  private limits (): { maxHeadersSize: number, maxBodySize: number } {
    return {
      maxHeadersSize: this.maxHeadersSize >= 0 ? this.maxHeadersSize : SAFETY_MAX_HEADERS_SIZE,
      maxBodySize: this.maxBodySize >= 0 ? this.maxBodySize : SAFETY_MAX_BODY_SIZE,
    }
  }

  private addServer (server: Server, owned: boolean): void {
    const onConnection = serverOnConnection.bind(null, this)
    server.on('connection', onConnection)
    if (owned) {
      server.on('error', serverOnError)
      if (!this.base.dispatching) server.unref()
    }
    this.servers.push({ server, owned, onConnection })
  }
}

function sameHost (a: string, b: string): boolean {
  return a.length === b.length && a.toLowerCase() === b.toLowerCase()
}

function serverOnConnection (http: EventHttp, socket: Socket): void {
  http.connectSocket(socket)
}

function ignoreConnection (): void {}

function handleOnConnection (this: ListeningHandle, status: number, client?: TcpHandle): void {
  if (status !== 0 || client === undefined) {
    log('accept failed: %s', status)
    return
  }
  this.http!.connectHandle(client)
}

function serverOnError (err: Error): void {
  log('listener error: %s', err.message)
}
