// A network create request checked as dockerd checks it: pure, no host state.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { newNetworkRecord, type CreateNetworkRequest, type CreateContext } from '../../lib/network/network-create.js'
import { requirePrefix } from '../../lib/network/cidr.js'
import type { NetworkRecord } from '../../lib/network/model.js'
import { decodePortBindings } from '../../lib/network/endpoint-request.js'

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
    [{ name: 'x', pools: [{ subnet: '10.11.0.0/24', gateway: '10.12.0.1' }] }, /^failed to allocate gateway \(10\.12\.0\.1\): Requested address is out of range$/],
    [{ name: 'x', pools: [{ gateway: '10.12.0.1' }] }, /needs a subnet/],
    [{ name: ' ' }, /network name is empty/]
  ]
  for (const [r, re] of cases) assert.throws(() => newNetworkRecord(req(r), ctx([a, bridge])), (e: Error) => re.test(e.message), JSON.stringify(r))
  assert.equal(newNetworkRecord(req({ name: 'ov', driver: 'overlay' }), ctx([], { swarmActive: true })).driver, 'overlay')
  // dockerd takes any other name, spaces included
  assert.equal(newNetworkRecord(req({ name: 'my net' }), ctx([a, bridge])).name, 'my net')
})

test('sandbox: modes, endpoints, the mode\'s network first, port bindings, warnings', async () => {
  const { newSandbox } = await import('../../lib/network/sandbox-config.js')
  const bridge = { ...newNetworkRecord(req({ name: 'b0' }), ctx()), name: 'bridge', predefined: true }
  const app = newNetworkRecord(req({ name: 'app', pools: [{ subnet: '10.60.0.0/24' }] }), ctx([bridge]))
  const nets = [bridge, app]
  const find = (ref: string): NetworkRecord | undefined => nets.find((x) => x.name === ref || x.id === ref)
  const base = { id: 'c'.repeat(64), name: 'c', endpoints: {}, portBindings: {}, exposed: ['80/tcp'], publishAll: false }
  assert.deepEqual(newSandbox({ ...base, mode: 'default' }, find, () => true).sb.attachments.map((a) => a.networkId), [bridge.id])
  const two = newSandbox({ ...base, mode: 'app', endpoints: { bridge: { aliases: [], ipv4: '', links: [] }, app: { aliases: ['web'], ipv4: '10.60.0.9', links: [] } } }, find, () => true).sb
  assert.deepEqual(two.attachments.map((a) => [a.networkId, a.aliases, a.staticIp]), [[app.id, ['web'], '10.60.0.9'], [bridge.id, [], '']])
  assert.throws(() => newSandbox({ ...base, mode: 'app', endpoints: { app: { aliases: [], ipv4: '10.61.0.9', links: [] } } }, find, () => true), /does not belong to any of this network's subnets/)
  assert.throws(() => newSandbox({ ...base, mode: 'bridge', endpoints: { bridge: { aliases: ['x'], ipv4: '', links: [] } } }, find, () => true), /network-scoped alias/)
  // an unknown network: recorded by its name (the start fails, as with dockerd)
  assert.deepEqual(newSandbox({ ...base, mode: 'nope' }, find, () => true).sb.attachments.map((a) => a.networkId), ['nope'])
  assert.throws(() => newSandbox({ ...base, mode: 'container:gone' }, find, () => false), /No such container: gone/)
  assert.throws(() => newSandbox({ ...base, mode: 'none', portBindings: decodePortBindings({ '80/tcp': [{ HostPort: '8080' }] }) }, find, () => true), /conflicting options/)
  assert.throws(() => newSandbox({ ...base, mode: 'bridge', portBindings: decodePortBindings({ '80/xyz': [] }) }, find, () => true), /invalid port specification/)
  // 16-bit ports and ranges whose start is not above their end, as dockerd's create checks them
  assert.throws(() => newSandbox({ ...base, mode: 'bridge', portBindings: decodePortBindings({ '70000/tcp': [] }) }, find, () => true), /invalid port specification: "70000"/)
  assert.throws(() => newSandbox({ ...base, mode: 'bridge', portBindings: decodePortBindings({ '80/tcp': [{ HostPort: '70000' }] }) }, find, () => true), /invalid port specification: "70000"/)
  assert.throws(() => newSandbox({ ...base, mode: 'bridge', portBindings: decodePortBindings({ '80/tcp': [{ HostPort: '9000-8000' }] }) }, find, () => true), /invalid port specification: "9000-8000"/)
  const host = newSandbox({ ...base, mode: 'host', portBindings: decodePortBindings({ '80/tcp': [{ HostPort: '8080' }] }) }, find, () => true)
  assert.deepEqual(host.warnings, ['Published ports are discarded when using host network mode'])
  const ports = newSandbox({ ...base, mode: 'bridge', portBindings: decodePortBindings({ 80: [{ HostIp: '127.0.0.1', HostPort: '8000-8005' }], '53/udp': [{}] }), endpoints: { bridge: { aliases: [], ipv4: '', links: [], mac: '02:aa:bb:cc:dd:ee', driverOpts: { k: 'v' } } } }, find, () => true)
  assert.deepEqual(ports.sb.portBindings, { '80/tcp': [{ hostIp: '127.0.0.1', hostPort: '8000-8005' }], '53/udp': [{ hostIp: '', hostPort: '' }] })
  // an endpoint's MacAddress and DriverOpts are kept (the address is the interface's at start)
  assert.deepEqual(ports.warnings, [])
  assert.equal(ports.sb.attachments[0]?.staticMac, '02:aa:bb:cc:dd:ee')
  assert.deepEqual(ports.sb.attachments[0]?.driverOpts, { k: 'v' })
  // static addresses on the default bridge, an IPv6 address outside any subnet of the network: dockerd's refusals
  assert.throws(() => newSandbox({ ...base, mode: 'bridge', endpoints: { bridge: { aliases: [], ipv4: '', ipv6: 'fd00::5', links: [] } } }, find, () => true), /user specified IP address is supported on user defined networks only/)
})
