// Detach keys on an attached TTY's input (dockerd's escape proxy, moby/term): the key sequence (ctrl-p ctrl-q unless
// the client names another) ends the attach and is never passed to the process; the bytes of a sequence begun are
// held until the next byte decides. Pure.

/** dockerd's default: ctrl-p, ctrl-q. */
export const DEFAULT_DETACH_KEYS = Buffer.from([16, 17])

const CTRL = '@abcdefghijklmnopqrstuvwxyz[\\]^_'

/** moby/term ToBytes: comma-separated keys, each one character, `ctrl-<c>` or `DEL`; null when one is unknown. */
export function parseDetachKeys (keys: string): Buffer | null {
  const out: number[] = []
  for (const key of keys.split(',')) {
    if (key.length === 1) { out.push(key.charCodeAt(0) & 0xff); continue }
    const ctrl = /^ctrl-(.)$/.exec(key)
    const code = ctrl === null ? -1 : CTRL.indexOf(ctrl[1] as string)
    if (code !== -1) out.push(code)
    else if (key === 'DEL') out.push(127)
    else return null
  }
  return Buffer.from(out)
}

/** Filters input for a detach sequence: push() returns the bytes to pass on, and whether the sequence came. */
export class DetachDetector {
  private readonly keys: Buffer
  private pos = 0

  constructor (keys: Buffer) { this.keys = keys.length > 0 ? keys : DEFAULT_DETACH_KEYS }

  push (chunk: Buffer): { data: Buffer, detached: boolean } {
    if (this.pos === 0 && !chunk.includes(this.keys[0] as number)) return { data: chunk, detached: false }
    const out: number[] = []
    for (const b of chunk) {
      if (b === this.keys[this.pos]) {
        this.pos++
        if (this.pos === this.keys.length) return { data: Buffer.from(out), detached: true }
        continue
      }
      // a sequence begun and broken: its held bytes go on, then this byte (not taken as a new start, as in moby/term)
      for (let i = 0; i < this.pos; i++) out.push(this.keys[i] as number)
      this.pos = 0
      out.push(b)
    }
    return { data: out.length === chunk.length && this.pos === 0 ? chunk : Buffer.from(out), detached: false }
  }
}
