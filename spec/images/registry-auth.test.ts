// Registry credentials end to end: X-Registry-Auth in both base64 alphabets (padded or not, keys in any case, the
// `auth` field), a bad header meaning anonymous, Bearer tokens from a token server (Basic credentials, anonymous,
// identity-token refresh grant, a client's own registry token), a Basic-auth registry, blob redirects that must not
// carry Authorization to another host, POST /auth (docker login) and GET /distribution/{name}/json.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import http from 'node:http'
import { rmSync } from 'node:fs'
import { startEngine, request, dockerCli, hasDockerCli } from '../helpers/engine.js'
import {
  registrySkipReason, startDistribution, startTokenServer, startProxy, seedImage, seedIndex, makeTar, records,
  registryAuthHeader, listen, tmpDir, type Rec
} from './registry-fixture.js'

const skip = registrySkipReason()
if (skip !== null) process.stdout.write(`# skipping registry auth tests: ${skip}\n`)

const layers = (): Buffer[] => [makeTar([{ name: 'etc/', type: 'dir' }, { name: 'etc/hello', body: 'hello\n' }])]

async function pull (socket: string, ref: string, tag: string, header?: string): Promise<{ status: number, message: string, recs: Rec[] }> {
  const r = await request(socket, 'POST', `/images/create?fromImage=${encodeURIComponent(ref)}&tag=${tag}`, { headers: header !== undefined ? { 'X-Registry-Auth': header } : {} })
  if (r.status !== 200) return { status: r.status, message: (r.json() as { message: string }).message, recs: [] }
  const recs = records(r.text)
  return { status: 200, message: recs[recs.length - 1]?.errorDetail?.message ?? '', recs }
}

function succeeded (r: { status: number, message: string, recs: Rec[] }): boolean {
  return r.status === 200 && r.recs[r.recs.length - 1]?.status?.startsWith('Status: ') === true
}

/** A credentials object whose encoding uses base64's characters 62 and 63 (`+` `/`, or `-` `_`). */
function awkwardCredentials (extra: Record<string, string>): Record<string, string> {
  for (let i = 0; ; i++) {
    const v = { ...extra, email: `${'?'.repeat(i % 7)}~>>${'~'.repeat(i)}@x` }
    const std = Buffer.from(JSON.stringify(v)).toString('base64')
    if (std.includes('+') && std.includes('/') && std.replace(/=+$/, '').length % 4 !== 0) return v
  }
}

test('token auth: anonymous, wrong and right credentials in every encoding clients use', { skip: skip ?? false }, async (t) => {
  const token = await startTokenServer(t)
  const reg = await startDistribution(t, { token })
  const admin = `Bearer ${token.issue('alice', ['repository:private/app:pull,push', 'repository:public/app:pull,push'])}`
  await seedImage(reg.url, 'private/app', { layers: layers(), tag: 'v1', auth: admin })
  await seedImage(reg.url, 'public/app', { layers: layers(), tag: 'v1', auth: admin })
  const e = await startEngine(t)

  // anonymous: public pulls work with an anonymous token; private ones are refused before any record, in dockerd's
  // words (the registry's `insufficient_scope` challenge reads as DENIED)
  assert.ok(succeeded(await pull(e.socket, `${reg.host}/public/app`, 'v1', 'e30=')))
  const denied = `pull access denied for ${reg.host}/private/app, repository does not exist or may require 'docker login': denied: requested access to the resource is denied`
  let r = await pull(e.socket, `${reg.host}/private/app`, 'v1')
  assert.deepEqual([r.status, r.message], [404, denied])
  // a header that is not base64 JSON means anonymous, not an error
  r = await pull(e.socket, `${reg.host}/private/app`, 'v1', '%%%not-base64%%%')
  assert.deepEqual([r.status, r.message], [404, denied])
  assert.ok(succeeded(await pull(e.socket, `${reg.host}/public/app`, 'v1', 'bm90IGpzb24=')))

  r = await pull(e.socket, `${reg.host}/private/app`, 'v1', registryAuthHeader({ username: 'alice', password: 'nope', serveraddress: reg.host }))
  assert.equal(r.status, 401)
  assert.equal(r.message, `Get "${reg.url}/v2/": unauthorized: incorrect username or password`)

  const creds = awkwardCredentials({ username: 'alice', password: 'secret', serveraddress: reg.host })
  const variants: Array<[string, string]> = [
    ['base64url, padded (Go, docker-py)', registryAuthHeader(creds, 'url', true)],
    ['base64url, unpadded', registryAuthHeader(creds, 'url', false)],
    ['standard base64, padded (dockerode authconfig.base64)', registryAuthHeader(creds, 'std', true)],
    ['standard base64, unpadded', registryAuthHeader(creds, 'std', false)],
    ['keys in any case (credential helpers)', registryAuthHeader({ Username: 'alice', PassWord: 'secret', ServerAddress: reg.host })],
    ['only the auth field', registryAuthHeader({ auth: Buffer.from('alice:secret').toString('base64'), serveraddress: reg.host })]
  ]
  assert.match(variants[2]?.[1] ?? '', /[+/]/)
  assert.match(variants[0]?.[1] ?? '', /[-_]/)
  for (const [what, header] of variants) {
    await request(e.socket, 'DELETE', `/images/${reg.host}/private/app:v1`)
    const ok = await pull(e.socket, `${reg.host}/private/app`, 'v1', header)
    assert.ok(succeeded(ok), `${what}: ${ok.status} ${ok.message}`)
  }
  const basicSeen = token.log.filter((l) => l.authorization === `Basic ${Buffer.from('alice:secret').toString('base64')}`)
  assert.ok(basicSeen.length >= variants.length)
  assert.ok(basicSeen.every((l) => new URL(l.url, 'http://x').searchParams.get('account') === 'alice'))
})

test('identity tokens (refresh grant, from POST /auth) and registry tokens (sent as they are)', { skip: skip ?? false }, async (t) => {
  const token = await startTokenServer(t)
  const reg = await startDistribution(t, { token })
  const admin = `Bearer ${token.issue('alice', ['repository:private/app:pull,push'])}`
  await seedImage(reg.url, 'private/app', { layers: layers(), tag: 'v1', auth: admin })
  const e = await startEngine(t)

  const login = await request(e.socket, 'POST', '/auth', { body: { username: 'alice', password: 'secret', serveraddress: reg.host } })
  assert.equal(login.status, 200, login.text)
  const { Status, IdentityToken } = login.json() as { Status: string, IdentityToken: string }
  assert.equal(Status, 'Login Succeeded')
  assert.match(IdentityToken, /^[0-9a-f]{32}$/, 'the refresh token the token server handed out for offline_token=true')
  assert.ok(token.log.some((l) => l.url.includes('offline_token=true') && l.url.includes('client_id=docker')))

  const before = token.log.length
  let r = await pull(e.socket, `${reg.host}/private/app`, 'v1', registryAuthHeader({ identitytoken: IdentityToken, serveraddress: reg.host }))
  assert.ok(succeeded(r), r.message)
  const grants = token.log.slice(before).filter((l) => l.method === 'POST')
  assert.ok(grants.length >= 1)
  assert.equal(grants[0]?.form?.grant_type, 'refresh_token')
  assert.equal(grants[0]?.form?.refresh_token, IdentityToken)
  assert.equal(grants[0]?.form?.client_id, 'docker')
  assert.equal(grants[0]?.form?.service, token.service)
  assert.match(grants[0]?.form?.scope ?? '', /repository:private\/app:pull/)

  r = await pull(e.socket, `${reg.host}/private/app`, 'v1', registryAuthHeader({ identitytoken: 'not-a-refresh-token' }))
  assert.equal(r.status, 401)

  await request(e.socket, 'DELETE', `/images/${reg.host}/private/app:v1`)
  const mark = token.log.length
  r = await pull(e.socket, `${reg.host}/private/app`, 'v1', registryAuthHeader({ registrytoken: token.issue('alice', ['repository:private/app:pull']) }))
  assert.ok(succeeded(r), r.message)
  assert.equal(token.log.length, mark, 'a registry token is used as is: no token request')
})

test('a Basic-auth registry: credentials on every request; missing or wrong ones are 401', { skip: skip ?? false }, async (t) => {
  const reg = await startDistribution(t)
  await seedImage(reg.url, 'basic/app', { layers: layers(), tag: 'v1' })
  const proxy = await startProxy(t, reg.url)
  const good = `Basic ${Buffer.from('bob:hunter2').toString('base64')}`
  let unauthenticated = 0
  proxy.hooks.push((req, res) => {
    if (req.headers.authorization === good) return false
    unauthenticated++
    res.writeHead(401, { 'WWW-Authenticate': 'Basic realm="berth test"', 'Content-Type': 'application/json' })
    res.end('{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}')
    return true
  })
  const e = await startEngine(t)
  let r = await pull(e.socket, `${proxy.host}/basic/app`, 'v1')
  assert.deepEqual([r.status, r.message], [401, `Get "${proxy.url}/v2/": no basic auth credentials`])
  r = await pull(e.socket, `${proxy.host}/basic/app`, 'v1', registryAuthHeader({ username: 'bob', password: 'wrong' }))
  assert.equal(r.status, 401)
  assert.match(r.message, /unauthorized/)
  const mark = unauthenticated
  r = await pull(e.socket, `${proxy.host}/basic/app`, 'v1', registryAuthHeader({ username: 'bob', password: 'hunter2' }))
  assert.ok(succeeded(r), r.message)
  assert.equal(unauthenticated, mark + 1, 'only the first /v2/ probe goes without credentials')
  let login = await request(e.socket, 'POST', '/auth', { body: { username: 'bob', password: 'hunter2', serveraddress: `http://${proxy.host}/` } })
  assert.deepEqual([login.status, login.json()], [200, { Status: 'Login Succeeded', IdentityToken: '' }])
  login = await request(e.socket, 'POST', '/auth', { body: { username: 'bob', password: 'nope', serveraddress: proxy.host } })
  assert.equal(login.status, 401)
})

test('blob redirects are followed without sending Authorization to the other host', { skip: skip ?? false }, async (t) => {
  const token = await startTokenServer(t)
  const reg = await startDistribution(t, { token })
  const admin = `Bearer ${token.issue('alice', ['repository:cdn/app:pull,push'])}`
  const img = await seedImage(reg.url, 'cdn/app', { layers: layers(), tag: 'v1', auth: admin })
  const seen: Array<string | undefined> = []
  const cdn = http.createServer((req, res) => {
    seen.push(req.headers.authorization)
    const digest = (req.url ?? '').split('/').pop() as string
    http.get(`${reg.url}/v2/cdn/app/blobs/${digest}`, { headers: { Authorization: admin } }, (up) => {
      res.writeHead(up.statusCode ?? 502, { 'Content-Length': up.headers['content-length'] ?? '0' })
      up.pipe(res)
    })
  })
  const cdnPort = await listen(cdn)
  t.after(async () => { cdn.closeAllConnections(); await new Promise<void>((resolve) => { cdn.close(() => { resolve() }) }) })
  const proxy = await startProxy(t, reg.url)
  const toRegistry: Array<string | undefined> = []
  proxy.hooks.push((req, res) => {
    const m = /\/blobs\/(sha256:[0-9a-f]{64})$/.exec(req.url ?? '')
    if (req.method !== 'GET' || m === null) return false
    toRegistry.push(req.headers.authorization)
    res.writeHead(307, { Location: `http://127.0.0.1:${cdnPort}/objects/${m[1] as string}` })
    res.end()
    return true
  })
  const e = await startEngine(t)
  const r = await pull(e.socket, `${proxy.host}/cdn/app`, 'v1', registryAuthHeader({ username: 'alice', password: 'secret' }))
  assert.ok(succeeded(r), r.message)
  assert.equal(seen.length, 1 + img.layerDigests.length, 'config and layer came from the CDN')
  assert.ok(seen.every((a) => a === undefined), 'no Authorization at the CDN')
  assert.ok(toRegistry.every((a) => a?.startsWith('Bearer ') === true), 'the registry itself got the token')
})

test('POST /auth and GET /distribution/{name}/json', { skip: skip ?? false }, async (t) => {
  const token = await startTokenServer(t)
  const reg = await startDistribution(t, { token })
  const open = await startDistribution(t)
  const admin = `Bearer ${token.issue('alice', ['repository:multi/app:pull,push'])}`
  const host = process.arch === 'x64' ? 'amd64' : 'arm64'
  const a = await seedImage(reg.url, 'multi/app', { layers: layers(), architecture: host, auth: admin })
  const b = await seedImage(reg.url, 'multi/app', { layers: [makeTar([{ name: 'x', body: 'y' }])], architecture: 'arm', variant: 'v7', auth: admin })
  const index = await seedIndex(reg.url, 'multi/app', 'v1', [
    { image: a, platform: { os: 'linux', architecture: host } },
    { image: b, platform: { os: 'linux', architecture: 'arm', variant: 'v7' } }
  ], admin)
  const single = await seedImage(open.url, 'one/app', { layers: layers(), tag: 'v1' })
  const e = await startEngine(t)

  let r = await request(e.socket, 'POST', '/auth', { body: { username: 'alice', password: 'nope', serveraddress: reg.host } })
  assert.equal(r.status, 401)
  assert.equal((r.json() as { message: string }).message, `Get "${reg.url}/v2/": unauthorized: incorrect username or password`)
  r = await request(e.socket, 'POST', '/auth', { body: { Username: 'alice', Password: 'secret', ServerAddress: `http://${reg.host}` } })
  assert.equal(r.status, 200)
  r = await request(e.socket, 'POST', '/auth', { body: { username: 'x', password: 'y', serveraddress: open.host } })
  assert.deepEqual([r.status, r.json()], [200, { Status: 'Login Succeeded', IdentityToken: '' }])

  const auth = { 'X-Registry-Auth': registryAuthHeader({ username: 'alice', password: 'secret' }) }
  r = await request(e.socket, 'GET', `/distribution/${reg.host}/multi/app:v1/json`, { headers: auth })
  assert.equal(r.status, 200, r.text)
  assert.deepEqual(r.json(), {
    Descriptor: { mediaType: 'application/vnd.oci.image.index.v1+json', digest: index.digest, size: index.bytes.length },
    Platforms: [{ architecture: host, os: 'linux' }, { architecture: 'arm', os: 'linux', variant: 'v7' }]
  })
  r = await request(e.socket, 'GET', `/distribution/${open.host}/one/app:v1/json`)
  assert.deepEqual(r.json(), {
    Descriptor: { mediaType: 'application/vnd.docker.distribution.manifest.v2+json', digest: single.manifestDigest, size: single.manifest.length },
    Platforms: [{ architecture: host, os: 'linux' }]
  })
  r = await request(e.socket, 'GET', `/distribution/${open.host}/one/app:nope/json`)
  assert.equal(r.status, 404)
  r = await request(e.socket, 'GET', `/distribution/${reg.host}/multi/app:v1/json`)
  assert.equal(r.status, 404)
  assert.match((r.json() as { message: string }).message, /^pull access denied for /)

  if (hasDockerCli()) {
    const config = tmpDir('berth-dcfg-')
    t.after(() => { rmSync(config, { recursive: true, force: true }) })
    process.env.DOCKER_CONFIG = config
    t.after(() => { delete process.env.DOCKER_CONFIG })
    const bad = await dockerCli(e.socket, ['login', reg.host, '-u', 'alice', '--password-stdin'], 'nope\n')
    assert.notEqual(bad.status, 0)
    assert.match(bad.stderr, /incorrect username or password/)
    const good = await dockerCli(e.socket, ['login', reg.host, '-u', 'alice', '--password-stdin'], 'secret\n')
    assert.equal(good.status, 0, good.stderr)
    assert.match(good.stdout, /Login Succeeded/)
    // the CLI now sends the stored credentials with pulls
    const p = await dockerCli(e.socket, ['pull', `${reg.host}/multi/app:v1`])
    assert.equal(p.status, 0, p.stderr)
  }
})
