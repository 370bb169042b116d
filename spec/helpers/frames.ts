// A multiplexed (stdcopy) body split into its frames, read here byte by byte rather than through lib/stream's decoder,
// so a test of our framing does not check it with itself.
import assert from 'node:assert/strict'

/** Splits a multiplexed body into [stream, text] frames; the body must end on a frame's end. */
export function frames (body: Buffer): Array<[number, string]> {
  const out: Array<[number, string]> = []
  let i = 0
  while (i + 8 <= body.length) {
    const len = body.readUInt32BE(i + 4)
    out.push([body[i] as number, body.subarray(i + 8, i + 8 + len).toString()])
    i += 8 + len
  }
  assert.equal(i, body.length)
  return out
}
