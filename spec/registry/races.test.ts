// The registry under concurrent requests on one object and uploads cut or refused mid-body: a request queued on an
// upload session whose client leaves before its turn, replies sent before the body was read (the client still
// sending must read them before the connection closes), a manifest pushed while it is deleted, one tag pushed by
// many at once, a tag moved while it is pulled, one blob uploaded by many at once (monolithic and in chunks) while it
// is pulled, garbage collection during a push (blobs checked, mounted or uploaded again), a registry killed while it
// writes tags. Every reply is `{"errors":[...]}` or success, never a hang, nothing half-stored, no file left over.
import { test, type TestContext } from 'node:test'
import assert from 'node:assert/strict'
import net from 'node:net'
import { once } from 'node:events'
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { readdirSync, rmSync, utimesSync } from 'node:fs'
import { join } from 'node:path'
import { randomBytes } from 'node:crypto'
import { setTimeout as delay } from 'node:timers/promises'
import { createRegistry } from '../../lib/index.js'
import { MemoryDriver } from '../../lib/registry/storage/memory-driver.js'
import { makeImage, pushBlob, request, sha256, startRegistry, tmpDir, OCI_MANIFEST, type TestRegistry } from './helpers.js'

const MiB = 1024 * 1024
const MAIN = fileURLToPath(new URL('../../lib/cli/main.js', import.meta.url))

function ingest (reg: { dataRoot: string }): string[] {
  return readdirSync(join(reg.dataRoot, 'ingest'))
}

async function connect (port: number): Promise<net.Socket & { got: string }> {
  const s = Object.assign(net.connect(port, '127.0.0.1'), { got: '' })
  s.on('error', () => {}) // connections the registry closes or the test cuts: the tests look at replies
  s.on('data', (d: Buffer) => { s.got += d.toString('latin1') })
  await once(s, 'connect')
  return s
}

/** A promise that fails after `ms` with `what` (a bound on every wait: a hang is a failure, not a stuck run). */
async function within<T> (ms: number, what: string, p: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  try {
    return await Promise.race([p, new Promise<never>((_resolve, reject) => { timer = setTimeout(() => { reject(new Error(`${what}: no answer in ${ms} ms`)) }, ms) })])
  } finally {
    clearTimeout(timer)
  }
}

async function startUpload (reg: TestRegistry, name: string): Promise<string> {
  const r = await request(reg.url, 'POST', `/v2/${name}/blobs/uploads/`)
  assert.equal(r.status, 202, r.text)
  return r.headers.location as string
}

test('a request queued on an upload session whose client leaves before its turn does not hold the session', { timeout: 60_000 }, async (t) => {
  const reg = await startRegistry(t)
  // 100 bytes: read by the registry; 2 MiB: taken by the blob helper when it is built (else read by the registry)
  for (const queuedLength of [100, 2 * MiB]) {
    const loc = await startUpload(reg, 'queue/x')
    const first = await connect(reg.port)
    first.write(`PATCH ${loc} HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\nContent-Range: 0-999\r\n\r\n`)
    first.write(Buffer.alloc(10, 1)) // holds the session while the rest does not come
    await delay(150)
    const queued = await connect(reg.port)
    queued.write(`PATCH ${loc} HTTP/1.1\r\nHost: x\r\nContent-Length: ${queuedLength}\r\n\r\n`)
    queued.write(Buffer.alloc(50, 2))
    await delay(150)
    queued.destroy() // gone while waiting for its turn
    await delay(100)
    first.write(Buffer.alloc(990, 1))
    await within(5000, 'the first PATCH', (async () => { while (!/\r\n\r\n/.test(first.got)) await delay(20) })())
    assert.match(first.got, /^HTTP\/1\.1 202 /)
    first.destroy()
    // before: every later request on the session waited forever (and the idle sweep never cancelled it)
    const next = await within(5000, 'a PATCH after the queued one left', request(reg.url, 'PATCH', loc, { body: Buffer.alloc(5, 3) }))
    assert.equal(next.status, 202, next.text)
    assert.equal(next.headers.range, '0-1004', 'the session holds the first PATCH and this one, nothing of the one that left')
    const cancel = await within(5000, 'cancelling the session', request(reg.url, 'DELETE', loc))
    assert.equal(cancel.status, 204)
  }
  assert.deepEqual(ingest(reg), [], 'no upload file left')
})

/**
 * Sends `head` and then `bodyBytes` as fast as the connection takes them, reading all the while (as Go's and Node's
 * clients do); returns what arrived before the connection closed, and how it closed.
 */
async function sendingClient (port: number, head: string, bodyBytes: number): Promise<{ got: string, error: string | null }> {
  const s = await connect(port)
  let error: string | null = null
  s.on('error', (err: NodeJS.ErrnoException) => { error = err.code ?? err.message })
  const closed = new Promise<void>((resolve) => { s.once('close', () => { resolve() }) }) // events.once would reject on the error
  s.write(head)
  const chunk = Buffer.alloc(64 * 1024, 7)
  let left = bodyBytes
  const pump = (): void => {
    while (left > 0 && !s.destroyed) {
      left -= chunk.length
      if (!s.write(chunk, () => {})) { s.once('drain', pump); return }
    }
  }
  pump()
  await within(10_000, 'the connection closing after the reply', closed)
  return { got: s.got, error }
}

/** `berth registry` in a process of its own over `dataRoot` (a client in the registry's own process reads its replies
 * too soon); stopped (SIGTERM) at the test's end if still running. */
async function spawnRegistry (t: TestContext, dataRoot: string, args: string[] = []): Promise<{ child: ChildProcess, port: number }> {
  const child = spawn(process.execPath, [MAIN, 'registry', '--listen', '127.0.0.1:0', '--data-root', dataRoot, ...args], { stdio: ['ignore', 'ignore', 'pipe'] })
  t.after(async () => {
    if (child.exitCode === null && child.signalCode === null) { child.kill('SIGTERM'); await within(10_000, 'the registry stopping', once(child, 'exit')) }
  })
  let stderr = ''
  const port = await within(20_000, 'the registry starting', new Promise<number>((resolve, reject) => {
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString()
      const m = /listening on tcp:\/\/127\.0\.0\.1:(\d+)/.exec(stderr)
      if (m !== null) resolve(Number(m[1]))
    })
    child.once('exit', () => { reject(new Error(`exited: ${stderr}`)) })
  }))
  return { child, port }
}

async function registryProcess (t: TestContext, args: string[]): Promise<{ port: number, dataRoot: string }> {
  const dir = tmpDir()
  const dataRoot = join(dir, 'data')
  const { child, port } = await spawnRegistry(t, dataRoot, args)
  t.after(async () => {
    if (child.exitCode === null && child.signalCode === null) { child.kill('SIGTERM'); await within(10_000, 'the registry stopping', once(child, 'exit')) }
    rmSync(dir, { recursive: true, force: true })
  })
  return { port, dataRoot }
}

test('a refused upload whose client is still sending its body gets the reply before the connection closes', { timeout: 60_000 }, async (t) => {
  const reg = await registryProcess(t, ['--max-blob-size', String(4 * MiB)])
  const total = 8 * MiB
  const cases: Array<[string, string, number, string]> = [
    ['PATCH to an unknown upload', `PATCH /v2/refuse/x/blobs/uploads/01234567-89ab-cdef-0123-456789abcdef`, 404, 'BLOB_UPLOAD_UNKNOWN'],
    ['a manifest under an invalid name', 'PUT /v2/Refuse/manifests/latest', 400, 'NAME_INVALID'],
    ['a monolithic blob over the maximum', `POST /v2/refuse/x/blobs/uploads/?digest=sha256:${'0'.repeat(64)}`, 413, 'SIZE_INVALID']
  ]
  for (const [what, line, status, code] of cases) {
    for (let round = 0; round < 3; round++) {
      const { got, error } = await sendingClient(reg.port, `${line} HTTP/1.1\r\nHost: x\r\nContent-Length: ${total}\r\n\r\n`, total)
      // before: the connection was closed with the body unread right after the reply went out; the reset reached the
      // client before it read the reply (EPIPE, no reply, every time)
      assert.ok(got.startsWith(`HTTP/1.1 ${status} `), `${what}, round ${round}: the reply (${error ?? 'closed'}): ${JSON.stringify(got.slice(0, 120))}`)
      assert.match(got, /\r\nConnection: close\r\n/i)
      const body = JSON.parse(got.slice(got.indexOf('\r\n\r\n') + 4)) as { errors: Array<{ code: string }> }
      assert.equal(body.errors[0]?.code, code)
    }
  }
  assert.equal((await request(`http://127.0.0.1:${reg.port}`, 'GET', '/v2/')).status, 200)
  assert.deepEqual(ingest(reg), [])
})

test('a manifest pushed while it is deleted: its tag and its manifest stay together', { timeout: 60_000 }, async (t) => {
  const reg = await startRegistry(t)
  const img = makeImage({ layers: 1 })
  for (const b of [img.config, ...img.layers]) assert.equal((await pushBlob(reg.url, 'race/m', b)).status, 201)
  const put = async (ref: string): Promise<number> => (await request(reg.url, 'PUT', `/v2/race/m/manifests/${ref}`, { body: img.manifest, headers: { 'Content-Type': OCI_MANIFEST } })).status
  for (let i = 0; i < 12; i++) {
    assert.equal(await put(`old${i}`), 201)
    const [deleted, pushed] = await Promise.all([request(reg.url, 'DELETE', `/v2/race/m/manifests/${img.digest}`), put(`new${i}`)])
    assert.equal(deleted.status, 202, deleted.text)
    assert.equal(pushed, 201)
    // either the delete came first (the manifest is back, tagged new) or the push did (both are gone): before, the
    // tag new<i> stayed listed while its manifest was gone (GET 404 MANIFEST_UNKNOWN) in most rounds
    const get = await request(reg.url, 'GET', `/v2/race/m/manifests/new${i}`, { headers: { Accept: OCI_MANIFEST } })
    const tags = (await request(reg.url, 'GET', '/v2/race/m/tags/list')).json() as { tags: string[] }
    assert.equal(get.status === 200, tags.tags.includes(`new${i}`), `round ${i}: GET new${i} ${get.status} ${get.text}, listed: ${tags.tags.includes(`new${i}`)}`)
    assert.ok(!tags.tags.includes(`old${i}`), 'the tag of the deleted manifest went with it')
    if (get.status === 200) assert.equal(sha256(get.body), img.digest)
  }
})

test('one tag pushed by many at once, and moved while it is pulled: every pull whole, the same tag after a restart', { timeout: 60_000 }, async (t) => {
  const dir = tmpDir()
  const dataRoot = join(dir, 'data')
  let reg = await createRegistry({ listen: '127.0.0.1:0', dataRoot })
  t.after(async () => { await reg.close(); rmSync(dir, { recursive: true, force: true }) })
  const imgs = Array.from({ length: 6 }, () => makeImage({ layers: 1 }))
  for (const img of imgs) for (const b of [img.config, ...img.layers]) assert.equal((await pushBlob(reg.url, 'race/t', b)).status, 201)
  const put = async (img: typeof imgs[number]): Promise<number> => (await request(reg.url, 'PUT', '/v2/race/t/manifests/moving', { body: img.manifest, headers: { 'Content-Type': OCI_MANIFEST } })).status
  assert.deepEqual(await Promise.all(imgs.map(put)), imgs.map(() => 201))
  let stop = false
  const bad: string[] = []
  const pull = async (): Promise<void> => {
    while (!stop) {
      const r = await request(reg.url, 'GET', '/v2/race/t/manifests/moving', { headers: { Accept: OCI_MANIFEST } })
      if (r.status !== 200 || sha256(r.body) !== r.headers['docker-content-digest'] || !imgs.some((i) => i.digest === sha256(r.body))) bad.push(`${r.status} ${r.text.slice(0, 100)}`)
    }
  }
  const pulls = [pull(), pull()]
  for (let i = 0; i < 4; i++) assert.deepEqual(await Promise.all(imgs.map(put)), imgs.map(() => 201))
  stop = true
  await Promise.all(pulls)
  assert.deepEqual(bad, [])
  const before = (await request(reg.url, 'HEAD', '/v2/race/t/manifests/moving')).headers['docker-content-digest']
  await reg.close()
  reg = await createRegistry({ listen: '127.0.0.1:0', dataRoot })
  const after = (await request(reg.url, 'HEAD', '/v2/race/t/manifests/moving')).headers['docker-content-digest']
  assert.equal(after, before, 'the index and the disk agree on where the tag points')
})

test('one blob uploaded by many at once, monolithic and in chunks, while it is pulled: all 201, the blob whole', { timeout: 60_000 }, async (t) => {
  const reg = await startRegistry(t)
  const chunked = async (name: string, data: Buffer): Promise<number> => {
    let loc = await startUpload(reg, name)
    const step = Math.ceil(data.length / 3)
    for (let at = 0; at < data.length; at += step) {
      const part = data.subarray(at, at + step)
      const r = await request(reg.url, 'PATCH', loc, { body: part, headers: { 'Content-Range': `${at}-${at + part.length - 1}` } })
      if (r.status !== 202) return r.status
      loc = r.headers.location as string
    }
    return (await request(reg.url, 'PUT', `${loc}${loc.includes('?') ? '&' : '?'}digest=${sha256(data)}`)).status
  }
  for (const size of [200 * 1024, 6 * MiB]) {
    const data = randomBytes(size)
    const digest = sha256(data)
    const pulls: string[] = []
    const jobs: Array<Promise<unknown>> = []
    for (let i = 0; i < 3; i++) jobs.push(pushBlob(reg.url, `same/r${i % 2}`, data).then((r) => { assert.equal(r.status, 201, r.text) }))
    for (let i = 0; i < 3; i++) jobs.push(chunked(`same/r${i % 2}`, data).then((s) => { assert.equal(s, 201) }))
    for (let i = 0; i < 4; i++) {
      jobs.push(delay(10 * i).then(async () => await request(reg.url, 'GET', `/v2/same/r${i % 2}/blobs/${digest}`)).then((r) => {
        if (r.status === 200 && sha256(r.body) !== digest) pulls.push('a partial or foreign body')
        else if (r.status !== 200 && r.status !== 404) pulls.push(`${r.status} ${r.text}`)
      }))
    }
    await within(30_000, 'the uploads', Promise.all(jobs))
    assert.deepEqual(pulls, [], 'a pull is whole or BLOB_UNKNOWN')
    for (const name of ['same/r0', 'same/r1']) {
      const r = await request(reg.url, 'GET', `/v2/${name}/blobs/${digest}`)
      assert.equal(r.status, 200)
      assert.equal(sha256(r.body), digest)
    }
  }
  assert.deepEqual(ingest(reg), [])
})

test('garbage collection during a push spares what the push was told is there: a blob it checked, a blob it mounted', { timeout: 60_000 }, async (t) => {
  const reg = await startRegistry(t)
  const base = makeImage({ layers: 1 })
  const put = async (name: string, img: typeof base): Promise<{ status: number, text: string }> =>
    await request(reg.url, 'PUT', `/v2/${name}/manifests/latest`, { body: img.manifest, headers: { 'Content-Type': OCI_MANIFEST } })
  // an image pushed long ago whose manifest was deleted since: its blobs are unreferenced and past the grace period
  for (const b of [base.config, ...base.layers]) assert.equal((await pushBlob(reg.url, 'gc/old', b)).status, 201)
  const aged = (): void => {
    const then = new Date(Date.now() - 2 * 3600_000)
    for (const b of [base.config, ...base.layers]) utimesSync(join(reg.dataRoot, 'blobs', 'sha256', sha256(b).slice(7)), then, then)
  }
  aged()
  // a push into the same repository checks its blobs (docker push and skopeo HEAD them) and does not upload them
  for (const b of [base.config, ...base.layers]) assert.equal((await request(reg.url, 'HEAD', `/v2/gc/old/blobs/${sha256(b)}`)).status, 200)
  const first = await reg.registry.gc()
  assert.equal(first.deleted.length, 0, 'blobs a push was just told exist are spared')
  const pushed = await put('gc/old', base)
  // before: the collection deleted them between the push's check and its manifest (400 MANIFEST_BLOB_UNKNOWN)
  assert.equal(pushed.status, 201, pushed.text)
  // a push into another repository mounts them from there
  assert.equal((await request(reg.url, 'DELETE', `/v2/gc/old/manifests/${base.digest}`)).status, 202)
  aged()
  for (const b of [base.config, ...base.layers]) {
    const m = await request(reg.url, 'POST', `/v2/gc/new/blobs/uploads/?mount=${sha256(b)}&from=gc/old`)
    assert.equal(m.status, 201, m.text)
  }
  assert.equal((await reg.registry.gc()).deleted.length, 0, 'mounted blobs are spared')
  const mounted = await put('gc/new', base)
  assert.equal(mounted.status, 201, mounted.text)
  // what no push touched goes after the grace period as before
  assert.equal((await request(reg.url, 'DELETE', `/v2/gc/new/manifests/${base.digest}`)).status, 202)
  aged()
  assert.equal((await reg.registry.gc()).deleted.length, 1 + base.layers.length)
})

/** The in-memory driver with a gate in deleteBlob: a garbage collection can be held at the moment it deletes. */
class GatedDriver extends MemoryDriver {
  private gate: Promise<void> | null = null
  private open: () => void = () => {}
  reached: Promise<string>
  private reach: (digest: string) => void = () => {}
  constructor () {
    super()
    this.reached = new Promise((resolve) => { this.reach = resolve })
  }

  hold (): void { this.gate = new Promise((resolve) => { this.open = resolve }) }
  release (): void { this.gate = null; this.open() }
  override async deleteBlob (digest: string): Promise<void> {
    this.reach(digest)
    if (this.gate !== null) await this.gate
    await super.deleteBlob(digest)
  }
}

test('a blob uploaded again while a garbage collection deletes its older copy stays: its upload is answered with the blob there', { timeout: 60_000 }, async (t) => {
  const driver = new GatedDriver()
  const reg = await startRegistry(t, { driver })
  const blob = randomBytes(4096)
  const digest = sha256(blob)
  assert.equal((await pushBlob(reg.url, 'gc/again', blob)).status, 201) // no manifest: unreferenced
  driver.hold()
  const collecting = reg.registry.gc({ gracePeriod: 0 })
  assert.equal(await within(5000, 'the collection reaching the blob', driver.reached), digest)
  // the client pushes the same blob again meanwhile (docker push after its HEAD said 404, skopeo, a retry)
  const again = pushBlob(reg.url, 'gc/again', blob)
  const chunkedAgain = (async () => {
    const loc = await startUpload(reg, 'gc/again2')
    return await request(reg.url, 'PUT', `${loc}${loc.includes('?') ? '&' : '?'}digest=${digest}`, { body: blob })
  })()
  await delay(200)
  driver.release()
  await within(5000, 'the collection', collecting)
  const [mono, chunked] = await within(5000, 'the uploads', Promise.all([again, chunkedAgain]))
  assert.equal(mono.status, 201, mono.text)
  assert.equal(chunked.status, 201, chunked.text)
  // before: the upload committed and linked while the collection waited, and the collection then deleted it: 201,
  // then 404 BLOB_UNKNOWN for a blob the repository links
  for (const name of ['gc/again', 'gc/again2']) {
    const get = await request(reg.url, 'GET', `/v2/${name}/blobs/${digest}`)
    assert.equal(get.status, 200, `${name}: ${get.text}`)
    assert.ok(get.body.equals(blob))
  }
})

/** Every file under `dir`, recursively. */
function filesUnder (dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true }).filter((e) => e.isFile()).map((e) => join(e.parentPath ?? e.path, e.name))
}

test('a registry killed (-9) while it writes tags leaves no temp file beside its documents and starts with every tag it answered', { timeout: 60_000 }, async (t) => {
  const dir = tmpDir()
  const dataRoot = join(dir, 'data')
  const children: ChildProcess[] = []
  t.after(async () => {
    for (const child of children) {
      if (child.exitCode === null && child.signalCode === null) { child.kill('SIGTERM'); await within(10_000, 'the registry stopping', once(child, 'exit')) }
    }
    rmSync(dir, { recursive: true, force: true })
  })
  const img = makeImage({ layers: 1 })
  const answered = new Set<string>()
  const leftovers = new Set<string>()
  for (let round = 0; round < 10; round++) {
    const { child, port } = await spawnRegistry(t, dataRoot)
    children.push(child)
    const base = `http://127.0.0.1:${port}`
    if (round === 0) for (const b of [img.config, ...img.layers]) assert.equal((await pushBlob(base, 'crash/tags', b)).status, 201)
    let stop = false
    const writers = [0, 1].map(async (w) => {
      for (let i = 0; !stop; i++) {
        const tag = `r${round}w${w}t${i % 20}`
        const r = await request(base, 'PUT', `/v2/crash/tags/manifests/${tag}`, { body: img.manifest, headers: { 'Content-Type': OCI_MANIFEST } }).catch(() => null)
        if (r === null) return
        if (r.status === 201) answered.add(tag)
      }
    })
    await delay(60 + (round * 37) % 120)
    child.kill('SIGKILL')
    await once(child, 'exit')
    stop = true
    await Promise.all(writers)
    for (const f of filesUnder(join(dataRoot, 'repositories'))) if (f.endsWith('.tmp')) leftovers.add(f)
  }
  // before: a kill in the middle of a document's write left its temp file in repositories/ for good (a start never
  // removed it): several in ten kills
  assert.deepEqual([...leftovers], [], 'no temp file beside the documents')
  const { child, port } = await spawnRegistry(t, dataRoot)
  children.push(child)
  assert.deepEqual(ingest({ dataRoot }), [], 'a start empties the ingest area')
  const tags = (await request(`http://127.0.0.1:${port}`, 'GET', '/v2/crash/tags/tags/list')).json() as { tags: string[] }
  for (const tag of answered) assert.ok(tags.tags.includes(tag), `tag ${tag} was answered 201 before the kill`)
  assert.ok(answered.size > 10, `the writers got going (${answered.size} tags)`)
})

test('a HEAD that cannot mark its blob as used (an immutable file) still answers 200', { timeout: 60_000 }, async (t) => {
  const reg = await startRegistry(t)
  const blob = randomBytes(100)
  assert.equal((await pushBlob(reg.url, 'ro/x', blob)).status, 201)
  const file = join(reg.dataRoot, 'blobs', 'sha256', sha256(blob).slice(7))
  const immutable = spawnSync('chattr', ['+i', file])
  if (immutable.error !== undefined || immutable.status !== 0) { t.skip(`chattr +i not available here: ${immutable.error?.message ?? immutable.stderr.toString().trim()}`); return }
  try {
    // before: the mark's EPERM made the HEAD a 500 UNKNOWN
    const head = await request(reg.url, 'HEAD', `/v2/ro/x/blobs/${sha256(blob)}`)
    assert.equal(head.status, 200)
    assert.equal((await request(reg.url, 'GET', `/v2/ro/x/blobs/${sha256(blob)}`)).body.equals(blob), true)
  } finally {
    spawnSync('chattr', ['-i', file]) // before the registry's own cleanup removes its tree
  }
})
