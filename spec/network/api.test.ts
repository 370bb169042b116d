// The network API on the wire: statuses and bodies as dockerd answers them (no containers involved).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { startEngine, request } from '../helpers/engine.js'

const skip = process.getuid?.() !== 0 ? 'networking needs root' : spawnSync('ip', ['-V']).status === 0 ? null : 'iproute2 is not installed'

test('network API: statuses, bodies, filters, events', { skip: skip ?? false }, async (t) => {
  const { socket, engine } = await startEngine(t)
  const sub = `10.${200 + Math.floor(Math.random() * 50)}.${Math.floor(Math.random() * 256)}`
  const create = async (body: Record<string, unknown>): Promise<{ status: number, json: Record<string, unknown> }> => {
    const r = await request(socket, 'POST', '/v1.45/networks/create', { body })
    return { status: r.status, json: r.json() as Record<string, unknown> }
  }
  const since = Math.floor(Date.now() / 1000) - 1
  const ok = await create({ Name: 'ax1', Driver: 'bridge', IPAM: { Config: [{ Subnet: `${sub}.0/25`, IPRange: `${sub}.64/26`, AuxiliaryAddresses: { r: `${sub}.2` } }] }, Labels: { x: 'y' }, Attachable: true })
  assert.equal(ok.status, 201)
  assert.match(ok.json.Id as string, /^[0-9a-f]{64}$/)
  assert.equal(ok.json.Warning, '')
  assert.deepEqual((await create({ Name: 'ax1' })).json, { message: 'network with name ax1 already exists' })
  assert.equal((await create({ Name: 'ax1' })).status, 409)
  const over = await create({ Name: 'a2', IPAM: { Config: [{ Subnet: `${sub}.0/24` }] } })
  assert.equal(over.status, 403)
  assert.equal(over.json.message, 'invalid pool request: Pool overlaps with other one on this address space')
  const gw = await create({ Name: 'a3', IPAM: { Config: [{ Subnet: `${sub}.128/25`, Gateway: '10.0.0.1' }] } })
  assert.deepEqual([gw.status, gw.json.message], [400, 'failed to allocate gateway (10.0.0.1): Requested address is out of range'])
  assert.equal((await create({ Name: 'a4', IPAM: { Config: [{ Subnet: 'x/8' }] } })).json.message, 'invalid CIDR address: x/8')
  const drv = await create({ Name: 'a5', Driver: 'macvlan2' })
  assert.deepEqual([drv.status, drv.json.message], [404, 'plugin "macvlan2" not found'])
  assert.equal((await create({ Name: 'a6', Driver: 'overlay' })).status, 403)
  // no default IPv6 pools: dockerd's 404
  assert.equal((await create({ Name: 'a7', EnableIPv6: true })).status, 404)
  // an empty name is refused (dockerd takes any other, spaces included: spec/network/endpoint-fields.test.ts)
  assert.equal((await create({ Name: ' ' })).status, 400)
  assert.equal((await create({ Name: 'm0', Options: { 'com.docker.network.driver.mtu': 'x' } })).json.message, 'invalid MTU number: x')
  const opt = await create({ Name: 'm1', IPAM: { Config: [{ Subnet: `${sub}.128/26` }] }, Options: { 'com.docker.network.driver.mtu': '1400', 'com.example.unknown': '1' } })
  assert.deepEqual([opt.status, opt.json.Warning], [201, 'options not supported by this engine were ignored: com.example.unknown'])
  assert.equal((await request(socket, 'DELETE', '/networks/m1')).status, 204)

  const insp = await request(socket, 'GET', '/networks/ax1')
  assert.equal(insp.status, 200)
  const n = insp.json() as Record<string, unknown>
  assert.deepEqual(n.IPAM, { Driver: 'default', Options: null, Config: [{ Subnet: `${sub}.0/25`, IPRange: `${sub}.64/26`, AuxiliaryAddresses: { r: `${sub}.2` } }] })
  assert.deepEqual([n.Scope, n.Driver, n.Attachable, n.Internal, n.Containers, n.Labels], ['local', 'bridge', true, false, {}, { x: 'y' }])
  const missing = await request(socket, 'GET', '/networks/nope')
  assert.deepEqual([missing.status, missing.json()], [404, { message: 'network nope not found' }])
  const byPrefix = await request(socket, 'GET', `/networks/${(ok.json.Id as string).slice(0, 10)}`)
  assert.equal((byPrefix.json() as { Name: string }).Name, 'ax1')

  const list = async (filters: unknown): Promise<string[]> => {
    const r = await request(socket, 'GET', `/networks?filters=${encodeURIComponent(JSON.stringify(filters))}`)
    assert.equal(r.status, 200, r.text)
    return (r.json() as Array<{ Name: string }>).map((x) => x.Name).sort()
  }
  assert.deepEqual(await list({}), ['ax1', 'bridge', 'host', 'none'])
  assert.deepEqual(await list({ type: { builtin: true } }), ['bridge', 'host', 'none'])
  assert.deepEqual(await list({ driver: ['null'] }), ['none'])
  assert.deepEqual(await list({ label: ['x=y'] }), ['ax1'])
  assert.deepEqual(await list({ name: ['a'] }), ['ax1'])
  assert.equal((await request(socket, 'GET', `/networks?filters=${encodeURIComponent('{"type":["other"]}')}`)).status, 400)
  assert.equal((await request(socket, 'GET', `/networks?filters=${encodeURIComponent('{"bogus":["x"]}')}`)).status, 400)

  const rmBuiltin = await request(socket, 'DELETE', '/networks/host')
  assert.deepEqual([rmBuiltin.status, rmBuiltin.json()], [403, { message: 'host is a pre-defined network and cannot be removed' }])
  const conn = await request(socket, 'POST', '/networks/ax1/connect', { body: { Container: 'nosuch' } })
  assert.deepEqual([conn.status, conn.json()], [404, { message: 'No such container: nosuch' }])
  assert.equal((await request(socket, 'POST', '/networks/ax1/connect', { body: {} })).status, 400)

  const prune = await request(socket, 'POST', '/networks/prune?filters=' + encodeURIComponent('{"label":["x=y"]}'))
  assert.deepEqual(prune.json(), { NetworksDeleted: ['ax1'] })
  assert.equal((await request(socket, 'DELETE', '/networks/ax1')).status, 404)
  const ev = await request(socket, 'GET', `/events?since=${since}&until=${Math.floor(Date.now() / 1000) + 1}&filters=${encodeURIComponent('{"type":["network"]}')}`)
  const actions = ev.text.trim().split('\n').map((l) => JSON.parse(l) as { Action: string, Actor: { Attributes: Record<string, string> } })
  assert.deepEqual(actions.map((e) => `${e.Action} ${e.Actor.Attributes.name}`), ['create ax1', 'create m1', 'destroy m1', 'destroy ax1'])
  void engine
})
