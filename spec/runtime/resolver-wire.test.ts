// The frames between the daemon and a container's monitor for its resolver, on literal bytes.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { FrameDecoder, FRAME, frame, decodeQuery, tokenPayload, upstreamsPayload } from '../../lib/runtime/resolver-wire.js'

test('resolver wire: a frame is [type][length u32 BE][payload]', () => {
  const [h, p] = frame(FRAME.answer, tokenPayload(0x01020304, Buffer.from('ab')))
  assert.equal(Buffer.concat([h, p]).toString('hex'), '41' + '00000006' + '01020304' + '6162')
  assert.equal(tokenPayload(7).toString('hex'), '00000007')
})

test('resolver wire: upstreams as lines, three at most, where each is asked from', () => {
  const p = upstreamsPayload([
    { address: '127.0.0.1', port: 53, hostNamespace: false },
    { address: 'fd00::53', port: 5353, hostNamespace: true },
    { address: '10.0.0.1', port: 53, hostNamespace: true },
    { address: '10.0.0.2', port: 53, hostNamespace: true }
  ])
  assert.equal(p.toString(), 'c 127.0.0.1 53\nh fd00::53 5353\nh 10.0.0.1 53\n')
})

test('resolver wire: the decoder joins frames split across chunks and splits chunks holding several', () => {
  const q = Buffer.concat([tokenPayload(9), Buffer.from([1]), Buffer.alloc(12, 0xaa)])
  const one = Buffer.concat(frame(FRAME.query, q))
  const two = Buffer.concat([one, Buffer.concat(frame(FRAME.started, Buffer.from('oops')))])
  const d = new FrameDecoder()
  const got = [...d.push(two.subarray(0, 3)), ...d.push(two.subarray(3, 20)), ...d.push(two.subarray(20))]
  assert.deepEqual(got.map((f) => f.type), [FRAME.query, FRAME.started])
  assert.deepEqual(decodeQuery(got[0]?.payload ?? Buffer.alloc(0)), { token: 9, tcp: true, message: Buffer.alloc(12, 0xaa) })
  assert.equal(got[1]?.payload.toString(), 'oops')
  assert.equal(decodeQuery(Buffer.alloc(8)), null)
  assert.throws(() => new FrameDecoder().push(Buffer.from('5100100000', 'hex')), /resolver frame/)
})
