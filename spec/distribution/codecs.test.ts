// The distribution client's pure parts, table-driven: X-Registry-Auth decoding, WWW-Authenticate parsing, progress
// rendering, endpoint policy, platforms, pull references; and the HTTP client's plain-HTTP and redirect rules on
// real loopback sockets.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import http from 'node:http'
import { once } from 'node:events'
import type { AddressInfo } from 'node:net'
import { decodeRegistryAuth, parseAuthConfig } from '../../lib/distribution/auth-config.js'
import { parseChallenges } from '../../lib/distribution/challenge.js'
import { domainOfServerAddress, endpointsFor, isInsecureHost } from '../../lib/distribution/endpoint.js'
import { goJson, humanSize, progressBar } from '../../lib/distribution/progress.js'
import { selectManifest, type ImageIndex } from '../../lib/image/manifest.js'
import { parsePlatform } from '../../lib/image/platform.js'
import { pullReference } from '../../lib/distribution/puller.js'
import { HttpClient } from '../../lib/distribution/http-client.js'
import { isInsecureHost as insecure } from '../../lib/distribution/endpoint.js'

const enc = (v: unknown, alphabet: 'url' | 'std', pad: boolean): string => {
  let s = Buffer.from(JSON.stringify(v)).toString('base64')
  if (alphabet === 'url') s = s.replace(/\+/g, '-').replace(/\//g, '_')
  return pad ? s : s.replace(/=+$/, '')
}

test('X-Registry-Auth: both alphabets, padding optional, keys in any case, auth field, garbage is anonymous', () => {
  const creds = { username: 'u', password: '>>>???~~~', serveraddress: 'r.example:5000' }
  for (const alphabet of ['url', 'std'] as const) {
    for (const pad of [true, false]) {
      assert.deepEqual(decodeRegistryAuth(enc(creds, alphabet, pad)), { username: 'u', password: '>>>???~~~', serverAddress: 'r.example:5000' }, `${alphabet} ${String(pad)}`)
    }
  }
  assert.deepEqual(decodeRegistryAuth('e30='), {})
  assert.deepEqual(decodeRegistryAuth('e30'), {})
  assert.deepEqual(decodeRegistryAuth(enc({ USERNAME: 'a', PassWord: 'b', IdentityToken: 'rt', RegistryToken: 'bt' }, 'url', true)), { username: 'a', password: 'b', identityToken: 'rt', registryToken: 'bt' })
  assert.deepEqual(parseAuthConfig({ auth: Buffer.from('bob:pa:ss').toString('base64') }), { username: 'bob', password: 'pa:ss' })
  assert.deepEqual(parseAuthConfig({ username: 'x', auth: Buffer.from('bob:pw').toString('base64') }), { username: 'x' })
  for (const bad of ['%%%', 'bm90IGpzb24=', enc([1, 2], 'url', true), enc('str', 'url', true), 'a', '', '   ']) assert.deepEqual(decodeRegistryAuth(bad), {}, bad)
  assert.deepEqual(decodeRegistryAuth(undefined), {})
  assert.deepEqual(parseAuthConfig({ username: 7, password: null }), {})
})

test('WWW-Authenticate: quoted values with commas, several challenges, case', () => {
  assert.deepEqual(parseChallenges('Bearer realm="https://auth.example/token",service="registry.example",scope="repository:a/b:pull,push"'), [
    { scheme: 'bearer', params: { realm: 'https://auth.example/token', service: 'registry.example', scope: 'repository:a/b:pull,push' } }
  ])
  assert.deepEqual(parseChallenges(['Basic realm="x y"', 'bearer Realm=http://t/token, error="insufficient_scope"']), [
    { scheme: 'basic', params: { realm: 'x y' } },
    { scheme: 'bearer', params: { realm: 'http://t/token', error: 'insufficient_scope' } }
  ])
  assert.deepEqual(parseChallenges('Basic realm="a", Bearer realm="b\\"c"'), [
    { scheme: 'basic', params: { realm: 'a' } },
    { scheme: 'bearer', params: { realm: 'b"c' } }
  ])
  assert.deepEqual(parseChallenges(undefined), [])
})

test("progress rendering matches Go's JSONProgress.String and go-units", () => {
  assert.equal(humanSize(0), '0B')
  assert.equal(humanSize(999), '999B')
  assert.equal(humanSize(36581), '36.58kB')
  assert.equal(humanSize(1056676), '1.057MB')
  assert.equal(humanSize(1500000), '1.5MB')
  assert.equal(humanSize(2_000_000_000), '2GB')
  assert.equal(progressBar(36581, 1056676), `[=>${' '.repeat(49)}]  36.58kB/1.057MB`)
  assert.equal(progressBar(1056676, 1056676), `[${'='.repeat(50)}>]  1.057MB/1.057MB`)
  assert.equal(progressBar(0, 0), '')
  assert.equal(progressBar(5000, 0), '     5kB')
  assert.equal(progressBar(2000, 1000), `[${'='.repeat(50)}>]      2kB`)
  assert.equal(goJson({ progress: '[=>] a&b<c' }), '{"progress":"[=\\u003e] a\\u0026b\\u003cc"}')
})

test('endpoints: Hub, HTTPS by default, plain HTTP only for loopback and --insecure-registry entries', () => {
  assert.deepEqual(endpointsFor('docker.io', []).map((e) => [e.base.href, e.tlsVerify]), [['https://registry-1.docker.io/', true]])
  assert.deepEqual(endpointsFor('registry.example:5000', []).map((e) => e.base.href), ['https://registry.example:5000/'])
  assert.deepEqual(endpointsFor('localhost:5000', []).map((e) => [e.base.href, e.tlsVerify]), [['https://localhost:5000/', false], ['http://localhost:5000/', false]])
  for (const h of ['127.0.0.1:5000', '127.9.9.9', 'localhost', '[::1]:5000', 'foo.localhost:1']) assert.ok(isInsecureHost(h, []), h)
  for (const h of ['10.0.0.1:5000', 'registry.example', '128.0.0.1']) assert.ok(!isInsecureHost(h, []), h)
  assert.ok(isInsecureHost('registry.example:5000', ['registry.example:5000']))
  assert.ok(isInsecureHost('registry.example:5000', ['registry.example']))
  assert.ok(!isInsecureHost('registry.example:5001', ['registry.example:5000']))
  assert.ok(isInsecureHost('10.1.2.3:5000', ['10.0.0.0/8']))
  assert.ok(!isInsecureHost('11.1.2.3:5000', ['10.0.0.0/8']))
  assert.ok(isInsecureHost('r.example', ['http://r.example/']))
  assert.equal(domainOfServerAddress('https://index.docker.io/v1/'), 'docker.io')
  assert.equal(domainOfServerAddress(''), 'docker.io')
  assert.equal(domainOfServerAddress('http://127.0.0.1:5000/'), '127.0.0.1:5000')
  assert.equal(domainOfServerAddress('Registry.Example:443'), 'registry.example:443')
})

test('platforms: parsing and choosing from an index', () => {
  assert.deepEqual(parsePlatform('linux/arm64/v8'), { os: 'linux', architecture: 'arm64' })
  assert.deepEqual(parsePlatform('linux/arm/v6'), { os: 'linux', architecture: 'arm', variant: 'v6' })
  assert.deepEqual(parsePlatform('linux/x86_64'), { os: 'linux', architecture: 'amd64' })
  assert.equal(parsePlatform('arm64').architecture, 'arm64')
  assert.equal(parsePlatform('linux').os, 'linux')
  assert.throws(() => parsePlatform('linux//x'), /unknown operating system or architecture/)
  const m = (architecture: string, variant?: string): ImageIndex['manifests'][number] => ({
    mediaType: 'application/vnd.oci.image.manifest.v1+json', digest: `sha256:${(architecture + (variant ?? '')).padEnd(64, '0').slice(0, 64).replace(/[^0-9a-f]/g, 'a')}`, size: 1,
    platform: { os: 'linux', architecture, ...(variant !== undefined ? { variant } : {}) }
  })
  const index: ImageIndex = { kind: 'index', mediaType: 'application/vnd.oci.image.index.v1+json', manifests: [m('amd64', 'v3'), m('amd64'), m('arm', 'v6'), m('arm', 'v7'), m('arm64', 'v8')] }
  assert.equal(selectManifest(index, { os: 'linux', architecture: 'amd64' }), index.manifests[1])
  assert.equal(selectManifest(index, { os: 'linux', architecture: 'arm', variant: 'v7' }), index.manifests[3])
  assert.equal(selectManifest({ ...index, manifests: [m('arm', 'v6')] }, { os: 'linux', architecture: 'arm', variant: 'v7' })?.platform?.variant, 'v6')
  assert.equal(selectManifest(index, { os: 'linux', architecture: 'arm64' }), index.manifests[4])
  assert.equal(selectManifest(index, { os: 'linux', architecture: 's390x' }), undefined)
  assert.equal(selectManifest(index, { os: 'windows', architecture: 'amd64' }), undefined)
})

test("pull references combine fromImage and tag as dockerd does", () => {
  const d = `sha256:${'a'.repeat(64)}`
  assert.deepEqual(pullReference('busybox', 'latest'), { domain: 'docker.io', path: 'library/busybox', tag: 'latest' })
  assert.deepEqual(pullReference('busybox:', ''), { domain: 'docker.io', path: 'library/busybox' })
  assert.deepEqual(pullReference('docker.io/library/busybox', d), { domain: 'docker.io', path: 'library/busybox', digest: d })
  assert.deepEqual(pullReference('ubuntu:22.04', ''), { domain: 'docker.io', path: 'library/ubuntu', tag: '22.04' })
  assert.deepEqual(pullReference('ubuntu:22.04', 'edge'), { domain: 'docker.io', path: 'library/ubuntu', tag: 'edge' })
  assert.deepEqual(pullReference(`localhost:5000/a/b@${d}`, ''), { domain: 'localhost:5000', path: 'a/b', digest: d })
  assert.throws(() => pullReference('UPPER', 'latest'), /invalid reference format/)
  assert.throws(() => pullReference('busybox', 'bad tag'), /invalid reference format/)
})

test('HTTP client: no plain HTTP to other hosts, not even by redirect; Authorization stays with its host', async (t) => {
  const seen: Array<string | undefined> = []
  const b = http.createServer((req, res) => { seen.push(req.headers.authorization); res.end('ok') })
  b.listen(0, '127.0.0.1')
  await once(b, 'listening')
  const bPort = (b.address() as AddressInfo).port
  const a = http.createServer((req, res) => {
    seen.push(req.headers.authorization)
    const to = req.url === '/far' ? 'http://10.255.255.1/x' : req.url === '/same' ? '/end' : `http://localhost:${bPort}/end`
    res.writeHead(307, { Location: to })
    res.end()
  })
  a.listen(0, '127.0.0.1')
  await once(a, 'listening')
  const aPort = (a.address() as AddressInfo).port
  t.after(() => { a.close(); b.close() })
  const client = new HttpClient({ allowHttp: (h) => insecure(h, []) })
  t.after(() => { client.close() })
  await assert.rejects(client.request(new URL('http://registry.example/v2/')), /refusing plain HTTP to registry\.example/)
  await assert.rejects(client.request(new URL(`http://127.0.0.1:${aPort}/far`)), /refusing plain HTTP to 10\.255\.255\.1/)
  const other = await client.request(new URL(`http://127.0.0.1:${aPort}/other`), { headers: { Authorization: 'Bearer t' } })
  other.body.resume()
  assert.equal(other.status, 200)
  const same = await client.request(new URL(`http://127.0.0.1:${aPort}/same`), { headers: { Authorization: 'Bearer t' }, redirects: 1 })
  same.body.resume()
  assert.equal(same.status, 307, 'the redirect limit returns the 3xx itself')
  // /far (no credentials sent), /other with the token, then the other host without it, /same and /end with it
  assert.deepEqual(seen, [undefined, 'Bearer t', undefined, 'Bearer t', 'Bearer t'])
})
