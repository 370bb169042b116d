// The line joiner: records cut at newlines by the monitor, a line written in pieces joined into one message, lines
// over 16 KiB cut into dockerd's 16 KiB partial messages.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { LineJoiner, PARTIAL_MESSAGE_SIZE } from '../../lib/stream/log-lines.js'
import { LOG_CONT, LOG_END, LOG_LINE } from '../../lib/stream/log-record.js'

type Msg = [number, bigint, string, boolean]

function run (records: Array<[number, number, bigint, string]>, flush = false): Msg[] {
  const j = new LineJoiner()
  const out: Msg[] = []
  const sink = (s: number, ts: bigint, d: Buffer, whole: boolean): void => { out.push([s, ts, d.toString(), whole]) }
  for (const [s, f, ts, p] of records) j.push(s, f, ts, Buffer.from(p), sink)
  if (flush) j.flush(sink)
  return out
}

test('whole lines pass as they are; pieces are joined with the time the line ended', () => {
  assert.deepEqual(run([[1, LOG_LINE, 1n, 'a\n'], [1, LOG_CONT, 2n, 'ab'], [1, LOG_LINE, 3n, 'c\n']]), [[1, 1n, 'a\n', true], [1, 3n, 'abc\n', false]])
})

test('the two streams are joined apart', () => {
  assert.deepEqual(run([[1, LOG_CONT, 1n, 'o1'], [2, LOG_CONT, 2n, 'e1'], [2, LOG_LINE, 3n, 'e2\n'], [1, LOG_LINE, 4n, 'o2\n']]), [[2, 3n, 'e1e2\n', false], [1, 4n, 'o1o2\n', false]])
})

test('an END record closes a line without newline; a held line is dropped until flush', () => {
  assert.deepEqual(run([[1, LOG_CONT, 1n, 'prompt> '], [1, LOG_END, 5n, '']]), [[1, 5n, 'prompt> ', false]])
  assert.deepEqual(run([[1, LOG_CONT, 1n, 'held']]), [])
  assert.deepEqual(run([[1, LOG_CONT, 1n, 'held']], true), [[1, 1n, 'held', false]])
})

test('a line over 16 KiB becomes 16 KiB partial messages and the rest, with the first partial\'s time', () => {
  const big = 'x'.repeat(PARTIAL_MESSAGE_SIZE + 10) + '\n'
  const msgs = run([[1, LOG_CONT, 1n, big.slice(0, 100)], [1, LOG_CONT, 2n, big.slice(100, PARTIAL_MESSAGE_SIZE + 5)], [1, LOG_LINE, 3n, big.slice(PARTIAL_MESSAGE_SIZE + 5)]])
  assert.deepEqual(msgs.map(([s, ts, d]) => [s, ts, d.length]), [[1, 2n, PARTIAL_MESSAGE_SIZE], [1, 2n, 11]])
  // exactly 16 KiB ending with its newline is one message; 16 KiB without one is a partial
  assert.deepEqual(run([[1, LOG_LINE, 1n, 'y'.repeat(PARTIAL_MESSAGE_SIZE - 1) + '\n']]).map((m) => m[2].length), [PARTIAL_MESSAGE_SIZE])
  assert.deepEqual(run([[1, LOG_CONT, 1n, 'y'.repeat(PARTIAL_MESSAGE_SIZE)]]).map((m) => m[2].length), [PARTIAL_MESSAGE_SIZE])
  const one = run([[1, LOG_LINE, 7n, big]])
  assert.deepEqual(one.map(([, ts, d]) => [ts, d.length]), [[7n, PARTIAL_MESSAGE_SIZE], [7n, 11]])
})
