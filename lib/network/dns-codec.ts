// The few DNS messages the embedded resolver needs (RFC 1035, RFC 6891's OPT record): read a query's question and
// its EDNS payload size, write a reply with A, AAAA or PTR records. Pure.

export const TYPE_A = 1
export const TYPE_PTR = 12
export const TYPE_MX = 15
export const TYPE_AAAA = 28
export const TYPE_OPT = 41
export const CLASS_IN = 1
export const RCODE_NOERROR = 0
export const RCODE_SERVFAIL = 2
export const RCODE_NXDOMAIN = 3
/** The largest reply over UDP to a query without EDNS (RFC 1035 4.2.1). */
export const UDP_MIN = 512
const HEADER = 12
const FLAG_QR = 0x8000
const FLAG_TC = 0x0200
const FLAG_RA = 0x0080

export interface Question {
  id: number
  flags: number
  /** The name as asked, without the trailing dot. */
  name: string
  type: number
  cls: number
  /** The end of the question in the message. */
  end: number
  /** The reply size the client accepts over UDP: its EDNS payload size, at least 512. */
  udpSize: number
}

/** An answer record for the question's name: its type and rdata. */
export interface Answer { type: number, data: Buffer }

/** The first question of a query, or null when the message is malformed or not a query. */
export function parseQuery (msg: Buffer): Question | null {
  if (msg.length < HEADER) return null
  const flags = msg.readUInt16BE(2)
  if ((flags & FLAG_QR) !== 0) return null // a response
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
  const end = off + 4
  return { id: msg.readUInt16BE(0), flags, name: labels.join('.'), type: msg.readUInt16BE(off), cls: msg.readUInt16BE(off + 2), end, udpSize: ednsSize(msg, end) }
}

/** The OPT record's payload size when it directly follows the only question (as every resolver sends it). */
function ednsSize (msg: Buffer, end: number): number {
  if (msg.readUInt16BE(4) !== 1 || msg.readUInt16BE(6) !== 0 || msg.readUInt16BE(8) !== 0 || msg.readUInt16BE(10) < 1) return UDP_MIN
  if (end + 11 > msg.length || msg[end] !== 0 || msg.readUInt16BE(end + 1) !== TYPE_OPT) return UDP_MIN
  return Math.max(UDP_MIN, msg.readUInt16BE(end + 3))
}

/** A domain name in wire form (labels, uncompressed); empty labels dropped. */
export function encodeName (name: string): Buffer {
  const parts: Buffer[] = []
  for (const l of name.split('.')) {
    if (l === '') continue
    const b = Buffer.from(l, 'latin1').subarray(0, 63)
    parts.push(Buffer.from([b.length]), b)
  }
  parts.push(Buffer.from([0]))
  return Buffer.concat(parts)
}

/**
 * The reply to `query` (its question echoed): `answers` for the question's name, or none, with `rcode`. A reply
 * longer than `maxSize` keeps the answers that fit and is marked truncated (TC), as dockerd's resolver does.
 * Recursion available, not authoritative (dockerd's flags).
 */
export function buildReply (query: Buffer, q: Question, o: { answers?: Answer[], rcode?: number, ttl?: number, maxSize?: number } = {}): Buffer {
  const answers = o.answers ?? []
  const ttl = o.ttl ?? 600
  const max = o.maxSize ?? 65535
  const question = query.subarray(HEADER, q.end)
  const records: Buffer[] = []
  let size = HEADER + question.length
  let truncated = false
  for (const a of answers) {
    const r = Buffer.alloc(12 + a.data.length)
    r.writeUInt16BE(0xc000 | HEADER, 0) // the question's name
    r.writeUInt16BE(a.type, 2)
    r.writeUInt16BE(CLASS_IN, 4)
    r.writeUInt32BE(ttl, 6)
    r.writeUInt16BE(a.data.length, 10)
    a.data.copy(r, 12)
    if (size + r.length > max) { truncated = true; break }
    records.push(r)
    size += r.length
  }
  const head = Buffer.alloc(HEADER)
  head.writeUInt16BE(q.id, 0)
  // QR, opcode and RD copied, RA
  head.writeUInt16BE(FLAG_QR | (q.flags & 0x7900) | FLAG_RA | (truncated ? FLAG_TC : 0) | ((o.rcode ?? RCODE_NOERROR) & 0xf), 2)
  head.writeUInt16BE(1, 4)
  head.writeUInt16BE(records.length, 6)
  return Buffer.concat([head, question, ...records], size)
}
