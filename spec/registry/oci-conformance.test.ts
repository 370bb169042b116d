// The OCI distribution-spec v1.1 conformance checks (pull, push, content discovery, content management), one test
// per check and named after it, run against a live registry on a real socket.
import { describe, it, before } from 'node:test'
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { useRegistry, client, makeImage, pushImage, pushBlob, sha256, makeIndex, OCI_MANIFEST, OCI_CONFIG, OCI_INDEX, type TestImage, type Reply } from './helpers.js'

function assertOciErrors (r: Reply, code?: string): void {
  assert.match(String(r.headers['content-type']), /^application\/json/)
  const body = r.json() as { errors: Array<{ code: string, message: string }> }
  assert.ok(Array.isArray(body.errors) && body.errors.length > 0, r.text)
  for (const e of body.errors) assert.match(e.code, /^[A-Z_]+$/)
  if (code !== undefined) assert.equal(body.errors[0]?.code, code)
}

describe('Pull', () => {
  let req: ReturnType<typeof client>
  const name = 'conformance/pull'
  let img: TestImage
  let img2: TestImage
  const reg = useRegistry()
  before(async () => {
    req = client(reg.current.url)
    img = makeImage()
    img2 = makeImage({ layers: 1 })
    assert.equal((await pushImage(reg.current.url, name, 'tagtest0', img)).status, 201)
    assert.equal((await pushImage(reg.current.url, name, img2.digest, img2)).status, 201)
  })

  it('HEAD request to nonexistent blob should result in 404 response', async () => {
    const r = await req('HEAD', `/v2/${name}/blobs/${sha256('nope')}`)
    assert.equal(r.status, 404)
  })
  it('HEAD request to existing blob should yield 200', async () => {
    const r = await req('HEAD', `/v2/${name}/blobs/${sha256(img.config)}`)
    assert.equal(r.status, 200)
    assert.equal(r.headers['docker-content-digest'], sha256(img.config))
    assert.equal(r.headers['content-length'], String(img.config.length))
  })
  it('GET nonexistent blob should result in 404 response', async () => {
    const r = await req('GET', `/v2/${name}/blobs/${sha256('nope')}`)
    assert.equal(r.status, 404)
    assertOciErrors(r, 'BLOB_UNKNOWN')
  })
  it('GET request to existing blob URL should yield 200', async () => {
    const r = await req('GET', `/v2/${name}/blobs/${sha256(img.layers[0] as Buffer)}`)
    assert.equal(r.status, 200)
    assert.deepEqual(r.body, img.layers[0])
  })
  it('HEAD request to nonexistent manifest should return 404', async () => {
    assert.equal((await req('HEAD', `/v2/${name}/manifests/nonexistent`)).status, 404)
  })
  it('HEAD request to manifest[0] path (digest) should yield 200 response', async () => {
    const r = await req('HEAD', `/v2/${name}/manifests/${img.digest}`)
    assert.equal(r.status, 200)
    assert.equal(r.headers['docker-content-digest'], img.digest)
  })
  it('HEAD request to manifest[1] path (digest) should yield 200 response', async () => {
    const r = await req('HEAD', `/v2/${name}/manifests/${img2.digest}`)
    assert.equal(r.status, 200)
    assert.equal(r.headers['docker-content-digest'], img2.digest)
  })
  it('HEAD request to manifest path (tag) should yield 200 response', async () => {
    const r = await req('HEAD', `/v2/${name}/manifests/tagtest0`)
    assert.equal(r.status, 200)
    assert.equal(r.headers['docker-content-digest'], img.digest)
    assert.equal(r.headers['content-length'], String(img.manifest.length))
    assert.equal(r.body.length, 0)
  })
  it('GET nonexistent manifest should return 404', async () => {
    const r = await req('GET', `/v2/${name}/manifests/nonexistent`)
    assert.equal(r.status, 404)
    assertOciErrors(r, 'MANIFEST_UNKNOWN')
  })
  it('GET request to manifest[0] path (digest) should yield 200 response', async () => {
    const r = await req('GET', `/v2/${name}/manifests/${img.digest}`, { headers: { Accept: OCI_MANIFEST } })
    assert.equal(r.status, 200)
    assert.deepEqual(r.body, img.manifest)
    assert.equal(r.headers['content-type'], OCI_MANIFEST)
  })
  it('GET request to manifest[1] path (digest) should yield 200 response', async () => {
    const r = await req('GET', `/v2/${name}/manifests/${img2.digest}`)
    assert.equal(r.status, 200)
    assert.equal(sha256(r.body), img2.digest)
  })
  it('GET request to manifest path (tag) should yield 200 response', async () => {
    const r = await req('GET', `/v2/${name}/manifests/tagtest0`)
    assert.equal(r.status, 200)
    assert.equal(sha256(r.body), img.digest)
  })
  it('400 response body should contain OCI-conforming JSON message', async () => {
    const r = await req('GET', `/v2/${name}/manifests/sha256:totallywrong`)
    assert.ok(r.status === 400 || r.status === 404, String(r.status))
    assertOciErrors(r, 'DIGEST_INVALID')
  })
})

describe('Push', () => {
  let req: ReturnType<typeof client>
  let base: string
  const name = 'conformance/push'
  const reg = useRegistry()
  before(async () => {
    base = reg.current.url
    req = client(base)
  })

  describe('Blob Upload Streamed', () => {
    const blob = randomBytes(4096)
    let location = ''
    it('PATCH request with blob in body should yield 202 response', async () => {
      const post = await req('POST', `/v2/${name}/blobs/uploads/`)
      assert.equal(post.status, 202)
      location = String(post.headers.location)
      const r = await req('PATCH', location, { body: blob, headers: { 'Content-Type': 'application/octet-stream' } })
      assert.equal(r.status, 202)
      assert.equal(r.headers.range, `0-${blob.length - 1}`)
      location = String(r.headers.location)
    })
    it('PUT request to session URL with digest should yield 201 response', async () => {
      const r = await req('PUT', `${location}?digest=${sha256(blob)}`)
      assert.equal(r.status, 201)
      assert.equal(r.headers.location, `/v2/${name}/blobs/${sha256(blob)}`)
      assert.deepEqual((await req('GET', String(r.headers.location))).body, blob)
    })
  })

  describe('Blob Upload Monolithic', () => {
    const blob = randomBytes(2048)
    const layer = randomBytes(3000)
    let blobLocation = ''
    let postStatus = 0
    let session = ''
    it('GET nonexistent blob should result in 404 response', async () => {
      assert.equal((await req('GET', `/v2/${name}/blobs/${sha256(blob)}`)).status, 404)
    })
    it('POST request with digest and blob should yield a 201 or 202', async () => {
      const r = await req('POST', `/v2/${name}/blobs/uploads/?digest=${sha256(blob)}`, { body: blob, headers: { 'Content-Type': 'application/octet-stream' } })
      assert.ok(r.status === 201 || r.status === 202)
      postStatus = r.status
      blobLocation = String(r.headers.location)
    })
    it('GET request to blob URL from prior request should yield 200 or 404 based on response code', async () => {
      const r = await req('GET', blobLocation)
      assert.equal(r.status, postStatus === 201 ? 200 : 404)
    })
    it('POST request should yield a session ID', async () => {
      const r = await req('POST', `/v2/${name}/blobs/uploads/`)
      assert.equal(r.status, 202)
      session = String(r.headers.location)
      assert.match(session, /\/blobs\/uploads\/[0-9a-f-]{36}$/)
      assert.equal(r.headers['docker-upload-uuid'], session.slice(-36))
      assert.equal(r.headers.range, '0-0')
    })
    it('PUT upload of a blob should yield a 201 Response', async () => {
      const r = await req('PUT', `${session}?digest=${sha256(blob)}`, { body: blob, headers: { 'Content-Type': 'application/octet-stream' } })
      assert.equal(r.status, 201)
      assert.equal(r.headers['docker-content-digest'], sha256(blob))
    })
    it('GET request to existing blob should yield 200 response', async () => {
      const r = await req('GET', `/v2/${name}/blobs/${sha256(blob)}`)
      assert.equal(r.status, 200)
      assert.deepEqual(r.body, blob)
    })
    it('PUT upload of a layer blob should yield a 201 Response', async () => {
      const post = await req('POST', `/v2/${name}/blobs/uploads/`)
      const r = await req('PUT', `${String(post.headers.location)}?digest=${sha256(layer)}`, { body: layer, headers: { 'Content-Type': 'application/octet-stream' } })
      assert.equal(r.status, 201)
    })
    it('GET request to existing layer should yield 200 response', async () => {
      const r = await req('GET', `/v2/${name}/blobs/${sha256(layer)}`)
      assert.equal(r.status, 200)
      assert.equal(sha256(r.body), sha256(layer))
    })
  })

  describe('Blob Upload Chunked', () => {
    const blob = randomBytes(10_000)
    const chunk1 = blob.subarray(0, 6000)
    const chunk2 = blob.subarray(6000)
    let location = ''
    const patch = async (chunk: Buffer, start: number): Promise<Reply> => await req('PATCH', location, {
      body: chunk, headers: { 'Content-Type': 'application/octet-stream', 'Content-Range': `${start}-${start + chunk.length - 1}` }
    })
    it('Out-of-order blob upload should return 416', async () => {
      const post = await req('POST', `/v2/${name}/blobs/uploads/`)
      location = String(post.headers.location)
      const r = await patch(chunk2, chunk1.length)
      assert.equal(r.status, 416)
      assertOciErrors(r, 'BLOB_UPLOAD_INVALID')
    })
    it('PATCH request with first chunk should return 202', async () => {
      const r = await patch(chunk1, 0)
      assert.equal(r.status, 202)
      assert.equal(r.headers.range, `0-${chunk1.length - 1}`)
      location = String(r.headers.location)
    })
    it('Retry previous blob chunk should return 416', async () => {
      const r = await patch(chunk1, 0)
      assert.equal(r.status, 416)
      assert.equal(r.headers.range, `0-${chunk1.length - 1}`)
    })
    it('Get on stale blob upload should return 204 with a range and location', async () => {
      const r = await req('GET', location)
      assert.equal(r.status, 204)
      assert.equal(r.headers.range, `0-${chunk1.length - 1}`)
      assert.equal(r.headers.location, location)
    })
    it('PATCH request with second chunk should return 202', async () => {
      const r = await patch(chunk2, chunk1.length)
      assert.equal(r.status, 202)
      assert.equal(r.headers.range, `0-${blob.length - 1}`)
    })
    it('PUT request with digest should return 201', async () => {
      const r = await req('PUT', `${location}?digest=${sha256(blob)}`)
      assert.equal(r.status, 201)
      assert.deepEqual((await req('GET', `/v2/${name}/blobs/${sha256(blob)}`)).body, blob)
    })
  })

  describe('Cross-Repository Blob Mount', () => {
    const blob = randomBytes(1500)
    const other = 'conformance/push-other'
    it('Cross-mounting of a blob without the from argument should yield 201 or 202', async () => {
      assert.equal((await pushBlob(base, other, blob)).status, 201)
      const r = await req('POST', `/v2/${name}/blobs/uploads/?mount=${sha256(randomBytes(8))}`)
      assert.ok(r.status === 201 || r.status === 202, String(r.status))
    })
    it('POST request to mount another repository\'s blob should return 201 or 202', async () => {
      const r = await req('POST', `/v2/${name}/blobs/uploads/?mount=${sha256(blob)}&from=${other}`)
      assert.equal(r.status, 201)
      assert.equal(r.headers.location, `/v2/${name}/blobs/${sha256(blob)}`)
    })
    it('GET request to test digest within cross-mount namespace should return 200', async () => {
      const r = await req('GET', `/v2/${name}/blobs/${sha256(blob)}`)
      assert.equal(r.status, 200)
      assert.deepEqual(r.body, blob)
    })
    it('Cross-mounting of nonexistent blob should yield 202', async () => {
      const r = await req('POST', `/v2/${name}/blobs/uploads/?mount=${sha256(randomBytes(8))}&from=${other}`)
      assert.equal(r.status, 202)
      assert.match(String(r.headers.location), /\/blobs\/uploads\//)
    })
    it('Cross-mounting without from, and automatic content discovery enabled should return a 201', async () => {
      const blob2 = randomBytes(700)
      await pushBlob(base, other, blob2)
      const r = await req('POST', `/v2/conformance/push-third/blobs/uploads/?mount=${sha256(blob2)}`)
      assert.equal(r.status, 201)
      assert.equal((await req('HEAD', `/v2/conformance/push-third/blobs/${sha256(blob2)}`)).status, 200)
    })
  })

  describe('Manifest Upload', () => {
    const img = makeImage()
    it('GET nonexistent manifest should return 404', async () => {
      assert.equal((await req('GET', `/v2/${name}/manifests/${img.digest}`)).status, 404)
    })
    it('PUT should accept a manifest upload', async () => {
      const r = await pushImage(base, name, 'tagtest0', img)
      assert.equal(r.status, 201)
      assert.equal(r.headers['docker-content-digest'], img.digest)
      assert.equal(r.headers.location, `/v2/${name}/manifests/${img.digest}`)
    })
    it('Registry should accept a manifest upload with no layers', async () => {
      const empty = makeImage({ layers: 0 })
      const r = await pushImage(base, name, 'emptylayer', empty)
      assert.equal(r.status, 201)
    })
    it('GET request to manifest URL (digest) should yield 200 response', async () => {
      const r = await req('GET', `/v2/${name}/manifests/${img.digest}`)
      assert.equal(r.status, 200)
      assert.deepEqual(r.body, img.manifest)
    })
  })
})

describe('Content Discovery', () => {
  let req: ReturnType<typeof client>
  const name = 'conformance/discovery'
  const tags = ['alpha', 'beta', 'delta', 'gamma', 'zeta']
  let subject: TestImage
  let refA: TestImage
  let refB: TestImage
  const reg = useRegistry()
  before(async () => {
    req = client(reg.current.url)
    subject = makeImage()
    for (const tag of tags) assert.equal((await pushImage(reg.current.url, name, tag, subject)).status, 201)
    const sub = { mediaType: OCI_MANIFEST, digest: subject.digest, size: subject.manifest.length }
    refA = makeImage({ layers: 1, subject: sub, artifactType: 'application/vnd.example.sbom', annotations: { 'org.example.kind': 'sbom' } })
    refB = makeImage({ layers: 1, subject: sub, artifactType: 'application/vnd.example.signature' })
    for (const r of [refA, refB]) {
      const res = await pushImage(reg.current.url, name, r.digest, r)
      assert.equal(res.status, 201)
      assert.equal(res.headers['oci-subject'], subject.digest)
    }
  })

  it('GET request to list tags should yield 200 response', async () => {
    const r = await req('GET', `/v2/${name}/tags/list`)
    assert.equal(r.status, 200)
    assert.deepEqual(r.json(), { name, tags })
  })
  it('GET number of tags should be limited by `n` query parameter', async () => {
    const r = await req('GET', `/v2/${name}/tags/list?n=2`)
    assert.equal(r.status, 200)
    assert.deepEqual(r.json().tags, ['alpha', 'beta'])
    assert.equal(r.headers.link, `</v2/${name}/tags/list?n=2&last=beta>; rel="next"`)
  })
  it('GET start of tag is set by `last` query parameter', async () => {
    const r = await req('GET', `/v2/${name}/tags/list?n=2&last=beta`)
    assert.equal(r.status, 200)
    assert.deepEqual(r.json().tags, ['delta', 'gamma'])
    const end = await req('GET', `/v2/${name}/tags/list?n=2&last=gamma`)
    assert.deepEqual(end.json().tags, ['zeta'])
    assert.equal(end.headers.link, undefined)
  })
  it('GET request to nonexistent blob should result in empty 200 response', async () => {
    const r = await req('GET', `/v2/${name}/referrers/${sha256('no such subject')}`)
    assert.equal(r.status, 200)
    assert.equal(r.headers['content-type'], OCI_INDEX)
    assert.deepEqual(r.json(), { schemaVersion: 2, mediaType: OCI_INDEX, manifests: [] })
  })
  it('GET request to existing blob should yield 200', async () => {
    const r = await req('GET', `/v2/${name}/referrers/${subject.digest}`)
    assert.equal(r.status, 200)
    const idx = r.json() as { manifests: Array<{ digest: string, artifactType: string, size: number, mediaType: string, annotations?: Record<string, string> }> }
    assert.deepEqual(idx.manifests.map((m) => m.digest).sort(), [refA.digest, refB.digest].sort())
    const a = idx.manifests.find((m) => m.digest === refA.digest)
    assert.equal(a?.artifactType, 'application/vnd.example.sbom')
    assert.equal(a?.size, refA.manifest.length)
    assert.equal(a?.mediaType, OCI_MANIFEST)
    assert.deepEqual(a?.annotations, { 'org.example.kind': 'sbom' })
  })
  it('GET request to existing blob with filter should yield 200', async () => {
    const r = await req('GET', `/v2/${name}/referrers/${subject.digest}?artifactType=application/vnd.example.signature`)
    assert.equal(r.status, 200)
    assert.equal(r.headers['oci-filters-applied'], 'artifactType')
    assert.deepEqual(r.json().manifests.map((m: { digest: string }) => m.digest), [refB.digest])
  })
  it('GET request to missing manifest should yield 200', async () => {
    // a referrer whose subject was never pushed is accepted and listed
    const missing = { mediaType: OCI_MANIFEST, digest: sha256('missing manifest'), size: 16 }
    const orphan = makeImage({ layers: 0, subject: missing })
    const put = await pushOrphan(orphan)
    assert.equal(put.status, 201)
    assert.equal(put.headers['oci-subject'], missing.digest)
    const r = await req('GET', `/v2/${name}/referrers/${missing.digest}`)
    assert.equal(r.status, 200)
    const m = r.json().manifests as Array<{ digest: string, artifactType: string }>
    assert.deepEqual(m.map((x) => x.digest), [orphan.digest])
    assert.equal(m[0]?.artifactType, OCI_CONFIG)
  })
  async function pushOrphan (img: TestImage): Promise<Reply> {
    const b = await req('POST', `/v2/${name}/blobs/uploads/?digest=${sha256(img.config)}`, { body: img.config })
    assert.equal(b.status, 201)
    return await req('PUT', `/v2/${name}/manifests/${img.digest}`, { body: img.manifest, headers: { 'Content-Type': OCI_MANIFEST } })
  }
})

describe('Content Management', () => {
  let req: ReturnType<typeof client>
  const name = 'conformance/management'
  let img: TestImage
  const reg = useRegistry()
  before(async () => {
    req = client(reg.current.url)
    img = makeImage()
    assert.equal((await pushImage(reg.current.url, name, 'tagtest0', img)).status, 201)
    assert.equal((await req('PUT', `/v2/${name}/manifests/tagtest1`, { body: img.manifest, headers: { 'Content-Type': OCI_MANIFEST } })).status, 201)
  })

  it('DELETE request to manifest tag should return 202, unless tag deletion is disallowed (400/405)', async () => {
    const r = await req('DELETE', `/v2/${name}/manifests/tagtest0`)
    assert.equal(r.status, 202)
    assert.equal((await req('GET', `/v2/${name}/manifests/tagtest0`)).status, 404)
    assert.equal((await req('GET', `/v2/${name}/manifests/tagtest1`)).status, 200, 'other tags of the manifest stay')
  })
  it('DELETE request to manifest (digest) should yield 202 response unless already deleted', async () => {
    const r = await req('DELETE', `/v2/${name}/manifests/${img.digest}`)
    assert.equal(r.status, 202)
    const again = await req('DELETE', `/v2/${name}/manifests/${img.digest}`)
    assert.equal(again.status, 404)
    assertOciErrors(again, 'MANIFEST_UNKNOWN')
  })
  it('GET request to deleted manifest URL should yield 404 response, unless delete is disallowed', async () => {
    assert.equal((await req('GET', `/v2/${name}/manifests/${img.digest}`)).status, 404)
    assert.equal((await req('GET', `/v2/${name}/manifests/tagtest1`)).status, 404, 'tags of a deleted manifest go with it')
  })
  it('GET request to tags list should reflect manifest deletion', async () => {
    const r = await req('GET', `/v2/${name}/tags/list`)
    assert.equal(r.status, 200)
    assert.deepEqual(r.json().tags, [])
  })
  it('DELETE request to blob URL should yield 202 response', async () => {
    const r = await req('DELETE', `/v2/${name}/blobs/${sha256(img.layers[0] as Buffer)}`)
    assert.equal(r.status, 202)
  })
  it('GET request to deleted blob URL should yield 404 response', async () => {
    const r = await req('GET', `/v2/${name}/blobs/${sha256(img.layers[0] as Buffer)}`)
    assert.equal(r.status, 404)
    assertOciErrors(r, 'BLOB_UNKNOWN')
  })
})

// Not in the conformance list, but part of the API the suite assumes: the version check, indexes, Docker types.
describe('Distribution extras', () => {
  let req: ReturnType<typeof client>
  let base: string
  const reg = useRegistry()
  before(async () => {
    base = reg.current.url
    req = client(base)
  })
  it('GET /v2/ answers 200 with the API version header', async () => {
    const r = await req('GET', '/v2/')
    assert.equal(r.status, 200)
    assert.equal(r.headers['docker-distribution-api-version'], 'registry/2.0')
  })
  it('Docker schema 2 manifests and manifest lists round-trip with their media types', async () => {
    const amd = makeImage({ docker: true, arch: 'amd64' })
    const arm = makeImage({ docker: true, arch: 'arm64' })
    assert.equal((await pushImage(base, 'multi/app', amd.digest, amd)).status, 201)
    assert.equal((await pushImage(base, 'multi/app', arm.digest, arm)).status, 201)
    const list = makeIndex([{ img: amd, arch: 'amd64' }, { img: arm, arch: 'arm64' }], 'application/vnd.docker.distribution.manifest.list.v2+json')
    const put = await req('PUT', '/v2/multi/app/manifests/latest', { body: list.body, headers: { 'Content-Type': 'application/vnd.docker.distribution.manifest.list.v2+json' } })
    assert.equal(put.status, 201)
    const got = await req('GET', '/v2/multi/app/manifests/latest')
    assert.equal(got.headers['content-type'], 'application/vnd.docker.distribution.manifest.list.v2+json')
    assert.equal(sha256(got.body), list.digest)
    const child = await req('GET', `/v2/multi/app/manifests/${arm.digest}`)
    assert.equal(child.headers['content-type'], 'application/vnd.docker.distribution.manifest.v2+json')
  })
  it('an OCI index referencing a manifest the repository lacks is MANIFEST_BLOB_UNKNOWN', async () => {
    const stray = makeImage()
    const idx = makeIndex([{ img: stray, arch: 'amd64' }])
    const r = await req('PUT', '/v2/multi/app/manifests/broken', { body: idx.body, headers: { 'Content-Type': OCI_INDEX } })
    assert.equal(r.status, 400)
    assertOciErrors(r, 'MANIFEST_BLOB_UNKNOWN')
  })
  it('PUT by digest with ?tag= applies the tags (end-7b)', async () => {
    const img = makeImage({ layers: 1 })
    for (const b of [img.config, ...img.layers]) await pushBlob(base, 'multi/tagged', b)
    const r = await req('PUT', `/v2/multi/tagged/manifests/${img.digest}?tag=one&tag=two`, { body: img.manifest, headers: { 'Content-Type': OCI_MANIFEST } })
    assert.equal(r.status, 201)
    assert.deepEqual((await req('GET', '/v2/multi/tagged/tags/list')).json().tags, ['one', 'two'])
  })
  it('GET /v2/_catalog lists repositories with n/last pagination', async () => {
    const all = (await req('GET', '/v2/_catalog')).json().repositories as string[]
    assert.deepEqual(all, [...all].sort())
    assert.ok(all.includes('multi/app'))
    const first = await req('GET', '/v2/_catalog?n=1')
    assert.deepEqual(first.json().repositories, [all[0]])
    assert.equal(first.headers.link, `</v2/_catalog?n=1&last=${encodeURIComponent(all[0] as string)}>; rel="next"`)
  })
  it('blob Range requests answer 206 with Content-Range; unsatisfiable ones 416', async () => {
    const data = randomBytes(100)
    await pushBlob(base, 'multi/range', data)
    const r = await req('GET', `/v2/multi/range/blobs/${sha256(data)}`, { headers: { Range: 'bytes=10-19' } })
    assert.equal(r.status, 206)
    assert.equal(r.headers['content-range'], 'bytes 10-19/100')
    assert.deepEqual(r.body, data.subarray(10, 20))
    const tail = await req('GET', `/v2/multi/range/blobs/${sha256(data)}`, { headers: { Range: 'bytes=-5' } })
    assert.deepEqual(tail.body, data.subarray(95))
    const bad = await req('GET', `/v2/multi/range/blobs/${sha256(data)}`, { headers: { Range: 'bytes=100-' } })
    assert.equal(bad.status, 416)
    assert.equal(bad.headers['content-range'], 'bytes */100')
  })
  it('DELETE on an upload session cancels it', async () => {
    const post = await req('POST', '/v2/multi/cancel/blobs/uploads/')
    const loc = String(post.headers.location)
    assert.equal((await req('DELETE', loc)).status, 204)
    const r = await req('GET', loc)
    assert.equal(r.status, 404)
    assertOciErrors(r, 'BLOB_UPLOAD_UNKNOWN')
  })
})
