// Taking over a connection for attach and exec start: the `101 UPGRADED` form for Upgrade requests, the plain
// `200 OK` raw-stream form otherwise. Returns the duplex for output and a readable for the client's input.
// dockerd takes the connection over whether or not the client asked to upgrade (older clients and curl-based scripts
// send no Upgrade header), and what follows the request on it is stdin. Node's parser would read those bytes as a
// next request (400), so such requests are made upgrades as their head is parsed (takeOverWithoutUpgrade).
import type http from 'node:http'
import type { IncomingMessage } from 'node:http'
import type { Socket } from 'node:net'
import type { Duplex, Readable } from 'node:stream'
import type { ApiContext } from './api-context.js'
import { closeWhenOutputEnds } from './linger.js'
import { bodyInHeadRead } from './parser-read.js'

export const RAW_STREAM = 'application/vnd.docker.raw-stream'
export const MULTIPLEXED_STREAM = 'application/vnd.docker.multiplexed-stream'

export interface Hijacked {
  /** Where output goes; end() it when the output is over. */
  out: Duplex
  /** The client's input (stdin), already past any request body that was not stdin. */
  input: Readable
  /** The input is the connection itself (taken over at the end of the head): a declared request body comes first. */
  takenOver: boolean
}

export function hijack (ctx: ApiContext, contentType: string, extraHeaders: Record<string, string> = {}): Hijacked {
  const extra = Object.entries(extraHeaders).map(([k, v]) => `${k}: ${v}\r\n`).join('')
  if (ctx.upgrade !== null) {
    const { socket, head } = ctx.upgrade
    // dockerd answers the upgrade a client asked for, else the plain form (the stream is framed the same)
    socket.write(ctx.req.headers.upgrade !== undefined
      ? `HTTP/1.1 101 UPGRADED\r\nContent-Type: ${contentType}\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n${extra}\r\n`
      : `HTTP/1.1 200 OK\r\nContent-Type: ${RAW_STREAM}\r\n${extra}\r\n`)
    if (head.length > 0) socket.unshift(head)
    return { out: socket, input: socket, takenOver: true }
  }
  const socket = ctx.req.socket
  socket.setTimeout(0)
  closeWhenOutputEnds(socket)
  socket.write(`HTTP/1.1 200 OK\r\nContent-Type: ${RAW_STREAM}\r\n${extra}\r\n`)
  // the ServerResponse never writes: mark it finished from Node's point of view when the socket goes
  return { out: socket, input: ctx.req, takenOver: false }
}

/** A request as the parser hands it to the server: `upgrade` is llhttp's flag (Upgrade + Connection: upgrade). */
type ParsedRequest = IncomingMessage & { upgrade: boolean }

type ParserSocket = Socket & {
  parser?: { onIncoming?: (req: ParsedRequest, keepAlive: boolean) => number } | null
  _httpMessage?: unknown
}

/**
 * Has Node's parser hand a connection over (the server's 'upgrade' event, with the bytes read past the head) for a
 * request without an Upgrade header that `takesOver(req, body)` picks (`body`: its declared body when the read that
 * ended its head held all of it, else null). Node makes that choice in the parser's per-connection callback
 * (onIncoming, where an upgrade stops the parser at the end of the head); this wraps that callback for every
 * connection of `server` (Node sets it afresh on each: parsers are pooled). Left alone: chunked requests, and a
 * request behind a reply still being sent on its connection (pipelined: the hijack's bytes would mix with it).
 */
export function takeOverWithoutUpgrade (server: http.Server, takesOver: (req: IncomingMessage, body: () => Buffer | null) => boolean): void {
  const wrap = (socket: ParserSocket): void => {
    const parser = socket.parser
    const onIncoming = parser?.onIncoming
    if (parser === null || parser === undefined || typeof onIncoming !== 'function') return
    parser.onIncoming = function takeOverOnIncoming (this: unknown, req: ParsedRequest, keepAlive: boolean): number {
      if (!req.upgrade && req.headers['transfer-encoding'] === undefined && (socket._httpMessage === null || socket._httpMessage === undefined)) {
        let wanted = false
        try { wanted = takesOver(req, () => bodyInHeadRead(req)) } catch { /* not taken over: the route answers */ }
        // Node's own callback then sees an upgrade and has the parser stop after the head
        if (wanted) req.upgrade = true
      }
      return onIncoming.call(this, req, keepAlive)
    }
  }
  // plain listeners parse on 'connection', TLS ones on 'secureConnection'; Node's own listener comes first
  server.on('connection', wrap)
  server.on('secureConnection', wrap)
}

/** Writes an error on a taken-over connection before any stream bytes (dockerd's attach error form). */
export function hijackError (ctx: ApiContext, status: number, text: string, message: string): void {
  const sock = ctx.upgrade?.socket ?? ctx.req.socket
  sock.end(`HTTP/1.1 ${status} ${text}\r\nContent-Type: ${RAW_STREAM}\r\n\r\n${message}\r\n`)
}
