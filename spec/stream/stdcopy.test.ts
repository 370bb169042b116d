// The stdcopy codec: byte vectors, frames split anywhere, empty payloads, systemerr, backpressure.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { PassThrough, Writable } from 'node:stream'
import { frame, frameHeader, Demuxer, StdWriter, demuxAll, demuxSink } from '../../lib/stream/stdcopy.js'
import { encodeRecord, RecordDecoder, formatTimestampNs, formatRfc3339Nano, scanRecords, recordFlags, recordPayload, recordTime, LOG_CONT, LOG_LINE, type RecordSpan } from '../../lib/stream/log-record.js'

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

test('demuxSink: a Writable that decodes frames split across writes', async () => {
  const stream = Buffer.concat([...frame(1, Buffer.from('out\n')), ...frame(2, Buffer.from('err\n'))])
  const got: Array<[number, string]> = []
  const sink = demuxSink((type, payload) => got.push([type, payload.toString()]))
  for (const b of stream) sink.write(Buffer.from([b]))
  await new Promise<void>((resolve) => { sink.end(resolve) })
  assert.deepEqual(got, [[1, 'out\n'], [2, 'err\n']])
})

test('scanRecords: the whole records of a buffer in place, and where an incomplete one starts', () => {
  const a = encodeRecord(1, 5n, Buffer.from('piece'), LOG_CONT)
  const b = encodeRecord(2, 7n, Buffer.from('line\n'))
  const buf = Buffer.concat([a, b, b.subarray(0, 20)])
  const spans: RecordSpan[] = []
  const end = scanRecords(buf, 0, buf.length, spans)
  assert.deepEqual(spans, [[0, 1, 5], [a.length, 2, 5]])
  assert.equal(end, a.length + b.length)
  assert.equal(recordFlags(buf, 0), LOG_CONT)
  assert.equal(recordFlags(buf, a.length), LOG_LINE)
  assert.equal(recordTime(buf, a.length), 7n)
  assert.equal(recordPayload(buf, a.length, 5).toString(), 'line\n')
  // a header cut short is incomplete too
  assert.equal(scanRecords(buf, end, end + 10, []), end)
  for (let cut = 1; cut < b.length; cut++) {
    const dec = new RecordDecoder()
    const out = [...dec.feed(Buffer.concat([a, b.subarray(0, cut)])), ...dec.feed(b.subarray(cut))]
    assert.deepEqual(out.map((r) => [r.stream, r.flags, r.payload.toString()]), [[1, LOG_CONT, 'piece'], [2, LOG_LINE, 'line\n']], `cut at ${cut}`)
    assert.equal(dec.pending, 0)
  }
})

test('timestamps: 9 fixed digits for logs, trimmed RFC3339Nano for inspect, zero time', () => {
  assert.equal(formatTimestampNs(1716800000000000000n), '2024-05-27T08:53:20.000000000Z')
  assert.equal(formatRfc3339Nano(1716800000120000000n), '2024-05-27T08:53:20.12Z')
  assert.equal(formatRfc3339Nano(0n), '0001-01-01T00:00:00Z')
})
