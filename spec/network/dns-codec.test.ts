// The embedded resolver's codec on literal bytes.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { parseQuery, buildReply, encodeName, TYPE_A, TYPE_PTR } from '../../lib/network/dns-codec.js'

// id 0x1234, RD, one question: web.a. A IN
const QUERY = Buffer.from('1234' + '0100' + '0001' + '0000' + '0000' + '0000' + '03776562' + '0161' + '00' + '0001' + '0001', 'hex')
// the same with an OPT record announcing 1232 bytes
const EDNS = Buffer.concat([Buffer.from(QUERY), Buffer.from('00' + '0029' + '04d0' + '00000000' + '0000', 'hex')])
EDNS.writeUInt16BE(1, 10)

test('dns: parses a query question and its EDNS payload size', () => {
  const q = parseQuery(QUERY)
  assert.deepEqual(q, { id: 0x1234, flags: 0x0100, name: 'web.a', type: TYPE_A, cls: 1, end: QUERY.length, udpSize: 512 })
  assert.equal(parseQuery(EDNS)?.udpSize, 1232)
})

test('dns: refuses responses, truncated and compressed questions', () => {
  const resp = Buffer.from(QUERY); resp[2] = 0x81
  assert.equal(parseQuery(resp), null)
  assert.equal(parseQuery(QUERY.subarray(0, 15)), null)
  const comp = Buffer.from(QUERY); comp[12] = 0xc0
  assert.equal(parseQuery(comp), null)
})

test('dns: answers with records pointing at the question name, recursion available, not authoritative', () => {
  const q = parseQuery(QUERY)
  assert.ok(q !== null)
  const a = buildReply(QUERY, q, { answers: [{ type: TYPE_A, data: Buffer.from([10, 1, 2, 3]) }, { type: TYPE_A, data: Buffer.from([10, 1, 2, 4]) }] })
  assert.equal(a.toString('hex'),
    '1234' + '8180' + '0001' + '0002' + '0000' + '0000' + '037765620161000001' + '0001' +
    'c00c' + '0001' + '0001' + '00000258' + '0004' + '0a010203' +
    'c00c' + '0001' + '0001' + '00000258' + '0004' + '0a010204')
  const fail = buildReply(QUERY, q, { rcode: 2 })
  assert.equal(fail.readUInt16BE(2) & 0xf, 2)
  assert.equal(fail.readUInt16BE(6), 0)
  const ptr = buildReply(QUERY, q, { answers: [{ type: TYPE_PTR, data: encodeName('web.front') }] })
  assert.equal(ptr.subarray(ptr.length - 11).toString('hex'), '037765620566726f6e7400')
})

test('dns: a reply longer than the client takes keeps what fits and is marked truncated', () => {
  const q = parseQuery(QUERY)
  assert.ok(q !== null)
  const many = Array.from({ length: 40 }, (_, i) => ({ type: TYPE_A, data: Buffer.from([10, 0, 0, i]) }))
  const r = buildReply(QUERY, q, { answers: many, maxSize: 512 })
  assert.ok(r.length <= 512)
  assert.equal(r.readUInt16BE(2) & 0x0200, 0x0200)
  assert.equal(r.readUInt16BE(6), Math.floor((512 - QUERY.length) / 16))
})
