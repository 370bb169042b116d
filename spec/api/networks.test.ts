// The network routes over a fake NetworkBackend: the list's filters (a dangling network, refused filter values), the
// inspect's scope, the connect and create bodies decoded before the backend is asked, and prune's filters as the
// test the backend applies.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { networkRoutes } from '../../lib/api/networks/routes.js'
import type { NetworkBackend } from '../../lib/api/networks/backend.js'
import type { EndpointRequest, NetworkRecord } from '../../lib/network/model.js'
import { conflict, notFound } from '../../lib/errors.js'
import { request } from '../helpers/engine.js'
import { notCalled, serveRoutes } from '../helpers/api-server.js'

const net = (name: string, o: Partial<NetworkRecord> = {}): NetworkRecord => ({
  id: name.padEnd(64, '0'),
  name,
  driver: 'bridge',
  created: '2026-11-28T00:00:00Z',
  internal: false,
  attachable: false,
  predefined: false,
  options: {},
  labels: {},
  ipamDriver: 'default',
  ipamOptions: {},
  pools: [{ subnet: '10.9.0.0/24', gateway: '10.9.0.1' }],
  bridge: 'b0',
  icc: true,
  ...o
})

const NETS = [net('bridge', { predefined: true }), net('busy', { labels: { team: 'a' } }), net('idle', { labels: { team: 'b' } }), net('mesh', { driver: 'overlay' })]

function backend (over: Partial<NetworkBackend> = {}): NetworkBackend {
  return {
    all: () => NETS,
    get: (ref) => { const n = NETS.find((x) => x.name === ref || x.id.startsWith(ref)); if (n === undefined) throw notFound(`network ${ref} not found`); return n },
    endpointsOf: () => [],
    activeEndpoints: (id) => id.startsWith('busy') ? 1 : 0,
    create: notCalled('create'),
    remove: notCalled('remove'),
    connect: notCalled('connect'),
    disconnect: notCalled('disconnect'),
    prune: notCalled('prune'),
    ...over
  }
}

test('list: dangling and type filters, refused values in dockerd\'s words; inspect answers only for the network\'s scope', async (t) => {
  const socket = await serveRoutes(t, networkRoutes(backend()))
  const names = async (filters: object): Promise<string[]> => ((await request(socket, 'GET', `/networks?filters=${encodeURIComponent(JSON.stringify(filters))}`)).json() as Array<{ Name: string }>).map((n) => n.Name)
  assert.deepEqual(await names({ dangling: ['true'] }), ['idle', 'mesh'])
  assert.deepEqual(await names({ type: ['builtin'] }), ['bridge'])
  assert.deepEqual(await names({ scope: ['swarm'] }), ['mesh'])
  assert.deepEqual(await names({ label: ['team=a'] }), ['busy'])
  const bad = await request(socket, 'GET', `/networks?filters=${encodeURIComponent('{"type":["weird"]}')}`)
  assert.equal(bad.status, 400)
  assert.deepEqual(bad.json(), { message: "invalid filter: 'type'='weird'" })
  assert.equal((await request(socket, 'GET', '/networks/mesh?scope=swarm')).status, 200)
  const local = await request(socket, 'GET', '/networks/mesh?scope=local')
  assert.equal(local.status, 404)
  assert.deepEqual(local.json(), { message: 'network mesh not found' })
})

test('connect: the body decoded first (no container, a bad endpoint); the backend\'s conflict keeps its status', async (t) => {
  const got: Array<[string, string, EndpointRequest]> = []
  const socket = await serveRoutes(t, networkRoutes(backend({
    connect: async (n, c, ep) => { if (c === 'twice') throw conflict(`endpoint with name ${c} already exists in network ${n}`); got.push([n, c, ep]) }
  })))
  const none = await request(socket, 'POST', '/networks/idle/connect', { body: {} })
  assert.equal(none.status, 400)
  assert.deepEqual(none.json(), { message: 'no container specified' })
  const mac = await request(socket, 'POST', '/networks/idle/connect', { body: { Container: 'web', EndpointConfig: { MacAddress: 'zz' } } })
  assert.equal(mac.status, 400)
  assert.equal(got.length, 0)
  assert.equal((await request(socket, 'POST', '/networks/idle/connect', { body: { Container: 'twice' } })).status, 409)
  assert.equal((await request(socket, 'POST', '/networks/idle/connect', { body: { Container: 'web', EndpointConfig: { Aliases: ['w'], MacAddress: '02-AA-BB-CC-DD-EE' } } })).status, 200)
  assert.deepEqual(got[0]?.[2].aliases, ['w'])
  assert.equal(got[0]?.[2].mac, '02:aa:bb:cc:dd:ee')
})

test('create: IPAM.Config that is not a list is refused in Go\'s words; the created network\'s ID and warning come back', async (t) => {
  const socket = await serveRoutes(t, networkRoutes(backend({ create: async (req) => ({ id: 'f'.repeat(64), warning: `made ${req.name}` }) })))
  const bad = await request(socket, 'POST', '/networks/create', { body: { Name: 'x', IPAM: { Config: {} } } })
  assert.equal(bad.status, 400)
  assert.deepEqual(bad.json(), { message: 'json: cannot unmarshal object into Go struct field IPAM.IPAM.Config of type []network.IPAMConfig' })
  assert.deepEqual((await request(socket, 'POST', '/networks/create', { body: { Name: 'x' } })).json(), { Id: 'f'.repeat(64), Warning: 'made x' })
})

test('prune: until and labels as the test the backend applies', async (t) => {
  let picked: string[] = []
  const socket = await serveRoutes(t, networkRoutes(backend({ prune: async (keep) => { picked = NETS.filter(keep).map((n) => n.name); return picked } })))
  const f = (o: object): string => encodeURIComponent(JSON.stringify(o))
  assert.deepEqual((await request(socket, 'POST', `/networks/prune?filters=${f({ 'label!': ['team=a'] })}`)).json(), { NetworksDeleted: ['bridge', 'idle', 'mesh'] })
  await request(socket, 'POST', `/networks/prune?filters=${f({ until: ['2026-01-01T00:00:00Z'] })}`)
  assert.deepEqual(picked, [])
  await request(socket, 'POST', `/networks/prune?filters=${f({ until: ['1900000000'], label: ['team'] })}`)
  assert.deepEqual(picked, ['busy', 'idle'])
})
