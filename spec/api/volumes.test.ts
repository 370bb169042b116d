// The volume routes over a fake VolumeBackend: which volumes a prune may take at each API version, the list bytes
// reused until the backend's counter moves, and the decode and backend failures as replies (a real daemon rarely
// fails a create or lists the same volumes under a moved counter).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { volumeRoutes } from '../../lib/api/volumes/routes.js'
import type { VolumeBackend } from '../../lib/api/volumes/backend.js'
import type { VolumeRecord } from '../../lib/volumes/volume-record.js'
import { conflict, internal, notFound } from '../../lib/errors.js'
import { request } from '../helpers/engine.js'
import { notCalled, serveRoutes } from '../helpers/api-server.js'

const vol = (name: string, o: Partial<VolumeRecord> = {}): VolumeRecord =>
  ({ name, driver: 'local', labels: {}, options: null, createdAt: '2026-11-28T00:00:00Z', anonymous: false, ...o })

function backend (over: Partial<VolumeBackend> = {}): VolumeBackend {
  return {
    byName: () => ({ seq: 1, list: [] }),
    get: (name) => { throw notFound(`get ${name}: no such volume`) },
    mountpoint: (name) => `/data/volumes/${name}/_data`,
    refCount: () => 0,
    create: notCalled('create'),
    remove: notCalled('remove'),
    prune: notCalled('prune'),
    ...over
  }
}

test('prune: API 1.42 on takes anonymous volumes only unless all=true; older clients every unused one', async (t) => {
  const vols = [vol('named', { labels: { keep: 'no' } }), vol('0123abcd', { anonymous: true }), vol('kept', { anonymous: true, labels: { keep: 'yes' } })]
  let picked: string[] = []
  const socket = await serveRoutes(t, volumeRoutes(backend({
    prune: async (pick) => { picked = vols.filter(pick).map((v) => v.name); return { deleted: picked, reclaimed: 42 } }
  })))
  const f = (o: object): string => encodeURIComponent(JSON.stringify(o))
  const cases: Array<[string, string[]]> = [
    ['/v1.43/volumes/prune', ['0123abcd', 'kept']],
    ['/v1.41/volumes/prune', ['named', '0123abcd', 'kept']],
    [`/v1.43/volumes/prune?filters=${f({ all: ['true'] })}`, ['named', '0123abcd', 'kept']],
    [`/v1.43/volumes/prune?filters=${f({ all: ['1'], 'label!': ['keep=yes'] })}`, ['named', '0123abcd']],
    [`/v1.41/volumes/prune?filters=${f({ label: ['keep'] })}`, ['named', 'kept']]
  ]
  for (const [path, want] of cases) {
    const r = await request(socket, 'POST', path)
    assert.equal(r.status, 200, path)
    assert.deepEqual(picked, want, path)
    assert.deepEqual(r.json(), { VolumesDeleted: want, SpaceReclaimed: 42 }, path)
  }
  const none = await request(socket, 'POST', `/volumes/prune?filters=${f({ all: ['maybe'] })}`)
  assert.equal(none.status, 400)
  assert.deepEqual(none.json(), { message: "invalid filter 'all=maybe'" })
})

test('prune: nothing removed is VolumesDeleted null, as dockerd', async (t) => {
  const socket = await serveRoutes(t, volumeRoutes(backend({ prune: async () => ({ deleted: [], reclaimed: 0 }) })))
  assert.deepEqual((await request(socket, 'POST', '/volumes/prune')).json(), { VolumesDeleted: null, SpaceReclaimed: 0 })
})

test('list: the unfiltered reply is reused while the counter holds and made again when it moves', async (t) => {
  let state = { seq: 1, list: [vol('a'), vol('b', { labels: { x: '1' } })] as readonly VolumeRecord[] }
  let calls = 0
  const socket = await serveRoutes(t, volumeRoutes(backend({
    byName: () => state,
    mountpoint: (name) => { calls++; return `/data/volumes/${name}/_data` },
    refCount: (name) => name === 'a' ? 1 : 0
  })))
  const names = async (q = ''): Promise<string[]> => ((await request(socket, 'GET', `/volumes${q}`)).json() as { Volumes: Array<{ Name: string }> }).Volumes.map((v) => v.Name)
  assert.deepEqual(await names(), ['a', 'b'])
  assert.deepEqual(await names(), ['a', 'b'])
  assert.equal(calls, 2, 'each record encoded once')
  // the same counter: the cached reply even though the list object changed (the counter is the contract)
  state = { seq: 1, list: [vol('a')] }
  assert.deepEqual(await names(), ['a', 'b'])
  state = { seq: 2, list: [vol('a'), vol('c')] }
  assert.deepEqual(await names(), ['a', 'c'])
  assert.deepEqual(await names(`?filters=${encodeURIComponent('{"dangling":["true"]}')}`), ['c'])
  assert.deepEqual(await names(`?filters=${encodeURIComponent('{"dangling":["false"]}')}`), ['a'])
  const bad = await request(socket, 'GET', `/volumes?filters=${encodeURIComponent('{"dangling":["perhaps"]}')}`)
  assert.equal(bad.status, 400)
  assert.deepEqual(bad.json(), { message: "invalid filter 'dangling=[perhaps]'" })
})

test('create: a body Go could not decode is refused in dockerd\'s words before the backend is asked', async (t) => {
  const socket = await serveRoutes(t, volumeRoutes(backend()))
  const r = await request(socket, 'POST', '/volumes/create', { body: { Name: 'v1', Labels: ['a'] } })
  assert.equal(r.status, 400)
  assert.deepEqual(r.json(), { message: 'json: cannot unmarshal array into Go struct field CreateOptions.Labels of type map[string]string' })
  const swarm = await request(socket, 'POST', '/volumes/create', { body: { name: 'v1', ClusterVolumeSpec: {} } })
  assert.equal(swarm.status, 400)
})

test('create: the decoded request reaches the backend (keys case-insensitive) and the record comes back encoded', async (t) => {
  let got: unknown
  const socket = await serveRoutes(t, volumeRoutes(backend({
    create: async (req) => { got = req; return vol(req.name, { labels: req.labels }) }
  })))
  const r = await request(socket, 'POST', '/volumes/create', { body: { name: 'v1', labels: { a: 'b' }, DriverOpts: {} } })
  assert.equal(r.status, 201)
  assert.deepEqual(got, { name: 'v1', driver: '', labels: { a: 'b' }, options: null })
  assert.deepEqual(r.json(), { CreatedAt: '2026-11-28T00:00:00Z', Driver: 'local', Labels: { a: 'b' }, Mountpoint: '/data/volumes/v1/_data', Name: 'v1', Options: null, Scope: 'local' })
})

test('backend failures keep their kind: 404, 409, 500 with the message', async (t) => {
  const socket = await serveRoutes(t, volumeRoutes(backend({
    remove: async (name) => { throw conflict(`remove ${name}: volume is in use - [abc]`) },
    create: async () => { throw internal('disk on fire') }
  })))
  assert.equal((await request(socket, 'GET', '/volumes/nope')).status, 404)
  const rm = await request(socket, 'DELETE', '/volumes/busy')
  assert.equal(rm.status, 409)
  assert.deepEqual(rm.json(), { message: 'remove busy: volume is in use - [abc]' })
  const cr = await request(socket, 'POST', '/volumes/create', { body: {} })
  assert.equal(cr.status, 500)
  assert.deepEqual(cr.json(), { message: 'disk on fire' })
})
