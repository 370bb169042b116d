// Buffer → latin1 string (one char per byte) without Buffer#toString's argument handling: the hot path turns
// every request line and header into strings. latin1Slice is the native method toString('latin1') ends in.

interface Latin1Slicer {
  latin1Slice (start: number, end: number): string
}

export function latin1 (buf: Buffer, start: number, end: number): string {
  return (buf as unknown as Latin1Slicer).latin1Slice(start, end)
}
