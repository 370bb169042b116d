// Bad input, each with the right error and nothing written outside the data root: invalid names and references,
// path tricks (`..`, `%2F`), wrong digests, invalid and oversized manifests, out-of-order or inconsistent chunks,
// unknown upload sessions.
import { describe, it, before } from 'node:test'
import assert from 'node:assert/strict'
import { mkdirSync, writeFileSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { randomBytes } from 'node:crypto'
import { useRegistry, client, makeImage, pushImage, pushBlob, sha256, listTree, OCI_MANIFEST, OCI_CONFIG, type Reply } from './helpers.js'

function assertCode (r: Reply, status: number, code: string): void {
  assert.equal(r.status, status, r.text)
  const body = r.json() as { errors: Array<{ code: string }> }
  assert.equal(body.errors[0]?.code, code, r.text)
}

describe('bad input', () => {
  const reg = useRegistry()
  let req: ReturnType<typeof client>
  let outsideBefore: string[] = []
  before(async () => {
    req = client(reg.current.url)
    // a sibling of the data root that must stay as it is
    mkdirSync(join(reg.current.dir, 'outside'))
    writeFileSync(join(reg.current.dir, 'outside', 'sentinel'), 'x')
    outsideBefore = listTree(reg.current.dir).filter((p) => !p.startsWith('data/'))
    assert.equal((await pushImage(reg.current.url, 'ok/repo', 'latest', makeImage({ layers: 1 }))).status, 201)
  })
  const checkTree = (): void => {
    // nothing outside the data root appeared, and inside it only well-formed repository names exist
    assert.deepEqual(listTree(reg.current.dir).filter((p) => !p.startsWith('data/')), outsideBefore)
    for (const p of listTree(join(reg.current.dataRoot, 'repositories'))) {
      assert.match(p, /^([a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*\/)+_/, p)
    }
  }

  describe('invalid repository names: NAME_INVALID', () => {
    for (const [what, path] of [
      ['uppercase', '/v2/BAD_Name/manifests/latest'],
      ['an empty component', '/v2/a//b/manifests/latest'],
      ['a leading separator', '/v2/-a/b/manifests/latest'],
      ['a trailing separator', '/v2/a/b./manifests/latest'],
      ['a .. component', '/v2/a/../b/manifests/latest'],
      ['leading .. components', '/v2/../../etc/manifests/latest'],
      ['a . component', '/v2/a/./b/tags/list'],
      ['a reserved namespace', '/v2/namespaces/x/blobs/uploads/'],
      ['more than 255 characters', `/v2/${'a'.repeat(120)}/${'b'.repeat(140)}/tags/list`]
    ] as const) {
      it(`${what}: ${path.length > 60 ? path.slice(0, 60) + '…' : path}`, async () => {
        const method = path.endsWith('/uploads/') ? 'POST' : 'GET'
        assertCode(await req(method, path), 400, 'NAME_INVALID')
      })
    }
    it('a push with a .. name writes nothing', async () => {
      const data = randomBytes(64)
      assertCode(await req('POST', `/v2/../../escape/blobs/uploads/?digest=${sha256(data)}`, { body: data }), 400, 'NAME_INVALID')
      assertCode(await req('PUT', '/v2/a/../../../x/manifests/latest', { body: '{}', headers: { 'Content-Type': OCI_MANIFEST } }), 400, 'NAME_INVALID')
    })
  })

  describe('%-encoded path tricks are refused before decoding', () => {
    for (const path of [
      '/v2/a%2Fb/manifests/latest',
      '/v2/a%2fb/tags/list',
      '/v2/ok/repo/manifests/%2E%2E',
      '/v2/%2E%2E/%2E%2E/etc/blobs/uploads/',
      '/v2/ok%2F..%2F..%2Fx/blobs/uploads/'
    ]) {
      it(path, async () => {
        const r = await req(path.endsWith('/uploads/') ? 'POST' : 'GET', path)
        assertCode(r, 400, 'NAME_INVALID')
      })
    }
    it('on the Hub API too', async () => {
      const r = await req('GET', '/v2/namespaces/..%2F..%2Fetc/repositories/x')
      assert.equal(r.status, 400)
      assert.equal(typeof r.json().message, 'string')
      const c = await req('POST', '/v2/namespaces/a%2Fb/repositories', { json: { name: 'xx' } })
      assert.equal(c.status, 400)
    })
  })

  describe('invalid references', () => {
    it('an invalid tag in a PUT: TAG_INVALID', async () => {
      assertCode(await req('PUT', '/v2/ok/repo/manifests/.hidden', { body: '{}' }), 400, 'TAG_INVALID')
      assertCode(await req('PUT', `/v2/ok/repo/manifests/${'t'.repeat(129)}`, { body: '{}' }), 400, 'TAG_INVALID')
      const img = makeImage()
      assertCode(await req('PUT', `/v2/ok/repo/manifests/${img.digest}?tag=-x`, { body: img.manifest, headers: { 'Content-Type': OCI_MANIFEST } }), 400, 'TAG_INVALID')
    })
    it('a GET, HEAD or DELETE by a reference that cannot be a tag: 404 MANIFEST_UNKNOWN, as distribution (OCI conformance)', async () => {
      for (const ref of ['-bad', '.INVALID_MANIFEST_NAME', 't'.repeat(129)]) {
        for (const method of ['GET', 'DELETE']) {
          const r = await req(method, `/v2/ok/repo/manifests/${ref}`)
          assertCode(r, 404, 'MANIFEST_UNKNOWN')
          assert.deepEqual(r.json().errors[0].detail, { Tag: ref })
        }
        assert.equal((await req('HEAD', `/v2/ok/repo/manifests/${ref}`)).status, 404)
      }
    })
    it('a malformed digest: DIGEST_INVALID (not a 500)', async () => {
      for (const d of ['sha256:zz', 'sha256:totallywrong', `sha256:${'A'.repeat(64)}`, 'sha256:', ':abc']) {
        assertCode(await req('GET', `/v2/ok/repo/manifests/${d}`), 400, 'DIGEST_INVALID')
        assertCode(await req('GET', `/v2/ok/repo/blobs/${d}`), 400, 'DIGEST_INVALID')
      }
    })
    it('an unsupported algorithm: DIGEST_INVALID naming it', async () => {
      const r = await req('GET', `/v2/ok/repo/blobs/sha512:${'a'.repeat(128)}`)
      assertCode(r, 400, 'DIGEST_INVALID')
      assert.match(r.json().errors[0].message, /unsupported digest algorithm sha512/)
      assertCode(await req('POST', '/v2/ok/repo/blobs/uploads/?digest-algorithm=md5'), 400, 'UNSUPPORTED')
    })
    it('an invalid page size: PAGINATION_NUMBER_INVALID', async () => {
      assertCode(await req('GET', '/v2/ok/repo/tags/list?n=-1'), 400, 'PAGINATION_NUMBER_INVALID')
      assertCode(await req('GET', '/v2/_catalog?n=abc'), 400, 'PAGINATION_NUMBER_INVALID')
    })
    it('an unknown repository: NAME_UNKNOWN', async () => {
      assertCode(await req('GET', '/v2/nosuch/repo/tags/list'), 404, 'NAME_UNKNOWN')
      assertCode(await req('GET', '/v2/nosuch/repo/manifests/latest'), 404, 'NAME_UNKNOWN')
    })
  })

  describe('wrong digests', () => {
    it('monolithic upload with the wrong digest: DIGEST_INVALID, nothing stored', async () => {
      const data = randomBytes(100)
      const claimed = sha256(randomBytes(100))
      assertCode(await req('POST', `/v2/ok/repo/blobs/uploads/?digest=${claimed}`, { body: data }), 400, 'DIGEST_INVALID')
      assert.equal((await req('HEAD', `/v2/ok/repo/blobs/${claimed}`)).status, 404)
      const blobs = readdirSync(join(reg.current.dataRoot, 'blobs', 'sha256'))
      assert.ok(!blobs.includes(claimed.slice(7)) && !blobs.includes(sha256(data).slice(7)))
      assert.deepEqual(readdirSync(join(reg.current.dataRoot, 'ingest')), [], 'no half-written upload left behind')
    })
    it('session PUT with the wrong digest: DIGEST_INVALID, the session is gone', async () => {
      const loc = String((await req('POST', '/v2/ok/repo/blobs/uploads/')).headers.location)
      assert.equal((await req('PATCH', loc, { body: randomBytes(50) })).status, 202)
      assertCode(await req('PUT', `${loc}?digest=${sha256('other')}`), 400, 'DIGEST_INVALID')
      assertCode(await req('GET', loc), 404, 'BLOB_UPLOAD_UNKNOWN')
    })
    it('session PUT without a digest or with a malformed one: DIGEST_INVALID', async () => {
      const loc = String((await req('POST', '/v2/ok/repo/blobs/uploads/')).headers.location)
      assertCode(await req('PUT', loc), 400, 'DIGEST_INVALID')
      assertCode(await req('PUT', `${loc}?digest=sha256:nothex`), 400, 'DIGEST_INVALID')
      assert.equal((await req('GET', loc)).status, 204, 'the session survives a refused PUT')
    })
    it('manifest PUT by a digest that is not the body\'s: DIGEST_INVALID', async () => {
      const img = makeImage({ layers: 1 })
      for (const b of [img.config, ...img.layers]) await pushBlob(reg.current.url, 'ok/repo', b)
      assertCode(await req('PUT', `/v2/ok/repo/manifests/${sha256('x')}`, { body: img.manifest, headers: { 'Content-Type': OCI_MANIFEST } }), 400, 'DIGEST_INVALID')
      assert.equal((await req('HEAD', `/v2/ok/repo/manifests/${img.digest}`)).status, 404)
    })
  })

  describe('invalid manifests', () => {
    const put = async (body: Buffer | string, type = OCI_MANIFEST): Promise<Reply> => await req('PUT', '/v2/ok/repo/manifests/bad', { body, headers: { 'Content-Type': type } })
    it('not JSON, wrong schemaVersion, schema 1, unknown or contradictory media types: MANIFEST_INVALID', async () => {
      const img = makeImage({ layers: 0 })
      const doc = JSON.parse(img.manifest.toString()) as Record<string, unknown>
      for (const [body, type] of [
        ['{nope', OCI_MANIFEST],
        [JSON.stringify({ ...doc, schemaVersion: 3 }), OCI_MANIFEST],
        [JSON.stringify({ schemaVersion: 1, name: 'x', tag: 'y', fsLayers: [] }), 'application/vnd.docker.distribution.manifest.v1+prettyjws'],
        [JSON.stringify({ ...doc, mediaType: 'application/vnd.example.thing' }), 'application/vnd.example.thing'],
        [img.manifest.toString(), 'application/vnd.docker.distribution.manifest.v2+json'],
        [JSON.stringify({ ...doc, config: { mediaType: OCI_CONFIG, digest: 'sha256:short', size: 2 } }), OCI_MANIFEST],
        [JSON.stringify({ ...doc, layers: {} }), OCI_MANIFEST],
        [JSON.stringify({ schemaVersion: 2, mediaType: OCI_MANIFEST }), OCI_MANIFEST],
        ['[]', OCI_MANIFEST]
      ] as const) {
        assertCode(await put(body, type), 400, 'MANIFEST_INVALID')
      }
    })
    it('references to blobs the repository lacks: MANIFEST_BLOB_UNKNOWN', async () => {
      const img = makeImage({ layers: 1 })
      await pushBlob(reg.current.url, 'ok/repo', img.config)
      const r = await put(img.manifest)
      assertCode(r, 400, 'MANIFEST_BLOB_UNKNOWN')
      assert.equal(r.json().errors[0].detail.digest, sha256(img.layers[0] as Buffer))
      // a blob pushed to another repository does not count
      await pushBlob(reg.current.url, 'ok/other', img.layers[0] as Buffer)
      assertCode(await put(img.manifest), 400, 'MANIFEST_BLOB_UNKNOWN')
    })
    it('a descriptor size that is not the blob\'s: MANIFEST_INVALID', async () => {
      const img = makeImage({ layers: 1 })
      for (const b of [img.config, ...img.layers]) await pushBlob(reg.current.url, 'ok/repo', b)
      const doc = JSON.parse(img.manifest.toString()) as { layers: Array<{ size: number }> }
      ;(doc.layers[0] as { size: number }).size += 1
      assertCode(await put(JSON.stringify(doc)), 400, 'MANIFEST_INVALID')
    })
    it('a manifest of exactly 4 MiB is accepted; one byte more is 413', async () => {
      const img = makeImage({ layers: 1 })
      for (const b of [img.config, ...img.layers]) await pushBlob(reg.current.url, 'ok/repo', b)
      const pad = (size: number): Buffer => {
        const doc = JSON.parse(img.manifest.toString()) as Record<string, unknown>
        doc.annotations = { pad: '' }
        const baseLen = Buffer.byteLength(JSON.stringify(doc))
        ;(doc.annotations as Record<string, string>).pad = 'p'.repeat(size - baseLen)
        const out = Buffer.from(JSON.stringify(doc))
        assert.equal(out.length, size)
        return out
      }
      const max = pad(4 * 1024 * 1024)
      const ok = await req('PUT', '/v2/ok/repo/manifests/big', { body: max, headers: { 'Content-Type': OCI_MANIFEST } })
      assert.equal(ok.status, 201)
      assert.equal((await req('GET', '/v2/ok/repo/manifests/big')).body.length, max.length)
      const tooBig = await req('PUT', '/v2/ok/repo/manifests/bigger', { body: pad(4 * 1024 * 1024 + 1), headers: { 'Content-Type': OCI_MANIFEST } })
      assertCode(tooBig, 413, 'MANIFEST_INVALID')
    })
  })

  describe('chunked uploads', () => {
    it('a chunk that skips ahead is 416 with the current Range; a retried chunk too', async () => {
      const loc = String((await req('POST', '/v2/ok/repo/blobs/uploads/')).headers.location)
      const r = await req('PATCH', loc, { body: 'abcd', headers: { 'Content-Range': '10-13' } })
      assertCode(r, 416, 'BLOB_UPLOAD_INVALID')
      assert.equal(r.headers.range, '0-0')
      assert.equal((await req('PATCH', loc, { body: 'abcd', headers: { 'Content-Range': '0-3' } })).status, 202)
      const again = await req('PATCH', loc, { body: 'abcd', headers: { 'Content-Range': '0-3' } })
      assertCode(again, 416, 'BLOB_UPLOAD_INVALID')
      assert.equal(again.headers.range, '0-3')
    })
    it('a Content-Range whose length is not the body\'s: SIZE_INVALID; a malformed one: BLOB_UPLOAD_INVALID', async () => {
      const loc = String((await req('POST', '/v2/ok/repo/blobs/uploads/')).headers.location)
      assertCode(await req('PATCH', loc, { body: 'abcd', headers: { 'Content-Range': '0-9' } }), 400, 'SIZE_INVALID')
      assertCode(await req('PATCH', loc, { body: 'abcd', headers: { 'Content-Range': 'bytes=zero-three' } }), 400, 'BLOB_UPLOAD_INVALID')
      assertCode(await req('PATCH', loc, { body: 'abcd', headers: { 'Content-Range': '3-0' } }), 416, 'BLOB_UPLOAD_INVALID')
    })
    it('unknown sessions, sessions of another repository, and path tricks in the id: BLOB_UPLOAD_UNKNOWN', async () => {
      const loc = String((await req('POST', '/v2/ok/repo/blobs/uploads/')).headers.location)
      const id = loc.slice(loc.lastIndexOf('/') + 1)
      assertCode(await req('PATCH', `/v2/ok/other/blobs/uploads/${id}`, { body: 'x' }), 404, 'BLOB_UPLOAD_UNKNOWN')
      assertCode(await req('GET', '/v2/ok/repo/blobs/uploads/00000000-0000-0000-0000-000000000000'), 404, 'BLOB_UPLOAD_UNKNOWN')
      assertCode(await req('PATCH', '/v2/ok/repo/blobs/uploads/..', { body: 'x' }), 404, 'BLOB_UPLOAD_UNKNOWN')
      assertCode(await req('PUT', `/v2/ok/repo/blobs/uploads/${'a'.repeat(300)}?digest=${sha256('x')}`, { body: 'x' }), 404, 'BLOB_UPLOAD_UNKNOWN')
    })
  })

  describe('unknown routes and methods', () => {
    it('404 with a JSON error body', async () => {
      const r = await req('PUT', `/v2/ok/repo/blobs/${sha256('x')}`)
      assert.equal(r.status, 404)
      assert.ok(Array.isArray(r.json().errors))
    })
  })

  describe('afterwards', () => {
    it('nothing was written outside the data root', () => { checkTree() })
  })
})
