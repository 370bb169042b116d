// A request body its client stopped sending with a FIN before it was complete (a Content-Length body shorter than
// announced, a chunked body cut before its last chunk). Such a client can still read a reply, and Go's server (so
// distribution and dockerd) gives the handler's own: the body's read fails ("unexpected EOF", the request's context
// canceled) and the handler answers. Node's parser instead reports the early end as a client error
// (HPE_INVALID_EOF_STATE) and, left alone, the request stream never ends nor fails: the route waits for good, and the
// usual answer to a client error is a bare 400 written under the reply the route would have sent. Here the request
// stream fails instead, with a 'canceled' error (499, as distribution logs it), and the socket is kept so the route's
// reply still reaches the client.
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Duplex } from 'node:stream'
import { EngineError } from '../errors.js'

/** The mark a cut request carries (on the request itself: no state kept in this module). */
const CUT = Symbol('berth.bodyCutShort')
type Markable = IncomingMessage & { [CUT]?: true }

/** The error a cut body's reads fail with. */
export function clientDisconnected (): EngineError {
  return new EngineError('canceled', 'client disconnected')
}

/** Whether `req`'s client closed its side before the body was complete (it may still read the reply). */
export function bodyCutShort (req: IncomingMessage): boolean {
  return (req as Markable)[CUT] === true
}

/** Marks `req` as cut short by its client (a body read off Node, e.g. by the registry's blob helper, that met a FIN). */
export function markBodyCut (req: IncomingMessage): void {
  ;(req as Markable)[CUT] = true
}

/**
 * For a server's 'clientError' listener: when `err` is the client's FIN in the middle of the body of a request still
 * to be answered, fails that request's stream with clientDisconnected() (its socket kept, so its reply can be sent)
 * and returns true; false for any other client error (answer it as usual).
 */
export function failCutBody (err: NodeJS.ErrnoException, socket: Duplex): boolean {
  if (err.code !== 'HPE_INVALID_EOF_STATE') return false
  const res = (socket as Duplex & { _httpMessage?: ServerResponse | null })._httpMessage
  if (res === null || res === undefined || res.headersSent || !socket.writable) return false
  const req = res.req
  if (req.complete || req.destroyed) return false
  ;(req as Markable)[CUT] = true
  req.on('error', () => {}) // a route not reading yet learns it from bodyCutShort, or from the stream's state
  // IncomingMessage's own _destroy destroys the socket too (and the reply with it): this request's does not
  ;(req as IncomingMessage & { _destroy: (e: Error | null, cb: (e?: Error | null) => void) => void })._destroy = (e, cb) => { cb(e) }
  req.destroy(clientDisconnected())
  // nothing more can come from the client: the reply says so and our side ends once it is out (a kept-alive
  // connection would wait for a next request that cannot come, and the client for our close)
  res.shouldKeepAlive = false
  res.once('finish', () => { socket.end() })
  return true
}
