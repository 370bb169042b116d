import { EOL } from './constants.js'

/** Data accepted by EventBuffer: strings are encoded as UTF-8, byte arrays are copied. */
export type BufferData = string | Uint8Array

/** The by-reference argument of copyout() (PHP's `string &$data`). */
export interface CopyoutTarget {
  data: string
}

const EMPTY = Buffer.alloc(0)

function toBytes (data: BufferData): Buffer {
  return typeof data === 'string' ? Buffer.from(data, 'utf8') : Buffer.from(data)
}

/**
 * libevent's evbuffer as PHP's EventBuffer exposes it: a byte queue kept as a list of chunks (no copy per add),
 * linearised only on demand (pullup, search across chunks). Strings in and out are UTF-8; positions and lengths
 * are in bytes. readBytes() gives the raw bytes.
 */
export class EventBuffer {
  static readonly EOL_ANY = EOL.ANY
  static readonly EOL_CRLF = EOL.CRLF
  static readonly EOL_CRLF_STRICT = EOL.CRLF_STRICT
  static readonly EOL_LF = EOL.LF

  private chunks: Buffer[] = []
  private total = 0

  /** Number of bytes stored (PHP's readonly `$length`). */
  get length (): number {
    return this.total
  }

  /** Bytes in the first chunk (PHP's readonly `$contiguous_space`). */
  get contiguous_space (): number {
    return this.chunks.length === 0 ? 0 : this.chunks[0]!.length
  }

  add (data: BufferData): boolean {
    const bytes = toBytes(data)
    if (bytes.length > 0) this.pushChunk(bytes)
    return true
  }

  /** Moves every byte of `other` to the end of this buffer. */
  addBuffer (other: EventBuffer): boolean {
    if (other === this) return false
    for (const c of other.chunks) this.chunks.push(c)
    this.total += other.total
    other.chunks = []
    other.total = 0
    return true
  }

  /** Moves every byte of `other` to the front of this buffer. */
  prependBuffer (other: EventBuffer): boolean {
    if (other === this) return false
    this.chunks = other.chunks.concat(this.chunks)
    this.total += other.total
    other.chunks = []
    other.total = 0
    return true
  }

  prepend (data: BufferData): boolean {
    const bytes = toBytes(data)
    if (bytes.length > 0) {
      this.chunks.unshift(bytes)
      this.total += bytes.length
    }
    return true
  }

  /** Removes up to `max` bytes from the front and returns them as a string. */
  read (max: number): string {
    return this.readBytes(max).toString('utf8')
  }

  /** Removes up to `max` bytes from the front and returns them. */
  readBytes (max: number): Buffer {
    const n = Math.max(0, Math.min(Math.trunc(max) || 0, this.total))
    const out = this.peek(0, n)
    this.drainBytes(n)
    return out
  }

  /** Copies up to `max` bytes into `target.data` without removing them; returns the count (evbuffer_copyout). */
  copyout (target: CopyoutTarget, max: number): number {
    if (max < 0) return -1
    const n = Math.min(Math.trunc(max) || 0, this.total)
    if (n > 0) target.data = this.peek(0, n).toString('utf8')
    return n
  }

  drain (len: number): boolean {
    if (!(len >= 0)) return false
    this.drainBytes(Math.min(Math.trunc(len), this.total))
    return true
  }

  /**
   * Linearises the first `size` bytes (all with a negative size) and returns them; null when `size` exceeds the
   * length (evbuffer_pullup).
   */
  pullup (size: number): string | null {
    const n = size < 0 ? this.total : Math.trunc(size)
    if (n > this.total) return null
    if (n === 0) return ''
    this.linearize(n)
    return this.chunks[0]!.toString('utf8', 0, n)
  }

  /** Bytes `start` … `start + length` (to the end with a negative length) as a string; false for a bad start. */
  substr (start: number, length = -1): string | false {
    if (!(start >= 0) || start > this.total) return false
    const end = length < 0 ? this.total : Math.min(this.total, start + Math.trunc(length))
    return this.peek(Math.trunc(start), end).toString('utf8')
  }

  /** Byte position of the first occurrence of `what` in [start, end), or false (evbuffer_search[_range]). */
  search (what: BufferData, start = -1, end = -1): number | false {
    const needle = toBytes(what)
    const from = start >= 0 && start <= this.total ? Math.trunc(start) : 0
    const to = end >= 0 && end <= this.total ? Math.trunc(end) : this.total
    if (this.total === 0) return false
    this.linearize(this.total)
    const hay = this.chunks[0]!
    const pos = hay.indexOf(needle, from)
    if (pos === -1 || pos + needle.length > to) return false
    return pos
  }

  /** Position of the first end of line of the given style at or after `start`, or false. */
  searchEol (start = -1, eolStyle: number = EOL.ANY): number | false {
    if (this.total === 0) return false
    this.linearize(this.total)
    const found = findEol(this.chunks[0]!, start >= 0 ? Math.trunc(start) : 0, eolStyle)
    return found === null ? false : found.pos
  }

  /** Removes one line and returns it without its terminator; null when no full line is buffered. */
  readLine (eolStyle: number): string | null {
    if (this.total === 0) return null
    this.linearize(this.total)
    const found = findEol(this.chunks[0]!, 0, eolStyle)
    if (found === null) return null
    const line = this.chunks[0]!.toString('utf8', 0, found.pos)
    this.drainBytes(found.pos + found.len)
    return line
  }

  /** Every byte as one Buffer (no copy when there is a single chunk). Internal fast path for replies. */
  toBuffer (): Buffer {
    if (this.chunks.length === 0) return EMPTY
    if (this.chunks.length > 1) this.linearize(this.total)
    return this.chunks[0]!
  }

  /** Removes and returns every chunk (used to move a body into a socket without copying). */
  takeChunks (): Buffer[] {
    const c = this.chunks
    this.chunks = []
    this.total = 0
    return c
  }

  /** Appends a Buffer without copying it; the caller gives up ownership. */
  pushChunk (bytes: Buffer): void {
    this.chunks.push(bytes)
    this.total += bytes.length
  }

  private peek (start: number, end: number): Buffer {
    if (end <= start) return EMPTY
    let skip = start
    let i = 0
    while (i < this.chunks.length && skip >= this.chunks[i]!.length) skip -= this.chunks[i++]!.length
    const first = this.chunks[i]!
    if (skip + (end - start) <= first.length) return Buffer.from(first.subarray(skip, skip + end - start))
    const out = Buffer.allocUnsafe(end - start)
    let off = 0
    while (off < out.length) {
      const c = this.chunks[i++]!
      const take = Math.min(c.length - skip, out.length - off)
      c.copy(out, off, skip, skip + take)
      off += take
      skip = 0
    }
    return out
  }

  private drainBytes (n: number): void {
    let left = n
    while (left > 0) {
      const c = this.chunks[0]!
      if (c.length <= left) {
        this.chunks.shift()
        left -= c.length
      } else {
        this.chunks[0] = c.subarray(left)
        left = 0
      }
    }
    this.total -= n
  }

  private linearize (n: number): void {
    if (this.chunks.length < 2 || this.chunks[0]!.length >= n) return
    const all = Buffer.concat(this.chunks, this.total)
    this.chunks = [all]
  }
}

interface EolMatch {
  pos: number
  len: number
}

/** evbuffer_search_eol() over one contiguous Buffer. */
export function findEol (buf: Buffer, start: number, style: number): EolMatch | null {
  switch (style) {
    case EOL.ANY: {
      let pos = -1
      for (let i = start; i < buf.length; i++) {
        const c = buf[i]
        if (c === 13 || c === 10) { pos = i; break }
      }
      if (pos === -1) return null
      let end = pos
      while (end < buf.length && (buf[end] === 13 || buf[end] === 10)) end++
      return { pos, len: end - pos }
    }
    case EOL.CRLF: {
      const lf = buf.indexOf(10, start)
      if (lf === -1) return null
      if (lf > start && buf[lf - 1] === 13) return { pos: lf - 1, len: 2 }
      return { pos: lf, len: 1 }
    }
    case EOL.CRLF_STRICT: {
      const pos = buf.indexOf('\r\n', start, 'latin1')
      return pos === -1 ? null : { pos, len: 2 }
    }
    case EOL.LF: {
      const lf = buf.indexOf(10, start)
      return lf === -1 ? null : { pos: lf, len: 1 }
    }
    default:
      return null
  }
}
