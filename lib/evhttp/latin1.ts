// Buffer → latin1 string (one char per byte) without Buffer#toString's argument handling: the hot path turns
// every request line and header into strings. latin1Slice is the native method toString('latin1') ends in;
// it is on every Buffer but missing from @types/node, hence this declaration.

declare global {
  interface Buffer {
    latin1Slice (start: number, end: number): string
  }
}

export function latin1 (buf: Buffer, start: number, end: number): string {
  return buf.latin1Slice(start, end)
}
