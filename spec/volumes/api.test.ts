// The volume API on the wire: create (names, drivers, options), list filters, inspect, remove (in use, force),
// prune by API version, events, the local driver's tmpfs option, and a restart (records and crash leftovers).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { mkdirSync, existsSync, writeFileSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { startEngine, containerSkipReason, importBusybox, request, createContainer, tmpDir, cleanupDir } from '../helpers/engine.js'

const skip = containerSkipReason()

interface Vol { Name: string, Driver: string, Mountpoint: string, Labels: Record<string, string> | null, Options: Record<string, string> | null, Scope: string, CreatedAt: string }

test('volume API', { skip: skip ?? false }, async (t) => {
  const dir = tmpDir()
  t.after(async () => { await cleanupDir(dir) })
  let te = await startEngine(t, { dir })
  let socket = te.socket
  const post = async (path: string, body?: unknown): ReturnType<typeof request> => await request(socket, 'POST', path, body === undefined ? {} : { body })
  await importBusybox(socket)

  await t.test('create: named, labelled, anonymous, idempotent; bad names, drivers and options in dockerd wording', async () => {
    const r = await post('/volumes/create', { Name: 'v1', Labels: { a: 'b' } })
    assert.equal(r.status, 201)
    const v = r.json() as Vol
    assert.equal(v.Name, 'v1')
    assert.equal(v.Driver, 'local')
    assert.equal(v.Scope, 'local')
    assert.deepEqual(v.Labels, { a: 'b' })
    assert.equal(v.Options, null)
    assert.equal(v.Mountpoint, join(te.dataRoot, 'volumes', 'v1', '_data'))
    assert.ok(existsSync(v.Mountpoint))
    assert.match(v.CreatedAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/)
    const again = (await post('/volumes/create', { Name: 'v1', Labels: { c: 'd' } })).json() as Vol
    assert.deepEqual(again.Labels, { a: 'b' })
    const anon = (await post('/volumes/create', {})).json() as Vol
    assert.match(anon.Name, /^[0-9a-f]{64}$/)
    assert.deepEqual(anon.Labels, { 'com.docker.volume.anonymous': '' })
    const bad = await post('/volumes/create', { Name: 'bad/name' })
    assert.equal(bad.status, 400)
    assert.equal((bad.json() as { message: string }).message, 'create bad/name: "bad/name" includes invalid characters for a local volume name, only "[a-zA-Z0-9][a-zA-Z0-9_.-]" are allowed. If you intended to pass a host directory, use absolute path')
    const short = await post('/volumes/create', { Name: 'a' })
    assert.equal(short.status, 400)
    assert.match(short.text, /volume name is too short/)
    const drv = await post('/volumes/create', { Name: 'x1', Driver: 'nope' })
    assert.equal(drv.status, 404)
    assert.equal((drv.json() as { message: string }).message, 'create x1: error looking up volume plugin nope: plugin "nope" not found')
    for (const [opts, msg] of [[{ bogus: '1' }, 'create o1: invalid option: "bogus"'], [{ type: 'tmpfs' }, 'create o1: missing required option: "device"'], [{ device: '/tmp' }, 'create o1: missing required option: "type"']] as const) {
      const o = await post('/volumes/create', { Name: 'o1', DriverOpts: opts })
      assert.equal(o.status, 400)
      assert.equal((o.json() as { message: string }).message, msg)
    }
    const tmp = await post('/volumes/create', { Name: 'tmpv', DriverOpts: { type: 'tmpfs', device: 'tmpfs', o: 'size=1m' } })
    assert.equal(tmp.status, 201)
    assert.deepEqual((tmp.json() as Vol).Options, { type: 'tmpfs', device: 'tmpfs', o: 'size=1m' })
    await request(socket, 'DELETE', `/volumes/${anon.Name}`)
  })

  await t.test('list and filters; inspect; not found', async () => {
    const list = (await request(socket, 'GET', '/volumes')).json() as { Volumes: Vol[], Warnings: null }
    assert.deepEqual(list.Volumes.map((v) => v.Name).sort(), ['tmpv', 'v1'])
    assert.equal(list.Warnings, null)
    const f = async (filters: unknown): Promise<string[]> => ((await request(socket, 'GET', `/volumes?filters=${encodeURIComponent(JSON.stringify(filters))}`)).json() as { Volumes: Vol[] }).Volumes.map((v) => v.Name).sort()
    assert.deepEqual(await f({ label: ['a=b'] }), ['v1'])
    assert.deepEqual(await f({ label: ['a'] }), ['v1'])
    assert.deepEqual(await f({ name: ['mp'] }), ['tmpv'])
    assert.deepEqual(await f({ driver: ['local'] }), ['tmpv', 'v1'])
    assert.deepEqual(await f({ dangling: ['true'] }), ['tmpv', 'v1'])
    const bad = await request(socket, 'GET', `/volumes?filters=${encodeURIComponent('{"foo":["x"]}')}`)
    assert.equal(bad.status, 400)
    const ins = await request(socket, 'GET', '/volumes/v1')
    assert.equal((ins.json() as Vol).Name, 'v1')
    const nf = await request(socket, 'GET', '/volumes/nope')
    assert.equal(nf.status, 404)
    assert.equal((nf.json() as { message: string }).message, 'get nope: no such volume')
  })

  await t.test('in use: 409 with the container, even with force; dangling filter; rm -f of a missing volume', async () => {
    const id = await createContainer(socket, { Image: 'busybox', Cmd: ['true'], HostConfig: { Binds: ['v1:/data'] } })
    const del = await request(socket, 'DELETE', '/volumes/v1')
    assert.equal(del.status, 409)
    assert.equal((del.json() as { message: string }).message, `remove v1: volume is in use - [${id}]`)
    assert.equal((await request(socket, 'DELETE', '/volumes/v1?force=1')).status, 409)
    const dangling = ((await request(socket, 'GET', `/volumes?filters=${encodeURIComponent('{"dangling":["false"]}')}`)).json() as { Volumes: Vol[] }).Volumes.map((v) => v.Name)
    assert.deepEqual(dangling, ['v1'])
    assert.equal((await request(socket, 'DELETE', '/volumes/nope')).status, 404)
    assert.equal((await request(socket, 'DELETE', '/volumes/nope?force=1')).status, 204)
    assert.equal((await request(socket, 'DELETE', `/containers/${id}`)).status, 204)
  })

  await t.test('prune: API >= 1.42 anonymous only unless all=true; older clients every unused volume; events', async () => {
    const since = Math.floor(Date.now() / 1000) - 1
    const anon = ((await post('/volumes/create', {})).json() as Vol).Name
    await post('/volumes/create', { Name: 'keepme', Labels: { keep: '1' } })
    const id = await createContainer(socket, { Image: 'busybox', Cmd: ['true'], HostConfig: { Binds: ['v1:/data'] } })
    const p1 = (await post('/volumes/prune')).json() as { VolumesDeleted: string[] | null, SpaceReclaimed: number }
    assert.deepEqual(p1.VolumesDeleted, [anon])
    const p2 = (await post(`/volumes/prune?filters=${encodeURIComponent('{"all":["true"],"label!":["keep"]}')}`)).json() as { VolumesDeleted: string[] }
    assert.deepEqual(p2.VolumesDeleted, ['tmpv'])
    const p3 = (await post('/v1.41/volumes/prune')).json() as { VolumesDeleted: string[] }
    assert.deepEqual(p3.VolumesDeleted, ['keepme'])
    assert.ok(existsSync(join(te.dataRoot, 'volumes', 'v1')), 'a volume in use is never pruned')
    const ev = await request(socket, 'GET', `/events?since=${since}&until=${Math.floor(Date.now() / 1000) + 1}&filters=${encodeURIComponent('{"type":["volume"]}')}`)
    const actions = ev.text.trim().split('\n').map((l) => { const e = JSON.parse(l) as { Action: string, Actor: { ID: string } }; return `${e.Action} ${e.Actor.ID}` })
    assert.ok(actions.includes(`create ${anon}`), actions.join('\n'))
    assert.ok(actions.includes(`destroy ${anon}`))
    assert.ok(actions.includes('destroy keepme'))
    assert.ok(actions.some((a) => a.startsWith('prune')))
    await request(socket, 'DELETE', `/containers/${id}`)
  })

  await t.test('restart: records survive; a removal or copy-up a crash interrupted is finished; references are back', async () => {
    const id = await createContainer(socket, { Image: 'busybox', Cmd: ['true'], HostConfig: { Binds: ['v1:/data'] } })
    await te.close()
    const root = join(te.dataRoot, 'volumes')
    mkdirSync(join(root, '.rm-crashed', '_data'), { recursive: true })
    mkdirSync(join(root, 'v1', '.copyup-crashed'), { recursive: true })
    writeFileSync(join(root, 'v1', '.copyup-crashed', 'half'), 'x')
    mkdirSync(join(root, 'half-created'), { recursive: true })
    te = await startEngine(t, { dir })
    socket = te.socket
    assert.deepEqual(readdirSync(root).sort(), ['v1'])
    assert.deepEqual(readdirSync(join(root, 'v1')).sort(), ['_data', 'volume.json'])
    const v = (await request(socket, 'GET', '/volumes/v1')).json() as Vol
    assert.deepEqual(v.Labels, { a: 'b' })
    assert.equal((await request(socket, 'DELETE', '/volumes/v1')).status, 409)
    assert.equal((await request(socket, 'DELETE', `/containers/${id}`)).status, 204)
    assert.equal((await request(socket, 'DELETE', '/volumes/v1')).status, 204)
  })
})
