// Closing a connection after a reply sent before its request body was read (a refused upload), without resetting it
// under a client that is still sending: such a client reads the reply only once its writes let it, and a socket
// closed with unread bytes makes the kernel send a reset, which can reach the client before it read the reply (a
// client writing 8 MiB as fast as it can saw no reply at all). As Go's server (and so distribution) does, the reply
// goes out with `Connection: close` and a FIN, then the connection is kept for a moment while what still arrives is
// read and dropped, and closed at once when the client closes its side.
import type { ServerResponse } from 'node:http'
import type { Socket } from 'node:net'
import { bodyCutShort } from './cut-body.js'

/** How long the connection stays after the reply's FIN (Go's server waits 500 ms). */
export const LINGER_MS = 1000

/**
 * Asks Node to close `res`'s connection after the reply and, when the request body is not all read, to keep reading
 * (and dropping) it for up to `ms` after the reply's FIN instead of closing at once.
 */
export function closeAfterReply (res: ServerResponse, ms = LINGER_MS): void {
  res.shouldKeepAlive = false
  const socket = res.socket as Socket | null
  if (socket === null || res.req.complete) return
  res.once('finish', () => {
    // Node's server has just called socket.destroySoon() (its 'finish' listener comes first): end() now, destroy()
    // once the FIN is out. The destroy waits for the client (its close) or `ms` instead; Node's parser goes on
    // dropping the body meanwhile (req._dump)
    // a client that closed its side already (a body cut short) sends nothing more: Node's close after the FIN stands
    if (socket.destroyed || socket.readableEnded || bodyCutShort(res.req)) return
    socket.removeListener('finish', socket.destroy)
    const timer = setTimeout(() => { socket.destroy() }, ms)
    timer.unref()
    socket.once('close', () => { clearTimeout(timer) })
  })
}

/**
 * A taken-over connection (attach, exec start) whose output the daemon has ended: what the client still sends is read
 * and dropped, and the connection closes at the client's close, or `ms` after the daemon's FIN. Its input may have
 * been left paused (stdin that the container stopped reading, a request body read off the socket): such a
 * connection never saw its client's close and kept its descriptor for good.
 */
export function closeWhenOutputEnds (socket: Socket, ms = LINGER_MS): void {
  socket.once('finish', () => {
    if (socket.destroyed) return
    const timer = setTimeout(() => { socket.destroy() }, ms)
    timer.unref()
    socket.once('close', () => { clearTimeout(timer) })
    socket.once('end', () => { socket.destroy() })
    socket.resume()
  })
}
