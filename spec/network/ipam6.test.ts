// IPv6 addresses and pools: parse and format (RFC 5952), gateway and allocation as dockerd's.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { formatIp6, parseIp6, parsePrefix6, formatPrefix6, contains6, ip6Bytes } from '../../lib/network/cidr6.js'
import { AddressPool6, completePool6 } from '../../lib/network/ipam6.js'

test('cidr6: parse and canonical form', () => {
  for (const [text, canonical] of [['fd00::1', 'fd00::1'], ['FD00:0:0:0:0:0:0:1', 'fd00::1'], ['2001:db8:0:0:1:0:0:1', '2001:db8::1:0:0:1'],
    ['::', '::'], ['::ffff:10.1.2.3', '::ffff:a01:203'], ['1:2:3:4:5:6:7:8', '1:2:3:4:5:6:7:8'], ['fe80::0042:acff:fe11:2', 'fe80::42:acff:fe11:2']]) {
    const n = parseIp6(text as string)
    assert.ok(n !== null, text)
    assert.equal(formatIp6(n), canonical)
  }
  for (const bad of ['1::2::3', '10.0.0.1', 'fd00::g', '1:2:3:4:5:6:7:8:9', 'fd00::1%eth0', '']) assert.equal(parseIp6(bad), null, bad)
  const p = parsePrefix6('fd00:1::5/64')
  assert.ok(p !== null)
  assert.equal(formatPrefix6(p), 'fd00:1::/64')
  assert.ok(contains6(p, parseIp6('fd00:1::ffff') as bigint))
  assert.ok(!contains6(p, parseIp6('fd00:2::1') as bigint))
  assert.equal(ip6Bytes(parseIp6('fd00::2') as bigint).toString('hex'), 'fd000000000000000000000000000002')
})

test('ipam6: the first address is the gateway, containers get the next ones, released ones come back last', () => {
  const cfg = completePool6({}, parsePrefix6('fd00:2::/64') as NonNullable<ReturnType<typeof parsePrefix6>>)
  assert.deepEqual(cfg, { subnet: 'fd00:2::/64', gateway: 'fd00:2::1' })
  const pool = new AddressPool6(cfg)
  assert.equal(pool.allocate(), 'fd00:2::2')
  pool.claim('fd00:2::3')
  assert.equal(pool.allocate(), 'fd00:2::4')
  pool.release('fd00:2::2')
  assert.equal(pool.allocate(), 'fd00:2::5')
  assert.throws(() => { pool.claim('fd00:2::1') }, /Address already in use/)
  assert.throws(() => { pool.claim('fd00:3::1') }, /no configured subnet/)
  assert.throws(() => completePool6({ gateway: 'fd00:3::1' }, parsePrefix6('fd00:2::/64') as NonNullable<ReturnType<typeof parsePrefix6>>), /out of range/)
  const tiny = new AddressPool6(completePool6({}, parsePrefix6('fd00:9::/126') as NonNullable<ReturnType<typeof parsePrefix6>>))
  assert.equal(tiny.allocate(), 'fd00:9::2')
  assert.equal(tiny.allocate(), 'fd00:9::3')
  assert.throws(() => tiny.allocate(), /no available IPv6 addresses/)
})
