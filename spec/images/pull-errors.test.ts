// Pulls that must fail, each with a clear error and nothing left behind: bad references, unknown registries, tags
// and repositories (real statuses, before any record), manifests, configs and layers whose bytes do not match their
// digests, truncated blobs (retried, resumed with Range, then given up), 5xx answers (retried), and layer tars that
// try to write outside their directory.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { existsSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { randomBytes } from 'node:crypto'
import { tmpdir } from 'node:os'
import { startEngine, request, type TestEngine } from '../helpers/engine.js'
import {
  registrySkipReason, startDistribution, seedImage, makeTar, records, startProxy, freePort, sha256,
  type Rec, type DistributionRegistry
} from './registry-fixture.js'

const skip = registrySkipReason()
if (skip !== null) process.stdout.write(`# skipping pull error tests: ${skip}\n`)

async function pull (socket: string, query: string): Promise<{ status: number, message: string, recs: Rec[] }> {
  const r = await request(socket, 'POST', `/images/create?${query}`)
  if (r.status !== 200) return { status: r.status, message: (r.json() as { message: string }).message, recs: [] }
  const recs = records(r.text)
  return { status: 200, message: recs[recs.length - 1]?.errorDetail?.message ?? '', recs }
}

function assertInBandError (r: { status: number, recs: Rec[] }, pattern: RegExp): void {
  assert.equal(r.status, 200)
  const last = r.recs[r.recs.length - 1] as Rec
  assert.match(last.errorDetail?.message ?? '(no error record)', pattern)
  assert.equal(last.error, last.errorDetail?.message, 'both errorDetail.message and error')
}

async function assertNothingLeft (e: TestEngine): Promise<void> {
  await (await e.engine.distribution()).settled()
  assert.deepEqual(readdirSync(join(e.dataRoot, 'content', 'ingest')), [])
  assert.deepEqual(readdirSync(join(e.dataRoot, 'layers')), [])
  assert.deepEqual((await request(e.socket, 'GET', '/images/json')).json(), [])
}

async function quickRetries (e: TestEngine, attempts = 2): Promise<void> {
  const dist = await e.engine.distribution()
  dist.retry = { attempts, delayMs: () => 5 }
}

const smallLayers = (): Buffer[] => [makeTar([{ name: 'etc/', type: 'dir' }, { name: 'etc/hello', body: randomBytes(200_000).toString('base64') }])]

test('references, registries, repositories and tags that do not exist: real statuses before any record', { skip: skip ?? false }, async (t) => {
  const reg = await startDistribution(t)
  await seedImage(reg.url, 'test/app', { layers: smallLayers(), tag: 'v1' })
  const e = await startEngine(t)
  let r = await pull(e.socket, 'fromImage=bad%20name')
  assert.deepEqual([r.status, r.message], [400, 'invalid reference format'])
  r = await pull(e.socket, `fromImage=${reg.host}/test/app&tag=${encodeURIComponent('bad tag')}`)
  assert.equal(r.status, 400)
  r = await pull(e.socket, 'fromImage=scratch')
  assert.deepEqual([r.status, r.message], [403, "'scratch' is a reserved name"])
  const closed = await freePort()
  r = await pull(e.socket, `fromImage=127.0.0.1:${closed}/x&tag=latest`)
  assert.equal(r.status, 500)
  assert.equal(r.message, `Get "http://127.0.0.1:${closed}/v2/": dial tcp 127.0.0.1:${closed}: connect: connection refused`)
  r = await pull(e.socket, 'fromImage=nosuch.invalid/x&tag=latest')
  assert.equal(r.status, 500)
  assert.match(r.message, /^Get "https:\/\/nosuch\.invalid\/v2\/": dial tcp: lookup nosuch\.invalid/)
  r = await pull(e.socket, `fromImage=${reg.host}/test/app&tag=nope`)
  assert.deepEqual([r.status, r.message], [404, `manifest for ${reg.host}/test/app:nope not found: manifest unknown: manifest unknown`])
  r = await pull(e.socket, `fromImage=${reg.host}/no/such&tag=v1`)
  assert.equal(r.status, 404)
  assert.match(r.message, new RegExp(`^(repository ${reg.host}/no/such not found: name unknown|manifest for ${reg.host}/no/such:v1 not found: manifest unknown)`))
  r = await pull(e.socket, `fromImage=${reg.host}/test/app@sha256:${'0'.repeat(64)}`)
  assert.equal(r.status, 404)
  await assertNothingLeft(e)
})

/** A proxy that rewrites one kind of response. */
async function tamperingProxy (t: Parameters<typeof startProxy>[0], reg: DistributionRegistry, match: (method: string, url: string) => boolean, edit: (body: Buffer) => Buffer, keepLength = false): Promise<string> {
  const proxy = await startProxy(t, reg.url)
  proxy.hooks.push(async (req, res, body) => {
    if (!match(req.method ?? '', req.url ?? '')) return false
    const up = await proxy.fetch(req, body)
    const out = edit(up.body)
    const headers = { ...up.headers, 'content-length': String(keepLength ? up.body.length : out.length) }
    delete headers['transfer-encoding']
    res.writeHead(up.status, headers)
    if (keepLength && out.length < up.body.length) { res.write(out); res.destroy(); return true }
    res.end(req.method === 'HEAD' ? undefined : out)
    return true
  })
  return proxy.host
}

test('a manifest whose bytes do not match its digest is refused before any record', { skip: skip ?? false }, async (t) => {
  const reg = await startDistribution(t)
  const img = await seedImage(reg.url, 'test/app', { layers: smallLayers(), tag: 'v1' })
  const host = await tamperingProxy(t, reg, (m, u) => m === 'GET' && u.includes('/manifests/'), (b) => Buffer.concat([b, Buffer.from('\n')]))
  const e = await startEngine(t)
  let r = await pull(e.socket, `fromImage=${host}/test/app&tag=v1`)
  assert.deepEqual([r.status, r.message], [500, `manifest verification failed for digest ${img.manifestDigest}`])
  r = await pull(e.socket, `fromImage=${host}/test/app@${img.manifestDigest}`)
  assert.deepEqual([r.status, r.message], [500, `manifest verification failed for digest ${img.manifestDigest}`])
  await assertNothingLeft(e)
})

test('a layer whose content does not match its digest: in-band error, nothing stored', { skip: skip ?? false }, async (t) => {
  const reg = await startDistribution(t)
  const img = await seedImage(reg.url, 'test/app', { layers: smallLayers(), tag: 'v1', uncompressed: true })
  const layer = img.layerDigests[0] as string
  const host = await tamperingProxy(t, reg, (m, u) => m === 'GET' && u.endsWith(`/blobs/${layer}`), (b) => {
    const c = Buffer.from(b)
    c[c.length - 2000] = (c[c.length - 2000] as number) ^ 0xff
    return c
  })
  const e = await startEngine(t)
  const r = await pull(e.socket, `fromImage=${host}/test/app&tag=v1`)
  assertInBandError(r, new RegExp(`^filesystem layer verification failed for digest ${layer}$`))
  await assertNothingLeft(e)
})

test('a config whose bytes do not match, and a config whose diff IDs do not match the layers', { skip: skip ?? false }, async (t) => {
  const reg = await startDistribution(t)
  const img = await seedImage(reg.url, 'test/app', { layers: smallLayers(), tag: 'v1' })
  const host = await tamperingProxy(t, reg, (m, u) => m === 'GET' && u.endsWith(`/blobs/${img.configDigest}`), (b) => Buffer.from(b.toString().replace('"sh"', '"ls"')))
  const e = await startEngine(t)
  let r = await pull(e.socket, `fromImage=${host}/test/app&tag=v1`)
  assertInBandError(r, new RegExp(`^image config verification failed for digest ${img.configDigest}$`))
  await seedImage(reg.url, 'test/liar', { layers: smallLayers(), tag: 'v1', diffIds: [sha256(Buffer.from('something else'))] })
  r = await pull(e.socket, `fromImage=${reg.host}/test/liar&tag=v1`)
  assertInBandError(r, /^layers from manifest don't match image configuration/)
  await assertNothingLeft(e)
})

test('a truncated blob is retried and resumed with Range; one that stays truncated fails cleanly', { skip: skip ?? false }, async (t) => {
  const reg = await startDistribution(t)
  const img = await seedImage(reg.url, 'test/app', { layers: smallLayers(), tag: 'v1' })
  const layer = img.layerDigests[0] as string
  const proxy = await startProxy(t, reg.url)
  let cutFirst = 1
  let cutAlways = false
  const ranges: string[] = []
  proxy.hooks.push(async (req, res, body) => {
    if (req.method !== 'GET' || !(req.url ?? '').endsWith(`/blobs/${layer}`)) return false
    if (req.headers.range !== undefined) ranges.push(req.headers.range)
    if (!cutAlways && cutFirst === 0) return false
    cutFirst--
    delete req.headers.range // a server that ignores Range: the client skips what it has
    const up = await proxy.fetch(req, body)
    res.writeHead(200, { 'Content-Length': up.body.length, 'Content-Type': 'application/octet-stream' })
    res.write(up.body.subarray(0, up.body.length >> 1), () => { res.destroy() })
    return true
  })
  const e = await startEngine(t)
  await quickRetries(e)
  const ok = await pull(e.socket, `fromImage=${proxy.host}/test/app&tag=v1`)
  assert.equal(ok.status, 200)
  assert.equal(ok.recs[ok.recs.length - 1]?.status, `Status: Downloaded newer image for ${proxy.host}/test/app:v1`, JSON.stringify(ok.recs.slice(-3)))
  assert.ok(ok.recs.some((r) => r.status === 'Retrying in 1 second' && r.id === layer.slice(7, 19)), 'the retry is reported')
  assert.equal(ranges.length, 1)
  assert.match(ranges[0] as string, /^bytes=\d+-$/)
  assert.equal((await request(e.socket, 'DELETE', `/images/${img.configDigest}?force=1`)).status, 200)
  assert.deepEqual(readdirSync(join(e.dataRoot, 'layers')), [])

  // and the stored tar from that pull is reused; drop it to force a download that never completes
  for (const h of readdirSync(join(e.dataRoot, 'content', 'blobs', 'sha256'))) {
    if (`sha256:${h}` === img.diffIds[0]) await import('node:fs/promises').then(async (fs) => { await fs.rm(join(e.dataRoot, 'content', 'blobs', 'sha256', h)) })
  }
  cutAlways = true
  const bad = await pull(e.socket, `fromImage=${proxy.host}/test/app&tag=v1`)
  assertInBandError(bad, /unexpected EOF$/)
  // each attempt that brings new bytes resets the count; here the last ones bring none
  assert.ok(bad.recs.filter((r) => r.status?.startsWith('Retrying in') === true).length >= 2)
  await assertNothingLeft(e)
})

test('a registry answering 503 for a blob is retried with back-off, reported in the stream', { skip: skip ?? false }, async (t) => {
  const reg = await startDistribution(t)
  const img = await seedImage(reg.url, 'test/app', { layers: smallLayers(), tag: 'v1' })
  const proxy = await startProxy(t, reg.url)
  let fails = 2
  proxy.hooks.push((req, res) => {
    if (req.method !== 'GET' || !(req.url ?? '').endsWith(`/blobs/${img.layerDigests[0] as string}`) || fails === 0) return false
    fails--
    res.writeHead(503, { 'Content-Type': 'application/json' })
    res.end('{"errors":[{"code":"UNAVAILABLE","message":"try later"}]}')
    return true
  })
  const e = await startEngine(t)
  await quickRetries(e, 3)
  const r = await pull(e.socket, `fromImage=${proxy.host}/test/app&tag=v1`)
  assert.equal(r.recs[r.recs.length - 1]?.status, `Status: Downloaded newer image for ${proxy.host}/test/app:v1`)
  assert.equal(r.recs.filter((x) => x.status === 'Retrying in 1 second').length, 2)
})

test('layer tars that escape their directory are refused and write nothing outside', { skip: skip ?? false }, async (t) => {
  const reg = await startDistribution(t)
  const outside = join(tmpdir(), `berth-escape-${randomBytes(6).toString('hex')}`)
  t.after(async () => { await import('node:fs/promises').then(async (fs) => { await fs.rm(outside, { recursive: true, force: true }) }) })
  const depth = '../'.repeat(30)
  const cases: Array<{ repo: string, layers: Buffer[], error: RegExp | null }> = [
    { repo: 'evil/dotdot', layers: [makeTar([{ name: `${depth}${outside.slice(1)}`, body: 'x' }])], error: /path contains '\.\.'/ },
    { repo: 'evil/symlink', layers: [makeTar([{ name: 'link', type: 'symlink', linkname: outside }, { name: 'link/pwned', body: 'x' }])], error: /goes through a symlink/ },
    { repo: 'evil/hardlink', layers: [makeTar([{ name: 'h', type: 'link', linkname: `${depth}etc/passwd` }])], error: /hard link target leaves the directory/ },
    // an absolute symlink in one layer and a write "through" it in the next: the upper layer gets a real directory
    { repo: 'evil/twolayer', layers: [makeTar([{ name: 'd', type: 'symlink', linkname: outside }]), makeTar([{ name: 'd/', type: 'dir' }, { name: 'd/pwned', body: 'x' }])], error: null }
  ]
  const e = await startEngine(t)
  for (const c of cases) {
    await seedImage(reg.url, c.repo, { layers: c.layers, tag: 'v1' })
    const r = await pull(e.socket, `fromImage=${reg.host}/${c.repo}&tag=v1`)
    if (c.error !== null) {
      assertInBandError(r, c.error)
    } else {
      assert.equal(r.recs[r.recs.length - 1]?.status, `Status: Downloaded newer image for ${reg.host}/${c.repo}:v1`)
    }
    assert.ok(!existsSync(outside), `${c.repo}: nothing written at ${outside}`)
    assert.ok(!existsSync(join(outside, 'pwned')))
  }
  const inspect = (await request(e.socket, 'GET', `/images/${reg.host}/evil/twolayer:v1/json`)).json() as { GraphDriver: { Data: { UpperDir: string } } }
  assert.ok(existsSync(join(inspect.GraphDriver.Data.UpperDir, 'd', 'pwned')), 'the write stayed inside the layer')
  assert.deepEqual(readdirSync(join(e.dataRoot, 'content', 'ingest')), [])
  assert.deepEqual(readdirSync(join(e.dataRoot, 'layers')).filter((n) => n.startsWith('tmp-')), [])
})
