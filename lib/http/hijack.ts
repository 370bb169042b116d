// Taking over a connection for attach and exec start: the `101 UPGRADED` form for Upgrade requests, the plain
// `200 OK` raw-stream form otherwise. Returns the duplex for output and a readable for the client's input.
import type { Duplex, Readable } from 'node:stream'
import type { ApiContext } from './api-context.js'
import { closeWhenOutputEnds } from './linger.js'

export const RAW_STREAM = 'application/vnd.docker.raw-stream'
export const MULTIPLEXED_STREAM = 'application/vnd.docker.multiplexed-stream'

export interface Hijacked {
  /** Where output goes; end() it when the output is over. */
  out: Duplex
  /** The client's input (stdin), already past any request body that was not stdin. */
  input: Readable
  upgraded: boolean
}

export function hijack (ctx: ApiContext, contentType: string, extraHeaders: Record<string, string> = {}): Hijacked {
  const extra = Object.entries(extraHeaders).map(([k, v]) => `${k}: ${v}\r\n`).join('')
  if (ctx.upgrade !== null) {
    const { socket, head } = ctx.upgrade
    socket.write(`HTTP/1.1 101 UPGRADED\r\nContent-Type: ${contentType}\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n${extra}\r\n`)
    if (head.length > 0) socket.unshift(head)
    return { out: socket, input: socket, upgraded: true }
  }
  const socket = ctx.req.socket
  socket.setTimeout(0)
  closeWhenOutputEnds(socket)
  socket.write(`HTTP/1.1 200 OK\r\nContent-Type: ${RAW_STREAM}\r\n${extra}\r\n`)
  // the ServerResponse never writes: mark it finished from Node's point of view when the socket goes
  return { out: socket, input: ctx.req, upgraded: false }
}

/** Writes an error on a taken-over connection before any stream bytes (dockerd's attach error form). */
export function hijackError (ctx: ApiContext, status: number, text: string, message: string): void {
  const sock = ctx.upgrade?.socket ?? ctx.req.socket
  sock.end(`HTTP/1.1 ${status} ${text}\r\nContent-Type: ${RAW_STREAM}\r\n\r\n${message}\r\n`)
}
