// Issue 21.2, the registry's half: `berth registry`'s storage hands a host user nothing. A real unprivileged host user
// (useradd) tries to read a pushed repository's config (with a secret in its environment), its manifests, tags and
// records, and to list the repositories. A storage tree with the earlier modes (0711 root, 0755 directories, 0644
// documents and blobs) is readable by that user, and a restart of the registry repairs it.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { chmodSync, readdirSync, rmSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { randomBytes } from 'node:crypto'
import { startRegistry, tmpDir, request, pushImage, sha256, OCI_MANIFEST, OCI_CONFIG, OCI_LAYER, type TestImage } from '../registry/helpers.js'
import { hostUserSkipReason, makeHostUser, type HostUser } from '../helpers/host-user.js'

const skip = hostUserSkipReason()

function secretImage (secret: string): TestImage {
  const layers = [randomBytes(512)]
  const config = Buffer.from(JSON.stringify({ architecture: 'amd64', os: 'linux', config: { Env: [`DB_PASSWORD=${secret}`] }, rootfs: { type: 'layers', diff_ids: layers.map((l) => sha256(l)) } }))
  const manifest = Buffer.from(JSON.stringify({
    schemaVersion: 2,
    mediaType: OCI_MANIFEST,
    config: { mediaType: OCI_CONFIG, digest: sha256(config), size: config.length },
    layers: layers.map((l) => ({ mediaType: OCI_LAYER, digest: sha256(l), size: l.length }))
  }))
  return { config, layers, manifest, digest: sha256(manifest) }
}

/** Every file and directory of the tree, as root sees it. */
function entries (dir: string): Array<{ path: string, dir: boolean }> {
  const out: Array<{ path: string, dir: boolean }> = [{ path: dir, dir: true }]
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    if (e.isDirectory()) out.push(...entries(join(dir, e.name)))
    else out.push({ path: join(dir, e.name), dir: false })
  }
  return out
}

async function attack (user: HostUser, dataRoot: string, secret: string): Promise<string[]> {
  const got: string[] = []
  for (const e of entries(dataRoot)) {
    const r = e.dir ? await user.run('ls', [e.path]) : await user.run('cat', [e.path])
    if (r.status === 0) got.push(`${e.dir ? 'listed' : 'read'} ${e.path.slice(dataRoot.length)}${r.stdout.includes(secret) ? ' (with the secret)' : ''}`)
  }
  return got
}

test('the registry storage hands a host user nothing (21.2)', { skip: skip ?? false }, async (t) => {
  const user = makeHostUser(t)
  const dir = tmpDir()
  // the registries first: one closed after the tree's removal flushed its statistics into a new data/repositories/
  const registries: Array<{ close: () => Promise<void> }> = []
  t.after(async () => {
    for (const r of registries) await r.close()
    rmSync(dir, { recursive: true, force: true })
  })
  // where storage lives (/var/lib): every user may traverse the parent
  chmodSync(dir, 0o755)
  const dataRoot = join(dir, 'data')
  const secret = `s3cr3t-${randomBytes(6).toString('hex')}`
  const img = secretImage(secret)
  const closeFirst: { close?: () => Promise<void> } = {}
  {
    const reg = await startRegistry({ after: () => {} }, { dir, dataRoot })
    closeFirst.close = async () => { await reg.registry.close() }
    assert.equal((await pushImage(reg.url, 'team/private', 'v1', img)).status, 201)
  }

  await t.test('the host user reads and lists nothing', async () => {
    assert.deepEqual(await attack(user, dataRoot, secret), [])
    const modes = entries(dataRoot).map((e) => `${e.dir ? 'd' : 'f'} ${(statSync(e.path).mode & 0o7777).toString(8)}`)
    assert.deepEqual([...new Set(modes)].sort(), ['d 700', 'f 600'])
  })

  await t.test('a storage tree with the earlier modes is repaired at start', async () => {
    await closeFirst.close?.()
    for (const e of entries(dataRoot)) chmodSync(e.path, e.dir ? 0o755 : 0o644)
    chmodSync(dataRoot, 0o711)
    rmSync(join(dataRoot, '.modes'), { force: true })
    const before = await attack(user, dataRoot, secret)
    assert.ok(before.some((g) => g.includes('(with the secret)')), before.join('\n'))

    const reg = await startRegistry(t, { dir, dataRoot })
    registries.push(reg.registry)
    assert.deepEqual(await attack(user, dataRoot, secret), [])
    const modes = entries(dataRoot).map((e) => `${e.dir ? 'd' : 'f'} ${(statSync(e.path).mode & 0o7777).toString(8)}`)
    assert.deepEqual([...new Set(modes)].sort(), ['d 700', 'f 600'])
    // the registry still serves what it stores
    const m = await request(reg.url, 'GET', '/v2/team/private/manifests/v1', { headers: { Accept: OCI_MANIFEST } })
    assert.equal(m.status, 200)
    const c = await request(reg.url, 'GET', `/v2/team/private/blobs/${sha256(img.config)}`)
    assert.equal(c.status, 200)
    assert.ok(c.body.equals(img.config))
  })
})
