// State survives a restart; a crash leaves nothing half-written visible; garbage collection deletes exactly the
// blobs no manifest references.
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { mkdirSync, writeFileSync, readdirSync, existsSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { randomBytes } from 'node:crypto'
import { collectGarbage } from '../../lib/index.js'
import { startRegistry, tmpDir, client, makeImage, pushImage, pushBlob, sha256 } from './helpers.js'

describe('persistence', () => {
  it('repositories, tags, manifests, blobs and Hub fields survive a restart', async (t) => {
    const dir = tmpDir()
    const first = await startRegistry({ after: () => {} }, { dir })
    let req = client(first.url)
    const img = makeImage()
    assert.equal((await pushImage(first.url, 'keep/app', 'v1', img)).status, 201)
    assert.equal((await req('POST', '/v2/namespaces/keep/repositories', { json: { name: 'described', description: 'kept', is_private: true } })).status, 201)
    await req('GET', '/v2/keep/app/manifests/v1')
    await req('GET', '/v2/keep/app/manifests/v1')
    const hubBefore = (await req('GET', '/v2/namespaces/keep/repositories/app')).json()
    const tagBefore = (await req('GET', '/v2/namespaces/keep/repositories/app/tags/v1')).json()
    await first.registry.close()

    const second = await startRegistry(t, { dir })
    t.after(() => { rmSync(dir, { recursive: true, force: true }) }) // after hooks run in order: close first
    req = client(second.url)
    assert.deepEqual((await req('GET', '/v2/keep/app/tags/list')).json().tags, ['v1'])
    assert.deepEqual((await req('GET', `/v2/keep/app/blobs/${sha256(img.layers[1] as Buffer)}`)).body, img.layers[1])
    const hubAfter = (await req('GET', '/v2/namespaces/keep/repositories/app')).json()
    assert.equal(hubAfter.pull_count, 2, 'pull statistics are flushed on close')
    assert.deepEqual({ ...hubAfter, pull_count: 0 }, { ...hubBefore, pull_count: 0 })
    const tagAfter = (await req('GET', '/v2/namespaces/keep/repositories/app/tags/v1')).json()
    assert.deepEqual(tagAfter, tagBefore)
    const m = await req('GET', `/v2/keep/app/manifests/${img.digest}`)
    assert.deepEqual(m.body, img.manifest)
    const described = (await req('GET', '/v2/namespaces/keep/repositories/described')).json()
    assert.equal(described.description, 'kept')
    assert.equal(described.is_private, true)
    // ids keep counting after a restart
    const created = (await req('POST', '/v2/namespaces/keep/repositories', { json: { name: 'third' } })).json()
    assert.ok(created.name === 'third')
    const newTag = makeImage({ layers: 1 })
    await pushImage(second.url, 'keep/app', 'v2', newTag)
    assert.notEqual((await req('GET', '/v2/namespaces/keep/repositories/app/tags/v2')).json().id, tagBefore.id)
  })

  it('a pull counted by a request still under way at close writes nothing afterwards (its data root may be gone)', async () => {
    const dir = tmpDir()
    const reg = await startRegistry({ after: () => {} }, { dir })
    const img = makeImage()
    assert.equal((await pushImage(reg.url, 'late/app', 'v1', img)).status, 201)
    const repo = reg.registry.store.get('late/app')
    assert.ok(repo !== undefined)
    await reg.registry.close()
    rmSync(dir, { recursive: true, force: true })
    // what a handler the close cut short does once its manifest is read: count the pull (its flush is 1 s later)
    reg.registry.store.recordPull(repo, img.digest, 'v1')
    await new Promise((resolve) => setTimeout(resolve, 1500))
    assert.equal(existsSync(dir), false, 'the statistics were written into a removed data root')
  })

  it('after a crash: leftover uploads are dropped, temp files ignored, a tag without its manifest record dropped', async (t) => {
    const dir = tmpDir()
    const first = await startRegistry({ after: () => {} }, { dir })
    const img = makeImage({ layers: 1 })
    await pushImage(first.url, 'crash/app', 'good', img)
    const session = String((await client(first.url)('POST', '/v2/crash/app/blobs/uploads/')).headers.location)
    await client(first.url)('PATCH', session, { body: randomBytes(1000) })
    await first.registry.close()
    // what a crash mid-write leaves: bytes in ingest/, temp documents, a tag whose manifest record never landed
    const data = join(dir, 'data')
    writeFileSync(join(data, 'ingest', 'deadbeef'), 'half an upload')
    writeFileSync(join(data, 'repositories', 'crash', 'app', '_tags', '.good.json.abc.tmp'), '{"digest":')
    writeFileSync(join(data, 'repositories', 'crash', 'app', '_tags', 'orphan.json'), JSON.stringify({ id: 99, name: 'orphan', digest: sha256('never stored'), pushedAt: new Date().toISOString(), pushedBy: null }))
    mkdirSync(join(data, 'repositories', 'ghost', 'repo', '_tags'), { recursive: true })
    writeFileSync(join(data, 'repositories', 'ghost', 'repo', '_tags', 'x.json'), '{}')

    const second = await startRegistry(t, { dir })
    t.after(() => { rmSync(dir, { recursive: true, force: true }) })
    const req = client(second.url)
    assert.deepEqual(readdirSync(join(data, 'ingest')), [])
    assert.equal((await req('GET', session)).status, 404, 'upload sessions do not survive a restart')
    assert.deepEqual((await req('GET', '/v2/crash/app/tags/list')).json().tags, ['good'])
    assert.equal((await req('GET', '/v2/crash/app/manifests/good')).status, 200)
    assert.equal((await req('GET', '/v2/ghost/repo/tags/list')).status, 404, 'no repository without its record')
  })
})

describe('garbage collection', () => {
  it('deletes unreferenced blobs and their links, keeps referenced ones, honours dry runs and the grace period', async (t) => {
    const reg = await startRegistry(t)
    const req = client(reg.url)
    const kept = makeImage({ layers: 2 })
    const dropped = makeImage({ layers: 2 })
    await pushImage(reg.url, 'gc/app', 'kept', kept)
    await pushImage(reg.url, 'gc/app', 'dropped', dropped)
    // a layer shared by both images stays
    const stray = randomBytes(500)
    await pushBlob(reg.url, 'gc/app', stray)
    assert.equal((await req('DELETE', `/v2/gc/app/manifests/${dropped.digest}`)).status, 202)

    const spared = await reg.registry.gc()
    assert.equal(spared.deleted.length, 0, 'everything is younger than the default grace period')
    assert.ok(spared.spared >= 4)

    const dry = await reg.registry.gc({ dryRun: true, gracePeriod: 0 })
    const expected = [dropped.manifest, dropped.config, ...dropped.layers, stray].map((b) => sha256(b)).sort()
    assert.deepEqual(dry.deleted.sort(), expected)
    assert.equal(dry.freedBytes, [dropped.manifest, dropped.config, ...dropped.layers, stray].reduce((a, b) => a + b.length, 0))
    assert.equal((await req('HEAD', `/v2/gc/app/blobs/${sha256(stray)}`)).status, 200, 'a dry run deletes nothing')

    const real = await reg.registry.gc({ gracePeriod: 0 })
    assert.deepEqual(real.deleted.sort(), expected)
    for (const d of expected) {
      assert.equal((await req('HEAD', `/v2/gc/app/blobs/${d}`)).status, 404)
      assert.ok(!existsSync(join(reg.dataRoot, 'blobs', 'sha256', d.slice(7))))
      assert.ok(!existsSync(join(reg.dataRoot, 'repositories', 'gc', 'app', '_layers', d.slice(7))))
    }
    for (const b of [kept.manifest, kept.config, ...kept.layers]) {
      assert.equal((await req('HEAD', `/v2/gc/app/blobs/${sha256(b)}`)).status, 200)
    }
    assert.equal((await req('GET', '/v2/gc/app/manifests/kept')).status, 200)
    assert.equal(real.marked, 4)
  })

  it('collectGarbage works offline on a data root', async (t) => {
    const dir = tmpDir()
    t.after(() => { rmSync(dir, { recursive: true, force: true }) })
    const reg = await startRegistry({ after: () => {} }, { dir })
    await pushImage(reg.url, 'off/line', 'v1', makeImage({ layers: 1 }))
    await pushBlob(reg.url, 'off/line', randomBytes(10))
    await reg.registry.close()
    const r = await collectGarbage(reg.dataRoot, { gracePeriod: 0 })
    assert.equal(r.deleted.length, 1)
    assert.equal(r.marked, 3)
  })
})
