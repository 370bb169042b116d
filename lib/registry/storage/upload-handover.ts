// Taking a request body's connection away from Node's HTTP server, so the blob helper can read the rest of the body
// from it (blob-receiver.c). Node's parser reads the connection itself (no 'data' events) and has, by the time a
// route runs, read the head and a first part of the body (up to the request's buffer, 16 KiB, plus one socket read);
// then it stopped, the request's buffer being full, or it goes on until it is. For a body with a Content-Length the
// rest is exactly the declared length minus the bytes the request holds: everything the parser read past the head
// is body until the body is complete. A chunked body is held as its request is emitted (`holdChunkedBody`, from the
// server's request listener): Node's parser is then inside the read that ended the head, which is read again here
// (the parser's own copy) to learn where the chunk framing will stand at its end, and the connection is paused so
// that no further read happens; the route then hands it over, or releases it (`releaseBody`) and reads it itself.
// What is used of Node's internals, all stable since Node 12: the socket's `_handle` (the descriptor to pass), its
// `_httpMessage` (the reply being written on it), `parser.getCurrentBuffer()` (through lib/http/parser-read.ts) and
// `_paused`, the server's own "do not read" mark (pipelined requests use it), which makes the server stop the socket
// again whenever something resumes it.
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Socket } from 'node:net'
import { headRead } from '../../http/parser-read.js'

type ServerSocket = Socket & {
  _handle?: { reading?: boolean, readStop?: () => number } | null
  _paused?: boolean
  _httpMessage?: ServerResponse | null
  encrypted?: boolean
}

/** Where a chunked body's framing stands for the helper: 0 at a chunk-size line's start, 1 in a chunk's data with
 * `chunk` bytes left, 2 and 3 before the CR and the LF that end a chunk's data. */
export interface ChunkedAt { phase: 0 | 1 | 2 | 3, chunk: number }

interface Held { at: ChunkedAt, bytes: number, idleMs: number }
/** A held body's state rides on its request (no state kept in this module). */
const HELD = Symbol('berth.heldUploadBody')
type Holding = IncomingMessage & { [HELD]?: Held }

/**
 * Where the framing of a chunked body stands after `b` (from `from`, the body's first byte), and how many data bytes
 * it held; null when it ends where the helper does not resume (inside a chunk-size line, at the last chunk) or is
 * not well formed (Node's parser will say so).
 */
export function chunkedState (b: Buffer, from: number): { at: ChunkedAt, bytes: number } | null {
  let i = from
  let bytes = 0
  for (;;) {
    if (i === b.length) return { at: { phase: 0, chunk: 0 }, bytes }
    const eol = b.indexOf('\r\n', i, 'latin1')
    if (eol < 0) return null
    const line = b.toString('latin1', i, eol)
    const semi = line.indexOf(';')
    const hex = semi < 0 ? line : line.slice(0, semi)
    if (!/^[0-9a-fA-F]{1,12}$/.test(hex)) return null
    const size = parseInt(hex, 16)
    if (size === 0) return null
    i = eol + 2
    if (b.length - i < size) return { at: { phase: 1, chunk: size - (b.length - i) }, bytes: bytes + b.length - i }
    bytes += size
    i += size
    if (i === b.length) return { at: { phase: 2, chunk: 0 }, bytes }
    if (b[i] !== 13) return null
    if (i + 1 === b.length) return { at: { phase: 3, chunk: 0 }, bytes }
    if (b[i + 1] !== 10) return null
    i += 2
  }
}

/** Pauses the connection the way takeBody does. */
function stopReading (socket: ServerSocket, handle: { reading?: boolean, readStop?: () => number }): void {
  socket._paused = true
  socket.pause()
  if (handle.reading === true && handle.readStop !== undefined) { handle.reading = false; handle.readStop() }
}

/**
 * Called while `req` (a chunked body) is being emitted: when its head began the read Node's parser is in, pauses the
 * connection after that read and remembers where its framing will stand; else does nothing. While held the body's
 * idle timer is off (the client is not blamed for the registry's wait), `releaseBody` puts it back.
 */
export function holdChunkedBody (req: IncomingMessage, idleMs: number): void {
  const socket = req.socket as ServerSocket
  const handle = socket._handle
  if (socket.destroyed || socket.encrypted === true || handle === null || handle === undefined || typeof handle.readStop !== 'function') return
  if (socket._httpMessage?.req !== req) return
  const read = headRead(req)
  if (read === null) return
  const state = chunkedState(read.bytes, read.bodyAt)
  if (state === null) return
  stopReading(socket, handle)
  socket.setTimeout(0)
  ;(req as Holding)[HELD] = { ...state, idleMs }
}

/** Lets Node read a held body again (the route reads it itself); nothing for a body not held. */
export function releaseBody (req: IncomingMessage): void {
  const h = (req as Holding)[HELD]
  if (h === undefined) return
  delete (req as Holding)[HELD]
  const socket = req.socket as ServerSocket
  if (socket.destroyed) return
  socket._paused = false
  socket.resume()
  socket.setTimeout(h.idleMs)
}

export interface TakenBody {
  socket: Socket
  /** The connection's native handle, for the helper. */
  handle: object
  /** Body bytes Node had read already, in order. */
  pending: Buffer[]
  pendingBytes: number
  /** For a chunked body, where its framing stands after them. */
  chunked?: ChunkedAt
}

/**
 * Stops Node reading `req`'s connection for good and returns the body bytes already read. Null (nothing changed)
 * when the connection cannot be handed over: TLS, closed, the body complete or already being consumed, a chunked
 * body not held. After it, the connection can carry no further request: the reply must close it.
 */
export function takeBody (req: IncomingMessage): TakenBody | null {
  const socket = req.socket as ServerSocket
  const handle = socket._handle
  const h = (req as Holding)[HELD]
  if (req.complete || req.readableFlowing === true || socket.destroyed || socket.encrypted === true) return null
  if (handle === null || handle === undefined || typeof handle.readStop !== 'function') return null
  // a reply to an earlier request still going out on this connection (pipelined): once it is done, Node would
  // resume reading (its `_paused` mark is also how it waits for such replies)
  if (socket._httpMessage?.req !== req) return null
  const chunked = req.headers['transfer-encoding'] !== undefined
  // chunked: only as held, and only if Node's parser gave the request what the held read said it would
  if (chunked && (h === undefined || req.readableLength !== h.bytes)) return null
  stopReading(socket, handle)
  delete (req as Holding)[HELD]
  const pending: Buffer[] = []
  let pendingBytes = 0
  for (let c = req.read() as Buffer | null; c !== null; c = req.read() as Buffer | null) {
    pending.push(c)
    pendingBytes += c.length
  }
  return { socket, handle, pending, pendingBytes, ...(chunked && h !== undefined ? { chunked: h.at } : {}) }
}
