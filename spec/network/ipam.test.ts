// IPAM and CIDR arithmetic: pure.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { parseIp, formatIp, parsePrefix, overlaps, requirePrefix } from '../../lib/network/cidr.js'
import { AddressPool, completePool, pickSubnet } from '../../lib/network/ipam.js'
import { isEngineError } from '../../lib/errors.js'

test('cidr: parse, format, canonical prefix, overlap', () => {
  assert.equal(parseIp('10.1.2.3'), 0x0a010203)
  assert.equal(parseIp('10.1.2.256'), null)
  assert.equal(parseIp('10.1.2'), null)
  assert.equal(formatIp(0xc0a80001), '192.168.0.1')
  assert.deepEqual(parsePrefix('10.1.2.3/16'), { base: 0x0a010000, bits: 16 })
  assert.equal(parsePrefix('10.1.2.3/33'), null)
  assert.equal(parsePrefix('10.1.2.3'), null)
  assert.equal(overlaps(requirePrefix('10.1.0.0/16'), requirePrefix('10.1.5.0/24')), true)
  assert.equal(overlaps(requirePrefix('10.1.0.0/16'), requirePrefix('10.2.0.0/16')), false)
  assert.throws(() => requirePrefix('nope'), (e) => isEngineError(e) && e.message === 'invalid CIDR address: nope')
})

test('ipam: gateway default and checks, aux addresses, range', () => {
  const s = requirePrefix('10.9.0.0/24')
  assert.deepEqual(completePool({}, s), { subnet: '10.9.0.0/24', gateway: '10.9.0.1' })
  assert.throws(() => completePool({ gateway: '10.8.0.1' }, s), /failed to allocate gateway \(10\.8\.0\.1\): Requested address is out of range/)
  assert.throws(() => completePool({ ipRange: '10.8.0.0/28' }, s), /must be a subset/)
  const cfg = completePool({ gateway: '10.9.0.254', ipRange: '10.9.0.0/29', auxAddresses: { r: '10.9.0.1' } }, s)
  const pool = new AddressPool(cfg)
  // .0 is the network address, .1 an auxiliary address: the range's .7 is not the subnet's broadcast address
  const got = [pool.allocate(), pool.allocate(), pool.allocate(), pool.allocate(), pool.allocate(), pool.allocate()]
  assert.deepEqual(got, ['10.9.0.2', '10.9.0.3', '10.9.0.4', '10.9.0.5', '10.9.0.6', '10.9.0.7'])
  assert.throws(() => pool.allocate(), /no available IPv4 addresses/)
  // a range inside the subnet: its first address is not handed out (dockerd's .129 to .131 for .128/30)
  const inner = new AddressPool(completePool({ ipRange: '10.9.0.128/30' }, s))
  assert.deepEqual([inner.allocate(), inner.allocate(), inner.allocate()], ['10.9.0.129', '10.9.0.130', '10.9.0.131'])
  assert.throws(() => inner.allocate(), /no available IPv4 addresses/)
})

test('ipam: never the same address twice, round-robin after release, static claims', () => {
  const pool = new AddressPool(completePool({}, requirePrefix('10.9.1.0/29')))
  const a = pool.allocate()
  const b = pool.allocate()
  assert.notEqual(a, b)
  pool.release(a)
  // the released address is not the next one handed out
  assert.equal(pool.allocate(), '10.9.1.4')
  assert.throws(() => pool.claim(b), /Address already in use/)
  assert.throws(() => pool.claim('10.9.2.3'), /no configured subnet/)
  pool.claim('10.9.1.6')
  assert.equal(pool.allocate(), '10.9.1.5')
  assert.equal(pool.allocate(), '10.9.1.2')
})

test('ipam: picks the first subnet of the pools that overlaps nothing in use', () => {
  const used = [requirePrefix('172.16.0.0/16'), requirePrefix('172.17.0.0/16'), requirePrefix('172.18.5.0/24')]
  const p = pickSubnet([{ base: '172.16.0.0/14', size: 16 }], used)
  assert.deepEqual(p, requirePrefix('172.19.0.0/16'))
  assert.equal(pickSubnet([{ base: '172.17.0.0/16', size: 16 }], used), null)
})

test('ipam: skip passes over that many free subnets (the last free one when there are fewer)', () => {
  const used = [requirePrefix('10.5.1.0/24')]
  const pools = [{ base: '10.5.0.0/22', size: 24 }]
  assert.deepEqual(pickSubnet(pools, used, 1), requirePrefix('10.5.2.0/24'))
  assert.deepEqual(pickSubnet(pools, used, 2), requirePrefix('10.5.3.0/24'))
  assert.deepEqual(pickSubnet(pools, used, 9), requirePrefix('10.5.3.0/24'))
  assert.equal(pickSubnet([{ base: '10.5.1.0/24', size: 24 }], used, 1), null)
})
