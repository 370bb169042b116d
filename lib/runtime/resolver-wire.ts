// The frames the daemon and a container's monitor exchange for the container's embedded DNS resolver
// (lib/runtime/shim/resolver.h): [type u8][length u32 BE][payload], both ways. Pure.

/** attach.sock message that makes the connection the resolver's peer. */
export const MSG_RESOLVER = 4
export const FRAME_HEADER = 5
/** The largest payload either side sends: a token and a DNS message. */
export const MAX_FRAME = 4 + 65535

export const FRAME = {
  start: 0x53, // 'S' daemon → monitor: open the resolver in the namespace at this path
  upstreams: 0x55, // 'U' daemon → monitor: the servers other names are forwarded to
  answer: 0x41, // 'A' daemon → monitor: [token][DNS message]
  forward: 0x46, // 'F' daemon → monitor: [token]
  query: 0x51, // 'Q' monitor → daemon: [token][transport][DNS message]
  started: 0x52 // 'R' monitor → daemon: '' or the error
} as const

/** A server the monitor forwards to: from the container's namespace, or from its own (the host's). */
export interface UpstreamServer { address: string, port: number, hostNamespace: boolean }

export interface Frame { type: number, payload: Buffer }

export interface Query { token: number, tcp: boolean, message: Buffer }

/** [header, payload]: written as two buffers, never concatenated. */
export function frame (type: number, payload: Buffer): [Buffer, Buffer] {
  const h = Buffer.allocUnsafe(FRAME_HEADER)
  h[0] = type
  h.writeUInt32BE(payload.length, 1)
  return [h, payload]
}

export function tokenPayload (token: number, message?: Buffer): Buffer {
  const t = Buffer.allocUnsafe(4)
  t.writeUInt32BE(token >>> 0, 0)
  return message === undefined ? t : Buffer.concat([t, message])
}

/**
 * The UPSTREAMS payload: one line per server, `h|c ADDRESS PORT` (h: from the monitor's namespace, c: from the
 * container's), at most 3 (dockerd asks three).
 */
export function upstreamsPayload (list: UpstreamServer[]): Buffer {
  return Buffer.from(list.slice(0, 3).map((u) => `${u.hostNamespace ? 'h' : 'c'} ${u.address} ${u.port}\n`).join(''))
}

export function decodeQuery (payload: Buffer): Query | null {
  if (payload.length < 5 + 12) return null
  return { token: payload.readUInt32BE(0), tcp: payload[4] === 1, message: payload.subarray(5) }
}

/**
 * Splits a byte stream into frames, keeping a chunk list (no copy per chunk unless a frame spans chunks). Throws
 * on a frame longer than MAX_FRAME.
 */
export class FrameDecoder {
  private chunks: Buffer[] = []
  private size = 0

  push (chunk: Buffer): Frame[] {
    this.chunks.push(chunk)
    this.size += chunk.length
    const out: Frame[] = []
    for (;;) {
      if (this.size < FRAME_HEADER) break
      const head = this.peek(FRAME_HEADER)
      const len = head.readUInt32BE(1)
      if (len > MAX_FRAME) throw new Error(`resolver frame of ${len} bytes`)
      if (this.size < FRAME_HEADER + len) break
      const all = this.take(FRAME_HEADER + len)
      out.push({ type: all[0] as number, payload: all.subarray(FRAME_HEADER) })
    }
    return out
  }

  private peek (n: number): Buffer {
    const first = this.chunks[0] as Buffer
    return first.length >= n ? first : Buffer.concat(this.chunks).subarray(0, n)
  }

  private take (n: number): Buffer {
    let first = this.chunks[0] as Buffer
    if (first.length < n) {
      first = Buffer.concat(this.chunks)
      this.chunks = [first]
    }
    const out = first.subarray(0, n)
    if (first.length === n) this.chunks.shift()
    else this.chunks[0] = first.subarray(n)
    this.size -= n
    return out
  }
}
