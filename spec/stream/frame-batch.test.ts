// Frames made in place over log records: a run of records leaves as one slice, headers shrunk to stdcopy's, payloads
// moved left; merged per stream for attach; other bytes cut the run in order.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { FrameBatch } from '../../lib/stream/frame-batch.js'
import { encodeRecord } from '../../lib/stream/log-record.js'
import { frames } from '../helpers/frames.js'

function records (...recs: Array<[1 | 2, string]>): { buf: Buffer, offs: number[] } {
  const parts = recs.map(([s, p], i) => encodeRecord(s, BigInt(i), Buffer.from(p)))
  const offs: number[] = []
  let off = 0
  for (const p of parts) { offs.push(off); off += p.length }
  return { buf: Buffer.concat(parts), offs }
}

test('one stdcopy frame per record, all in one slice', () => {
  const { buf, offs } = records([1, 'a\n'], [2, 'bb\n'], [1, 'ccc\n'])
  const fb = new FrameBatch(false, false)
  fb.begin(buf)
  const lens = [2, 3, 4]
  offs.forEach((off, i) => { fb.record(off, buf[off] as number, lens[i] as number) })
  const parts = fb.take()
  assert.equal(parts.length, 1)
  assert.deepEqual(frames(parts[0] as Buffer), [[1, 'a\n'], [2, 'bb\n'], [1, 'ccc\n']])
})

test('merged per stream (attach), raw for a TTY, other bytes in order', () => {
  let r = records([1, 'a'], [1, 'b\n'], [2, 'e'], [1, 'c'])
  let fb = new FrameBatch(false, true)
  fb.begin(r.buf)
  ;[1, 2, 1, 1].forEach((len, i) => { fb.record(r.offs[i] as number, r.buf[r.offs[i] as number] as number, len) })
  assert.deepEqual(frames(Buffer.concat(fb.take())), [[1, 'ab\n'], [2, 'e'], [1, 'c']])
  r = records([1, 'x'], [1, 'y'], [1, 'z'])
  fb = new FrameBatch(true, false)
  fb.begin(r.buf)
  fb.record(r.offs[0] as number, 1, 1)
  fb.bytes(Buffer.from('-joined-'))
  fb.record(r.offs[1] as number, 1, 1)
  fb.record(r.offs[2] as number, 1, 1)
  assert.equal(Buffer.concat(fb.take()).toString(), 'x-joined-yz')
  assert.deepEqual(fb.take(), [])
})
