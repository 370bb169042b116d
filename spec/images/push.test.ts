// Pushes to real registries (docker-registry 2.8.2 with and without token auth, and Berth's own registry), then
// pulls back into a fresh engine: the progress records, same digests both ways, layers that exist or can be mounted
// are not uploaded again, chunked and monolithic uploads, auth failures as real 401s, and the docker CLI.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { join } from 'node:path'
import { rmSync } from 'node:fs'
import Docker from 'dockerode'
import { startEngine, request, importBusybox, dockerCli, hasDockerCli } from '../helpers/engine.js'
import { createRegistry } from '../../lib/index.js'
import { hashPassword } from '../../lib/registry/auth/passwords.js'
import {
  registrySkipReason, startDistribution, startTokenServer, startProxy, records, rawRequest, registryAuthHeader,
  layerStatuses, tmpDir, type Rec
} from './registry-fixture.js'

const skip = registrySkipReason()
if (skip !== null) process.stdout.write(`# skipping push tests: ${skip}\n`)

async function push (socket: string, name: string, tag: string, auth?: unknown): Promise<{ status: number, message: string, recs: Rec[] }> {
  const r = await request(socket, 'POST', `/images/${name}/push?tag=${tag}`, { headers: { 'X-Registry-Auth': registryAuthHeader(auth ?? {}) } })
  if (r.status !== 200) return { status: r.status, message: (r.json() as { message: string }).message, recs: [] }
  const recs = records(r.text)
  return { status: 200, message: recs[recs.length - 1]?.errorDetail?.message ?? '', recs }
}

async function pull (socket: string, ref: string, tag: string, auth?: unknown): Promise<Rec[]> {
  const r = await request(socket, 'POST', `/images/create?fromImage=${encodeURIComponent(ref)}&tag=${tag}`, { headers: { 'X-Registry-Auth': registryAuthHeader(auth ?? {}) } })
  assert.equal(r.status, 200, r.text)
  return records(r.text)
}

function pushed (recs: Rec[]): { digest: string, size: number } {
  const aux = recs.find((r) => r.aux !== undefined)?.aux as { Tag: string, Digest: string, Size: number } | undefined
  assert.ok(aux !== undefined, `no aux record in ${JSON.stringify(recs)}`)
  return { digest: aux.Digest, size: aux.Size }
}

test('push an imported image, pull it back elsewhere with the same digests; a second push finds the layer', { skip: skip ?? false }, async (t) => {
  const reg = await startDistribution(t)
  const a = await startEngine(t)
  const id = await importBusybox(a.socket, `${reg.host}/test/bb`)
  const diffId = ((await request(a.socket, 'GET', `/images/${id}/json`)).json() as { RootFS: { Layers: string[] } }).RootFS.Layers[0] as string
  const docker = new Docker({ socketPath: a.socket })
  const stream = await docker.getImage(`${reg.host}/test/bb`).push({ tag: 'latest' })
  const recs = await new Promise<Rec[]>((resolve, reject) => {
    docker.modem.followProgress(stream, (err: Error | null, out: Rec[]) => { if (err !== null) reject(err); else resolve(out) })
  })
  assert.deepEqual(recs[0], { status: `The push refers to repository [${reg.host}/test/bb]` })
  const lid = diffId.slice(7, 19)
  const seq = layerStatuses(recs, lid)
  assert.deepEqual(seq, ['Preparing', 'Pushing', 'Pushed'])
  const last = recs.filter((r) => r.id === lid && r.status === 'Pushing').pop() as Rec
  assert.match(last.progress ?? '', /\]\s+[\d.]+[kMG]?B\/[\d.]+[kMG]?B$/)
  const { digest, size } = pushed(recs)
  const statusLine = recs.find((r) => r.status?.startsWith('latest: digest:') === true)
  assert.equal(statusLine?.status, `latest: digest: ${digest} size: ${size}`)
  assert.deepEqual(recs[recs.length - 1], { progressDetail: {}, aux: { Tag: 'latest', Digest: digest, Size: size } })

  const m = await rawRequest(`${reg.url}/v2/test/bb/manifests/latest`, 'GET', { headers: { Accept: 'application/vnd.docker.distribution.manifest.v2+json' } })
  assert.equal(m.headers['docker-content-digest'], digest)
  assert.equal(m.body.length, size)
  const manifest = JSON.parse(m.body.toString()) as { mediaType: string, config: { digest: string }, layers: Array<{ mediaType: string, digest: string }> }
  assert.equal(manifest.mediaType, 'application/vnd.docker.distribution.manifest.v2+json')
  assert.equal(manifest.config.digest, id)
  assert.equal(manifest.layers[0]?.mediaType, 'application/vnd.docker.image.rootfs.diff.tar.gzip')
  const listed = (await request(a.socket, 'GET', '/images/json')).json() as Array<{ RepoDigests: string[] }>
  assert.deepEqual(listed[0]?.RepoDigests, [`${reg.host}/test/bb@${digest}`])

  const b = await startEngine(t)
  const back = await pull(b.socket, `${reg.host}/test/bb`, 'latest')
  assert.ok(back.some((r) => r.status === `Digest: ${digest}`))
  const img = (await request(b.socket, 'GET', `/images/${reg.host}/test/bb/json`)).json() as { Id: string, RepoDigests: string[], RootFS: { Layers: string[] } }
  assert.equal(img.Id, id)
  assert.deepEqual(img.RootFS.Layers, [diffId])
  assert.deepEqual(img.RepoDigests, [`${reg.host}/test/bb@${digest}`])

  const again = await push(a.socket, `${reg.host}/test/bb`, 'latest')
  assert.deepEqual(layerStatuses(again.recs, lid), ['Preparing', 'Layer already exists'])
  assert.equal(pushed(again.recs).digest, digest)
})

test('a layer pulled from (or pushed to) another repository of the registry is mounted, not uploaded', { skip: skip ?? false }, async (t) => {
  const reg = await startDistribution(t)
  const proxy = await startProxy(t, reg.url)
  const a = await startEngine(t)
  const id = await importBusybox(a.socket, `${proxy.host}/test/bb`)
  assert.equal((await push(a.socket, `${proxy.host}/test/bb`, 'latest')).status, 200)
  assert.equal((await request(a.socket, 'POST', `/images/${id}/tag?repo=${proxy.host}/other/bb&tag=v2`)).status, 201)
  const r = await push(a.socket, `${proxy.host}/other/bb`, 'v2')
  const lid = (((await request(a.socket, 'GET', `/images/${id}/json`)).json() as { RootFS: { Layers: string[] } }).RootFS.Layers[0] as string).slice(7, 19)
  assert.deepEqual(layerStatuses(r.recs, lid), ['Preparing', 'Mounted from test/bb'])
  assert.ok(proxy.requests.some((q) => q.method === 'POST' && q.url.includes('/v2/other/bb/blobs/uploads/?mount=') && q.url.includes('from=test%2Fbb')))
  assert.ok(!proxy.requests.some((q) => q.method === 'PATCH' && q.url.includes('/v2/other/bb/')), 'no upload to other/bb')

  // a pulled image pushed under another name on the same registry: mounted from where it came
  const b = await startEngine(t)
  await pull(b.socket, `${proxy.host}/test/bb`, 'latest')
  assert.equal((await request(b.socket, 'POST', `/images/${proxy.host}/test/bb:latest/tag?repo=${proxy.host}/third/bb&tag=latest`)).status, 201)
  const m = await push(b.socket, `${proxy.host}/third/bb`, 'latest')
  assert.deepEqual(layerStatuses(m.recs, lid), ['Preparing', 'Mounted from test/bb'])
  assert.equal(pushed(m.recs).digest, pushed(r.recs).digest, 'same manifest bytes, same digest')
})

test('chunked (PATCH with Content-Range) and monolithic (one PUT) uploads', { skip: skip ?? false }, async (t) => {
  const reg = await startDistribution(t)
  const proxy = await startProxy(t, reg.url)
  const a = await startEngine(t)
  const d = await a.engine.distribution()
  d.uploadChunkSize = 256 * 1024
  d.monolithicLimit = 0
  const id = await importBusybox(a.socket, `${proxy.host}/chunked/bb`)
  const r = await push(a.socket, `${proxy.host}/chunked/bb`, 'latest')
  assert.equal(r.message, '')
  const patches = proxy.requests.filter((q) => q.method === 'PATCH')
  assert.ok(patches.length >= 2, `several chunks (${patches.length})`)
  let expect = 0
  for (const p of patches) {
    const m = /^(\d+)-(\d+)$/.exec(String(p.headers['content-range']))
    assert.ok(m !== null, 'Content-Range on every chunk')
    assert.equal(Number(m[1]), expect)
    expect = Number(m[2]) + 1
  }
  const b = await startEngine(t)
  await pull(b.socket, `${proxy.host}/chunked/bb`, 'latest')
  assert.equal(((await request(b.socket, 'GET', `/images/${proxy.host}/chunked/bb/json`)).json() as { Id: string }).Id, id)

  // small blobs: POST, then one PUT carrying the bytes
  d.monolithicLimit = 64 * 1024 * 1024
  d.uploadChunkSize = 64 * 1024 * 1024
  proxy.requests.length = 0
  assert.equal((await request(a.socket, 'POST', `/images/${id}/tag?repo=${proxy.host}/mono/bb&tag=latest`)).status, 201)
  // forget where the layer is, so it is uploaded rather than mounted
  rmSync(join(a.dataRoot, 'distribution'), { recursive: true, force: true })
  const fresh = await startEngine(t)
  await importBusybox(fresh.socket, `${proxy.host}/mono/bb`)
  const dist = await fresh.engine.distribution()
  dist.monolithicLimit = 64 * 1024 * 1024
  proxy.requests.length = 0
  const mono = await push(fresh.socket, `${proxy.host}/mono/bb`, 'latest')
  assert.equal(mono.message, '')
  assert.ok(!proxy.requests.some((q) => q.method === 'PATCH'), 'no PATCH')
  const puts = proxy.requests.filter((q) => q.method === 'PUT' && q.url.includes('/blobs/uploads/'))
  assert.ok(puts.length >= 1 && puts.every((q) => Number(q.headers['content-length']) > 0), 'PUT with the bytes')
})

test('token auth: no or wrong credentials are a 401 before any record; right ones (both alphabets) push', { skip: skip ?? false }, async (t) => {
  const token = await startTokenServer(t)
  const reg = await startDistribution(t, { token })
  const a = await startEngine(t)
  await importBusybox(a.socket, `${reg.host}/alice/bb`)
  let r = await push(a.socket, `${reg.host}/alice/bb`, 'latest')
  assert.deepEqual([r.status, r.message], [401, 'denied: requested access to the resource is denied'])
  r = await push(a.socket, `${reg.host}/alice/bb`, 'latest', { username: 'alice', password: 'wrong' })
  assert.equal(r.status, 401)
  assert.match(r.message, /incorrect username or password/)
  const hdr = registryAuthHeader({ Username: 'alice', Password: 'secret', ServerAddress: reg.host }, 'std', false)
  const ok = await request(a.socket, 'POST', `/images/${reg.host}/alice/bb/push?tag=latest`, { headers: { 'X-Registry-Auth': hdr } })
  assert.equal(ok.status, 200)
  const recs = records(ok.text)
  assert.equal(recs.find((x) => x.error !== undefined), undefined)
  pushed(recs)
  // the token asked for both actions on the repository
  assert.ok(token.log.some((l) => decodeURIComponent(l.url).includes('scope=repository:alice/bb:pull,push')))
})

test('unknown tags and repositories: 404 before any record; no tag pushes every tag of the repository', { skip: skip ?? false }, async (t) => {
  const reg = await startDistribution(t)
  const a = await startEngine(t)
  let r = await push(a.socket, `${reg.host}/nothing/here`, 'latest')
  assert.deepEqual([r.status, r.message], [404, `tag does not exist: ${reg.host}/nothing/here:latest`])
  r = await push(a.socket, `${reg.host}/nothing/here`, '')
  assert.deepEqual([r.status, r.message], [404, `An image does not exist locally with the tag: ${reg.host}/nothing/here`])
  const id = await importBusybox(a.socket, `${reg.host}/all/bb`)
  assert.equal((await request(a.socket, 'POST', `/images/${id}/tag?repo=${reg.host}/all/bb&tag=v1`)).status, 201)
  r = await push(a.socket, `${reg.host}/all/bb`, '')
  assert.deepEqual(r.recs.filter((x) => x.aux !== undefined).map((x) => (x.aux as { Tag: string }).Tag), ['latest', 'v1'])
})

test('docker CLI push and pull against a local registry', { skip: skip ?? (hasDockerCli() ? false : 'docker CLI not installed') }, async (t) => {
  const reg = await startDistribution(t)
  const a = await startEngine(t)
  await importBusybox(a.socket, `${reg.host}/cli/bb`)
  const p = await dockerCli(a.socket, ['push', `${reg.host}/cli/bb:latest`])
  assert.equal(p.status, 0, p.stderr)
  assert.match(p.stdout, new RegExp(`The push refers to repository \\[${reg.host}/cli/bb\\]`))
  assert.match(p.stdout, /latest: digest: sha256:[0-9a-f]{64} size: \d+/)
  const b = await startEngine(t)
  const q = await dockerCli(b.socket, ['pull', `${reg.host}/cli/bb:latest`])
  assert.equal(q.status, 0, q.stderr)
  const run = await dockerCli(b.socket, ['images', '--digests', '--format', '{{.Repository}} {{.Tag}} {{.Digest}}'])
  assert.match(run.stdout, new RegExp(`${reg.host}/cli/bb latest sha256:[0-9a-f]{64}`))
})

test("Berth's own registry: push with token auth, pull back", { skip: false }, async (t) => {
  const dir = tmpDir('berth-own-')
  const registry = await createRegistry({ dataRoot: join(dir, 'data'), listen: '127.0.0.1:0', auth: 'token', users: [{ name: 'alice', hash: await hashPassword('secret'), namespaces: [] }] })
  // close flushes the pull counters into the data root: remove it only after that
  t.after(async () => { await registry.close(); rmSync(dir, { recursive: true, force: true }) })
  const addr = registry.addresses[0]
  assert.ok(addr !== undefined && addr.kind === 'tcp')
  const host = `127.0.0.1:${addr.port}`
  const a = await startEngine(t)
  const id = await importBusybox(a.socket, `${host}/alice/bb`)
  const denied = await push(a.socket, `${host}/alice/bb`, 'latest')
  assert.equal(denied.status, 401, denied.message)
  const r = await push(a.socket, `${host}/alice/bb`, 'latest', { username: 'alice', password: 'secret' })
  assert.equal(r.message, '')
  const { digest } = pushed(r.recs)
  const b = await startEngine(t)
  const back = await pull(b.socket, `${host}/alice/bb`, 'latest', { username: 'alice', password: 'secret' })
  assert.ok(back.some((x) => x.status === `Digest: ${digest}`), JSON.stringify(back.slice(-2)))
  assert.equal(((await request(b.socket, 'GET', `/images/${host}/alice/bb/json`)).json() as { Id: string }).Id, id)
})

test('an upload the registry fails with 503 is retried, reported in the stream', { skip: skip ?? false }, async (t) => {
  const reg = await startDistribution(t)
  const proxy = await startProxy(t, reg.url)
  let fails = 1
  proxy.hooks.push((req, res) => {
    if (req.method !== 'PUT' || !(req.url ?? '').includes('/blobs/uploads/') || fails === 0) return false
    fails--
    res.writeHead(503, { 'Content-Type': 'application/json' })
    res.end('{"errors":[{"code":"UNAVAILABLE","message":"try later"}]}')
    return true
  })
  const a = await startEngine(t)
  const dist = await a.engine.distribution()
  dist.retry = { attempts: 2, delayMs: () => 5 }
  const id = await importBusybox(a.socket, `${proxy.host}/retry/bb`)
  const r = await push(a.socket, `${proxy.host}/retry/bb`, 'latest')
  assert.equal(r.message, '')
  const lid = (((await request(a.socket, 'GET', `/images/${id}/json`)).json() as { RootFS: { Layers: string[] } }).RootFS.Layers[0] as string).slice(7, 19)
  const seq = layerStatuses(r.recs, lid)
  assert.deepEqual([seq[0], seq[seq.length - 1]], ['Preparing', 'Pushed'])
  assert.ok(seq.includes('Retrying in 1 second'), seq.join(' → '))
  pushed(r.recs)
})
