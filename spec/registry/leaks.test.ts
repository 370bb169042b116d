// What one user must not learn or take from another's repositories: a manifest's config must be linked in the
// repository it is pushed to, with its declared size (no `urls` escape hatch except on non-distributable layers);
// the Hub summary never reads an unlinked blob; a private repository and a missing one answer alike; a user the
// rules deny gets 403 DENIED (not a 401 that makes clients prompt for a login).
import { describe, it, before } from 'node:test'
import assert from 'node:assert/strict'
import { writeFileSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { randomBytes } from 'node:crypto'
import { hashPassword } from '../../lib/registry/auth/passwords.js'
import { useRegistry, request, makeImage, pushImage, pushBlob, sha256, tmpDir, OCI_MANIFEST, OCI_CONFIG, OCI_LAYER, type Reply } from './helpers.js'

const PASSWORDS: Record<string, string> = { alice: 'alice-pw', bob: 'bob-pw' }
const usersDir = tmpDir()
process.once('exit', () => { rmSync(usersDir, { recursive: true, force: true }) })
const USERS_FILE = join(usersDir, 'users')
writeFileSync(USERS_FILE, (await Promise.all(Object.entries(PASSWORDS).map(async ([n, pw]) => `${n}:${await hashPassword(pw)}`))).join('\n') + '\n')

function basic (user: string): string {
  return `Basic ${Buffer.from(`${user}:${PASSWORDS[user] ?? ''}`).toString('base64')}`
}

function codeOf (r: Reply): string | undefined {
  return (r.json() as { errors?: Array<{ code: string }> }).errors?.[0]?.code
}

/** A manifest over a config descriptor and layers, as raw JSON. */
function manifest (config: Record<string, unknown>, layers: Array<Record<string, unknown>> = []): Buffer {
  return Buffer.from(JSON.stringify({ schemaVersion: 2, mediaType: OCI_MANIFEST, config, layers }))
}

describe('registry leaks between users', () => {
  const reg = useRegistry({ auth: 'token', users: USERS_FILE })
  let base = ''
  const token = async (user: string | null, scopes: string[]): Promise<string> => {
    const q = new URLSearchParams({ service: 'berth-registry' })
    for (const s of scopes) q.append('scope', s)
    const r = await request(base, 'GET', `/token?${q.toString()}`, user === null ? {} : { headers: { Authorization: basic(user) } })
    assert.equal(r.status, 200, r.text)
    return r.json().token as string
  }
  let secretConfig = Buffer.alloc(0)
  let bob = ''
  before(async () => {
    base = reg.current.url
    const hub = (await request(base, 'POST', '/v2/auth/token', { json: { identifier: 'alice', secret: 'alice-pw' } })).json().access_token as string
    assert.equal((await request(base, 'POST', '/v2/namespaces/alice/repositories', { token: hub, json: { name: 'vault', is_private: true } })).status, 201)
    const layer = randomBytes(256)
    secretConfig = Buffer.from(JSON.stringify({
      architecture: 'amd64', os: 'linux', rootfs: { type: 'layers', diff_ids: [sha256(layer)] },
      history: [{ created_by: '/bin/sh -c echo TOKEN=s3cr3t-alice-only > /root/.token' }]
    }))
    const img = {
      config: secretConfig,
      layers: [layer],
      manifest: manifest({ mediaType: OCI_CONFIG, digest: sha256(secretConfig), size: secretConfig.length }, [{ mediaType: OCI_LAYER, digest: sha256(layer), size: layer.length }]),
      digest: ''
    }
    const ta = await token('alice', ['repository:alice/vault:pull,push'])
    assert.equal((await pushImage(base, 'alice/vault', 'v1', img, ta)).status, 201)
    bob = await token('bob', ['repository:bob/x:pull,push'])
    assert.equal((await pushImage(base, 'bob/x', 'base', makeImage({ layers: 1 }), bob)).status, 201)
  })

  const putManifest = async (tag: string, body: Buffer): Promise<Reply> =>
    await request(base, 'PUT', `/v2/bob/x/manifests/${tag}`, { body, token: bob, headers: { 'Content-Type': OCI_MANIFEST } })

  it('a config from another (private) repository with `urls` is refused, and nothing of it shows on the Hub', async () => {
    const config = { mediaType: OCI_CONFIG, digest: sha256(secretConfig), size: secretConfig.length, urls: ['https://example.invalid/c'] }
    const r = await putManifest('leak', manifest(config))
    assert.equal(r.status, 400, r.text)
    assert.equal(codeOf(r), 'MANIFEST_INVALID')
    const noUrls = await putManifest('leak', manifest({ ...config, urls: undefined }))
    assert.equal(noUrls.status, 400, noUrls.text)
    assert.equal(codeOf(noUrls), 'MANIFEST_BLOB_UNKNOWN')
    const hub = await request(base, 'GET', '/v2/namespaces/bob/repositories/x/tags/leak')
    assert.equal(hub.status, 404, hub.text)
    assert.doesNotMatch(hub.text, /s3cr3t/)
  })

  it('a config whose declared size is not its size is refused before it is read', async () => {
    const big = randomBytes(9 * 1024 * 1024)
    // another repository's big blob, declared small and with `urls`: neither linked here nor of that size
    const ta = await token('alice', ['repository:alice/vault:pull,push'])
    assert.equal((await pushBlob(base, 'alice/vault', big, ta)).status, 201)
    const foreign = await putManifest('big', manifest({ mediaType: OCI_CONFIG, digest: sha256(big), size: 10, urls: ['https://example.invalid/c'] }))
    assert.equal(foreign.status, 400, foreign.text)
    assert.equal((await pushBlob(base, 'bob/x', big, bob)).status, 201)
    const r = await putManifest('big', manifest({ mediaType: OCI_CONFIG, digest: sha256(big), size: 10 }))
    assert.equal(r.status, 400, r.text)
    assert.equal(codeOf(r), 'MANIFEST_INVALID')
    // with its true size it is accepted, but a config beyond the cap is not read for the summary
    const ok = await putManifest('big', manifest({ mediaType: OCI_CONFIG, digest: sha256(big), size: big.length }))
    assert.equal(ok.status, 201, ok.text)
    const tag = await request(base, 'GET', '/v2/namespaces/bob/repositories/x/tags/big')
    assert.equal(tag.status, 200, tag.text)
  })

  it('`urls` only on non-distributable layers (foreign layers are not fetched); http(s) URLs only', async () => {
    const cfg = Buffer.from('{"architecture":"amd64","os":"linux"}')
    assert.equal((await pushBlob(base, 'bob/x', cfg, bob)).status, 201)
    const config = { mediaType: OCI_CONFIG, digest: sha256(cfg), size: cfg.length }
    const foreign = { digest: sha256(randomBytes(32)), size: 1234, urls: ['https://example.invalid/layer'] }
    for (const mediaType of ['application/vnd.oci.image.layer.nondistributable.v1.tar+gzip', 'application/vnd.docker.image.rootfs.foreign.diff.tar.gzip']) {
      const r = await putManifest('foreign', manifest(config, [{ mediaType, ...foreign }]))
      assert.equal(r.status, 201, `${mediaType}: ${r.text}`)
    }
    const plain = await putManifest('foreign', manifest(config, [{ mediaType: OCI_LAYER, ...foreign }]))
    assert.equal(plain.status, 400, plain.text)
    assert.equal(codeOf(plain), 'MANIFEST_INVALID')
    const scheme = await putManifest('foreign', manifest(config, [{ mediaType: 'application/vnd.oci.image.layer.nondistributable.v1.tar', ...foreign, urls: ['file:///etc/passwd'] }]))
    assert.equal(scheme.status, 400, scheme.text)
  })

  it('a private repository and a missing one answer alike: anonymously 401, to another user 403 DENIED', async () => {
    const anon = await token(null, ['repository:alice/vault:pull', 'repository:alice/nothing:pull'])
    const other = await token('bob', ['repository:alice/vault:pull', 'repository:alice/nothing:pull'])
    const strip = (r: Reply): unknown => ({ status: r.status, code: r.status === 200 ? null : codeOf(r), auth: r.headers['www-authenticate']?.replace(/alice\/\w+/g, 'X') })
    for (const path of ['manifests/v1', 'tags/list', `blobs/${sha256(secretConfig)}`]) {
      for (const [who, t] of [['no token', undefined], ['anonymous', anon], ['bob', other]] as const) {
        const a = await request(base, 'GET', `/v2/alice/vault/${path}`, t === undefined ? {} : { token: t })
        const b = await request(base, 'GET', `/v2/alice/nothing/${path}`, t === undefined ? {} : { token: t })
        assert.deepEqual(strip(a), strip(b), `${who} ${path}`)
        assert.equal(a.status, who === 'bob' ? 403 : 401, `${who} ${path}: ${a.text}`)
        if (who === 'bob') assert.equal(codeOf(a), 'DENIED')
      }
    }
    for (const t of [undefined, (await request(base, 'POST', '/v2/auth/token', { json: { identifier: 'bob', secret: 'bob-pw' } })).json().access_token as string]) {
      const a = await request(base, 'GET', '/v2/namespaces/alice/repositories/vault', t === undefined ? {} : { token: t })
      const b = await request(base, 'GET', '/v2/namespaces/alice/repositories/nothing', t === undefined ? {} : { token: t })
      assert.equal(a.status, b.status, `Hub ${t === undefined ? 'anonymous' : 'bob'}: ${a.text} / ${b.text}`)
    }
  })

  it('pushing to another user\'s namespace is 403 DENIED; the owner\'s own missing names are 404', async () => {
    const t = await token('bob', ['repository:alice/new:pull,push'])
    const r = await request(base, 'POST', '/v2/alice/new/blobs/uploads/', { token: t })
    assert.equal(r.status, 403, r.text)
    assert.equal(codeOf(r), 'DENIED')
    const own = await token('alice', ['repository:alice/nothing:pull'])
    assert.equal((await request(base, 'GET', '/v2/alice/nothing/manifests/v1', { token: own })).status, 404)
  })
})
