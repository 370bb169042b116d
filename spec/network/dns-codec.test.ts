// The embedded DNS server's codec on literal bytes.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { parseQuery, buildAnswer, TYPE_A } from '../../lib/network/dns-codec.js'

// id 0x1234, RD, one question: web.a. A IN
const QUERY = Buffer.from('1234' + '0100' + '0001' + '0000' + '0000' + '0000' + '03776562' + '0161' + '00' + '0001' + '0001', 'hex')

test('dns: parses a query question', () => {
  const q = parseQuery(QUERY)
  assert.deepEqual(q, { id: 0x1234, flags: 0x0100, name: 'web.a', type: TYPE_A, cls: 1, end: QUERY.length })
})

test('dns: refuses responses, truncated and compressed questions', () => {
  const resp = Buffer.from(QUERY); resp[2] = 0x81
  assert.equal(parseQuery(resp), null)
  assert.equal(parseQuery(QUERY.subarray(0, 15)), null)
  const comp = Buffer.from(QUERY); comp[12] = 0xc0
  assert.equal(parseQuery(comp), null)
})

test('dns: answers with A records pointing at the question name', () => {
  const q = parseQuery(QUERY)
  assert.ok(q !== null)
  const a = buildAnswer(QUERY, q, ['10.1.2.3', '10.1.2.4'])
  assert.equal(a.toString('hex'),
    '1234' + '8580' + '0001' + '0002' + '0000' + '0000' + '037765620161000001' + '0001' +
    'c00c' + '0001' + '0001' + '00000258' + '0004' + '0a010203' +
    'c00c' + '0001' + '0001' + '00000258' + '0004' + '0a010204')
  const nx = buildAnswer(QUERY, q, [], 3)
  assert.equal(nx.readUInt16BE(2) & 0xf, 3)
  assert.equal(nx.readUInt16BE(6), 0)
})
