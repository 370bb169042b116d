// Real clients: skopeo copies OCI layouts (built from a busybox rootfs) to the registry and back, with and without
// token auth; digests must be unchanged. The Berth engine's docker pull/push runs when the engine can pull.
import { describe, it, before } from 'node:test'
import assert from 'node:assert/strict'
import { execFile, spawnSync } from 'node:child_process'
import { existsSync, readFileSync, writeFileSync, rmSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { hashPassword } from '../../lib/registry/auth/passwords.js'
import { busyboxTar } from '../helpers/engine.js'
import { makeTar } from '../helpers/tar.js'
import { useRegistry, client, tmpDir, sha256 } from './helpers.js'
import { writeOciLayout, layoutDigest } from './oci-layout.js'

const run = promisify(execFile)

function skopeoMissing (): string | null {
  const r = spawnSync('skopeo', ['--version'])
  if (r.error !== undefined || r.status !== 0) return 'skopeo is not installed (apt-get install -y skopeo)'
  if (!['/usr/bin/busybox', '/bin/busybox'].some((p) => existsSync(p))) return 'busybox-static is not installed (needed for the test image)'
  return null
}
const SKIP = skopeoMissing()
if (SKIP !== null) process.stdout.write(`# skipping skopeo tests: ${SKIP}\n`)

const work = tmpDir('berth-skopeo-')
process.once('exit', () => { rmSync(work, { recursive: true, force: true }) })
const AUTH_FILE = join(work, 'auth.json')
writeFileSync(AUTH_FILE, '{}')

/** skopeo with an empty auth file (never the user's credentials), run asynchronously: the registry is in-process. */
async function skopeo (...args: string[]): Promise<{ stdout: string, stderr: string }> {
  try {
    return await run('skopeo', args, { env: { ...process.env, REGISTRY_AUTH_FILE: AUTH_FILE }, maxBuffer: 64 * 1024 * 1024 })
  } catch (err) {
    const e = err as { stderr?: string, message: string }
    throw new Error(`skopeo ${args.join(' ')}: ${e.stderr ?? e.message}`)
  }
}

function hostOf (url: string): string { return new URL(url).host }

function blobsOf (dir: string): string[] {
  return readdirSync(join(dir, 'blobs', 'sha256')).sort()
}

let singleLayout = ''
let multiLayout = ''
if (SKIP === null) {
  const tar = readFileSync(busyboxTar())
  singleLayout = join(work, 'single')
  writeOciLayout(singleLayout, [tar, makeTar([{ name: 'hello.txt', body: 'hello from berth\n', mtime: 0 }])])
  multiLayout = join(work, 'multi')
  writeOciLayout(multiLayout, [tar], { platforms: [{ architecture: 'amd64', os: 'linux' }, { architecture: 'arm64', os: 'linux' }] })
}

describe('skopeo against the registry (auth none)', { skip: SKIP ?? false }, () => {
  const reg = useRegistry()
  let host = ''
  before(() => { host = hostOf(reg.current.url) })

  it('copy an OCI layout to the registry and back: digests unchanged', async () => {
    const want = layoutDigest(singleLayout)
    await skopeo('copy', '--dest-tls-verify=false', `oci:${singleLayout}:latest`, `docker://${host}/test/busybox:latest`)
    const head = await client(reg.current.url)('HEAD', '/v2/test/busybox/manifests/latest')
    assert.equal(head.headers['docker-content-digest'], want)
    const back = join(work, 'back-single')
    await skopeo('copy', '--src-tls-verify=false', `docker://${host}/test/busybox:latest`, `oci:${back}:latest`)
    assert.equal(layoutDigest(back), want)
    assert.deepEqual(blobsOf(back), blobsOf(singleLayout))
    const inspect = JSON.parse((await skopeo('inspect', '--tls-verify=false', `docker://${host}/test/busybox:latest`)).stdout) as { Digest: string, Architecture: string, Layers: string[] }
    assert.equal(inspect.Digest, want)
    assert.equal(inspect.Architecture, 'amd64')
    assert.equal(inspect.Layers.length, 2)
  })
  it('copy a multi-platform index with --all: the index and both manifests keep their digests', async () => {
    const want = layoutDigest(multiLayout)
    await skopeo('copy', '--all', '--dest-tls-verify=false', `oci:${multiLayout}:latest`, `docker://${host}/test/multi:latest`)
    const back = join(work, 'back-multi')
    await skopeo('copy', '--all', '--src-tls-verify=false', `docker://${host}/test/multi:latest`, `oci:${back}:latest`)
    assert.equal(layoutDigest(back), want)
    assert.deepEqual(blobsOf(back), blobsOf(multiLayout))
    const tag = (await client(reg.current.url)('GET', '/v2/namespaces/test/repositories/multi/tags/latest')).json()
    assert.deepEqual(tag.images.map((i: { architecture: string }) => i.architecture), ['amd64', 'arm64'])
  })
  it('copy as Docker schema 2 (v2s2) and back: the pushed digest survives the round trip', async () => {
    await skopeo('copy', '--format', 'v2s2', '--dest-tls-verify=false', `oci:${singleLayout}:latest`, `docker://${host}/test/docker:v2s2`)
    const got = await client(reg.current.url)('GET', '/v2/test/docker/manifests/v2s2')
    assert.equal(got.headers['content-type'], 'application/vnd.docker.distribution.manifest.v2+json')
    const pushed = sha256(got.body)
    const archive = join(work, 'v2s2.tar')
    await skopeo('copy', '--src-tls-verify=false', `docker://${host}/test/docker:v2s2`, `docker-archive:${archive}:test/docker:v2s2`)
    await skopeo('copy', '--dest-tls-verify=false', `docker-archive:${archive}`, `docker://${host}/test/docker:again`)
    const again = await client(reg.current.url)('HEAD', '/v2/test/docker/manifests/again')
    assert.equal(again.headers['docker-content-digest'], pushed)
  })
  it('copy between two repositories of the registry (cross-repository mount)', async () => {
    await skopeo('copy', '--src-tls-verify=false', '--dest-tls-verify=false', `docker://${host}/test/busybox:latest`, `docker://${host}/other/busybox:copied`)
    const a = await client(reg.current.url)('HEAD', '/v2/test/busybox/manifests/latest')
    const b = await client(reg.current.url)('HEAD', '/v2/other/busybox/manifests/copied')
    assert.equal(b.headers['docker-content-digest'], a.headers['docker-content-digest'])
  })
  it('list tags and delete', async () => {
    const tags = JSON.parse((await skopeo('list-tags', '--tls-verify=false', `docker://${host}/test/docker`)).stdout) as { Tags: string[] }
    assert.deepEqual(tags.Tags.sort(), ['again', 'v2s2'])
    await skopeo('delete', '--tls-verify=false', `docker://${host}/test/docker:again`)
    assert.equal((await client(reg.current.url)('GET', '/v2/test/docker/manifests/v2s2')).status, 404, 'both tags named the same manifest')
  })
})

const USERS_FILE = join(work, 'users')
if (SKIP === null) writeFileSync(USERS_FILE, `alice:${await hashPassword('wonderland')}\n`)

describe('skopeo against the registry (token auth)', { skip: SKIP ?? false }, () => {
  const reg = useRegistry({ auth: 'token', users: USERS_FILE })
  let host = ''
  before(() => { host = hostOf(reg.current.url) })

  it('push with credentials (token from the realm), pull anonymously: digests unchanged', async () => {
    const want = layoutDigest(singleLayout)
    await skopeo('copy', '--dest-tls-verify=false', '--dest-creds', 'alice:wonderland', `oci:${singleLayout}:latest`, `docker://${host}/alice/busybox:1`)
    const back = join(work, 'back-token')
    await skopeo('copy', '--src-tls-verify=false', '--src-no-creds', `docker://${host}/alice/busybox:1`, `oci:${back}:latest`)
    assert.equal(layoutDigest(back), want)
    assert.deepEqual(blobsOf(back), blobsOf(singleLayout))
  })
  it('anonymous push is refused', async () => {
    await assert.rejects(skopeo('copy', '--dest-tls-verify=false', '--dest-no-creds', `oci:${singleLayout}:latest`, `docker://${host}/alice/busybox:anon`), /unauthorized|authentication required|denied/i)
  })
  it('a wrong password is refused', async () => {
    await assert.rejects(skopeo('copy', '--dest-tls-verify=false', '--dest-creds', 'alice:wrong', `oci:${singleLayout}:latest`, `docker://${host}/alice/busybox:bad`), /unauthorized|incorrect|denied/i)
  })
  it('pushing outside one\'s namespace is refused', async () => {
    await assert.rejects(skopeo('copy', '--dest-tls-verify=false', '--dest-creds', 'alice:wonderland', `oci:${singleLayout}:latest`, `docker://${host}/library/busybox:x`), /denied|403 \(Forbidden\)/i)
  })
})
