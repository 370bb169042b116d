// Token auth as Docker clients use it: challenge, token endpoint (GET with Basic, POST password grant), scopes per
// repository and action, anonymous pull of public repositories, push denied without rights, private repositories,
// Hub access tokens, and forged, expired or malformed tokens refused.
import { describe, it, before } from 'node:test'
import assert from 'node:assert/strict'
import { writeFileSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { randomBytes, randomUUID } from 'node:crypto'
import { hashPassword } from '../../lib/registry/auth/passwords.js'
import { signJwt, type JwtClaims } from '../../lib/registry/auth/jwt.js'
import { useRegistry, request, makeImage, pushImage, sha256, tmpDir, type Reply } from './helpers.js'

const KEY = randomBytes(32)
const PASSWORDS: Record<string, string> = { alice: 'alice-pw', bob: 'bob-pw', admin: 'admin-pw' }

function basic (user: string, password: string): string {
  return `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`
}

function challengeOf (r: Reply): Record<string, string> {
  const h = String(r.headers['www-authenticate'] ?? '')
  assert.match(h, /^Bearer /)
  const out: Record<string, string> = {}
  for (const m of h.slice('Bearer '.length).matchAll(/(\w+)="([^"]*)"/g)) out[m[1] as string] = m[2] as string
  return out
}

// Users come from a file, exactly as `berth registry --users FILE` reads it: name:hash[:namespaces].
const usersDir = tmpDir()
process.once('exit', () => { rmSync(usersDir, { recursive: true, force: true }) })
const USERS_FILE = join(usersDir, 'users')
writeFileSync(USERS_FILE, '# test users\n' + (await Promise.all(Object.entries(PASSWORDS).map(async ([name, pw]) => {
  const extra = name === 'bob' ? ':shared' : name === 'admin' ? ':*' : ''
  return `${name}:${await hashPassword(pw)}${extra}`
}))).join('\n') + '\n')

describe('token auth', () => {
  const reg = useRegistry({ auth: 'token', tokenKey: KEY, users: USERS_FILE })
  let base = ''
  before(async () => { base = reg.current.url })

  async function token (scopes: string[], creds?: [string, string]): Promise<string> {
    const q = new URLSearchParams({ service: 'berth-registry' })
    for (const s of scopes) q.append('scope', s)
    const r = await request(base, 'GET', `/token?${q.toString()}`, creds === undefined ? {} : { headers: { Authorization: basic(...creds) } })
    assert.equal(r.status, 200, r.text)
    const body = r.json()
    assert.equal(body.token, body.access_token)
    assert.equal(body.expires_in, 300)
    assert.match(body.issued_at, /^\d{4}-\d\d-\d\dT/)
    return body.token as string
  }
  const as = (user: string, scopes: string[]): Promise<string> => token(scopes, [user, PASSWORDS[user] as string])

  it('GET /v2/ without a token: 401 with a Bearer challenge (realm, service, no scope)', async () => {
    const r = await request(base, 'GET', '/v2/')
    assert.equal(r.status, 401)
    assert.deepEqual(challengeOf(r), { realm: `${base}/token`, service: 'berth-registry' })
    assert.equal(r.json().errors[0].code, 'UNAUTHORIZED')
    assert.equal(r.headers['docker-distribution-api-version'], 'registry/2.0')
  })
  it('GET /v2/ with an anonymous token: 200', async () => {
    const t = await token([])
    assert.equal((await request(base, 'GET', '/v2/', { token: t })).status, 200)
  })
  it('a pull without a token is challenged with the repository scope', async () => {
    const r = await request(base, 'GET', '/v2/alice/app/manifests/latest')
    assert.equal(r.status, 401)
    assert.deepEqual(challengeOf(r), { realm: `${base}/token`, service: 'berth-registry', scope: 'repository:alice/app:pull' })
    assert.deepEqual(r.json().errors[0].detail, [{ Type: 'repository', Name: 'alice/app', Action: 'pull' }])
  })
  it('a user pushes to their own namespace; the push creates the repository', async () => {
    const t = await as('alice', ['repository:alice/app:pull,push'])
    const img = makeImage()
    assert.equal((await pushImage(base, 'alice/app', 'latest', img, t)).status, 201)
    const hub = await request(base, 'GET', '/v2/namespaces/alice/repositories/app')
    assert.equal(hub.status, 200, 'public repositories are readable anonymously on the Hub API')
  })
  it('anonymous pull of a public repository works with an anonymous token', async () => {
    const t = await token(['repository:alice/app:pull'])
    const r = await request(base, 'GET', '/v2/alice/app/manifests/latest', { token: t })
    assert.equal(r.status, 200)
  })
  it('anonymous push is denied: the token grants pull only, the registry asks for push', async () => {
    const t = await token(['repository:alice/app:pull,push'])
    const payload = JSON.parse(Buffer.from(t.split('.')[1] as string, 'base64url').toString()) as JwtClaims
    assert.deepEqual(payload.access, [{ type: 'repository', name: 'alice/app', actions: ['pull'] }])
    assert.equal(payload.sub, '')
    const r = await request(base, 'POST', '/v2/alice/app/blobs/uploads/', { token: t })
    assert.equal(r.status, 401)
    assert.deepEqual(challengeOf(r), { realm: `${base}/token`, service: 'berth-registry', scope: 'repository:alice/app:pull,push', error: 'insufficient_scope' })
  })
  it('a user cannot push to another user\'s namespace: 403 DENIED at once (no login prompt)', async () => {
    const t = await as('bob', ['repository:alice/app:pull,push'])
    const r = await request(base, 'POST', '/v2/alice/app/blobs/uploads/', { token: t })
    assert.equal(r.status, 403, r.text)
    assert.equal(r.json().errors[0].code, 'DENIED')
    assert.equal(r.headers['www-authenticate'], undefined)
  })
  it('extra namespaces from the users file, and `*`', async () => {
    const tb = await as('bob', ['repository:shared/thing:push,pull'])
    assert.equal((await pushImage(base, 'shared/thing', '1', makeImage({ layers: 1 }), tb)).status, 201)
    const ta = await as('admin', ['repository:anything/at-all:*'])
    assert.equal((await pushImage(base, 'anything/at-all', '1', makeImage({ layers: 1 }), ta)).status, 201)
  })
  it('delete needs the delete action', async () => {
    const push = await as('alice', ['repository:alice/app:pull,push'])
    const r = await request(base, 'DELETE', '/v2/alice/app/manifests/latest', { token: push })
    assert.equal(r.status, 401)
    assert.equal(challengeOf(r).scope, 'repository:alice/app:delete')
    const del = await as('alice', ['repository:alice/app:delete'])
    const img = makeImage({ layers: 1 })
    await pushImage(base, 'alice/app', 'doomed', img, push)
    assert.equal((await request(base, 'DELETE', '/v2/alice/app/manifests/doomed', { token: del })).status, 202)
  })
  it('the token endpoint refuses wrong passwords and unknown users', async () => {
    for (const creds of [['alice', 'nope'], ['mallory', 'x']]) {
      const r = await request(base, 'GET', '/token?service=berth-registry&scope=repository:alice/app:pull', { headers: { Authorization: basic(creds[0] as string, creds[1] as string) } })
      assert.equal(r.status, 401)
      assert.equal(typeof r.json().details, 'string')
    }
  })
  it('POST /token with the OAuth2 password grant', async () => {
    const form = new URLSearchParams({ grant_type: 'password', username: 'alice', password: 'alice-pw', service: 'berth-registry', scope: 'repository:alice/app:pull,push', client_id: 'test' })
    const r = await request(base, 'POST', '/token', { body: form.toString(), headers: { 'Content-Type': 'application/x-www-form-urlencoded' } })
    assert.equal(r.status, 200)
    const post = await request(base, 'POST', '/v2/alice/app/blobs/uploads/', { token: r.json().access_token })
    assert.equal(post.status, 202)
    const bad = await request(base, 'POST', '/token', { body: 'grant_type=refresh_token&refresh_token=x', headers: { 'Content-Type': 'application/x-www-form-urlencoded' } })
    assert.equal(bad.status, 400)
  })
  it('single-component names are scoped in the library namespace', async () => {
    const t = await as('alice', ['repository:busybox:pull,push'])
    const claims = JSON.parse(Buffer.from(t.split('.')[1] as string, 'base64url').toString()) as JwtClaims
    // nothing is granted on a name that does not exist yet (a missing repository answers like a private one)
    assert.deepEqual(claims.access, [{ type: 'repository', name: 'library/busybox', actions: [] }])
    const ta = await as('admin', ['repository:busybox:pull,push'])
    assert.equal((await pushImage(base, 'busybox', 'latest', makeImage({ layers: 1 }), ta)).status, 201)
    const after = await as('alice', ['repository:busybox:pull,push'])
    const c2 = JSON.parse(Buffer.from(after.split('.')[1] as string, 'base64url').toString()) as JwtClaims
    assert.deepEqual(c2.access, [{ type: 'repository', name: 'library/busybox', actions: ['pull'] }])
  })

  describe('private repositories', () => {
    let aliceHub = ''
    let bobHub = ''
    before(async () => {
      const login = async (identifier: string): Promise<string> => {
        const r = await request(base, 'POST', '/v2/auth/token', { json: { identifier, secret: PASSWORDS[identifier] } })
        assert.equal(r.status, 200, r.text)
        return r.json().access_token as string
      }
      aliceHub = await login('alice')
      bobHub = await login('bob')
      const r = await request(base, 'POST', '/v2/namespaces/alice/repositories', { token: aliceHub, json: { name: 'secret', is_private: true } })
      assert.equal(r.status, 201, r.text)
      const t = await as('alice', ['repository:alice/secret:pull,push'])
      assert.equal((await pushImage(base, 'alice/secret', 'v1', makeImage({ layers: 1 }), t)).status, 201)
    })
    it('Hub: anonymous 401, another user 403, the owner 200', async () => {
      assert.equal((await request(base, 'GET', '/v2/namespaces/alice/repositories/secret')).status, 401)
      assert.equal((await request(base, 'GET', '/v2/namespaces/alice/repositories/secret', { token: bobHub })).status, 403)
      const own = await request(base, 'GET', '/v2/namespaces/alice/repositories/secret', { token: aliceHub })
      assert.equal(own.status, 200)
      assert.deepEqual(own.json().permissions, { read: true, write: true, admin: true })
      assert.equal((await request(base, 'GET', '/v2/namespaces/alice/repositories/secret/tags', { token: bobHub })).status, 403)
    })
    it('Hub lists hide private repositories from others', async () => {
      const anon = (await request(base, 'GET', '/v2/namespaces/alice/repositories?ordering=name')).json()
      assert.deepEqual(anon.results.map((r: { name: string }) => r.name), ['app'])
      const own = (await request(base, 'GET', '/v2/namespaces/alice/repositories?ordering=name', { token: aliceHub })).json()
      assert.deepEqual(own.results.map((r: { name: string }) => r.name), ['app', 'secret'])
    })
    it('registry: anonymous and other users get no pull grant', async () => {
      const anon = await token(['repository:alice/secret:pull'])
      assert.equal((await request(base, 'GET', '/v2/alice/secret/manifests/v1', { token: anon })).status, 401)
      const bob = await as('bob', ['repository:alice/secret:pull'])
      assert.equal((await request(base, 'GET', '/v2/alice/secret/manifests/v1', { token: bob })).status, 403)
      const alice = await as('alice', ['repository:alice/secret:pull'])
      assert.equal((await request(base, 'GET', '/v2/alice/secret/manifests/v1', { token: alice })).status, 200)
    })
    it('a mount from a private repository needs pull on it', async () => {
      const img = makeImage({ layers: 1 })
      const ta = await as('alice', ['repository:alice/secret:pull,push'])
      await pushImage(base, 'alice/secret', 'v2', img, ta)
      const tb = await as('bob', ['repository:bob/copy:pull,push', 'repository:alice/secret:pull'])
      const r = await request(base, 'POST', `/v2/bob/copy/blobs/uploads/?mount=${sha256(img.layers[0] as Buffer)}&from=alice/secret`, { token: tb })
      assert.equal(r.status, 202, 'not mounted: a fresh upload session instead')
    })
    it('_catalog needs registry:catalog:* and lists only what the caller may read', async () => {
      const noScope = await token([])
      assert.equal((await request(base, 'GET', '/v2/_catalog', { token: noScope })).status, 401)
      const anon = await token(['registry:catalog:*'])
      const list = (await request(base, 'GET', '/v2/_catalog', { token: anon })).json().repositories as string[]
      assert.ok(list.includes('alice/app') && !list.includes('alice/secret'))
      const own = (await request(base, 'GET', '/v2/_catalog', { token: await as('alice', ['registry:catalog:*']) })).json().repositories as string[]
      assert.ok(own.includes('alice/secret'))
    })
    it('a Hub access token works on the registry by the same rules', async () => {
      assert.equal((await request(base, 'GET', '/v2/alice/secret/manifests/v1', { token: aliceHub })).status, 200)
      assert.equal((await request(base, 'GET', '/v2/alice/secret/manifests/v1', { token: bobHub })).status, 403)
    })
  })

  describe('Hub writes', () => {
    it('create needs a token: 401 without, 403 in another namespace, 201 in one\'s own', async () => {
      assert.equal((await request(base, 'POST', '/v2/namespaces/alice/repositories', { json: { name: 'fresh' } })).status, 401)
      const bob = (await request(base, 'POST', '/v2/auth/token', { json: { identifier: 'bob', secret: 'bob-pw' } })).json().access_token as string
      assert.equal((await request(base, 'POST', '/v2/namespaces/alice/repositories', { token: bob, json: { name: 'fresh' } })).status, 403)
      assert.equal((await request(base, 'POST', '/v2/namespaces/bob/repositories', { token: bob, json: { name: 'fresh' } })).status, 201)
    })
    it('POST /v2/auth/token: 401 for bad credentials, 400 for a missing field', async () => {
      const r = await request(base, 'POST', '/v2/auth/token', { json: { identifier: 'bob', secret: 'wrong' } })
      assert.equal(r.status, 401)
      assert.equal(r.json().detail, 'Incorrect authentication credentials')
      assert.equal((await request(base, 'POST', '/v2/auth/token', { json: { identifier: 'bob' } })).status, 400)
    })
  })

  describe('forged and broken tokens are refused', () => {
    const now = Math.floor(Date.now() / 1000)
    const good = (): JwtClaims => ({ iss: 'berth-registry', sub: 'alice', aud: 'berth-registry', exp: now + 300, nbf: now, iat: now, jti: randomUUID(), access: [{ type: 'repository', name: 'alice/app', actions: ['pull', 'push'] }] })
    const cases: Array<[string, () => string]> = [
      ['a token signed with another key', () => signJwt(good(), randomBytes(32))],
      ['a token with alg none', () => {
        const [, body] = signJwt(good(), KEY).split('.')
        return `${Buffer.from('{"alg":"none","typ":"JWT"}').toString('base64url')}.${body as string}.`
      }],
      ['a token whose access claim was edited', () => {
        const [h, , s] = signJwt({ ...good(), access: [{ type: 'repository', name: 'alice/app', actions: ['pull'] }] }, KEY).split('.')
        const edited = Buffer.from(JSON.stringify(good())).toString('base64url')
        return `${h as string}.${edited}.${s as string}`
      }],
      ['an expired token', () => signJwt({ ...good(), exp: now - 3600, iat: now - 4000, nbf: now - 4000 }, KEY)],
      ['a token for another audience', () => signJwt({ ...good(), aud: 'other-registry' }, KEY)],
      ['a token from another issuer', () => signJwt({ ...good(), iss: 'someone-else' }, KEY)],
      ['a token for an unknown user', () => signJwt({ ...good(), sub: 'mallory' }, KEY)],
      ['a malformed token', () => 'not-a-jwt'],
      ['an empty signature', () => signJwt(good(), KEY).replace(/\.[^.]+$/, '.')]
    ]
    it('a correctly signed token works (control)', async () => {
      assert.equal((await request(base, 'POST', '/v2/alice/app/blobs/uploads/', { token: signJwt(good(), KEY) })).status, 202)
    })
    for (const [what, make] of cases) {
      it(`${what}: 401 invalid_token`, async () => {
        const r = await request(base, 'POST', '/v2/alice/app/blobs/uploads/', { token: make() })
        assert.equal(r.status, 401)
        assert.equal(challengeOf(r).error, 'invalid_token')
        assert.equal(r.json().errors[0].code, 'UNAUTHORIZED')
      })
    }
    it('a non-Bearer scheme on the Hub API is 401', async () => {
      const r = await request(base, 'POST', '/v2/namespaces/alice/repositories', { json: { name: 'x1' }, headers: { Authorization: 'Digest abc' } })
      assert.equal(r.status, 401)
    })
  })

})

