// The few DNS messages the embedded resolver needs (RFC 1035): read a query's question, write an answer. Pure.

export const TYPE_A = 1
export const TYPE_AAAA = 28
export const CLASS_IN = 1
const HEADER = 12

export interface Question { id: number, flags: number, name: string, type: number, cls: number, end: number }

/** The first question of a query, or null when the message is malformed or not a query. */
export function parseQuery (msg: Buffer): Question | null {
  if (msg.length < HEADER) return null
  const flags = msg.readUInt16BE(2)
  if ((flags & 0x8000) !== 0) return null // a response
  if (msg.readUInt16BE(4) < 1) return null
  const labels: string[] = []
  let off = HEADER
  for (;;) {
    if (off >= msg.length) return null
    const len = msg[off] as number
    off++
    if (len === 0) break
    if (len > 63 || off + len > msg.length) return null // no compression in a question we accept
    labels.push(msg.toString('latin1', off, off + len))
    off += len
  }
  if (off + 4 > msg.length) return null
  return { id: msg.readUInt16BE(0), flags, name: labels.join('.'), type: msg.readUInt16BE(off), cls: msg.readUInt16BE(off + 2), end: off + 4 }
}

/**
 * The answer to `query` (whose question is echoed): A records for `ips`, or none with `rcode` (0 NOERROR,
 * 3 NXDOMAIN, 2 SERVFAIL).
 */
export function buildAnswer (query: Buffer, q: Question, ips: string[], rcode = 0, ttl = 600): Buffer {
  const question = query.subarray(HEADER, q.end)
  const out = Buffer.alloc(HEADER + question.length + ips.length * 16)
  out.writeUInt16BE(q.id, 0)
  // QR, opcode copied, AA, RD copied, RA
  out.writeUInt16BE(0x8000 | (q.flags & 0x7800) | 0x0400 | (q.flags & 0x0100) | 0x0080 | (rcode & 0xf), 2)
  out.writeUInt16BE(1, 4)
  out.writeUInt16BE(ips.length, 6)
  out.writeUInt16BE(0, 8)
  out.writeUInt16BE(0, 10)
  question.copy(out, HEADER)
  let off = HEADER + question.length
  for (const ip of ips) {
    out.writeUInt16BE(0xc000 | HEADER, off) // pointer to the question's name
    out.writeUInt16BE(TYPE_A, off + 2)
    out.writeUInt16BE(CLASS_IN, off + 4)
    out.writeUInt32BE(ttl, off + 6)
    out.writeUInt16BE(4, off + 10)
    const parts = ip.split('.').map(Number)
    for (let i = 0; i < 4; i++) out[off + 12 + i] = parts[i] ?? 0
    off += 16
  }
  return out
}
