// A network create request checked as dockerd checks it: pure, no host state.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { newNetworkRecord, type CreateNetworkRequest, type CreateContext } from '../../lib/network/network-create.js'
import { requirePrefix } from '../../lib/network/cidr.js'
import type { NetworkRecord } from '../../lib/network/model.js'

const req = (o: Partial<CreateNetworkRequest>): CreateNetworkRequest => ({
  name: 'n', driver: '', internal: false, attachable: false, enableIPv6: false, ipamDriver: '', ipamOptions: {}, pools: [], options: {}, labels: {}, ...o
})

function ctx (existing: NetworkRecord[] = [], o: Partial<CreateContext> = {}): CreateContext {
  return { existing, used: existing.flatMap((n) => n.pools.map((p) => requirePrefix(p.subnet))), pools: [{ base: '10.50.0.0/16', size: 24 }], linkPrefix: 'tst', swarmActive: false, ...o }
}

test('create: defaults (bridge, the first free subnet, its first address as gateway, a prefixed bridge name)', () => {
  const a = newNetworkRecord(req({ name: 'a' }), ctx())
  assert.equal(a.driver, 'bridge')
  assert.deepEqual(a.pools, [{ subnet: '10.50.0.0/24', gateway: '10.50.0.1' }])
  assert.match(a.bridge, /^tstb[0-9a-f]{11}$/)
  assert.equal(a.icc, true)
  const b = newNetworkRecord(req({ name: 'b' }), ctx([a]))
  assert.deepEqual(b.pools, [{ subnet: '10.50.1.0/24', gateway: '10.50.1.1' }])
  const c = newNetworkRecord(req({ name: 'c', options: { 'com.docker.network.bridge.name': 'mybr', 'com.docker.network.bridge.enable_icc': 'false' } }), ctx())
  assert.deepEqual([c.bridge, c.icc], ['mybr', false])
})

test('create: dockerd errors', () => {
  const a = newNetworkRecord(req({ name: 'a', pools: [{ subnet: '10.9.0.0/16' }] }), ctx())
  const bridge = { ...a, id: 'x'.repeat(64), name: 'bridge', predefined: true, pools: [] }
  const cases: Array<[Partial<CreateNetworkRequest>, RegExp]> = [
    [{ name: 'a' }, /^network with name a already exists$/],
    [{ name: 'bridge' }, /^bridge is a pre-defined network and cannot be created$/],
    [{ name: 'x', driver: 'host' }, /only one instance of "host" network is allowed/],
    [{ name: 'x', driver: 'weave' }, /^plugin "weave" not found$/],
    [{ name: 'x', driver: 'overlay' }, /not a swarm manager/],
    [{ name: 'x', enableIPv6: true }, /IPv6/],
    [{ name: 'x', pools: [{ subnet: '10.9.3.0/24' }] }, /^invalid pool request: Pool overlaps with other one on this address space$/],
    [{ name: 'x', pools: [{ subnet: '10.10.0.0/24' }, { subnet: '10.10.0.0/25' }] }, /Pool overlaps/],
    [{ name: 'x', pools: [{ subnet: '300.1.0.0/16' }] }, /^invalid CIDR address: 300.1.0.0\/16$/],
    [{ name: 'x', pools: [{ subnet: '10.11.0.0/24', gateway: '10.12.0.1' }] }, /^Invalid address 10.12.0.1: It does not belong to any of this network's subnets$/],
    [{ name: 'x', pools: [{ gateway: '10.12.0.1' }] }, /needs a subnet/],
    [{ name: 'x y' }, /invalid network name/]
  ]
  for (const [r, re] of cases) assert.throws(() => newNetworkRecord(req(r), ctx([a, bridge])), (e: Error) => re.test(e.message), JSON.stringify(r))
  assert.equal(newNetworkRecord(req({ name: 'ov', driver: 'overlay' }), ctx([], { swarmActive: true })).driver, 'overlay')
})
