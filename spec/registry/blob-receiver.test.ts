// Large upload bodies received by berth-blob-sender (the connection handed over once Node's parser has read the
// head and a first part of the body; the helper reads, hashes and appends the rest): curl's PATCH and PUT, chunks
// with Content-Range resuming the helper's hash, a chunked body between them (read by the registry, which hashes the
// file again), bodies shorter and longer than announced, a reset mid-body, concurrent uploads, a body that stops
// (408 after the idle timeout), closing the registry mid-upload. Raw sockets where the bytes on the wire matter.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import net from 'node:net'
import http from 'node:http'
import { once } from 'node:events'
import { execFile } from 'node:child_process'
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { randomBytes } from 'node:crypto'
import { promisify } from 'node:util'
import { setTimeout as delay } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'
import { request, sha256, startRegistry, type TestRegistry } from './helpers.js'
import { dockerCli, hasDockerCli, startEngine } from '../helpers/engine.js'
import { busyboxWith } from '../helpers/tar.js'
import { layoutDigest, writeOciLayout } from './oci-layout.js'
import { childrenRunning, socketsOf } from '../helpers/helper-procs.js'

const run = promisify(execFile)
const HELPER = join(fileURLToPath(new URL('../../../', import.meta.url)), 'dist', 'berth-blob-sender')
const MiB = 1024 * 1024
const skip = existsSync(HELPER) ? false : 'dist/berth-blob-sender not built (no C compiler)'

function which (cmd: string): boolean {
  return (process.env.PATH ?? '').split(':').some((d) => d !== '' && existsSync(join(d, cmd)))
}

/** This process's children running the helper. */
function helpers (): number[] { return childrenRunning(HELPER) }

async function connect (port: number): Promise<net.Socket> {
  const s = net.connect(port, '127.0.0.1')
  s.on('error', () => {}) // a connection the registry resets or closes mid-body: the tests look at replies and uploads
  await once(s, 'connect')
  return s
}

interface RawReply { head: string, status: number, body: string, closed: boolean }

/** The first reply on `s` (a Content-Length body), once the server closed the connection (or, `first`, once the
 * reply is in: the connection is then destroyed). */
async function replyOf (s: net.Socket, first = false): Promise<RawReply> {
  let buf = Buffer.alloc(0)
  const whole = (): boolean => {
    const end = buf.indexOf('\r\n\r\n')
    return end > 0 && buf.length >= end + 4 + Number(/\r\ncontent-length: *(\d+)/i.exec(buf.subarray(0, end).toString('latin1'))?.[1] ?? '0')
  }
  await new Promise<void>((resolve) => {
    s.on('data', (d: Buffer) => { buf = Buffer.concat([buf, d]); if (first && whole()) { s.destroy(); resolve() } })
    s.once('close', () => { resolve() })
    s.once('error', () => { resolve() })
  })
  const end = buf.indexOf('\r\n\r\n')
  assert.ok(end > 0, `a reply: ${buf.toString('latin1').slice(0, 200)}`)
  const head = buf.subarray(0, end).toString('latin1')
  const length = Number(/\r\ncontent-length: *(\d+)/i.exec(head)?.[1] ?? '0')
  return { head, status: Number(head.slice(9, 12)), body: buf.subarray(end + 4, end + 4 + length).toString(), closed: true }
}

/** A request on a keep-alive connection (the helpers' request() asks for Connection: close). */
async function keptAlive (reg: TestRegistry, method: string, path: string, body: Buffer | Buffer[], headers: Record<string, string> = {}): Promise<{ status: number, headers: http.IncomingHttpHeaders }> {
  const agent = new http.Agent({ keepAlive: true })
  try {
    return await new Promise((resolve, reject) => {
      const u = new URL(reg.url)
      const req = http.request({ host: u.hostname, port: u.port, method, path, agent, headers: { 'Content-Type': 'application/octet-stream', ...headers } }, (res) => {
        res.resume()
        res.on('end', () => { resolve({ status: res.statusCode ?? 0, headers: res.headers }) })
      })
      req.on('error', reject)
      const parts = Array.isArray(body) ? body : [body]
      for (const p of parts.slice(0, -1)) req.write(p)
      req.end(parts[parts.length - 1])
    })
  } finally {
    agent.destroy()
  }
}

async function startUpload (reg: TestRegistry, name: string): Promise<string> {
  const r = await request(reg.url, 'POST', `/v2/${name}/blobs/uploads/`)
  assert.equal(r.status, 202)
  return r.headers.location as string
}

/** The upload's size as the registry reports it (Range: 0-<last byte>; every upload here has more than one). */
async function uploadedSize (reg: TestRegistry, loc: string): Promise<number> {
  const r = await request(reg.url, 'GET', loc)
  assert.equal(r.status, 204)
  const m = /^0-(\d+)$/.exec(String(r.headers.range))
  assert.ok(m !== null, String(r.headers.range))
  return Number(m[1]) + 1
}

async function putDigest (reg: TestRegistry, loc: string, data: Buffer): Promise<http.IncomingHttpHeaders> {
  const r = await request(reg.url, 'PUT', `${loc}${loc.includes('?') ? '&' : '?'}digest=${sha256(data)}`)
  assert.equal(r.status, 201, r.text)
  return r.headers
}

async function blobIs (reg: TestRegistry, name: string, data: Buffer): Promise<void> {
  const r = await request(reg.url, 'GET', `/v2/${name}/blobs/${sha256(data)}`)
  assert.equal(r.status, 200)
  assert.ok(r.body.equals(data), 'the stored blob is the bytes sent')
}

test('curl PATCH and PUT bodies go through the helper and the connection is closed after the reply', { skip: skip === false && !which('curl') ? 'curl not installed' : skip }, async (t) => {
  const reg = await startRegistry(t)
  const data = randomBytes(5 * MiB + 12345)
  const file = join(reg.dir, 'layer')
  writeFileSync(file, data)
  const loc = await startUpload(reg, 'curl/one')
  const { stdout } = await run('curl', ['-sS', '-D', '-', '-o', '/dev/null', '-X', 'PATCH', '-H', 'Content-Type: application/octet-stream', '--data-binary', `@${file}`, `${reg.url}${loc}`])
  assert.match(stdout, /^(?:HTTP\/1\.1 100 Continue\r\n\r\n)?HTTP\/1\.1 202/) // curl asks for 100-continue first
  assert.match(stdout, /\r\nconnection: close\r\n/i, 'a body the helper took ends its connection')
  assert.match(stdout, new RegExp(`\\r\\nrange: 0-${data.length - 1}\\r\\n`, 'i'))
  assert.equal(helpers().length, 1, 'the helper runs (no blob was served: it was started to receive)')
  await putDigest(reg, loc, data)
  await blobIs(reg, 'curl/one', data)
  // PUT with the last bytes as its body (Content-Length), the whole blob in one monolithic POST
  const two = randomBytes(3 * MiB)
  writeFileSync(file, two)
  const loc2 = await startUpload(reg, 'curl/two')
  const put = await run('curl', ['-sS', '-o', '/dev/null', '-w', '%{http_code}', '-X', 'PUT', '--data-binary', `@${file}`, `${reg.url}${loc2}?digest=${sha256(two)}`])
  assert.equal(put.stdout, '201')
  await blobIs(reg, 'curl/two', two)
  const mono = await run('curl', ['-sS', '-o', '/dev/null', '-w', '%{http_code}', '-X', 'POST', '--data-binary', `@${file}`, `${reg.url}/v2/curl/three/blobs/uploads/?digest=${sha256(two)}`])
  assert.equal(mono.stdout, '201')
  await blobIs(reg, 'curl/three', two)
  const wrong = await run('curl', ['-sS', '-w', '\n%{http_code}', '-X', 'POST', '--data-binary', `@${file}`, `${reg.url}/v2/curl/four/blobs/uploads/?digest=${sha256('other')}`])
  assert.match(wrong.stdout, /DIGEST_INVALID[\s\S]*\n400$/)
  for (const pid of helpers()) assert.equal(socketsOf(pid), 0, 'the helper holds no connection once done')
  const ingest = readdirSync(join(reg.dataRoot, 'ingest'))
  assert.deepEqual(ingest, [], 'nothing left in the ingest area')
  assert.equal(statSync(join(reg.dataRoot, 'blobs', 'sha256', sha256(data).slice(7))).mode & 0o777, 0o600)
})

test('chunks with Content-Range: the helper resumes its hash, a chunked body in between is read by the registry', { skip }, async (t) => {
  const reg = await startRegistry(t)
  const parts = [randomBytes(2 * MiB + 1), randomBytes(3 * MiB), randomBytes(20_000), randomBytes(2 * MiB - 7), randomBytes(MiB + 3)]
  const data = Buffer.concat(parts)
  const loc = await startUpload(reg, 'chunks/x')
  let at = 0
  for (const [i, part] of parts.entries()) {
    let r
    if (i === 2) {
      // a chunked body whole in the read that carries its head: the registry reads it, hashing the file again first
      const s = await connect(reg.port)
      s.write(Buffer.concat([Buffer.from(`PATCH ${loc} HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n${part.length.toString(16)}\r\n`), part, Buffer.from('\r\n0\r\n\r\n')]))
      const reply = await replyOf(s, true)
      assert.doesNotMatch(reply.head, /\r\nConnection: close/i, 'a body read by the registry keeps its connection')
      r = { status: reply.status, headers: { range: /\r\nRange: (\S+)/i.exec(reply.head)?.[1] } as http.IncomingHttpHeaders }
    } else {
      r = await keptAlive(reg, 'PATCH', loc, part, { 'Content-Range': `${at}-${at + part.length - 1}`, 'Content-Length': String(part.length) })
      assert.equal(r.headers.connection, 'close')
    }
    assert.equal(r.status, 202)
    at += part.length
    assert.equal(r.headers.range, `0-${at - 1}`)
  }
  // an out-of-order chunk is refused before anything is read
  const late = await request(reg.url, 'PATCH', loc, { body: randomBytes(2 * MiB), headers: { 'Content-Range': `5-${5 + 2 * MiB - 1}` } })
  assert.equal(late.status, 416)
  assert.equal(await uploadedSize(reg, loc), data.length)
  await putDigest(reg, loc, data)
  await blobIs(reg, 'chunks/x', data)
})

/** Sends a PATCH head announcing `announced` bytes and then `body`; returns the socket (still open). */
async function patchRaw (reg: TestRegistry, loc: string, announced: number, body: Buffer): Promise<net.Socket> {
  const s = await connect(reg.port)
  s.write(`PATCH ${loc} HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\nContent-Length: ${announced}\r\n\r\n`)
  s.write(body)
  return s
}

test('a body shorter than announced: distribution\'s 499 reply, the upload keeps what arrived and goes on from there', { skip }, async (t) => {
  const reg = await startRegistry(t)
  const data = randomBytes(4 * MiB)
  const loc = await startUpload(reg, 'short/x')
  const s = await patchRaw(reg, loc, data.length, data.subarray(0, 3 * MiB + 5))
  await delay(200)
  s.end() // the client stops sending with a quarter of the body missing; it can still read (half-close.test.ts)
  const reply = await replyOf(s)
  assert.equal(reply.status, 499)
  assert.equal(JSON.parse(reply.body).errors[0].detail, 'client disconnected')
  let size = 0
  for (let i = 0; i < 50; i++) { size = await uploadedSize(reg, loc); if (size === 3 * MiB + 5) break; await delay(50) }
  assert.equal(size, 3 * MiB + 5, 'every byte that arrived was written')
  const rest = await request(reg.url, 'PATCH', loc, { body: data.subarray(size), headers: { 'Content-Range': `${size}-${data.length - 1}` } })
  assert.equal(rest.status, 202)
  await putDigest(reg, loc, data)
  await blobIs(reg, 'short/x', data)
})

test('a body longer than announced: exactly the announced bytes are taken, the rest is never read as a request', { skip }, async (t) => {
  const reg = await startRegistry(t)
  const data = randomBytes(2 * MiB)
  const loc = await startUpload(reg, 'long/x')
  const s = await patchRaw(reg, loc, data.length, Buffer.concat([data, Buffer.from(`GET /v2/ HTTP/1.1\r\nHost: x\r\n\r\n`), randomBytes(1000)]))
  const reply = await replyOf(s)
  assert.equal(reply.status, 202)
  assert.match(reply.head, /\r\nConnection: close/i)
  assert.match(reply.head, new RegExp(`\\r\\nRange: 0-${data.length - 1}`, 'i'))
  await putDigest(reg, loc, data)
  await blobIs(reg, 'long/x', data)
})

test('a PATCH pipelined behind a large blob GET on one connection is read by the registry, in order', { skip }, async (t) => {
  const reg = await startRegistry(t)
  const blob = randomBytes(3 * MiB)
  assert.equal((await request(reg.url, 'POST', `/v2/pipe/x/blobs/uploads/?digest=${sha256(blob)}`, { body: blob })).status, 201)
  const data = randomBytes(2 * MiB)
  const loc = await startUpload(reg, 'pipe/x')
  const s = await connect(reg.port)
  let buf = Buffer.alloc(0)
  s.on('data', (d: Buffer) => { buf = Buffer.concat([buf, d]) })
  s.write(`GET /v2/pipe/x/blobs/${sha256(blob)} HTTP/1.1\r\nHost: x\r\n\r\nPATCH ${loc} HTTP/1.1\r\nHost: x\r\nContent-Length: ${data.length}\r\n\r\n`)
  s.write(data)
  const second = (): number => { const i = buf.indexOf('\r\n\r\n'); return i < 0 ? -1 : buf.indexOf('HTTP/1.1 202', i + 4 + blob.length) }
  for (let i = 0; i < 100 && second() < 0; i++) await delay(50)
  const head = buf.subarray(0, buf.indexOf('\r\n\r\n')).toString('latin1')
  assert.match(head, /^HTTP\/1\.1 200/)
  assert.ok(buf.subarray(head.length + 4, head.length + 4 + blob.length).equals(blob), 'the blob first, whole')
  assert.ok(second() > 0, 'then the PATCH reply')
  const reply = buf.subarray(second()).toString('latin1')
  assert.doesNotMatch(reply, /\r\nConnection: close/i, 'a body read by the registry keeps the connection')
  s.destroy()
  await putDigest(reg, loc, data)
  await blobIs(reg, 'pipe/x', data)
})

/** A chunked request head. */
function chunkedHead (loc: string, extra = ''): string {
  return `PATCH ${loc} HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\nTransfer-Encoding: chunked\r\n${extra}\r\n`
}

test('chunked bodies go through the helper: curl, and framing split anywhere across reads with extensions and trailers', { skip: skip === false && !which('curl') ? 'curl not installed' : skip }, async (t) => {
  const reg = await startRegistry(t)
  const data = randomBytes(3 * MiB + 333)
  const file = join(reg.dir, 'layer')
  writeFileSync(file, data)
  const loc = await startUpload(reg, 'chunked/curl')
  const { stdout } = await run('curl', ['-sS', '-D', '-', '-o', '/dev/null', '-X', 'PATCH', '-H', 'Transfer-Encoding: chunked', '--data-binary', `@${file}`, `${reg.url}${loc}`])
  assert.match(stdout, /HTTP\/1\.1 202/)
  assert.match(stdout, /\r\nconnection: close\r\n/i, 'the helper took it')
  await putDigest(reg, loc, data)
  await blobIs(reg, 'chunked/curl', data)

  // chunks of odd sizes, each sent in pieces (a size line, a CRLF, data cut anywhere), extensions, a trailer
  const two = randomBytes(2 * MiB + 5)
  const loc2 = await startUpload(reg, 'chunked/raw')
  const s = await connect(reg.port)
  const pieces: Buffer[] = [Buffer.from(chunkedHead(loc2)), Buffer.from('4000\r\n'), two.subarray(0, 0x4000), Buffer.from('\r\n')]
  let off = 0x4000
  let n = 0
  while (off < two.length) {
    const size = Math.min(two.length - off, [1, 7, 65536, 100_003, 300_000][n++ % 5] as number)
    const line = Buffer.from(`${size.toString(16)}${n % 3 === 0 ? ';name=value' : ''}\r\n`)
    pieces.push(line.subarray(0, 1), line.subarray(1), two.subarray(off, off + Math.ceil(size / 2)), two.subarray(off + Math.ceil(size / 2), off + size), Buffer.from('\r'), Buffer.from('\n'))
    off += size
  }
  pieces.push(Buffer.from('0\r\nX-Checksum: none\r\n\r\n'))
  s.write(pieces[0] as Buffer)
  s.write(Buffer.concat(pieces.slice(1, 4)))
  await delay(100) // the helper holds the connection from here
  for (const p of pieces.slice(4)) { if (p.length > 0) s.write(p); if (p.length < 8) await delay(1) }
  const reply = await replyOf(s)
  assert.equal(reply.status, 202, reply.body)
  assert.match(reply.head, /\r\nConnection: close/i)
  assert.match(reply.head, new RegExp(`\\r\\nRange: 0-${two.length - 1}`, 'i'))
  await putDigest(reg, loc2, two)
  await blobIs(reg, 'chunked/raw', two)
})

test('chunked bodies in the helper keep the limits: framing errors, a chunk longer than its range, the blob maximum', { skip }, async (t) => {
  const reg = await startRegistry(t, { maxBlobSize: 3 * MiB })
  const data = randomBytes(2 * MiB)
  // malformed framing after the hand-over: 400 BLOB_UPLOAD_INVALID, the data before it kept
  const loc = await startUpload(reg, 'limits/bad')
  let s = await connect(reg.port)
  s.write(chunkedHead(loc) + '100000\r\n')
  await delay(100)
  s.write(Buffer.concat([data.subarray(0, 0x100000), Buffer.from('\r\nzz\r\n')]))
  let reply = await replyOf(s)
  assert.equal(reply.status, 400, reply.body)
  assert.equal(JSON.parse(reply.body).errors[0].code, 'BLOB_UPLOAD_INVALID')
  assert.equal(await uploadedSize(reg, loc), 0x100000)
  // longer than its Content-Range: SIZE_INVALID, nothing past the range written
  const loc2 = await startUpload(reg, 'limits/range')
  s = await connect(reg.port)
  s.write(chunkedHead(loc2, `Content-Range: 0-${MiB - 1}\r\n`) + '1000\r\n')
  await delay(100)
  for (let off = 0; off < data.length; off += 0x1000) s.write(Buffer.concat([data.subarray(off, off + 0x1000), Buffer.from('\r\n1000\r\n')]))
  reply = await replyOf(s)
  assert.equal(reply.status, 400, reply.body)
  assert.equal(JSON.parse(reply.body).errors[0].code, 'SIZE_INVALID')
  assert.ok(await uploadedSize(reg, loc2) <= MiB)
  // past the blob maximum: 413, nothing past it written
  const loc3 = await startUpload(reg, 'limits/max')
  assert.equal((await request(reg.url, 'PATCH', loc3, { body: data, headers: { 'Content-Range': `0-${data.length - 1}` } })).status, 202)
  s = await connect(reg.port)
  s.write(chunkedHead(loc3) + '1000\r\n')
  await delay(100)
  for (let off = 0; off < data.length; off += 0x1000) s.write(Buffer.concat([data.subarray(off, off + 0x1000), Buffer.from('\r\n1000\r\n')]))
  reply = await replyOf(s)
  assert.equal(reply.status, 413, reply.body)
  assert.ok(await uploadedSize(reg, loc3) <= 3 * MiB)
  for (const pid of helpers()) assert.equal(socketsOf(pid), 0)
})

test('a connection reset mid-body: the registry carries on, the helper lets the connection go', { skip }, async (t) => {
  const reg = await startRegistry(t)
  const data = randomBytes(6 * MiB)
  const loc = await startUpload(reg, 'reset/x')
  const s = await patchRaw(reg, loc, data.length, data.subarray(0, 2 * MiB))
  let pid: number | undefined
  for (let i = 0; i < 50; i++) { pid = helpers()[0]; if (pid !== undefined && socketsOf(pid) === 1) break; await delay(50) }
  assert.ok(pid !== undefined && socketsOf(pid) === 1, 'the helper holds the connection')
  s.resetAndDestroy()
  for (let i = 0; i < 50 && socketsOf(pid) > 0; i++) await delay(50)
  assert.equal(socketsOf(pid), 0)
  const size = await uploadedSize(reg, loc)
  assert.ok(size <= 2 * MiB, `${size}`)
  const rest = await request(reg.url, 'PATCH', loc, { body: data.subarray(size), headers: { 'Content-Range': `${size}-${data.length - 1}` } })
  assert.equal(rest.status, 202)
  await putDigest(reg, loc, data)
  await blobIs(reg, 'reset/x', data)
})

test('concurrent uploads into one helper, each its own blob', { skip }, async (t) => {
  const reg = await startRegistry(t)
  const blobs = Array.from({ length: 6 }, (_, i) => randomBytes(2 * MiB + i * 4099))
  await Promise.all(blobs.map(async (data, i) => {
    const loc = await startUpload(reg, `many/r${i % 2}`)
    const half = Math.floor(data.length / 2)
    assert.equal((await request(reg.url, 'PATCH', loc, { body: data.subarray(0, half), headers: { 'Content-Range': `0-${half - 1}` } })).status, 202)
    assert.equal((await request(reg.url, 'PATCH', loc, { body: data.subarray(half), headers: { 'Content-Range': `${half}-${data.length - 1}` } })).status, 202)
    await putDigest(reg, loc, data)
  }))
  for (const [i, data] of blobs.entries()) await blobIs(reg, `many/r${i % 2}`, data)
  assert.equal(helpers().length, 1)
})

test('a body that stops moving gets the registry 408 after the idle timeout, its bytes kept', { skip }, async (t) => {
  const reg = await startRegistry(t, { connectionLimits: { bodyIdleTimeout: 600 } })
  const data = randomBytes(3 * MiB)
  const loc = await startUpload(reg, 'slow/x')
  const s = await patchRaw(reg, loc, data.length, data.subarray(0, 2 * MiB))
  const started = Date.now()
  const reply = await replyOf(s)
  assert.ok(Date.now() - started >= 500, 'not before the timeout')
  assert.equal(reply.status, 408)
  assert.match(reply.head, /\r\nConnection: close/i)
  assert.deepEqual(JSON.parse(reply.body), { errors: [{ code: 'UNKNOWN', message: 'request body timed out: nothing received for 1 s', detail: {} }] })
  const size = await uploadedSize(reg, loc)
  assert.equal(size, 2 * MiB)
  assert.equal((await request(reg.url, 'PATCH', loc, { body: data.subarray(size), headers: { 'Content-Range': `${size}-${data.length - 1}` } })).status, 202)
  await putDigest(reg, loc, data)
  await blobIs(reg, 'slow/x', data)
})

test('a body trickling slower than the helper wakes up for is not idle', { skip }, async (t) => {
  const reg = await startRegistry(t, { connectionLimits: { bodyIdleTimeout: 400 } })
  const data = randomBytes(MiB + 64 * 1024)
  const loc = await startUpload(reg, 'trickle/x')
  const s = await patchRaw(reg, loc, data.length, data.subarray(0, MiB))
  // 64 KiB in 8 KiB pieces every 150 ms: well under the helper's wake-up mark, never 400 ms apart
  for (let off = MiB; off < data.length; off += 8192) {
    await delay(150)
    s.write(data.subarray(off, off + 8192))
  }
  const reply = await replyOf(s)
  assert.equal(reply.status, 202, reply.body)
  await putDigest(reg, loc, data)
  await blobIs(reg, 'trickle/x', data)
})

test('closing the registry with an upload in the helper: close returns, the helper ends, no upload file is left', { skip }, async (t) => {
  const reg = await startRegistry(t)
  const data = randomBytes(4 * MiB)
  const loc = await startUpload(reg, 'closing/x')
  const s = await patchRaw(reg, loc, data.length, data.subarray(0, MiB + 1))
  let pid: number | undefined
  for (let i = 0; i < 50; i++) { pid = helpers()[0]; if (pid !== undefined && socketsOf(pid) === 1) break; await delay(50) }
  assert.ok(pid !== undefined && socketsOf(pid) === 1)
  await reg.registry.close()
  assert.deepEqual(helpers(), [], 'no helper left after close')
  assert.deepEqual(readdirSync(join(reg.dataRoot, 'ingest')), [])
  s.destroy()
})

test('skopeo pushes layers of several MiB through the helper and copies them back byte for byte', { skip: skip === false && !which('skopeo') ? 'skopeo not installed' : skip }, async (t) => {
  const reg = await startRegistry(t)
  const layout = join(reg.dir, 'layout')
  const layers = [await busyboxWith([{ name: 'a.bin', type: 'file', mode: 0o644, body: randomBytes(4 * MiB) }]), await busyboxWith([{ name: 'b.bin', type: 'file', mode: 0o644, body: randomBytes(3 * MiB) }])]
  writeOciLayout(layout, layers, { gzipLevel: 1 })
  const auth = join(reg.dir, 'auth.json')
  writeFileSync(auth, '{}')
  const skopeo = async (...args: string[]): Promise<void> => { await run('skopeo', args, { env: { ...process.env, REGISTRY_AUTH_FILE: auth } }) }
  await skopeo('copy', '--dest-tls-verify=false', `oci:${layout}:latest`, `docker://127.0.0.1:${reg.port}/sk/big:latest`)
  assert.equal(helpers().length, 1, 'the layers went through the helper (nothing was pulled yet)')
  const back = join(reg.dir, 'back')
  await skopeo('copy', '--src-tls-verify=false', `docker://127.0.0.1:${reg.port}/sk/big:latest`, `oci:${back}:latest`)
  assert.equal(layoutDigest(back), layoutDigest(layout))
  for (const f of readdirSync(join(layout, 'blobs', 'sha256'))) {
    assert.ok(readFileSync(join(back, 'blobs', 'sha256', f)).equals(readFileSync(join(layout, 'blobs', 'sha256', f))), f)
  }
})

test('docker CLI push through a Berth daemon: its 16 MiB chunks go through the helper, a second daemon pulls the same image', { skip: skip === false && !hasDockerCli() ? 'docker CLI not installed' : skip }, async (t) => {
  const reg = await startRegistry(t)
  const a = await startEngine(t)
  const ref = `127.0.0.1:${reg.port}/cli/big:latest`
  const layer = await busyboxWith([{ name: 'big.bin', type: 'file', mode: 0o644, body: randomBytes(20 * MiB) }])
  const imported = await dockerCli(a.socket, ['import', '-', ref], layer)
  assert.equal(imported.status, 0, imported.stderr)
  const pushed = await dockerCli(a.socket, ['push', ref])
  assert.equal(pushed.status, 0, pushed.stderr)
  const digest = /latest: digest: (sha256:[0-9a-f]{64}) size: \d+/.exec(pushed.stdout)?.[1]
  assert.ok(digest !== undefined, pushed.stdout)
  assert.equal(helpers().length, 1, 'the layer went through the helper (nothing was pulled yet)')
  const b = await startEngine(t)
  const pulled = await dockerCli(b.socket, ['pull', ref])
  assert.equal(pulled.status, 0, pulled.stderr)
  assert.match(pulled.stdout, new RegExp(`Digest: ${digest}`))
  const layers = async (socket: string): Promise<string> => (await dockerCli(socket, ['image', 'inspect', '--format', '{{json .RootFS.Layers}}', ref])).stdout
  assert.equal(await layers(b.socket), await layers(a.socket))
})

test('without the helper (blobSender: null) large bodies are read by the registry and keep their connection', async (t) => {
  const reg = await startRegistry(t, { blobSender: null })
  const data = randomBytes(3 * MiB)
  const loc = await startUpload(reg, 'plain/x')
  const r = await keptAlive(reg, 'PATCH', loc, data, { 'Content-Range': `0-${data.length - 1}`, 'Content-Length': String(data.length) })
  assert.equal(r.status, 202)
  assert.equal(r.headers.connection, 'keep-alive')
  await putDigest(reg, loc, data)
  await blobIs(reg, 'plain/x', data)
  assert.deepEqual(helpers(), [])
})
