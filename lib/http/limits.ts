// Connection and request-body limits for the Engine API and registry listeners (both use HttpListeners):
//   - at most `maxConnections` connections at once, and `maxConnectionsPerClient` from one TCP address (Unix socket
//     callers are local and not counted per client); beyond, the connection gets a 503 (or 429 per client) with
//     Retry-After and is closed before anything is read;
//   - a request body that sends nothing for `bodyIdleTimeout` ms while the server is reading it gets a 408 and the
//     connection is closed. The timer restarts with every byte, so a long upload that keeps moving is never cut;
//     while the handler itself holds the body back (the request's buffer full, so Node stopped reading the socket)
//     the client is not blamed.
// Headers must arrive within `headersTimeout`; an idle keep-alive connection closes after `keepAliveTimeout`.
import type http from 'node:http'
import type net from 'node:net'
import { logger } from '../log.js'

const log = logger('http:limits')

export interface ConnectionLimits {
  /** Connections open at once (default 1024). */
  maxConnections?: number
  /** Connections open at once from one TCP client address (default 128). */
  maxConnectionsPerClient?: number
  /** Milliseconds a request body may send nothing while being read (default 60 s). */
  bodyIdleTimeout?: number
  /** Milliseconds to receive a request's headers (default 60 s). */
  headersTimeout?: number
  /** Milliseconds an idle keep-alive connection stays open (default 10 min: Docker clients keep theirs long). */
  keepAliveTimeout?: number
}

export const DEFAULT_LIMITS: Readonly<Required<ConnectionLimits>> = Object.freeze({
  maxConnections: 1024,
  maxConnectionsPerClient: 128,
  bodyIdleTimeout: 60_000,
  headersTimeout: 60_000,
  keepAliveTimeout: 10 * 60_000
})

/** How a listener answers a timed-out request body (each surface has its own error shape). */
export type TimeoutReply = (res: http.ServerResponse, message: string) => void

export function resolveLimits (l: ConnectionLimits = {}): Required<ConnectionLimits> {
  const out = { ...DEFAULT_LIMITS }
  for (const k of Object.keys(DEFAULT_LIMITS) as Array<keyof ConnectionLimits>) {
    const v = l[k]
    if (v === undefined) continue
    if (!Number.isSafeInteger(v) || v < 1) throw new RangeError(`${k} must be a positive integer`)
    out[k] = v
  }
  return out
}

function refuse (socket: net.Socket, status: 429 | 503, message: string): void {
  const body = JSON.stringify({ message })
  const reason = status === 429 ? 'Too Many Requests' : 'Service Unavailable'
  socket.end(`HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nRetry-After: 1\r\nConnection: close\r\n\r\n${body}`)
  socket.setTimeout(5000, () => { socket.destroy() })
}

/**
 * Counts the connections of every server of one service (all its listeners share the caps) and refuses those over
 * a cap. Install with `watch(server)` before the server listens; every accepted socket counts (hijacked ones too)
 * until it closes.
 */
export class ConnectionGate {
  private open = 0
  private readonly perClient = new Map<string, number>()
  private readonly limits: Required<ConnectionLimits>

  constructor (limits: Required<ConnectionLimits>) { this.limits = limits }

  watch (server: http.Server): void {
    server.on('connection', (socket: net.Socket) => { this.admit(socket) })
  }

  private admit (socket: net.Socket): void {
    const { maxConnections, maxConnectionsPerClient } = this.limits
    const addr = socket.remoteAddress
    if (this.open >= maxConnections) {
      log('refusing a connection: %d open', this.open)
      refuse(socket, 503, `too many connections (limit ${maxConnections})`)
      return
    }
    const mine = addr === undefined ? 0 : this.perClient.get(addr) ?? 0
    if (addr !== undefined && mine >= maxConnectionsPerClient) {
      log('refusing a connection from %s: %d open', addr, mine)
      refuse(socket, 429, `too many connections from ${addr} (limit ${maxConnectionsPerClient})`)
      return
    }
    this.open++
    if (addr !== undefined) this.perClient.set(addr, mine + 1)
    socket.once('close', () => {
      this.open--
      if (addr === undefined) return
      const n = (this.perClient.get(addr) ?? 1) - 1
      if (n <= 0) this.perClient.delete(addr); else this.perClient.set(addr, n)
    })
  }
}

/** Times out request bodies that stop moving (see the header comment). */
export function guardBodies (server: http.Server, limits: Required<ConnectionLimits>, reply: TimeoutReply): void {
  const ms = limits.bodyIdleTimeout
  server.on('request', function limitsOnRequest (req: http.IncomingMessage, res: http.ServerResponse) {
    // no body to wait for (a request without Content-Length or Transfer-Encoding has none, RFC 9112 6.3): no timer
    // (the parser has not marked such a request complete yet when it is emitted)
    if (req.complete || (req.headers['content-length'] === undefined && req.headers['transfer-encoding'] === undefined)) return
    const socket = req.socket
    const onIdle = (): void => {
      if (req.complete || socket.destroyed) return
      // our own back-pressure: Node stops reading the socket once the request's buffer is full, so the client may be
      // blocked by us; below that mark the socket is being read and the silence is the client's
      if (!res.writableFinished && req.readableLength >= req.readableHighWaterMark) { socket.setTimeout(ms); return }
      log('request body idle for %d ms: %s %s', ms, req.method, req.url)
      res.shouldKeepAlive = false
      if (!res.headersSent) {
        reply(res, `request body timed out: nothing received for ${Math.round(ms / 1000)} s`)
        res.once('finish', () => { socket.destroySoon() })
      } else {
        socket.destroy()
      }
    }
    req.setTimeout(ms, onIdle)
    req.once('end', () => {
      req.off('timeout', onIdle)
      // leave the keep-alive timer Node sets once the reply is out alone
      if (!res.writableFinished) socket.setTimeout(0)
    })
  })
}

/** Applies the header and keep-alive timeouts Node enforces itself. */
export function applyTimeouts (server: http.Server, limits: Required<ConnectionLimits>): void {
  server.headersTimeout = limits.headersTimeout
  server.keepAliveTimeout = limits.keepAliveTimeout
  server.requestTimeout = 0 // whole-request deadline off: long uploads that keep moving are fine (guardBodies)
}
