// Every streaming route of a daemon process cut in the middle, by the client (a raw socket destroyed after part of a
// request body, or after part of a response) or by a registry (a blob reset or corrupted mid-body): the process
// never dies, /_ping still answers, and nothing it keeps is half-written (no partial image listed, no tmp-* layer
// directory, no ingest file, no build container left once things settle). Each cut is looped over a few points.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import net from 'node:net'
import { readdirSync, existsSync } from 'node:fs'
import { join } from 'node:path'
import { randomBytes } from 'node:crypto'
import { gzipSync } from 'node:zlib'
import { containerSkipReason, createContainer, request } from '../helpers/engine.js'
import { daemonProcessOfFile } from '../helpers/daemon-process.js'
import { until } from '../helpers/poll.js'
import { tarOf } from '../helpers/tar.js'
import { registrySkipReason, startDistribution, seedImage, startProxy, makeTar } from '../images/registry-fixture.js'

const skip = containerSkipReason()
if (skip !== null) process.stdout.write(`# skipping cut-stream tests: ${skip}\n`)
const registrySkip = skip ?? registrySkipReason()

let baseline: string[] = []
const daemon = daemonProcessOfFile(skip, { stderrLimit: 8000, ready: async () => { baseline = await imageIds() } })

async function imageIds (): Promise<string[]> {
  const r = await request(daemon.sock, 'GET', '/images/json')
  assert.equal(r.status, 200, r.text)
  return (r.json() as Array<{ Id: string }>).map((i) => i.Id).sort()
}

/** The daemon process is alive, answers /_ping, and once settled keeps no half-written layer or ingest file. */
async function assertHealthy (what: string, images: string[] | null = baseline): Promise<void> {
  daemon.assertRunning(what)
  const ping = await request(daemon.sock, 'GET', '/_ping')
  assert.equal(ping.status, 200, `${what}: /_ping ${ping.status} ${ping.text}`)
  assert.equal(ping.text, 'OK')
  const leftovers = (): string[] => [
    ...readdirSync(join(daemon.dir, 'data', 'layers')).filter((n) => n.startsWith('tmp-')).map((n) => `layers/${n}`),
    ...(existsSync(join(daemon.dir, 'data', 'content', 'ingest')) ? readdirSync(join(daemon.dir, 'data', 'content', 'ingest')).map((n) => `ingest/${n}`) : [])
  ]
  await until(`${what}: no half-written layer or ingest file (${leftovers().join(' ')})`, async () => leftovers().length === 0, 20_000)
  if (images !== null) await until(`${what}: the images are those before`, async () => JSON.stringify(await imageIds()) === JSON.stringify(images), 20_000)
  // every image listed is whole: it inspects and its history reads
  for (const id of await imageIds()) {
    assert.equal((await request(daemon.sock, 'GET', `/images/${id}/json`)).status, 200, `${what}: image ${id} inspects`)
    assert.equal((await request(daemon.sock, 'GET', `/images/${id}/history`)).status, 200, `${what}: image ${id} has its history`)
  }
  assert.equal(daemon.child.exitCode, null, `${what}: the daemon exited: ${daemon.stderr}`)
}

const tick = async (ms = 5): Promise<void> => { await new Promise((resolve) => setTimeout(resolve, ms)) }

/** Sends a request head and the first `sent` bytes of its body, lets the daemon read them, then destroys the socket. */
async function cutUpload (method: string, path: string, body: Buffer, sent: number, headers: Record<string, string> = {}): Promise<void> {
  // odd cut points send the body chunked (as the docker CLI does), in one chunk the cut falls inside
  const chunked = sent % 2 === 1
  const s = net.connect(daemon.sock)
  s.on('error', () => {})
  s.resume()
  const extra = Object.entries({ 'Content-Type': 'application/x-tar', ...headers }).map(([k, v]) => `${k}: ${v}\r\n`).join('')
  await new Promise<void>((resolve) => {
    s.on('connect', () => {
      const length = chunked ? `Transfer-Encoding: chunked\r\n\r\n${body.length.toString(16)}\r\n` : `Content-Length: ${body.length}\r\n\r\n`
      s.write(`${method} ${path} HTTP/1.1\r\nHost: berth\r\n${extra}${length}`)
      // every third cut point closes with the last bytes (they arrive with the close), the others once they are read
      if (sent % 3 === 0) { s.end(body.subarray(0, sent)); s.destroy(); resolve(); return }
      // a daemon that stops reading (it answered, or waits) leaves the write pending: the cut comes anyway
      const stalled = setTimeout(() => { resolve() }, 1000)
      s.write(body.subarray(0, sent), () => { clearTimeout(stalled); resolve() })
    })
    s.on('close', () => { resolve() })
  })
  if (sent % 3 !== 0) await tick(20)
  s.destroy()
}

/**
 * Sends a request (with an optional body), reads until `enough` says so (or the daemon closes), then destroys the
 * socket. Resolves with what was read.
 */
async function cutDownload (head: string, enough: (got: Buffer) => boolean, body?: Buffer): Promise<Buffer> {
  return await new Promise((resolve) => {
    const s = net.connect(daemon.sock)
    const chunks: Buffer[] = []
    let done = false
    const finish = (): void => {
      if (done) return
      done = true
      s.destroy()
      resolve(Buffer.concat(chunks))
    }
    s.on('error', finish)
    s.on('close', finish)
    s.on('connect', () => { s.write(head); if (body !== undefined) s.write(body) })
    s.on('data', (d: Buffer) => {
      chunks.push(d)
      if (enough(Buffer.concat(chunks))) finish()
    })
  })
}

/** A chunked reply's last chunk has arrived. */
const ended = (got: Buffer): boolean => got.includes('\r\n0\r\n\r\n')
const get = (path: string, extra = ''): string => `GET ${path} HTTP/1.1\r\nHost: berth\r\n${extra}\r\n`
const bodyAt = (n: number) => (got: Buffer): boolean => { const i = got.indexOf('\r\n\r\n'); return i !== -1 && got.length - i - 4 >= n }

/** Offsets inside the entries of a tar of at least 2 KiB: just past the header, a quarter and three quarters in. */
function midEntryOffsets (tar: Buffer): number[] {
  const out: number[] = []
  let off = 0
  while (off + 512 <= tar.length && tar[off] !== 0) {
    const size = parseInt(tar.subarray(off + 124, off + 136).toString('ascii').replace(/\0.*$/, '').trim() || '0', 8)
    // just past the header (the reader may still be making the entry's directory), a quarter and three quarters in
    if (size >= 2048) out.push(off + 512 + 16, off + 512 + (size >> 2), off + 512 + ((size * 3) >> 2))
    off += 512 + Math.ceil(size / 512) * 512
  }
  return out
}

/** At most `n` points spread over `points`. */
const spread = (points: number[], n: number): number[] => points.length <= n ? points : Array.from({ length: n }, (_, i) => points[Math.floor(i * (points.length - 1) / (n - 1))] as number)

test('an image load and an import cut mid-body (mid-entry, mid-layer)', { timeout: 180_000, skip: skip ?? false }, async () => {
  const saved = await request(daemon.sock, 'GET', '/images/get?names=busybox')
  assert.equal(saved.status, 200)
  const tar = saved.body
  assert.equal((await request(daemon.sock, 'DELETE', '/images/busybox')).status, 200)
  const without = await imageIds()
  const points = [...new Set([1, 300, 512, 1500, ...spread(midEntryOffsets(tar), 12).flatMap((p) => [p, p + 1, p + 2]), tar.length - 1024, tar.length - 1])]
  for (const at of points) {
    await cutUpload('POST', '/images/load?quiet=1', tar, at)
    await assertHealthy(`load cut at ${at}/${tar.length}`, without)
  }
  const load = await request(daemon.sock, 'POST', '/images/load?quiet=1', { raw: tar, headers: { 'Content-Type': 'application/x-tar' } })
  assert.equal(load.status, 200, load.text)
  await assertHealthy('load after the cuts')

  // an import (fromSrc=-): the rootfs tar cut mid-entry; and the same gzipped, cut mid-stream
  const rootfs = (await request(daemon.sock, 'GET', '/images/get?names=busybox')).body
  const layer = await (async () => {
    // the largest entry of the saved image is its layer tar
    let off = 0; let best = { start: 0, size: 0 }
    while (off + 512 <= rootfs.length && rootfs[off] !== 0) {
      const size = parseInt(rootfs.subarray(off + 124, off + 136).toString('ascii').replace(/\0.*$/, '').trim() || '0', 8)
      if (size > best.size) best = { start: off + 512, size }
      off += 512 + Math.ceil(size / 512) * 512
    }
    return rootfs.subarray(best.start, best.start + best.size)
  })()
  for (const [name, body] of [['tar', layer], ['gzip', gzipSync(layer)]] as const) {
    const pts = name === 'tar' ? [...new Set([100, 700, ...spread(midEntryOffsets(layer), 9).flatMap((p) => [p, p + 1, p + 2]), layer.length - 1])] : [10, 11, body.length >> 2, (body.length >> 2) + 1, body.length >> 1, body.length - 10, body.length - 9]
    for (const at of pts) {
      await cutUpload('POST', '/images/create?fromSrc=-&repo=cutimport&tag=x', body, at)
      await assertHealthy(`import (${name}) cut at ${at}/${body.length}`)
    }
  }
})

test('a build: context cut mid-entry, and a client gone while it runs', { timeout: 180_000, skip: skip ?? false }, async () => {
  const context = await tarOf([
    { name: 'Dockerfile', body: 'FROM busybox\nCOPY big /big\nRUN echo built\n' },
    { name: 'big', body: randomBytes(300_000) },
    { name: 'small', body: 'x' }
  ])
  const pts = [...new Set([10, 512, 700, ...midEntryOffsets(context).flatMap((p) => [p, p + 1, p + 2]), context.length - 700, context.length - 1])]
  for (const at of pts) {
    await cutUpload('POST', '/build?t=cutbuild&rm=1&forcerm=1', context, at)
    await assertHealthy(`build context cut at ${at}/${context.length}`)
  }
  // the whole context sent, the client gone at several moments of the build
  const slow = await tarOf([{ name: 'Dockerfile', body: 'FROM busybox\nRUN echo step-one; sleep 1; echo step-two\nRUN echo never\n' }])
  const head = `POST /build?t=cutbuild2&rm=1&forcerm=1 HTTP/1.1\r\nHost: berth\r\nContent-Type: application/x-tar\r\nContent-Length: ${slow.length}\r\n\r\n`
  for (const marker of ['HTTP/1.1 200', 'Step 1/3', 'step-one', 'Step 3/3']) {
    await cutDownload(head, (got) => got.includes(marker), slow)
    await until(`build cut at "${marker}": no build container left`, async () => {
      const r = await request(daemon.sock, 'GET', '/containers/json?all=1')
      return (r.json() as unknown[]).length === 0
    }, 30_000)
    await assertHealthy(`build cut at "${marker}"`, null)
  }
  // whatever a completed build left is a whole image; remove it so the next groups compare with the baseline
  // (a build its client left may still finish under load, after a first removal): removed until none comes back
  await until('after the builds: what they made removed', async () => {
    for (const ref of ['cutbuild', 'cutbuild2']) await request(daemon.sock, 'DELETE', `/images/${ref}?force=1`)
    for (const id of await imageIds()) if (!baseline.includes(id)) await request(daemon.sock, 'DELETE', `/images/${id}?force=1`)
    await tick(250)
    return JSON.stringify(await imageIds()) === JSON.stringify(baseline)
  }, 30_000)
  await assertHealthy('after the builds')
})

test('container archives: an upload cut mid-entry, downloads and exports read partly', { timeout: 180_000, skip: skip ?? false }, async () => {
  const id = await createContainer(daemon.sock, { Image: 'busybox', Cmd: ['sleep', '600'] })
  const upload = await tarOf([
    { name: 'a.txt', body: 'hello' },
    { name: 'big', body: randomBytes(400_000) },
    { name: 'dir', type: 'directory' },
    { name: 'dir/more', body: randomBytes(100_000) }
  ])
  for (const running of [false, true]) {
    if (running) assert.equal((await request(daemon.sock, 'POST', `/containers/${id}/start`)).status, 204)
    for (const at of [...new Set([100, 512, ...midEntryOffsets(upload).flatMap((p) => [p, p + 1, p + 2]), upload.length - 1])]) {
      await cutUpload('PUT', `/containers/${id}/archive?path=/tmp`, upload, at)
      await assertHealthy(`archive upload (${running ? 'running' : 'created'}) cut at ${at}/${upload.length}`)
    }
    for (const n of [0, 100, 5000, 200_000]) {
      await cutDownload(get(`/containers/${id}/archive?path=/`), bodyAt(n))
      await cutDownload(get(`/containers/${id}/export`), bodyAt(n))
      await cutDownload(get('/images/get?names=busybox'), bodyAt(n))
      await cutDownload(get('/images/get?names=busybox', 'Accept-Encoding: gzip\r\n'), bodyAt(n))
      await assertHealthy(`archive/export/save read ${n} bytes (${running ? 'running' : 'created'})`)
    }
  }
  // the container still answers whole requests
  const whole = await request(daemon.sock, 'GET', `/containers/${id}/archive?path=/tmp/a.txt`)
  assert.equal(whole.status, 200)
  assert.equal((await request(daemon.sock, 'DELETE', `/containers/${id}?force=1`)).status, 204)
})

test('logs, events, stats, attach and exec closed mid-output', { timeout: 180_000, skip: skip ?? false }, async () => {
  const id = await createContainer(daemon.sock, { Image: 'busybox', Cmd: ['sh', '-c', 'i=0; while [ $i -lt 20000 ]; do echo line $i; i=$((i+1)); done; while :; do echo tick; sleep 0.05; done'], OpenStdin: true })
  assert.equal((await request(daemon.sock, 'POST', `/containers/${id}/start`)).status, 204)
  for (const n of [0, 10, 4000, 60_000]) {
    await cutDownload(get(`/containers/${id}/logs?follow=1&stdout=1&stderr=1`), bodyAt(n))
    await cutDownload(get(`/containers/${id}/logs?follow=1&stdout=1&timestamps=1&tail=5`), bodyAt(Math.min(n, 300)))
    await cutDownload(get(`/containers/${id}/stats?stream=1`), bodyAt(Math.min(n, 1)))
    await cutDownload(get('/events'), bodyAt(0))
    await cutDownload(get(`/events?filters=${encodeURIComponent('{"type":["container"]}')}`), (got) => got.includes('\r\n\r\n'))
    const upgrade = 'Content-Type: application/json\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n'
    await cutDownload(`POST /containers/${id}/attach?stream=1&stdout=1&stderr=1&stdin=1&logs=${n > 0 ? 1 : 0} HTTP/1.1\r\nHost: berth\r\n${upgrade}\r\n`, bodyAt(n), Buffer.from('some input\n'))
    const ex = await request(daemon.sock, 'POST', `/containers/${id}/exec`, { body: { Cmd: ['sh', '-c', 'i=0; while [ $i -lt 50000 ]; do echo exec $i; i=$((i+1)); done'], AttachStdout: true, AttachStderr: true, AttachStdin: true } })
    assert.equal(ex.status, 201, ex.text)
    const exec = (ex.json() as { Id: string }).Id
    const start = JSON.stringify({ Detach: false, Tty: false })
    await cutDownload(`POST /exec/${exec}/start HTTP/1.1\r\nHost: berth\r\n${upgrade}Content-Length: ${start.length}\r\n\r\n${start}`, bodyAt(n), Buffer.from('in'))
    await assertHealthy(`logs/stats/events/attach/exec read ${n} bytes`)
  }
  // the container is still served: a whole logs request and a stop
  const logs = await request(daemon.sock, 'GET', `/containers/${id}/logs?stdout=1&tail=1`)
  assert.equal(logs.status, 200)
  assert.equal((await request(daemon.sock, 'DELETE', `/containers/${id}?force=1`)).status, 204)
  await assertHealthy('after the container streams')
})

test('a pull cut by the client, and by the registry (reset or corrupted mid-blob)', { timeout: 180_000, skip: registrySkip ?? false }, async (t) => {
  const reg = await startDistribution(t)
  const layers = [
    makeTar([{ name: 'etc/', type: 'dir' }, { name: 'etc/one', body: randomBytes(600_000).toString('base64') }, { name: 'etc/two', body: randomBytes(300_000).toString('base64') }]),
    makeTar([{ name: 'bin/', type: 'dir' }, { name: 'bin/three', body: randomBytes(500_000).toString('base64') }])
  ]
  const img = await seedImage(reg.url, 'test/cut', { layers, tag: 'v1' })
  // the same image with layers of its own, for the pulls through the corrupting proxy: a layer that a pull cut by its
  // client still completed may stay in the store (until the collector runs), and a pull reuses it without a download
  const fresh = [makeTar([{ name: 'etc/', type: 'dir' }, { name: 'etc/four', body: randomBytes(700_000).toString('base64') }]), makeTar([{ name: 'bin/', type: 'dir' }, { name: 'bin/five', body: randomBytes(400_000).toString('base64') }])]
  const img2 = await seedImage(reg.url, 'test/cut2', { layers: fresh, tag: 'v1' })
  const proxy = await startProxy(t, reg.url)
  let cut: { at: number, how: 'reset' | 'corrupt', times?: number } | null = null
  proxy.hooks.push(async (req, res, body) => {
    if (cut === null || req.method !== 'GET' || !(req.url ?? '').includes('/blobs/') || req.url?.endsWith(img.configDigest) === true || req.url?.endsWith(img2.configDigest) === true) return false
    const c = cut
    if (c.times !== undefined) { if (c.times <= 0) return false; c.times-- }
    delete req.headers.range
    const up = await proxy.fetch(req, body)
    const at = Math.floor(up.body.length * c.at)
    res.writeHead(200, { 'Content-Length': up.body.length, 'Content-Type': 'application/octet-stream' })
    if (c.how === 'reset') { res.write(up.body.subarray(0, at), () => { res.destroy() }); return true }
    const bad = Buffer.from(up.body)
    for (let i = at; i < Math.min(at + 64, bad.length - 8); i++) bad[i] = (bad[i] as number) ^ 0x5a
    res.end(bad)
    return true
  })
  const pull = (host: string, repo = 'test/cut'): string => `POST /images/create?fromImage=${host}/${repo}&tag=v1 HTTP/1.1\r\nHost: berth\r\nContent-Length: 0\r\n\r\n`
  const cleanup = async (): Promise<void> => {
    for (const id of await imageIds()) if (!baseline.includes(id)) await request(daemon.sock, 'DELETE', `/images/${id}?force=1`)
  }

  // the client goes away at several moments of a pull straight from the registry
  for (const marker of ['HTTP/1.1 200', 'Pulling fs layer', 'Downloading', 'Extracting', 'Pull complete']) {
    await cutDownload(pull(reg.host), (got) => got.includes(marker))
    // the daemon may hear of the cut only after the pull's last layer (a small image, a busy machine): the pull then
    // completes, as dockerd's does; what it made is removed until nothing comes back
    await until(`pull cut by the client at "${marker}": the pull is over`, async () => {
      await cleanup()
      await tick(250)
      return JSON.stringify(await imageIds()) === JSON.stringify(baseline)
    }, 20_000)
    await assertHealthy(`pull cut by the client at "${marker}"`)
  }
  // the registry corrupts each blob at several points (an error in the middle of a layer's entries), the client
  // reading to the end
  for (const at of [0.1, 0.3, 0.5, 0.8, 0.97]) {
    cut = { at, how: 'corrupt' }
    const got = await cutDownload(pull(proxy.host, 'test/cut2'), ended)
    assert.match(got.toString(), /"error(Detail)?"/, `corrupted at ${at}: the pull reports an error`)
    await cleanup()
    await assertHealthy(`pull corrupted by the registry at ${at}`)
  }
  // the registry resets each blob mid-body; the client goes away while the pull waits to retry, or right as it
  // notices
  for (const at of [0.2, 0.6, 0.95]) {
    cut = { at, how: 'reset' }
    await cutDownload(pull(proxy.host), (got) => got.includes('Retrying in'))
    await cleanup()
    await assertHealthy(`pull reset by the registry at ${at}, client gone at the retry`)
  }
  // and once resumed to the end: the retry (5 s) brings a whole image, which then goes
  cut = { at: 0.5, how: 'reset', times: 1 }
  const whole = await cutDownload(pull(proxy.host), ended)
  assert.match(whole.toString(), /Downloaded newer image/, whole.toString().slice(-400))
  await cleanup()
  await assertHealthy('pull reset by the registry then resumed')
})
