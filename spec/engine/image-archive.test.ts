// docker save / docker load: the dockerd 25+ layout byte for byte where it matters, round trips through the real CLI,
// the legacy layout, a bare OCI layout, and archives that must be refused without leaving anything behind.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { readFileSync, writeFileSync, readdirSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { createHash } from 'node:crypto'
import { gzipSync } from 'node:zlib'
import {
  startEngine, containerSkipReason, hasDockerCli, dockerCli, importBusybox, busyboxTar, request, tmpDir
} from '../helpers/engine.js'
import { tarOf, listTar } from '../helpers/tar.js'

const skip = containerSkipReason()
const cliSkip = skip ?? (hasDockerCli() ? null : 'the docker CLI is not installed')

const sha = (b: Buffer | string): string => createHash('sha256').update(b).digest('hex')

/** The records of a load reply (JSON lines). */
function records (text: string): Array<Record<string, unknown>> {
  return text.split(/\r?\n/).filter((l) => l !== '').map((l) => JSON.parse(l) as Record<string, unknown>)
}

test('image archives: save and load', { skip: skip ?? false }, async (t) => {
  const { socket, engine } = await startEngine(t)
  const imageId = await importBusybox(socket)
  const diffId = `sha256:${sha(readFileSync(busyboxTar()))}`
  const scratch = tmpDir('berth-ia-')
  t.after(() => { rmSync(scratch, { recursive: true, force: true }) })
  const docker = async (...args: string[]): ReturnType<typeof dockerCli> => await dockerCli(socket, args)
  const storeState = (): string => JSON.stringify({
    blobs: readdirSync(join(engine.dataRoot, 'content', 'blobs', 'sha256')).sort(),
    layers: readdirSync(join(engine.dataRoot, 'layers')).sort(),
    ingest: readdirSync(engine.images.content.ingestDir),
    images: engine.images.store.all().map((i) => `${i.id} ${i.repoTags.join(',')}`).sort()
  })
  const load = async (body: Buffer, quiet = true): Promise<Array<Record<string, unknown>>> => {
    const r = await request(socket, 'POST', `/images/load?quiet=${quiet ? 1 : 0}`, { raw: body, headers: { 'Content-Type': 'application/x-tar' } })
    assert.equal(r.status, 200)
    assert.equal(r.headers['content-type'], 'application/json')
    return records(r.text)
  }

  await t.test('docker save writes the layout of dockerd 25+', { skip: cliSkip ?? false }, async () => {
    const file = join(scratch, 'save.tar')
    const r = await docker('save', '-o', file, 'busybox')
    assert.equal(r.status, 0, r.stderr)
    const entries = await listTar(readFileSync(file))
    const byName = new Map(entries.map((e) => [e.name, e]))
    const blobs = entries.filter((e) => e.name.startsWith('blobs/sha256/') && e.type === 'file')
    assert.deepEqual(entries.map((e) => e.name), ['blobs/', 'blobs/sha256/', ...blobs.map((b) => b.name).sort(), 'index.json', 'manifest.json', 'oci-layout', 'repositories'])
    for (const b of blobs) assert.equal(b.name, `blobs/sha256/${sha(b.body)}`, 'every blob is named by its digest')
    assert.equal(byName.get('oci-layout')?.body.toString(), '{"imageLayoutVersion": "1.0.0"}')
    const manifest = JSON.parse(byName.get('manifest.json')?.body.toString() ?? '') as unknown
    assert.deepEqual(manifest, [{ Config: `blobs/sha256/${imageId.slice(7)}`, RepoTags: ['busybox:latest'], Layers: [`blobs/sha256/${diffId.slice(7)}`] }])
    assert.deepEqual(JSON.parse(byName.get('repositories')?.body.toString() ?? ''), { busybox: { latest: diffId.slice(7) } })
    const index = JSON.parse(byName.get('index.json')?.body.toString() ?? '') as { schemaVersion: number, mediaType: string, manifests: Array<{ mediaType: string, digest: string, size: number, annotations: Record<string, string> }> }
    assert.equal(index.schemaVersion, 2)
    assert.equal(index.mediaType, 'application/vnd.oci.image.index.v1+json')
    assert.equal(index.manifests.length, 1)
    const desc = index.manifests[0]
    assert.deepEqual(desc?.annotations, { 'io.containerd.image.name': 'docker.io/library/busybox:latest', 'org.opencontainers.image.ref.name': 'latest' })
    const oci = byName.get(`blobs/sha256/${desc?.digest.slice(7) ?? ''}`)
    assert.equal(oci?.body.length, desc?.size)
    const m = JSON.parse(oci?.body.toString() ?? '') as { mediaType: string, config: { digest: string, size: number }, layers: Array<{ mediaType: string, digest: string, size: number }> }
    assert.equal(m.mediaType, 'application/vnd.oci.image.manifest.v1+json')
    assert.equal(m.config.digest, imageId)
    assert.deepEqual(m.layers, [{ mediaType: 'application/vnd.oci.image.layer.v1.tar', digest: diffId, size: readFileSync(busyboxTar()).length }])
    assert.deepEqual(byName.get(`blobs/sha256/${diffId.slice(7)}`)?.body, readFileSync(busyboxTar()), 'layers are stored uncompressed')
  })

  await t.test('GET /images/get and /images/{name}/get stream the archive; unknown names are 404', async () => {
    assert.equal((await request(socket, 'POST', '/images/busybox/tag?repo=other&tag=2')).status, 201)
    const one = await request(socket, 'GET', '/images/docker.io/library/busybox:latest/get')
    assert.equal(one.status, 200)
    assert.equal(one.headers['content-type'], 'application/x-tar')
    assert.equal(one.headers['content-length'], undefined)
    const two = await request(socket, 'GET', '/images/get?names=busybox&names=other:2')
    const manifest = JSON.parse((await listTar(two.body)).find((e) => e.name === 'manifest.json')?.body.toString() ?? '') as Array<{ RepoTags: string[] }>
    assert.deepEqual(manifest.map((m) => m.RepoTags), [['busybox:latest', 'other:2']])
    const byId = JSON.parse((await listTar((await request(socket, 'GET', `/images/${imageId.slice(7, 19)}/get`)).body)).find((e) => e.name === 'manifest.json')?.body.toString() ?? '') as Array<{ RepoTags: unknown }>
    assert.equal(byId[0]?.RepoTags, null)
    const missing = await request(socket, 'GET', '/images/get?names=nosuch')
    assert.equal(missing.status, 404)
    assert.deepEqual(missing.json(), { message: 'No such image: nosuch:latest' })
    assert.equal((await request(socket, 'DELETE', '/images/other:2')).status, 200)
  })

  await t.test('docker load restores tags and keeps the image ID, plain and gzip', { skip: cliSkip ?? false }, async () => {
    assert.equal((await docker('tag', 'busybox', 'saved:1')).status, 0)
    const file = join(scratch, 'saved.tar')
    assert.equal((await docker('save', '-o', file, 'saved:1')).status, 0)
    assert.equal((await docker('rmi', 'saved:1')).status, 0)
    const l = await docker('load', '-i', file)
    assert.equal(l.status, 0, l.stderr)
    assert.equal(l.stdout, 'Loaded image: saved:1\n')
    assert.equal((await docker('image', 'inspect', '-f', '{{.Id}}', 'saved:1')).stdout.trim(), imageId)
    assert.equal((await docker('rmi', 'saved:1')).status, 0)
    const gz = await dockerCli(socket, ['load'], gzipSync(readFileSync(file)))
    assert.equal(gz.status, 0, gz.stderr)
    assert.equal(gz.stdout, 'Loaded image: saved:1\n')
    const run = await docker('run', '--rm', 'saved:1', 'echo', 'loaded')
    assert.equal(run.stdout, 'loaded\n', run.stderr)
  })

  await t.test('legacy layout, two layers, a config that is not canonical JSON: same ID, runs', async () => {
    const layer1 = readFileSync(busyboxTar())
    const layer2 = await tarOf([{ name: 'opt/', type: 'directory' }, { name: 'opt/hello.txt', body: 'layer two\n' }])
    const cfg = {
      architecture: 'amd64',
      os: 'linux',
      created: '2024-01-02T03:04:05.123456789Z',
      config: { Cmd: ['cat', '/opt/hello.txt'], Env: ['PATH=/usr/sbin:/usr/bin:/sbin:/bin'], Labels: { '<k>': 'a&b' } },
      rootfs: { type: 'layers', diff_ids: [`sha256:${sha(layer1)}`, `sha256:${sha(layer2)}`] },
      history: [{ created_by: 'import' }, { created_by: 'add hello' }]
    }
    // Go's encoder style: HTML characters escaped, so JSON.stringify would not reproduce these bytes
    const raw = Buffer.from(JSON.stringify(cfg).replace(/</g, '\\u003c').replace(/>/g, '\\u003e').replace(/&/g, '\\u0026'))
    const v1a = sha('a')
    const v1b = sha('b')
    const archive = await tarOf([
      { name: `${v1a}/`, type: 'directory' },
      { name: `${v1a}/VERSION`, body: '1.0' },
      { name: `${v1a}/json`, body: '{}' },
      { name: `${v1a}/layer.tar`, body: layer1 },
      { name: `${v1b}/`, type: 'directory' },
      { name: `${v1b}/VERSION`, body: '1.0' },
      { name: `${v1b}/json`, body: '{}' },
      { name: `${v1b}/layer.tar`, body: layer2 },
      { name: `${sha(raw)}.json`, body: raw },
      { name: 'manifest.json', body: JSON.stringify([{ Config: `${sha(raw)}.json`, RepoTags: ['legacy:1'], Layers: [`${v1a}/layer.tar`, `${v1b}/layer.tar`] }]) },
      { name: 'repositories', body: JSON.stringify({ legacy: { 1: v1b } }) }
    ])
    const recs = await load(archive, false)
    assert.deepEqual(recs.filter((r) => r.stream !== undefined), [{ stream: 'Loaded image: legacy:1\n' }])
    assert.ok(recs.some((r) => r.status === 'Loading layer'), 'progress records when not quiet')
    const insp = (await request(socket, 'GET', '/images/legacy:1/json')).json() as { Id: string, RootFS: { Layers: string[] } }
    assert.equal(insp.Id, `sha256:${sha(raw)}`)
    assert.equal(insp.RootFS.Layers.length, 2)
    if (cliSkip === null) {
      const run = await docker('run', '--rm', 'legacy:1')
      assert.equal(run.stdout, 'layer two\n', run.stderr)
    }
    // a second load of the same archive reuses the layers and reports the same tag
    assert.deepEqual((await load(archive)).filter((r) => r.stream !== undefined), [{ stream: 'Loaded image: legacy:1\n' }])
  })

  await t.test('a bare OCI layout (index.json, no manifest.json) loads under its annotated name', async () => {
    assert.equal((await request(socket, 'POST', '/images/busybox/tag?repo=oci&tag=2')).status, 201)
    const saved = await listTar((await request(socket, 'GET', '/images/oci:2/get')).body)
    assert.equal((await request(socket, 'DELETE', '/images/oci:2')).status, 200)
    const bare = await tarOf(saved.filter((e) => e.type === 'file' && e.name !== 'manifest.json' && e.name !== 'repositories').map((e) => ({ name: e.name, body: e.body })))
    assert.deepEqual(await load(bare), [{ stream: 'Loaded image: oci:2\n' }])
  })

  await t.test('untagged images report their ID; a moved tag is announced', async () => {
    const cfgRaw = (await request(socket, 'GET', '/images/busybox/get')).body
    const entries = await listTar(cfgRaw)
    const blobs = entries.filter((e) => e.type === 'file' && e.name.startsWith('blobs/')).map((e) => ({ name: e.name, body: e.body }))
    const noTags = await tarOf([...blobs, { name: 'manifest.json', body: JSON.stringify([{ Config: `blobs/sha256/${imageId.slice(7)}`, RepoTags: null, Layers: [`blobs/sha256/${diffId.slice(7)}`] }]) }])
    assert.deepEqual(await load(noTags), [{ stream: `Loaded image ID: ${imageId}\n` }])
    const moved = await tarOf([...blobs, { name: 'manifest.json', body: JSON.stringify([{ Config: `blobs/sha256/${imageId.slice(7)}`, RepoTags: ['legacy:1'], Layers: [`blobs/sha256/${diffId.slice(7)}`] }]) }])
    const recs = await load(moved)
    assert.match(String(recs[0]?.stream), /^The image legacy:1 already exists, renaming the old one with ID sha256:[0-9a-f]{64} to empty string\n$/)
    assert.deepEqual(recs[1], { stream: 'Loaded image: legacy:1\n' })
  })

  await t.test('refused archives: errors in-band, nothing stored, nothing left behind', async () => {
    const layer1 = readFileSync(busyboxTar())
    const other = await tarOf([{ name: 'x.txt', body: 'not what the config says' }])
    const cfg = Buffer.from(JSON.stringify({ architecture: 'amd64', os: 'linux', rootfs: { type: 'layers', diff_ids: [`sha256:${sha(layer1)}`, `sha256:${sha('something else')}`] } }))
    const mismatch = await tarOf([
      { name: 'l1.tar', body: layer1 },
      { name: 'l2.tar', body: other },
      { name: 'c.json', body: cfg },
      { name: 'manifest.json', body: JSON.stringify([{ Config: 'c.json', RepoTags: ['bad:1'], Layers: ['l1.tar', 'l2.tar'] }]) }
    ])
    const badLayout = await tarOf([{ name: 'manifest.json', body: JSON.stringify([{ Config: 'c.json', RepoTags: ['bad:1'], Layers: ['l1.tar'] }]) }, { name: 'c.json', body: cfg }, { name: 'l1.tar', body: layer1 }])
    const escape = await tarOf([{ name: '../../escape.txt', body: 'x' }, { name: 'manifest.json', body: '[]' }])
    const linkOut = await tarOf([{ name: 'l', type: 'symlink', linkname: '/etc' }, { name: 'manifest.json', body: JSON.stringify([{ Config: 'l/passwd', RepoTags: null, Layers: [] }]) }])
    const cases: Array<[string, Buffer, RegExp]> = [
      ['a layer that is not its diff_id', mismatch, /^invalid diffID for layer 1: expected "sha256:[0-9a-f]{64}", got "sha256:[0-9a-f]{64}"$/],
      ['fewer layers than diff_ids', badLayout, /^invalid manifest, layers length mismatch: expected 1, got 2$/],
      ['an entry with ..', escape, /path contains '\.\.'/],
      ['a symlink out of the archive', linkOut, /leaves the directory/],
      ['no manifest', await tarOf([{ name: 'hello', body: 'x' }]), /does not contain a manifest\.json/],
      ['not a tar', Buffer.from('plain text, no tar header here at all. '.repeat(20)), /invalid archive/]
    ]
    const before = storeState()
    for (const [what, body, message] of cases) {
      const recs = await load(body)
      const last = recs[recs.length - 1] as { error?: string, errorDetail?: { message: string } }
      assert.match(last.error ?? '', message, what)
      assert.equal(last.errorDetail?.message, last.error)
      assert.equal(storeState(), before, `${what}: the store is unchanged`)
    }
    if (cliSkip === null) {
      const file = join(scratch, 'mismatch.tar')
      writeFileSync(file, mismatch)
      const cli = await docker('load', '-i', file)
      assert.notEqual(cli.status, 0)
      assert.match(cli.stderr, /invalid diffID for layer 1/)
    }
    assert.equal((await request(socket, 'GET', '/images/bad:1/json')).status, 404)
    assert.equal((await request(socket, 'GET', '/_ping')).status, 200)
  })
})
