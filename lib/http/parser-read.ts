// The read Node's HTTP parser is executing, seen from inside its callbacks (a request being emitted): the parser's
// own copy of those bytes (`parser.getCurrentBuffer()`, Node's way to find an upgraded connection's first bytes).
// Used to look at what arrived with a request's head before Node goes on with it: where a chunked body's framing will
// stand (the registry's upload hand-over), a declared body already there (a take-over without Upgrade: hijack.ts).
import type { IncomingMessage } from 'node:http'
import type { Socket } from 'node:net'

type ParserSocket = Socket & { parser?: { getCurrentBuffer?: () => Buffer } | null }

/**
 * When the read being parsed began with `req`'s head: its bytes and where the body starts in them; null otherwise
 * (the head began in an earlier read, another request came first in it, not HTTP/1.1, or not inside the parser).
 */
export function headRead (req: IncomingMessage): { bytes: Buffer, bodyAt: number } | null {
  const parser = (req.socket as ParserSocket | null)?.parser
  if (typeof parser?.getCurrentBuffer !== 'function') return null
  const b = parser.getCurrentBuffer()
  const first = `${req.method ?? ''} ${req.url ?? ''} HTTP/1.1\r\n`
  if (b.length < first.length || b.toString('latin1', 0, first.length) !== first) return null
  const end = b.indexOf('\r\n\r\n', 0, 'latin1')
  return end < 0 ? null : { bytes: b, bodyAt: end + 4 }
}

/** `req`'s declared body when the read that ended its head held all of it (empty when none is declared), else null. */
export function bodyInHeadRead (req: IncomingMessage): Buffer | null {
  const n = Number(req.headers['content-length'] ?? 0)
  if (!Number.isSafeInteger(n) || n < 0) return null
  if (n === 0) return Buffer.alloc(0)
  const r = headRead(req)
  return r === null || r.bytes.length < r.bodyAt + n ? null : r.bytes.subarray(r.bodyAt, r.bodyAt + n)
}
