// The image routes over fake backends: the progress streams' two kinds of failure (before the first record an
// ordinary reply, after it an in-band error record), imports and loads that fail half-way, the wire shapes per API
// version from typed records, and the refusals made before any backend is asked.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { Readable } from 'node:stream'
import { imageRoutes } from '../../lib/api/images/routes.js'
import { imageArchiveRoutes } from '../../lib/api/images/archive-routes.js'
import { imageDistributionRoutes } from '../../lib/api/images/distribution-routes.js'
import type { DistributionBackend, ImageArchiveBackend, ImageBackend } from '../../lib/api/images/backend.js'
import type { ImageRecord } from '../../lib/image/types.js'
import { notFound, unauthorized } from '../../lib/errors.js'
import { request } from '../helpers/engine.js'
import { notCalled, serveRoutes } from '../helpers/api-server.js'

const IMG: ImageRecord = {
  id: 'sha256:' + 'a'.repeat(64),
  config: { architecture: 'amd64', os: 'linux', created: '2026-01-02T03:04:05Z', rootfs: { type: 'layers', diff_ids: ['sha256:l1', 'sha256:l2'] }, config: { Cmd: ['sh'], Labels: { a: 'b' } } },
  repoTags: [],
  repoDigests: [],
  parent: '',
  size: 1234
}

function images (over: Partial<ImageBackend> = {}): ImageBackend {
  return {
    containerCount: () => 2,
    sharedSizes: notCalled('sharedSizes'),
    listImages: () => [IMG],
    inspectImage: async () => ({ img: IMG, layerDirs: ['/d/l1', '/d/l2'] }),
    imageHistory: notCalled('imageHistory'),
    tagImage: notCalled('tagImage'),
    removeImage: notCalled('removeImage'),
    pruneImages: notCalled('pruneImages'),
    searchImages: notCalled('searchImages'),
    importImage: notCalled('importImage'),
    pullImage: notCalled('pullImage'),
    ...over
  }
}

const lines = (text: string): Array<Record<string, unknown>> => text.trim().split(/\r?\n/).map((l) => JSON.parse(l) as Record<string, unknown>)

test('pull: a failure before any progress keeps its status; one after it is an in-band error record', async (t) => {
  let calls = 0
  const socket = await serveRoutes(t, imageRoutes(images({
    pullImage: async (o, out) => {
      if (calls++ === 0) throw unauthorized(`pull access denied for ${o.fromImage}, repository does not exist or may require 'docker login'`)
      out.message('Pulling from library/busybox', o.tag)
      throw new Error('connection reset by peer')
    }
  })))
  const first = await request(socket, 'POST', '/images/create?fromImage=busybox&tag=1')
  assert.equal(first.status, 401)
  assert.match((first.json() as { message: string }).message, /pull access denied for busybox/)
  const second = await request(socket, 'POST', '/images/create?fromImage=busybox&tag=1')
  assert.equal(second.status, 200)
  assert.deepEqual(lines(second.text), [
    { status: 'Pulling from library/busybox', id: '1' },
    { errorDetail: { message: 'connection reset by peer' }, error: 'connection reset by peer' }
  ])
})

test('import: a URL source is refused, no source at all is a 400, and a failed import is an in-band record', async (t) => {
  const socket = await serveRoutes(t, imageRoutes(images({
    importImage: async (src) => { for await (const _ of src) { /* read it all */ } throw new Error('archive/tar: invalid tar header') }
  })))
  const url = await request(socket, 'POST', '/images/create?fromSrc=http://example.com/a.tar')
  assert.equal(url.status, 501)
  assert.equal((await request(socket, 'POST', '/images/create')).status, 400)
  const badRepo = await request(socket, 'POST', '/images/create?fromSrc=-&repo=UPPER', { raw: Buffer.from('x') })
  assert.equal(badRepo.status, 400)
  const r = await request(socket, 'POST', '/images/create?fromSrc=-&repo=app', { raw: Buffer.from('not a tar') })
  assert.equal(r.status, 200)
  assert.deepEqual(lines(r.text), [{ errorDetail: { message: 'archive/tar: invalid tar header' }, error: 'archive/tar: invalid tar header' }])
})

test('list and inspect: the wire shape follows the API version; GraphDriver from the layers\' directories', async (t) => {
  const socket = await serveRoutes(t, imageRoutes(images({
    inspectImage: async (ref) => ref === 'empty' ? { img: { ...IMG, config: { ...IMG.config, rootfs: { type: 'layers', diff_ids: [] } } }, layerDirs: [] } : { img: IMG, layerDirs: ['/d/l1', '/d/l2', '/d/l3'] }
  })))
  const old = ((await request(socket, 'GET', '/v1.41/images/json')).json() as Array<Record<string, unknown>>)[0]
  assert.deepEqual(old?.RepoTags, ['<none>:<none>'])
  assert.equal(old?.Containers, -1)
  assert.equal(old?.VirtualSize, 1234)
  const now = ((await request(socket, 'GET', '/v1.50/images/json')).json() as Array<Record<string, unknown>>)[0]
  assert.deepEqual(now?.RepoTags, [])
  assert.deepEqual(now?.Labels, { a: 'b' })
  assert.equal(now?.VirtualSize, undefined)
  const inspect = (await request(socket, 'GET', '/images/x/json')).json() as { GraphDriver: unknown }
  assert.deepEqual(inspect.GraphDriver, { Name: 'overlay2', Data: { LowerDir: '/d/l2:/d/l1', UpperDir: '/d/l3', MergedDir: '', WorkDir: '' } })
  const empty = (await request(socket, 'GET', '/images/empty/json')).json() as { GraphDriver: unknown }
  assert.deepEqual(empty.GraphDriver, { Name: 'overlay2', Data: null })
})

test('history, prune and search: typed results under dockerd\'s names', async (t) => {
  let limit = 0
  const socket = await serveRoutes(t, imageRoutes(images({
    imageHistory: async () => [{ id: IMG.id, created: 5, createdBy: '/bin/sh -c #(nop) CMD ["sh"]', tags: ['app:1'], size: 0, comment: '' }, { id: '<missing>', created: 1, createdBy: 'ADD file', tags: null, size: 9, comment: 'c' }],
    pruneImages: async () => ({ deleted: [], reclaimed: 0 }),
    searchImages: async (_term, n) => { limit = n; return [{ name: 'busybox', description: 'tiny', stars: 3, official: true, automated: false }] }
  })))
  assert.deepEqual((await request(socket, 'GET', '/images/app/history')).json(), [
    { Id: IMG.id, Created: 5, CreatedBy: '/bin/sh -c #(nop) CMD ["sh"]', Tags: ['app:1'], Size: 0, Comment: '' },
    { Id: '<missing>', Created: 1, CreatedBy: 'ADD file', Tags: null, Size: 9, Comment: 'c' }
  ])
  assert.deepEqual((await request(socket, 'POST', '/images/prune')).json(), { ImagesDeleted: null, SpaceReclaimed: 0 })
  assert.deepEqual((await request(socket, 'GET', '/images/search?term=busybox&limit=500')).json(), [{ name: 'busybox', description: 'tiny', star_count: 3, is_official: true, is_automated: false }])
  assert.equal(limit, 100)
  assert.equal((await request(socket, 'GET', '/images/search')).status, 400)
})

test('load: a failure half-way is an in-band error after the lines already written', async (t) => {
  const archive: ImageArchiveBackend = {
    saveImages: async (names) => { if (names[0] === 'gone') throw notFound('No such image: gone'); return Readable.from([Buffer.from('tar bytes')]) },
    loadImages: async (src, report) => {
      for await (const _ of src) { /* read it all */ }
      report.stream('Loaded image: app:1\n')
      throw new Error('unexpected EOF')
    }
  }
  const socket = await serveRoutes(t, imageArchiveRoutes(archive))
  const r = await request(socket, 'POST', '/images/load?quiet=0', { raw: Buffer.from('some tar') })
  assert.equal(r.status, 200)
  assert.deepEqual(lines(r.text), [{ stream: 'Loaded image: app:1\n' }, { errorDetail: { message: 'unexpected EOF' }, error: 'unexpected EOF' }])
  const save = await request(socket, 'GET', '/images/get?names=app')
  assert.equal(save.headers['content-type'], 'application/x-tar')
  assert.equal(save.text, 'tar bytes')
  assert.equal((await request(socket, 'GET', '/images/gone/get')).status, 404)
})

test('push reads its credentials from the body without X-Registry-Auth; login answers with the identity token', async (t) => {
  let auth: unknown
  const dist: DistributionBackend = {
    pushImage: async (o, out) => { auth = o.auth; out.message(`The push refers to repository [${o.name}]`) },
    login: async (a) => { if (a.password !== 'pw') throw unauthorized('login attempt failed'); return { identityToken: 'tok' } },
    inspectRemote: notCalled('inspectRemote')
  }
  const socket = await serveRoutes(t, imageDistributionRoutes(dist))
  const push = await request(socket, 'POST', '/images/localhost:5000/app/push?tag=1', { body: { username: 'u', password: 'p' } })
  assert.equal(push.status, 200)
  assert.deepEqual(auth, { username: 'u', password: 'p' })
  assert.deepEqual(lines(push.text), [{ status: 'The push refers to repository [localhost:5000/app]' }])
  assert.deepEqual((await request(socket, 'POST', '/auth', { body: { username: 'u', password: 'pw' } })).json(), { Status: 'Login Succeeded', IdentityToken: 'tok' })
  const refused = await request(socket, 'POST', '/auth', { body: { username: 'u', password: 'no' } })
  assert.equal(refused.status, 401)
})
