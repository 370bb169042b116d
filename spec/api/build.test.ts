// The build routes over a fake BuildApiBackend: how a failure reaches the client before and after the progress
// stream began (an ordinary reply, then an in-band errorDetail with a RUN's exit code), the quiet mode's held output
// (released before the error, cut past 1 MiB), and the query's decoding. A real build reaches few of these cheaply.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { buildRoutes } from '../../lib/api/build/routes.js'
import type { BuildApiBackend } from '../../lib/api/build/backend.js'
import type { BuildRequest } from '../../lib/build/build-runner.js'
import { keptBytes, type PruneSpace } from '../../lib/build/build-cache.js'
import { RunFailed } from '../../lib/build/builder.js'
import { invalidArgument } from '../../lib/errors.js'
import { request } from '../helpers/engine.js'
import { notCalled, serveRoutes } from '../helpers/api-server.js'

function backend (over: Partial<BuildApiBackend> = {}): BuildApiBackend {
  return { build: notCalled('build'), prune: notCalled('prune'), cancel: notCalled('cancel'), ...over }
}

const records = (text: string): Array<Record<string, unknown>> => text.trim().split(/\r?\n/).map((l) => JSON.parse(l) as Record<string, unknown>)

test('a failure before the first record is an ordinary reply; after it, an errorDetail record with the RUN\'s exit code', async (t) => {
  let step = 0
  const socket = await serveRoutes(t, buildRoutes(backend({
    build: async (_req, _body, out) => {
      if (step++ === 0) throw invalidArgument('Cannot locate specified Dockerfile: Dockerfile')
      out.stream('Step 1/2 : FROM busybox\n')
      throw new RunFailed("The command '/bin/sh -c false' returned a non-zero code: 1", 1)
    }
  })))
  const before = await request(socket, 'POST', '/build')
  assert.equal(before.status, 400)
  assert.deepEqual(before.json(), { message: 'Cannot locate specified Dockerfile: Dockerfile' })
  const after = await request(socket, 'POST', '/build')
  assert.equal(after.status, 200)
  assert.deepEqual(records(after.text), [
    { stream: 'Step 1/2 : FROM busybox\n' },
    { errorDetail: { code: 1, message: "The command '/bin/sh -c false' returned a non-zero code: 1" }, error: "The command '/bin/sh -c false' returned a non-zero code: 1" }
  ])
})

test('quiet: a success says only the image ID; a failure releases the held output before its error', async (t) => {
  let fail = false
  const socket = await serveRoutes(t, buildRoutes(backend({
    build: async (_req, _body, out) => {
      out.stream('Step 1/1 : FROM busybox\n')
      out.aux({ ID: 'sha256:abc' })
      if (fail) throw new Error('no space left on device')
      return 'sha256:abc'
    }
  })))
  const ok = await request(socket, 'POST', '/build?q=1')
  assert.deepEqual(records(ok.text), [{ aux: { ID: 'sha256:abc' } }, { stream: 'sha256:abc\n' }])
  fail = true
  const bad = await request(socket, 'POST', '/build?q=1')
  assert.deepEqual(records(bad.text).map((r) => Object.keys(r)[0]), ['aux', 'stream', 'errorDetail'])
  assert.equal(records(bad.text)[1]?.stream, 'Step 1/1 : FROM busybox\n')
})

test('quiet: what is held back is cut past 1 MiB, and the reply says so', async (t) => {
  const socket = await serveRoutes(t, buildRoutes(backend({
    build: async (_req, _body, out) => {
      for (let i = 0; i < 40; i++) out.stream('x'.repeat(64 * 1024) + '\n')
      throw new Error('failed late')
    }
  })))
  const r = await request(socket, 'POST', '/build?q=true')
  const recs = records(r.text)
  assert.ok(recs.length < 20, `${recs.length} records`)
  assert.deepEqual(recs.at(-2), { stream: '(the quiet build\'s output was cut at 1048576 bytes)\n' })
  assert.equal(recs.at(-1)?.error, 'failed late')
})

test('the query decoded into the request; refusals in dockerd\'s words before any build', async (t) => {
  let got: BuildRequest | undefined
  const socket = await serveRoutes(t, buildRoutes(backend({ build: async (req) => { got = req; return 'sha256:1' } })))
  const q = new URLSearchParams({ t: 'app:1', buildargs: JSON.stringify({ A: 'x', B: null }), labels: JSON.stringify({ l: 1 }), networkmode: 'host', shmsize: '1024', ulimits: '[{"Name":"nofile","Soft":5,"Hard":6}]', rm: '0', cachefrom: '["base"]' })
  q.append('t', '')
  q.append('extrahosts', 'a:1.2.3.4,b:5.6.7.8')
  assert.equal((await request(socket, 'POST', `/build?${q.toString()}`)).status, 200)
  assert.ok(got !== undefined)
  assert.deepEqual(got.tags, ['app:1'])
  assert.deepEqual([...got.buildArgs], [['A', 'x'], ['B', null]])
  assert.deepEqual(got.labels, { l: '1' })
  assert.equal(got.dockerfile, 'Dockerfile')
  assert.equal(got.remove, false)
  assert.deepEqual(got.cacheFrom, ['base'])
  assert.deepEqual(got.hostConfig, { NetworkMode: 'host', ExtraHosts: ['a:1.2.3.4', 'b:5.6.7.8'], ShmSize: 1024, Ulimits: [{ Name: 'nofile', Soft: 5, Hard: 6 }] })
  const refusals: Array<[string, string]> = [
    ['/build?buildargs=%5B1%5D', 'invalid buildargs parameter: a JSON object expected'],
    ['/build?version=2', 'BuildKit is not supported by this daemon: build with the classic builder (DOCKER_BUILDKIT=0)'],
    ['/build?squash=1', 'squash is only supported with experimental mode'],
    ['/build?platform=windows/amd64', '"windows/amd64": unsupported platform: this daemon builds linux images'],
    ['/build?ulimits=%7B%7D', 'invalid ulimits parameter: a JSON array expected']
  ]
  for (const [path, message] of refusals) {
    const r = await request(socket, 'POST', path)
    assert.equal(r.status, 400, path)
    assert.deepEqual(r.json(), { message }, path)
  }
})

test('prune: until as a duration or a timestamp, keep-storage and API 1.48\'s space options; cancel names a build ID', async (t) => {
  const prunes: Array<{ untilMs?: number, space: PruneSpace }> = []
  const cancelled: string[] = []
  const socket = await serveRoutes(t, buildRoutes(backend({
    prune: async (o) => { prunes.push(o); return { deleted: ['sha256:aa'], reclaimed: 7 } },
    cancel: (id) => { cancelled.push(id) }
  })))
  const f = (o: object): string => encodeURIComponent(JSON.stringify(o))
  const r = await request(socket, 'POST', `/build/prune?keep-storage=100&filters=${f({ until: ['24h'] })}`)
  assert.deepEqual(r.json(), { CachesDeleted: ['aa'], SpaceReclaimed: 7 })
  const day = Date.now() - 24 * 3600e3
  assert.ok(Math.abs((prunes[0]?.untilMs ?? 0) - day) < 60_000)
  assert.deepEqual(prunes[0]?.space, { reservedBytes: 100, maxUsedBytes: 0, minFreeBytes: 0 })
  await request(socket, 'POST', `/build/prune?filters=${f({ 'unused-for': ['1700000000'] })}`)
  assert.equal(prunes[1]?.untilMs, 1700000000000)
  // API 1.48: reserved-space (keep-storage when it is not given), max-used-space, min-free-space; before, keep-storage only
  await request(socket, 'POST', '/v1.48/build/prune?reserved-space=5&keep-storage=9&max-used-space=10&min-free-space=20')
  assert.deepEqual(prunes[2]?.space, { reservedBytes: 5, maxUsedBytes: 10, minFreeBytes: 20 })
  await request(socket, 'POST', '/v1.48/build/prune?keep-storage=9')
  assert.deepEqual(prunes[3]?.space, { reservedBytes: 9, maxUsedBytes: 0, minFreeBytes: 0 })
  await request(socket, 'POST', '/v1.47/build/prune?keep-storage=3&max-used-space=10')
  assert.deepEqual(prunes[4]?.space, { reservedBytes: 3, maxUsedBytes: 0, minFreeBytes: 0 })
  const bad = await request(socket, 'POST', '/v1.48/build/prune?max-used-space=1k')
  assert.equal(bad.status, 400)
  assert.deepEqual(bad.json(), { message: 'max-used-space is in bytes and expects an integer, got 1k: strconv.Atoi: parsing "1k": invalid syntax' })
  assert.equal((await request(socket, 'POST', `/build/prune?filters=${f({ dangling: ['true'] })}`)).status, 400)
  assert.equal((await request(socket, 'POST', '/build/cancel')).status, 400)
  assert.equal((await request(socket, 'POST', '/build/cancel?id=b1')).status, 200)
  assert.deepEqual(cancelled, ['b1'])
})

test('prune space: what a prune keeps, as BuildKit reckons it', () => {
  const space = (reservedBytes: number, maxUsedBytes: number, minFreeBytes: number): PruneSpace => ({ reservedBytes, maxUsedBytes, minFreeBytes })
  assert.equal(keptBytes(space(0, 0, 0), 1000, 50), 0, 'nothing set: prune all')
  assert.equal(keptBytes(space(300, 0, 0), 1000, 50), 300, 'the reserve alone: keep-storage')
  assert.equal(keptBytes(space(0, 400, 0), 1000, 50), 400)
  assert.equal(keptBytes(space(500, 400, 0), 1000, 50), 500, 'never below the reserve')
  assert.equal(keptBytes(space(0, 0, 30), 1000, 50), 1000, 'the disk has its free space: nothing to prune')
  assert.equal(keptBytes(space(0, 0, 250), 1000, 50), 800, 'free 200 more')
  assert.equal(keptBytes(space(0, 700, 250), 1000, 50), 700)
  assert.equal(keptBytes(space(0, 900, 250), 1000, 50), 800)
  assert.equal(keptBytes(space(0, 0, 5000), 1000, 50), 0, 'more than the cache holds: all of it')
})
