// Taking a request body's connection away from Node's HTTP server, so the blob helper can read the rest of the body
// from it (blob-receiver.c). Node's parser reads the connection itself (no 'data' events) and has, by the time a
// route runs, read the head and a first part of the body (up to the request's buffer, 16 KiB, plus one socket read);
// then it stopped, the request's buffer being full, or it goes on until it is. For a body with a Content-Length the
// rest is exactly the declared length minus the bytes the request holds: everything the parser read past the head
// is body until the body is complete. (A chunked body cannot be handed over: the parser's place in the chunk framing
// is not visible from JavaScript.) What is used of Node's internals, all stable since Node 12: the socket's
// `_handle` (the descriptor to pass), its `_httpMessage` (the reply being written on it) and its `_paused`, the
// server's own "do not read" mark (pipelined requests use it), which makes the server stop the socket again whenever
// something resumes it.
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Socket } from 'node:net'

type ServerSocket = Socket & {
  _handle?: { reading?: boolean, readStop?: () => number } | null
  _paused?: boolean
  _httpMessage?: ServerResponse | null
  encrypted?: boolean
}

export interface TakenBody {
  socket: Socket
  /** The connection's native handle, for the helper. */
  handle: object
  /** Body bytes Node had read already, in order. */
  pending: Buffer[]
  pendingBytes: number
}

/**
 * Stops Node reading `req`'s connection for good and returns the body bytes already read. Null (nothing changed)
 * when the connection cannot be handed over: TLS, closed, the body complete or already being consumed. After it,
 * the connection can carry no further request: the reply must close it.
 */
export function takeBody (req: IncomingMessage): TakenBody | null {
  const socket = req.socket as ServerSocket
  const handle = socket._handle
  if (req.complete || req.readableFlowing === true || socket.destroyed || socket.encrypted === true) return null
  if (handle === null || handle === undefined || typeof handle.readStop !== 'function') return null
  // a reply to an earlier request still going out on this connection (pipelined): once it is done, Node would
  // resume reading (its `_paused` mark is also how it waits for such replies)
  if (socket._httpMessage?.req !== req) return null
  socket._paused = true
  socket.pause()
  if (handle.reading === true) { handle.reading = false; handle.readStop() }
  const pending: Buffer[] = []
  let pendingBytes = 0
  for (let c = req.read() as Buffer | null; c !== null; c = req.read() as Buffer | null) {
    pending.push(c)
    pendingBytes += c.length
  }
  return { socket, handle, pending, pendingBytes }
}
