// Pulls from a real registry (Debian's docker-registry, distribution 2.8.2) on loopback, driven by dockerode, the
// docker CLI, docker-py and raw requests: the progress records, the stored image (tags, RepoDigests, layers with
// whiteouts), up-to-date pulls, digests, platforms, and that nothing is left behind when a pull fails or is cut off.
import { test, type TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { existsSync, readFileSync, readdirSync, lstatSync } from 'node:fs'
import { join } from 'node:path'
import { spawn, spawnSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import Docker from 'dockerode'
import { startEngine, request, busyboxTar, dockerCli, hasDockerCli, containerSkipReason, createContainer, type TestEngine } from '../helpers/engine.js'
import { Semaphore } from '../../lib/distribution/shared-jobs.js'
import {
  registrySkipReason, startDistribution, seedImage, seedIndex, makeTar, records, layerStatuses, startProxy, liveStream,
  gate, type DistributionRegistry, type SeededImage, type Rec, type Proxy
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

/** One registry per test keeps tests independent; seeding is cheap. */
async function registryWithBusybox (t: TestContext): Promise<{ reg: DistributionRegistry, image: SeededImage }> {
  const reg = await startDistribution(t)
  const image = await seedImage(reg.url, 'test/busybox', { layers: busyboxLayers(), tag: 'latest' })
  return { reg, image }
}

/**
 * Pulls `repo` through the proxy while the proxy serves only the first half of the blob `digest` and then holds it;
 * once a Downloading record for that layer arrived, the client goes away. The held response is dropped when `release`
 * is called (or the test ends). Resolves when the engine has wound the pull down.
 */
async function pullAbandonedMidLayer (t: TestContext, e: TestEngine, proxy: Proxy, repo: string, digest: string): Promise<{ release: () => void }> {
  const half = gate()
  const release = gate()
  t.after(() => { release.open() })
  proxy.hooks.push(async (req, res, body) => {
    if (req.method !== 'GET' || !(req.url ?? '').startsWith(`/v2/${repo}/`) || !(req.url ?? '').endsWith(`/blobs/${digest}`)) return false
    const up = await proxy.fetch(req, body)
    res.writeHead(up.status, { 'Content-Type': 'application/octet-stream', 'Content-Length': up.body.length })
    res.write(up.body.subarray(0, up.body.length >> 1))
    half.open()
    await release.promise
    res.destroy()
    return true
  })
  const pull = liveStream(e.socket, 'POST', `/images/create?fromImage=${proxy.host}/${repo}&tag=latest`)
  await half.promise
  await pull.waitFor((r) => r.id === digest.slice(7, 19) && r.status === 'Downloading')
  pull.destroy()
  await (await e.engine.distribution()).settled()
  return { release: () => { release.open() } }
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


test('docker CLI pull: renders progress bars from our records on a terminal, plain lines without one', { skip: skip ?? (hasDockerCli() ? false : 'docker CLI not installed') }, async (t) => {
  const { reg, image } = await registryWithBusybox(t)
  const e = await startEngine(t)
  const plain = await dockerCli(e.socket, ['pull', `${reg.host}/test/busybox`])
  assert.equal(plain.status, 0, plain.stderr)
  assert.match(plain.stdout, /Using default tag: latest/)
  assert.match(plain.stdout, /latest: Pulling from test\/busybox/)
  assert.match(plain.stdout, new RegExp(`${image.layerDigests[0]?.slice(7, 19) ?? ''}: Pull complete`))
  assert.match(plain.stdout, new RegExp(`Digest: ${image.manifestDigest}`))
  assert.match(plain.stdout, new RegExp(`Status: Downloaded newer image for ${reg.host}/test/busybox:latest`))
  // by ID: removing the tag alone would keep the image (its RepoDigest still refers to it)
  assert.equal((await request(e.socket, 'DELETE', `/images/${image.configDigest}?force=1`)).status, 200)

  const script = spawnSync('script', ['--version'])
  if (script.error !== undefined) { t.diagnostic('script(1) missing: terminal rendering not checked'); return }
  // on a terminal the CLI redraws each layer's row from progressDetail; give the pty a width that shows bars
  const tty = await new Promise<string>((resolve) => {
    const child = spawn('script', ['-qec', `stty cols 200 rows 50; docker pull ${reg.host}/test/busybox:latest`, '/dev/null'], { env: { ...process.env, DOCKER_HOST: `unix://${e.socket}` } })
    let out = ''
    child.stdout.on('data', (d: Buffer) => { out += d.toString('utf8') })
    child.on('close', () => { resolve(out) })
  })
  // (the layers' tars are still in the content store, so this pull only extracts them)
  assert.match(tty, /(Downloading|Extracting) \[=*>\s*\]/, 'progress bar drawn from progressDetail')
  assert.match(tty, /\x1b\[\d*A/, 'cursor movement: rows redrawn by id')
  assert.match(tty, /Status: Downloaded newer image/)
})

test('docker-py images.pull returns the pulled image', { skip: skip ?? false }, async (t) => {
  const py = spawnSync('python3', ['-c', 'import docker'])
  if (py.status !== 0) { t.skip('docker-py (python3-docker) not installed'); return }
  const { reg, image } = await registryWithBusybox(t)
  const e = await startEngine(t)
  const out = await new Promise<{ code: number | null, stdout: string, stderr: string }>((resolve) => {
    const child = spawn('python3', ['-c', 'import docker, sys\nc = docker.DockerClient(base_url="unix://" + sys.argv[1])\nimg = c.images.pull(sys.argv[2], tag="latest")\nprint(img.id)\nprint(img.attrs["RepoDigests"][0])', e.socket, `${reg.host}/test/busybox`])
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d: Buffer) => { stdout += d.toString() })
    child.stderr.on('data', (d: Buffer) => { stderr += d.toString() })
    child.on('close', (code) => { resolve({ code, stdout, stderr }) })
  })
  assert.equal(out.code, 0, out.stderr)
  assert.deepEqual(out.stdout.trim().split('\n'), [image.configDigest, `${reg.host}/test/busybox@${image.manifestDigest}`])
})

test('pull by digest (in fromImage and in tag): RepoDigests set, no tag, up to date the second time', { skip: skip ?? false }, async (t) => {
  const { reg, image } = await registryWithBusybox(t)
  const e = await startEngine(t)
  const byName = await pullRaw(e.socket, `fromImage=${encodeURIComponent(`${reg.host}/test/busybox@${image.manifestDigest}`)}`)
  assert.equal(byName.status, 200, byName.text)
  assert.deepEqual(byName.recs[0], { status: 'Pulling from test/busybox', id: image.manifestDigest })
  assert.deepEqual(byName.recs[byName.recs.length - 1], { status: `Status: Downloaded newer image for ${reg.host}/test/busybox@${image.manifestDigest}` })
  const list = await imagesJson(e.socket)
  assert.deepEqual(list.map((i) => [i.Id, i.RepoTags, i.RepoDigests]), [[image.configDigest, [], [`${reg.host}/test/busybox@${image.manifestDigest}`]]])
  const byTag = await pullRaw(e.socket, `fromImage=${reg.host}/test/busybox&tag=${image.manifestDigest}`)
  assert.deepEqual(byTag.recs[byTag.recs.length - 1], { status: `Status: Image is up to date for ${reg.host}/test/busybox@${image.manifestDigest}` })
  const inspect = await request(e.socket, 'GET', `/images/${reg.host}/test/busybox@${image.manifestDigest}/json`)
  assert.equal(inspect.status, 200)
})

test('an index with two platforms: platform= picks one, the host is the default, no match is an in-band error', { skip: skip ?? false }, async (t) => {
  const reg = await startDistribution(t)
  const host = process.arch === 'x64' ? 'amd64' : process.arch === 'arm64' ? 'arm64' : process.arch
  const other = host === 'arm64' ? 'amd64' : 'arm64'
  const mk = async (arch: string): Promise<SeededImage> => await seedImage(reg.url, 'multi/app', { layers: [makeTar([{ name: 'platform', body: `${arch}\n` }])], architecture: arch, oci: true })
  const a = await mk(host)
  const b = await mk(other)
  const index = await seedIndex(reg.url, 'multi/app', 'v1', [
    { image: b, platform: { os: 'linux', architecture: other, ...(other === 'arm64' ? { variant: 'v8' } : {}) } },
    { image: a, platform: { os: 'linux', architecture: host } }
  ])
  const e = await startEngine(t)
  const picked = await pullRaw(e.socket, `fromImage=${reg.host}/multi/app&tag=v1&platform=linux/${other}`)
  assert.equal(picked.status, 200)
  assert.ok(picked.recs.some((r) => r.status === `Digest: ${index.digest}`), 'Digest: is the index digest')
  let insp = (await request(e.socket, 'GET', `/images/${reg.host}/multi/app:v1/json`)).json() as { Id: string, Architecture: string, RepoDigests: string[] }
  assert.equal(insp.Id, b.configDigest)
  assert.equal(insp.Architecture, other)
  assert.deepEqual(insp.RepoDigests, [`${reg.host}/multi/app@${index.digest}`])

  const dflt = await pullRaw(e.socket, `fromImage=${reg.host}/multi/app&tag=v1`)
  assert.equal(dflt.recs[dflt.recs.length - 1]?.status, `Status: Downloaded newer image for ${reg.host}/multi/app:v1`)
  insp = (await request(e.socket, 'GET', `/images/${reg.host}/multi/app:v1/json`)).json() as typeof insp
  assert.equal(insp.Id, a.configDigest)
  assert.equal(insp.Architecture, host)

  const none = await pullRaw(e.socket, `fromImage=${reg.host}/multi/app&tag=v1&platform=linux/s390x`)
  assert.equal(none.status, 200)
  const last = none.recs[none.recs.length - 1] as Rec
  assert.equal(last.errorDetail?.message, 'no matching manifest for linux/s390x in the manifest list entries')
  assert.equal(last.error, last.errorDetail?.message)
  const bad = await pullRaw(e.socket, `fromImage=${reg.host}/multi/app&tag=v1&platform=linux/!!`)
  assert.equal(bad.status, 400)
})

test('concurrent pulls of the same layer share one download', { skip: skip ?? false }, async (t) => {
  const { reg, image } = await registryWithBusybox(t)
  const proxy = await startProxy(t, reg.url)
  const big = image.layerDigests[0] as string
  const half = gate()
  const release = gate()
  let gets = 0
  proxy.hooks.push(async (req, res, body) => {
    if (req.method !== 'GET' || !(req.url ?? '').endsWith(`/blobs/${big}`)) return false
    gets++
    const up = await proxy.fetch(req, body)
    res.writeHead(up.status, { 'Content-Type': 'application/octet-stream', 'Content-Length': up.body.length })
    res.write(up.body.subarray(0, up.body.length >> 1))
    half.open()
    await release.promise
    res.end(up.body.subarray(up.body.length >> 1))
    return true
  })
  const e = await startEngine(t)
  const id = big.slice(7, 19)
  const a = liveStream(e.socket, 'POST', `/images/create?fromImage=${proxy.host}/test/busybox&tag=latest`)
  await half.promise
  await a.waitFor((r) => r.id === id && r.status === 'Downloading')
  const b = liveStream(e.socket, 'POST', `/images/create?fromImage=${proxy.host}/test/busybox&tag=latest`)
  // the second pull joins the running download and is shown its progress
  await b.waitFor((r) => r.id === id && r.status === 'Downloading')
  release.open()
  const [ra, rb] = await Promise.all([a.done, b.done])
  for (const recs of [ra, rb]) {
    assert.ok(recs.every((r) => r.error === undefined), JSON.stringify(recs.filter((r) => r.error !== undefined)))
    assert.ok(layerStatuses(recs, id).includes('Pull complete'))
  }
  assert.equal(gets, 1, 'one GET for the shared layer')
  assertCleanStore(e)
})

test('a client that goes away mid-download leaves no partial blobs, layers or image', { skip: skip ?? false }, async (t) => {
  const { reg, image } = await registryWithBusybox(t)
  const proxy = await startProxy(t, reg.url)
  const e = await startEngine(t)
  const { release } = await pullAbandonedMidLayer(t, e, proxy, 'test/busybox', image.layerDigests[0] as string)
  assertCleanStore(e)
  assert.deepEqual(readdirSync(join(e.dataRoot, 'layers')), [], 'no unpacked layer left for an image that does not exist')
  const blobs = readdirSync(join(e.dataRoot, 'content', 'blobs', 'sha256')).map((h) => `sha256:${h}`)
  assert.ok(!blobs.includes(image.diffIds[0] as string), 'the interrupted layer was not published')
  assert.deepEqual(await imagesJson(e.socket), [])
  // a later pull works (and can reuse what was verified)
  release()
  proxy.hooks.length = 0
  const again = await pullRaw(e.socket, `fromImage=${proxy.host}/test/busybox&tag=latest`)
  assert.equal(again.recs[again.recs.length - 1]?.status, `Status: Downloaded newer image for ${proxy.host}/test/busybox:latest`)
})

test('no tag pulls every tag of the repository (docker pull -a)', { skip: skip ?? false }, async (t) => {
  const reg = await startDistribution(t)
  const v1 = await seedImage(reg.url, 'all/app', { layers: [makeTar([{ name: 'v', body: '1' }])], tag: 'v1' })
  const v2 = await seedImage(reg.url, 'all/app', { layers: [makeTar([{ name: 'v', body: '2' }])], tag: 'v2' })
  const e = await startEngine(t)
  const r = await pullRaw(e.socket, `fromImage=${reg.host}/all/app`)
  assert.deepEqual(r.recs.filter((x) => x.status?.startsWith('Pulling from') === true), [
    { status: 'Pulling from all/app', id: 'v1' },
    { status: 'Pulling from all/app', id: 'v2' }
  ])
  assert.deepEqual(r.recs[r.recs.length - 1], { status: `Status: Downloaded newer image for ${reg.host}/all/app` })
  const list = await imagesJson(e.socket)
  assert.deepEqual(list.map((i) => [i.Id, i.RepoTags]).sort(), [[v1.configDigest, [`${reg.host}/all/app:v1`]], [v2.configDigest, [`${reg.host}/all/app:v2`]]].sort())
})

test('layers beyond the download slots are Waiting until one frees', { skip: skip ?? false }, async (t) => {
  const reg = await startDistribution(t)
  const img = await seedImage(reg.url, 'three/app', { layers: [1, 2, 3].map((n) => makeTar([{ name: `f${n}`, body: String(n).repeat(100_000) }])), tag: 'v1' })
  const e = await startEngine(t)
  const dist = await e.engine.distribution()
  dist.downloadSlots = new Semaphore(1)
  const r = await pullRaw(e.socket, `fromImage=${reg.host}/three/app&tag=v1`)
  const seqs = img.layerDigests.map((d) => layerStatuses(r.recs, d.slice(7, 19)))
  assert.equal(seqs[0]?.[1], 'Downloading')
  for (const s of seqs.slice(1)) assert.deepEqual(s.slice(0, 3), ['Pulling fs layer', 'Waiting', 'Downloading'])
  assert.ok(seqs.every((s) => s[s.length - 1] === 'Pull complete'))
})

test('layers large enough for the hash thread: interrupted cleanly, a wrong diff ID refused, then pulled and run', { skip: skip ?? false }, async (t) => {
  const reg = await startDistribution(t)
  // 12 MiB of incompressible bytes: both digests of this layer are computed on the hash thread
  const bigTar = makeTar([{ name: 'big.bin', body: randomBytes(12 * 1024 * 1024) }])
  const image = await seedImage(reg.url, 'test/big', { layers: [...busyboxLayers(), bigTar], tag: 'latest', cmd: ['sh', '-c', 'wc -c < /big.bin'] })
  const liar = await seedImage(reg.url, 'test/liar', { layers: [...busyboxLayers(), bigTar], tag: 'latest', diffIds: [...image.diffIds.slice(0, -1), `sha256:${'0'.repeat(64)}`] })
  assert.ok(liar.layerDigests.length > 0)
  const proxy = await startProxy(t, reg.url)
  const e = await startEngine(t)
  const { release } = await pullAbandonedMidLayer(t, e, proxy, 'test/big', image.layerDigests[image.layerDigests.length - 1] as string)
  assertCleanStore(e)
  assert.deepEqual(await imagesJson(e.socket), [])
  // the config claims a diff ID the big layer does not have: an in-band error, nothing published
  const lie = await pullRaw(e.socket, `fromImage=${reg.host}/test/liar&tag=latest`)
  assert.match(String(lie.recs[lie.recs.length - 1]?.error), /don't match image configuration/)
  assertCleanStore(e)
  assert.deepEqual(await imagesJson(e.socket), [])
  release()
  proxy.hooks.length = 0
  const ok = await pullRaw(e.socket, `fromImage=${proxy.host}/test/big&tag=latest`)
  assert.equal(ok.recs[ok.recs.length - 1]?.status, `Status: Downloaded newer image for ${proxy.host}/test/big:latest`)
  const id = await createContainer(e.socket, { Image: `${proxy.host}/test/big:latest` })
  assert.equal((await request(e.socket, 'POST', `/containers/${id}/start`)).status, 204)
  assert.deepEqual((await request(e.socket, 'POST', `/containers/${id}/wait`)).json(), { Error: null, StatusCode: 0 })
  const logs = await request(e.socket, 'GET', `/containers/${id}/logs?stdout=1`)
  assert.equal(logs.body.subarray(8).toString().trim(), String(12 * 1024 * 1024))
})
