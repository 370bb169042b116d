// The stdcopy codec: byte vectors, frames split anywhere, empty payloads, systemerr, backpressure.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { PassThrough, Writable } from 'node:stream'
import { frame, frameHeader, Demuxer, StdWriter, demuxAll } from '../../lib/stream/stdcopy.js'
import { encodeRecord, RecordDecoder, formatTimestampNs, formatRfc3339Nano } from '../../lib/stream/log-record.js'

test('frame() builds [type,0,0,0,len BE] + payload and never emits type 0 or empty frames', () => {
  const [h, p] = frame(1, Buffer.from('hi\n'))
  assert.equal(h?.toString('hex'), '0100000000000003')
  assert.equal(p?.toString(), 'hi\n')
  assert.equal(frameHeader(2, 0x01020304).toString('hex'), '0200000001020304')
  assert.deepEqual(frame(2, Buffer.alloc(0)), [])
  assert.throws(() => frame(0 as 1, Buffer.from('x')), RangeError)
})

test('Demuxer reassembles frames split at every byte boundary', () => {
  const stream = Buffer.concat([...frame(1, Buffer.from('hello')), ...frame(2, Buffer.from('err')), ...frame(3, Buffer.from('boom'))])
  for (let cut = 1; cut < stream.length; cut++) {
    const got: Array<[number, string]> = []
    const d = new Demuxer((type, payload) => got.push([type, payload.toString()]))
    d.push(stream.subarray(0, cut))
    d.push(stream.subarray(cut))
    assert.deepEqual(got, [[1, 'hello'], [2, 'err'], [3, 'boom']], `cut at ${cut}`)
    assert.equal(d.pending, 0)
  }
  const bytewise: number[] = []
  const d = new Demuxer((type) => bytewise.push(type))
  for (const b of stream) d.push(Buffer.from([b]))
  assert.deepEqual(bytewise, [1, 2, 3])
})

test('Demuxer keeps a truncated frame pending', () => {
  const d = new Demuxer(() => assert.fail('no frame expected'))
  d.push(Buffer.from('01000000000000056865', 'hex'))
  assert.equal(d.pending, 10)
})

test('a zero-length frame from a peer decodes as an empty payload', () => {
  const { frames } = demuxAll(Buffer.from('0100000000000000', 'hex'))
  assert.equal(frames.length, 1)
  assert.equal(frames[0]?.payload.length, 0)
})

test('StdWriter returns the destination write() boolean (backpressure)', async () => {
  const slow = new Writable({ highWaterMark: 16, write (_c, _e, cb) { setImmediate(cb) } })
  const w = new StdWriter(slow)
  assert.equal(w.write(1, Buffer.alloc(64)), false)
  await new Promise((resolve) => slow.once('drain', resolve))
  const sink = new PassThrough()
  const chunks: Buffer[] = []
  sink.on('data', (c: Buffer) => chunks.push(c))
  const w2 = new StdWriter(sink)
  w2.write(1, Buffer.from('a'))
  w2.write(2, Buffer.from('b'))
  assert.deepEqual(demuxAll(Buffer.concat(chunks)).frames.map((f) => [f.type, f.payload.toString()]), [[1, 'a'], [2, 'b']])
})

test('log records: the first 8 bytes are a stdcopy header; the decoder waits for whole records', () => {
  const rec = encodeRecord(2, 1716800000123456789n, Buffer.from('line\n'))
  assert.equal(rec.subarray(0, 8).toString('hex'), '0200000000000005')
  const dec = new RecordDecoder()
  assert.deepEqual(dec.feed(rec.subarray(0, 10)), [])
  const out = dec.feed(rec.subarray(10))
  assert.equal(out.length, 1)
  assert.equal(out[0]?.stream, 2)
  assert.equal(out[0]?.timeNs, 1716800000123456789n)
  assert.equal(out[0]?.payload.toString(), 'line\n')
})

test('timestamps: 9 fixed digits for logs, trimmed RFC3339Nano for inspect, zero time', () => {
  assert.equal(formatTimestampNs(1716800000000000000n), '2024-05-27T08:53:20.000000000Z')
  assert.equal(formatRfc3339Nano(1716800000120000000n), '2024-05-27T08:53:20.12Z')
  assert.equal(formatRfc3339Nano(0n), '0001-01-01T00:00:00Z')
})
