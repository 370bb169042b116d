// The deprecation state, driven from the same table the service uses (lib/registry/deprecation.ts): every
// deprecated route still works with its old shape and carries Deprecation + Link headers; every removed route
// answers 410 with the successor from the migration table, for any method; GET /v2/deprecations serves the log.
import { describe, it, before } from 'node:test'
import assert from 'node:assert/strict'
import {
  DEPRECATED_ROUTES, REMOVED_ROUTES, MIGRATION, DEPRECATION_LOG, deprecationValue, fillTemplate, v2ParamsOf, type RouteState
} from '../../lib/registry/deprecation.js'
import { useRegistry, client, makeImage, pushImage, type Reply } from './helpers.js'

/** The IETF values for the seed's dates, spelled out independently of the code (reference §2). */
const EPOCHS: Record<string, string> = { '2025-09-19': '@1758240000', '2025-06-27': '@1750982400', '2022-08-23': '@1661212800' }

function dateOf (st: RouteState): string {
  return (DEPRECATION_LOG.find((e) => e.id === st.log) as { date: string }).date
}

function parseLinks (header: string | string[] | undefined): Array<{ url: string, rel: string }> {
  return String(header ?? '').split(/,\s*(?=<)/).filter((s) => s !== '').map((part) => {
    const m = /^<([^>]*)>(.*)$/.exec(part.trim())
    assert.ok(m !== null, `bad Link part ${part}`)
    const rel = /rel="([^"]+)"/.exec(m[2] as string)
    return { url: m[1] as string, rel: rel?.[1] ?? '' }
  })
}

describe('deprecation log data', () => {
  it('Deprecation values are RFC 9651 dates of the log entries', () => {
    for (const e of DEPRECATION_LOG) assert.equal(deprecationValue(e.date), EPOCHS[e.date])
  })
  it('the table has the seed\'s five deprecated and six removed routes', () => {
    assert.deepEqual(DEPRECATED_ROUTES.map((r) => `${r.method} ${r.path}`), [
      'POST /v2/repositories', 'POST /v2/repositories/{namespace}', 'GET /v2/repositories/{namespace}/{repository}',
      'HEAD /v2/repositories/{namespace}/{repository}', 'GET /v2/repositories/{namespace}'
    ])
    assert.equal(REMOVED_ROUTES.length, 6)
    assert.ok(REMOVED_ROUTES.every((r) => r.path.startsWith('/v1/repositories/') && r.method === '*'))
  })
})

describe('deprecated routes keep working, with Deprecation and Link headers', () => {
  const reg = useRegistry()
  let req: ReturnType<typeof client>
  let n = 0
  before(async () => {
    req = client(reg.current.url)
    assert.equal((await req('POST', '/v2/namespaces/legacy/repositories', { json: { name: 'app', description: 'old routes' } })).status, 201)
    assert.equal((await pushImage(reg.current.url, 'legacy/app', 'latest', makeImage())).status, 201)
  })

  /** Parameters for a route template and, for creates, a body naming a fresh repository. */
  function callFor (st: RouteState): { path: string, params: Record<string, string>, json?: unknown } {
    const params: Record<string, string> = { namespace: 'legacy', repository: 'app' }
    const path = fillTemplate(st.path, params)
    if (st.method !== 'POST') return { path, params }
    const name = `created-${n++}`
    return { path, params, json: st.path.includes('{namespace}') ? { name } : { name, namespace: 'legacy' } }
  }

  function assertHeaders (r: Reply, st: RouteState, params: Record<string, string>): void {
    assert.equal(r.headers.deprecation, EPOCHS[dateOf(st)])
    const links = parseLinks(r.headers.link)
    const successor = links.find((l) => l.rel === 'successor-version')
    assert.ok(st.replacement !== null)
    assert.equal(successor?.url, `${reg.current.url}${fillTemplate(st.replacement.path, params)}`)
    const doc = links.find((l) => l.rel === 'deprecation')
    assert.equal(doc?.url, `${reg.current.url}/v2/deprecations#${st.log}`)
    assert.match(String(r.headers.link), /rel="deprecation"; type="application\/json"/)
  }

  for (const st of DEPRECATED_ROUTES) {
    it(`${st.method} ${st.path} answers like ${st.replacement?.operation ?? '?'} and adds the headers`, async () => {
      const call = callFor(st)
      const r = await req(st.method, call.path, call.json === undefined ? {} : { json: call.json })
      assertHeaders(r, st, call.params)
      const rep = st.replacement as NonNullable<RouteState['replacement']>
      if (st.method === 'POST') {
        assert.equal(r.status, 201, r.text)
        const made = r.json()
        assert.equal(made.namespace, 'legacy')
        // the created repository is visible through the replacement, with the same shape
        const viaNew = await req('GET', `/v2/namespaces/legacy/repositories/${String(made.name)}`)
        assert.deepEqual(Object.keys(made).sort(), Object.keys(viaNew.json()).sort())
        assert.equal(viaNew.headers.deprecation, undefined, 'the replacement itself is not deprecated')
        return
      }
      const viaNew = await req(rep.method, fillTemplate(rep.path, call.params))
      assert.equal(r.status, viaNew.status)
      assert.equal(viaNew.headers.deprecation, undefined)
      if (st.method === 'HEAD') {
        assert.equal(r.body.length, 0)
        assert.equal(r.headers['content-length'], viaNew.headers['content-length'])
      } else {
        assert.deepEqual(r.json(), viaNew.json())
      }
    })
  }

  it('errors on deprecated routes carry the headers too', async () => {
    const st = DEPRECATED_ROUTES.find((s) => s.method === 'GET' && s.path.endsWith('{repository}')) as RouteState
    const r = await req('GET', '/v2/repositories/legacy/missing')
    assert.equal(r.status, 404)
    assertHeaders(r, st, { namespace: 'legacy', repository: 'missing' })
  })
  it('the legacy list answers 200 with count 0 for an unknown namespace (docker/hub-feedback#2357)', async () => {
    const r = await req('GET', '/v2/repositories/nosuchns/')
    assert.equal(r.status, 200)
    assert.deepEqual(r.json(), { count: 0, next: null, previous: null, results: [] })
    assert.ok(r.headers.deprecation !== undefined)
  })
  it('POST /v2/repositories learns the successor\'s namespace from the body', async () => {
    const r = await req('POST', '/v2/repositories', { json: { name: 'from-body', namespace: 'other' } })
    assert.equal(r.status, 201)
    assert.match(String(r.headers.link), new RegExp(`<${reg.current.url}/v2/namespaces/other/repositories>; rel="successor-version"`))
  })
})

describe('removed v1 routes answer 410 Gone with the successor', () => {
  const reg = useRegistry()
  let req: ReturnType<typeof client>
  before(() => { req = client(reg.current.url) })
  const v1Params: Record<string, string> = { namespace: 'someorg', name: 'tool', tag_name: '1.2' }

  for (const st of REMOVED_ROUTES) {
    for (const method of ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE']) {
      it(`${method} ${st.path} → 410`, async () => {
        const path = fillTemplate(st.path, v1Params)
        const r = await req(method, path, method === 'POST' || method === 'PUT' ? { json: {} } : {})
        assert.equal(r.status, 410)
        assert.equal(r.headers.deprecation, EPOCHS[dateOf(st)])
        assert.match(String(r.headers['content-type']), /^application\/json/)
        // the successors named by the migration table, filled with this request's parameters
        const v2 = v2ParamsOf(Object.fromEntries(Object.entries(v1Params).filter(([k]) => st.path.includes(`{${k}}`))))
        const expected = MIGRATION.filter((m) => m.from === st.path).map((m) => fillTemplate(m.to, v2))
        const complete = expected.filter((p) => !p.includes('{'))
        const successor = parseLinks(r.headers.link).find((l) => l.rel === 'successor-version')
        if (complete.length > 0) assert.equal(successor?.url, `${reg.current.url}${complete[0] as string}`)
        else assert.equal(successor, undefined)
        if (method === 'HEAD') { assert.equal(r.body.length, 0); return }
        const body = r.json()
        assert.match(body.message, /Version 1 of the API was removed on 2022-08-23/)
        assert.equal(body.errinfo.state, 'removed')
        assert.equal(body.errinfo.route, st.path)
        assert.equal(body.errinfo.successors.length, expected.length)
        if (complete.length > 0) {
          assert.equal(body.errinfo.successor, `${reg.current.url}${complete[0] as string}`)
          assert.match(body.detail, /^Use http/)
        } else {
          assert.equal(body.errinfo.successor, null)
        }
      })
    }
  }
  it('a bare v1 name maps to the library namespace', async () => {
    const r = await req('GET', '/v1/repositories/busybox/tags')
    assert.equal(r.json().errinfo.successor, `${reg.current.url}/v2/namespaces/library/repositories/busybox/tags`)
  })
  it('other /v1 paths are simply unknown (404)', async () => {
    assert.equal((await req('GET', '/v1/_ping')).status, 404)
  })
})

describe('GET /v2/deprecations serves the log', () => {
  const reg = useRegistry()
  it('JSON: the log, every route with its state and date, the migration table', async () => {
    const r = await client(reg.current.url)('GET', '/v2/deprecations')
    assert.equal(r.status, 200)
    const doc = r.json()
    assert.deepEqual(doc.log.map((e: { status: string, feature: string, date: string }) => [e.status, e.feature, e.date]),
      DEPRECATION_LOG.map((e) => [e.status, e.feature, e.date]))
    assert.equal(doc.routes.length, DEPRECATED_ROUTES.length + REMOVED_ROUTES.length)
    for (const route of doc.routes) assert.equal(route.deprecation, EPOCHS[route.date])
    assert.deepEqual(doc.migration, MIGRATION)
  })
  it('Markdown with ?format=markdown', async () => {
    const r = await client(reg.current.url)('GET', '/v2/deprecations?format=markdown')
    assert.match(String(r.headers['content-type']), /^text\/markdown/)
    for (const st of [...DEPRECATED_ROUTES, ...REMOVED_ROUTES]) assert.ok(r.text.includes(`\`${st.path}\``))
  })
})
