// The Hub API's current routes over a real listener: shapes, pagination, ordering, 400/404/409, and the fields that
// follow pushes and pulls.
import { describe, it, before } from 'node:test'
import assert from 'node:assert/strict'
import { useRegistry, client, makeImage, pushImage, makeIndex, sha256, OCI_INDEX, type TestImage, type Reply } from './helpers.js'

const REPOSITORY_INFO_KEYS = [
  'user', 'name', 'namespace', 'repository_type', 'status', 'status_description', 'description', 'is_private',
  'is_automated', 'star_count', 'pull_count', 'last_updated', 'last_modified', 'date_registered', 'collaborator_count',
  'affiliation', 'hub_user', 'has_starred', 'full_description', 'permissions', 'media_types', 'content_types',
  'categories', 'immutable_tags_settings', 'storage_size', 'source'
].sort()
const LIST_ENTRY_KEYS = [
  'name', 'namespace', 'repository_type', 'status', 'status_description', 'description', 'is_private', 'star_count',
  'pull_count', 'last_updated', 'last_modified', 'date_registered', 'affiliation', 'media_types', 'content_types',
  'categories', 'storage_size'
].sort()
const TAG_KEYS = [
  'id', 'images', 'creator', 'last_updated', 'last_updater', 'last_updater_username', 'name', 'repository',
  'full_size', 'v2', 'status', 'tag_last_pulled', 'tag_last_pushed', 'media_type', 'content_type', 'digest'
].sort()
const IMAGE_KEYS = [
  'architecture', 'features', 'variant', 'digest', 'layers', 'os', 'os_features', 'os_version', 'size', 'status',
  'last_pulled', 'last_pushed'
].sort()
const HUB_TIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/

function assertHubError (r: Reply, status: number): Record<string, unknown> {
  assert.equal(r.status, status, r.text)
  assert.match(String(r.headers['content-type']), /^application\/json/)
  const body = r.json() as Record<string, unknown>
  assert.equal(typeof body.message, 'string')
  assert.equal(typeof body.detail, 'string')
  assert.equal(typeof body.errinfo, 'object')
  return body
}

describe('Hub API: create repository (POST /v2/namespaces/{namespace}/repositories)', () => {
  const reg = useRegistry()
  let req: ReturnType<typeof client>
  before(() => { req = client(reg.current.url) })

  it('201 with the repository_info shape', async () => {
    const r = await req('POST', '/v2/namespaces/acme/repositories', {
      json: { name: 'web', namespace: 'acme', description: 'the web app', full_description: '# Web\nlong text', is_private: true, registry: 'docker.io' }
    })
    assert.equal(r.status, 201, r.text)
    const info = r.json()
    assert.deepEqual(Object.keys(info).sort(), REPOSITORY_INFO_KEYS)
    assert.equal(info.name, 'web')
    assert.equal(info.namespace, 'acme')
    assert.equal(info.user, 'acme')
    assert.equal(info.description, 'the web app')
    assert.equal(info.full_description, '# Web\nlong text')
    assert.equal(info.is_private, true)
    assert.equal(info.pull_count, 0)
    assert.equal(info.storage_size, 0)
    assert.equal(info.last_updated, null)
    assert.match(info.date_registered, HUB_TIME)
    assert.deepEqual(info.permissions, { read: true, write: true, admin: true })
    assert.deepEqual(info.immutable_tags_settings, { enabled: false, rules: [] })
  })
  it('409 when the repository exists', async () => {
    const r = await req('POST', '/v2/namespaces/acme/repositories', { json: { name: 'web', namespace: 'acme' } })
    assertHubError(r, 409)
  })
  it('namespace in the body may be omitted on the namespaced route', async () => {
    const r = await req('POST', '/v2/namespaces/acme/repositories', { json: { name: 'api' } })
    assert.equal(r.status, 201)
    assert.equal(r.json().is_private, false)
  })
  for (const [what, payload] of [
    ['an uppercase name', { name: 'Web2', namespace: 'acme' }],
    ['a one-character name', { name: 'w', namespace: 'acme' }],
    ['a name with a slash', { name: 'a/b', namespace: 'acme' }],
    ['a name with a double separator', { name: 'a..b', namespace: 'acme' }],
    ['a 256-character name', { name: 'a'.repeat(256), namespace: 'acme' }],
    ['a missing name', { namespace: 'acme' }],
    ['a namespace that differs from the path', { name: 'other', namespace: 'someone' }],
    ['a description over 100 characters', { name: 'long', namespace: 'acme', description: 'x'.repeat(101) }],
    ['a full_description over 25000 characters', { name: 'long', namespace: 'acme', full_description: 'x'.repeat(25001) }],
    ['a non-boolean is_private', { name: 'priv', namespace: 'acme', is_private: 'yes' }]
  ] as const) {
    it(`400 for ${what}`, async () => {
      const body = assertHubError(await req('POST', '/v2/namespaces/acme/repositories', { json: payload }), 400)
      assert.equal(typeof body.fields, 'object')
    })
  }
  it('400 for a body that is not JSON', async () => {
    assertHubError(await req('POST', '/v2/namespaces/acme/repositories', { body: 'name=x', headers: { 'Content-Type': 'application/x-www-form-urlencoded' } }), 400)
  })
  it('400 for an invalid or reserved namespace in the path', async () => {
    assertHubError(await req('POST', '/v2/namespaces/Bad_NS/repositories', { json: { name: 'xx' } }), 400)
    assertHubError(await req('POST', '/v2/namespaces/namespaces/repositories', { json: { name: 'xx' } }), 400)
  })
})

describe('Hub API: get and check repository (GET|HEAD /v2/namespaces/{namespace}/repositories/{repository})', () => {
  const reg = useRegistry()
  let req: ReturnType<typeof client>
  let img: TestImage
  before(async () => {
    req = client(reg.current.url)
    img = makeImage({ layers: 3 })
    assert.equal((await pushImage(reg.current.url, 'shop/cart', 'v1', img)).status, 201)
  })

  it('a push to a missing repository created it in its namespace, with real fields', async () => {
    const r = await req('GET', '/v2/namespaces/shop/repositories/cart')
    assert.equal(r.status, 200)
    const info = r.json()
    assert.deepEqual(Object.keys(info).sort(), REPOSITORY_INFO_KEYS)
    assert.equal(info.namespace, 'shop')
    assert.equal(info.name, 'cart')
    assert.match(info.last_updated, HUB_TIME)
    const blobs = [img.config, ...img.layers].reduce((a, b) => a + b.length, 0)
    assert.equal(info.storage_size, blobs + img.manifest.length)
    assert.deepEqual(info.media_types, ['application/vnd.oci.image.manifest.v1+json'])
    assert.deepEqual(info.content_types, ['image'])
  })
  it('pull_count and last_updated follow pulls and pushes', async () => {
    const before = (await req('GET', '/v2/namespaces/shop/repositories/cart')).json()
    await req('GET', '/v2/shop/cart/manifests/v1')
    await req('GET', `/v2/shop/cart/manifests/${img.digest}`)
    await req('HEAD', '/v2/shop/cart/manifests/v1') // HEAD is not a pull
    const after = (await req('GET', '/v2/namespaces/shop/repositories/cart')).json()
    assert.equal(after.pull_count, before.pull_count + 2)
    const img2 = makeImage({ layers: 1 })
    await pushImage(reg.current.url, 'shop/cart', 'v2', img2)
    const later = (await req('GET', '/v2/namespaces/shop/repositories/cart')).json()
    assert.ok(later.last_updated >= after.last_updated)
    assert.ok(later.storage_size > after.storage_size)
  })
  it('HEAD answers 200 with GET\'s headers and no body', async () => {
    const get = await req('GET', '/v2/namespaces/shop/repositories/cart')
    const head = await req('HEAD', '/v2/namespaces/shop/repositories/cart')
    assert.equal(head.status, 200)
    assert.equal(head.body.length, 0)
    assert.equal(head.headers['content-type'], 'application/json')
    assert.equal(head.headers['content-length'], get.headers['content-length'])
  })
  it('404 for an unknown repository (GET and HEAD)', async () => {
    assertHubError(await req('GET', '/v2/namespaces/shop/repositories/nothing'), 404)
    assert.equal((await req('HEAD', '/v2/namespaces/shop/repositories/nothing')).status, 404)
  })
  it('400 for invalid names in the path', async () => {
    assertHubError(await req('GET', '/v2/namespaces/shop/repositories/Cart'), 400)
    assertHubError(await req('GET', '/v2/namespaces/../repositories/cart'), 400)
    assertHubError(await req('GET', '/v2/namespaces/shop/repositories/..'), 400)
  })
  it('a single-component push lands in the library namespace', async () => {
    assert.equal((await pushImage(reg.current.url, 'solo', 'latest', makeImage({ layers: 1 }))).status, 201)
    const r = await req('GET', '/v2/namespaces/library/repositories/solo')
    assert.equal(r.status, 200)
    assert.equal((await req('GET', '/v2/library/solo/tags/list')).json().tags[0], 'latest')
  })
})

describe('Hub API: list repositories (GET /v2/namespaces/{namespace}/repositories)', () => {
  const reg = useRegistry()
  let req: ReturnType<typeof client>
  const names: string[] = []
  before(async () => {
    req = client(reg.current.url)
    for (let i = 0; i < 105; i++) {
      const name = `repo-${String(i).padStart(3, '0')}`
      names.push(name)
      const r = await req('POST', '/v2/namespaces/big/repositories', { json: { name, description: `number ${i}` } })
      assert.equal(r.status, 201)
    }
    // pushes give some repositories a last_updated and pulls a pull_count
    await pushImage(reg.current.url, 'big/repo-007', 'latest', makeImage({ layers: 1 }))
    await pushImage(reg.current.url, 'big/repo-003', 'latest', makeImage({ layers: 1 }))
    for (let i = 0; i < 3; i++) await req('GET', '/v2/big/repo-003/manifests/latest')
    await req('GET', '/v2/big/repo-007/manifests/latest')
  })

  it('page 1 with the default page_size of 10: count, absolute next, no previous, entry shape', async () => {
    const r = await req('GET', '/v2/namespaces/big/repositories?ordering=name')
    assert.equal(r.status, 200)
    const page = r.json()
    assert.deepEqual(Object.keys(page).sort(), ['count', 'next', 'previous', 'results'])
    assert.equal(page.count, 105)
    assert.equal(page.results.length, 10)
    assert.equal(page.previous, null)
    assert.equal(page.next, `${reg.current.url}/v2/namespaces/big/repositories?ordering=name&page=2&page_size=10`)
    assert.deepEqual(Object.keys(page.results[0]).sort(), LIST_ENTRY_KEYS)
    assert.deepEqual(page.results.map((x: { name: string }) => x.name), names.slice(0, 10))
  })
  it('next and previous walk the pages and keep the query', async () => {
    const first = (await req('GET', '/v2/namespaces/big/repositories?ordering=name&page_size=40')).json()
    const u = new URL(first.next)
    const second = (await req('GET', u.pathname + u.search)).json()
    assert.deepEqual(second.results.map((x: { name: string }) => x.name), names.slice(40, 80))
    assert.equal(second.previous, `${reg.current.url}/v2/namespaces/big/repositories?ordering=name&page_size=40&page=1`)
    const third = (await req('GET', '/v2/namespaces/big/repositories?ordering=name&page_size=40&page=3')).json()
    assert.equal(third.results.length, 25)
    assert.equal(third.next, null)
  })
  it('page_size is capped at 100', async () => {
    const r = (await req('GET', '/v2/namespaces/big/repositories?page_size=500')).json()
    assert.equal(r.results.length, 100)
    assert.match(r.next, /page_size=100/)
  })
  it('a page past the end is 404; page 1 of an empty list is not', async () => {
    assertHubError(await req('GET', '/v2/namespaces/big/repositories?page=12'), 404)
    const empty = await req('GET', '/v2/namespaces/big/repositories?name=zzz')
    assert.equal(empty.status, 200)
    assert.equal(empty.json().count, 0)
  })
  it('an unknown namespace lists 0, not 404', async () => {
    const r = await req('GET', '/v2/namespaces/nobody/repositories')
    assert.equal(r.status, 200)
    assert.deepEqual(r.json(), { count: 0, next: null, previous: null, results: [] })
  })
  it('name filters by partial match', async () => {
    const r = (await req('GET', '/v2/namespaces/big/repositories?name=repo-10')).json()
    assert.deepEqual(r.results.map((x: { name: string }) => x.name).sort(), ['repo-100', 'repo-101', 'repo-102', 'repo-103', 'repo-104'])
  })
  for (const ordering of ['name', '-name', 'last_updated', '-last_updated', 'pull_count', '-pull_count']) {
    it(`ordering=${ordering}`, async () => {
      const r = (await req('GET', `/v2/namespaces/big/repositories?ordering=${ordering}&page_size=100`)).json()
      const got = r.results as Array<{ name: string, last_updated: string | null, date_registered: string, pull_count: number }>
      const key = ordering.replace(/^-/, '')
      const desc = ordering.startsWith('-')
      const value = (x: typeof got[number]): string | number => key === 'name' ? x.name : key === 'pull_count' ? x.pull_count : (x.last_updated ?? x.date_registered)
      for (let i = 1; i < got.length; i++) {
        const a = value(got[i - 1] as typeof got[number])
        const b = value(got[i] as typeof got[number])
        assert.ok(desc ? a >= b : a <= b, `${ordering}: ${String(a)} then ${String(b)}`)
      }
      if (ordering === '-pull_count') assert.deepEqual(got.slice(0, 2).map((x) => [x.name, x.pull_count]), [['repo-003', 3], ['repo-007', 1]])
      if (ordering === '-last_updated') assert.deepEqual(got.slice(0, 2).map((x) => x.name).sort(), ['repo-003', 'repo-007'])
    })
  }
  it('400 for an unknown ordering, with the ValueError fields', async () => {
    const body = assertHubError(await req('GET', '/v2/namespaces/big/repositories?ordering=stars'), 400)
    assert.equal(body.text, 'Invalid ordering value')
    assert.deepEqual(body.fields, { ordering: ['Invalid ordering value. Must be one of: name, -name, last_updated, -last_updated, pull_count, -pull_count'] })
  })
  it('400 for a bad page or page_size', async () => {
    for (const q of ['page=0', 'page=x', 'page_size=0', 'page_size=-1']) {
      assertHubError(await req('GET', `/v2/namespaces/big/repositories?${q}`), 400)
    }
  })
})

describe('Hub API: tags (GET|HEAD …/tags, …/tags/{tag})', () => {
  const reg = useRegistry()
  let req: ReturnType<typeof client>
  const pushed: Array<{ tag: string, img: TestImage }> = []
  let amd: TestImage
  let arm: TestImage
  before(async () => {
    req = client(reg.current.url)
    for (const tag of ['1.0', '1.1', '2.0', 'latest']) {
      const img = makeImage({ layers: 2 })
      assert.equal((await pushImage(reg.current.url, 'team/tool', tag, img)).status, 201)
      pushed.push({ tag, img })
    }
    amd = makeImage({ arch: 'amd64' })
    arm = makeImage({ arch: 'arm64', layers: 1 })
    await pushImage(reg.current.url, 'team/tool', amd.digest, amd)
    await pushImage(reg.current.url, 'team/tool', arm.digest, arm)
    const idx = makeIndex([{ img: amd, arch: 'amd64' }, { img: arm, arch: 'arm64' }])
    assert.equal((await req('PUT', '/v2/team/tool/manifests/multi', { body: idx.body, headers: { 'Content-Type': OCI_INDEX } })).status, 201)
    await req('POST', '/v2/namespaces/team/repositories', { json: { name: 'empty' } })
  })

  it('a tag carries its image: digest, sizes, architecture, os, layers and push time', async () => {
    const r = await req('GET', '/v2/namespaces/team/repositories/tool/tags/1.0')
    assert.equal(r.status, 200)
    const tag = r.json()
    assert.deepEqual(Object.keys(tag).sort(), TAG_KEYS)
    const { img } = pushed[0] as { img: TestImage }
    assert.equal(tag.name, '1.0')
    assert.equal(tag.digest, img.digest)
    assert.equal(tag.v2, true)
    assert.equal(tag.status, 'active')
    assert.equal(tag.full_size, img.layers.reduce((a, l) => a + l.length, 0))
    assert.match(tag.tag_last_pushed, HUB_TIME)
    assert.equal(tag.tag_last_pulled, null)
    assert.equal(tag.images.length, 1)
    const image = tag.images[0]
    assert.deepEqual(Object.keys(image).sort(), IMAGE_KEYS)
    assert.equal(image.architecture, 'amd64')
    assert.equal(image.os, 'linux')
    assert.equal(image.digest, img.digest)
    assert.deepEqual(image.layers.map((l: { digest: string, size: number }) => [l.digest, l.size]), img.layers.map((l) => [sha256(l), l.length]))
    assert.equal(image.layers[0].instruction, 'RUN echo layer 0')
  })
  it('a pull sets tag_last_pulled and the image\'s last_pulled', async () => {
    await req('GET', '/v2/team/tool/manifests/1.1')
    const tag = (await req('GET', '/v2/namespaces/team/repositories/tool/tags/1.1')).json()
    assert.match(tag.tag_last_pulled, HUB_TIME)
    assert.equal(tag.images[0].last_pulled, tag.tag_last_pulled)
  })
  it('an index tag lists one image per platform', async () => {
    const tag = (await req('GET', '/v2/namespaces/team/repositories/tool/tags/multi')).json()
    assert.deepEqual(tag.images.map((i: { architecture: string, digest: string }) => [i.architecture, i.digest]), [['amd64', amd.digest], ['arm64', arm.digest]])
    assert.equal(tag.media_type, OCI_INDEX)
    assert.equal(tag.full_size, amd.layers.reduce((a, l) => a + l.length, 0))
  })
  it('list: count, shape, newest first by default', async () => {
    const r = await req('GET', '/v2/namespaces/team/repositories/tool/tags')
    assert.equal(r.status, 200)
    const page = r.json()
    assert.equal(page.count, 5)
    assert.deepEqual(Object.keys(page.results[0]).sort(), TAG_KEYS)
    const times = page.results.map((t: { tag_last_pushed: string }) => t.tag_last_pushed)
    assert.deepEqual(times, [...times].sort().reverse())
  })
  for (const ordering of ['name', '-name', 'last_updated', '-last_updated']) {
    it(`list ordering=${ordering}`, async () => {
      const got = (await req('GET', `/v2/namespaces/team/repositories/tool/tags?ordering=${ordering}`)).json().results as Array<{ name: string, last_updated: string }>
      const key = ordering.replace(/^-/, '') as 'name' | 'last_updated'
      const vals = got.map((t) => t[key])
      const sorted = [...vals].sort()
      assert.deepEqual(vals, ordering.startsWith('-') ? sorted.reverse() : sorted)
    })
  }
  it('list pagination with absolute next/previous', async () => {
    const first = (await req('GET', '/v2/namespaces/team/repositories/tool/tags?ordering=name&page_size=2')).json()
    assert.deepEqual(first.results.map((t: { name: string }) => t.name), ['1.0', '1.1'])
    assert.equal(first.next, `${reg.current.url}/v2/namespaces/team/repositories/tool/tags?ordering=name&page_size=2&page=2`)
    const u = new URL(first.next)
    const second = (await req('GET', u.pathname + u.search)).json()
    assert.deepEqual(second.results.map((t: { name: string }) => t.name), ['2.0', 'latest'])
    assert.match(second.previous, /page=1/)
    assertHubError(await req('GET', '/v2/namespaces/team/repositories/tool/tags?page=9'), 404)
  })
  it('list name filter', async () => {
    const got = (await req('GET', '/v2/namespaces/team/repositories/tool/tags?name=1.&ordering=name')).json()
    assert.deepEqual(got.results.map((t: { name: string }) => t.name), ['1.0', '1.1'])
  })
  it('400 for an unknown tag ordering', async () => {
    assertHubError(await req('GET', '/v2/namespaces/team/repositories/tool/tags?ordering=pull_count'), 400)
  })
  it('HEAD …/tags: 200 with tags, 404 without', async () => {
    assert.equal((await req('HEAD', '/v2/namespaces/team/repositories/tool/tags')).status, 200)
    assert.equal((await req('HEAD', '/v2/namespaces/team/repositories/empty/tags')).status, 404)
    const empty = await req('GET', '/v2/namespaces/team/repositories/empty/tags')
    assert.equal(empty.json().count, 0)
  })
  it('HEAD …/tags/{tag}: 200 or 404', async () => {
    assert.equal((await req('HEAD', '/v2/namespaces/team/repositories/tool/tags/latest')).status, 200)
    assert.equal((await req('HEAD', '/v2/namespaces/team/repositories/tool/tags/nope')).status, 404)
  })
  it('404 for an unknown tag or repository', async () => {
    assertHubError(await req('GET', '/v2/namespaces/team/repositories/tool/tags/nope'), 404)
    assertHubError(await req('GET', '/v2/namespaces/team/repositories/ghost/tags'), 404)
    assertHubError(await req('GET', '/v2/namespaces/team/repositories/ghost/tags/latest'), 404)
  })
  it('the legacy /v2/repositories/{namespace}/{repository}/tags routes answer the same payloads', async () => {
    const a = (await req('GET', '/v2/repositories/team/tool/tags?ordering=name')).json()
    const b = (await req('GET', '/v2/namespaces/team/repositories/tool/tags?ordering=name')).json()
    assert.deepEqual(a.results, b.results)
    const t = await req('GET', '/v2/repositories/team/tool/tags/latest')
    assert.equal(t.status, 200)
    assert.equal(t.json().digest, (pushed[3] as { img: TestImage }).img.digest)
  })
  it('deleting a tag through the distribution API removes it from the Hub list', async () => {
    assert.equal((await req('DELETE', '/v2/team/tool/manifests/2.0')).status, 202)
    const names = (await req('GET', '/v2/namespaces/team/repositories/tool/tags?ordering=name')).json().results.map((t: { name: string }) => t.name)
    assert.deepEqual(names, ['1.0', '1.1', 'latest', 'multi'])
  })
})

describe('Hub API: unknown routes', () => {
  const reg = useRegistry()
  it('404 with a JSON message', async () => {
    const r = await request404(reg.current.url)
    assert.equal(r.status, 404)
    assert.equal(r.json().message, '404: Page Not Found')
  })
})

async function request404 (base: string): Promise<Reply> {
  return await client(base)('GET', '/v2/namespaces/x/unknown/route')
}
