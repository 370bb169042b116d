// A client that closes its sending side (FIN) in the middle of a request body can still read a reply, and
// distribution 2.8 gives it one: `499` with `{"errors":[{"code":"UNKNOWN","message":"unknown error","detail":"client
// disconnected"}]}` (checked against docker-registry 2.8.2), the bytes that arrived kept in the upload, nothing
// committed. Here for PATCH and PUT, Content-Length bodies shorter than announced and chunked bodies cut before their
// last chunk, read by the registry (small bodies, the in-memory driver, no helper) and by the blob helper (large
// ones); a manifest and a monolithic upload cut the same way store nothing. Raw sockets: the bytes on the wire matter.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import net from 'node:net'
import { once } from 'node:events'
import { readdirSync } from 'node:fs'
import { join } from 'node:path'
import { randomBytes } from 'node:crypto'
import { setTimeout as delay } from 'node:timers/promises'
import { MemoryDriver } from '../../lib/registry/storage/memory-driver.js'
import { makeImage, pushBlob, request, sha256, startRegistry, OCI_MANIFEST, type TestRegistry } from './helpers.js'

const MiB = 1024 * 1024
const CLIENT_DISCONNECTED = { errors: [{ code: 'UNKNOWN', message: 'unknown error', detail: 'client disconnected' }] }

interface RawReply { head: string, status: number, body: string, ms: number }

/**
 * Sends `head`, then `body`, then a FIN, and reads what comes back until the registry closes the connection (bounded:
 * a route still waiting for the body is a failure, not a stuck run).
 */
async function halfClosed (reg: TestRegistry, head: string, body: Buffer): Promise<RawReply> {
  const s = net.connect(reg.port, '127.0.0.1')
  s.on('error', () => {})
  await once(s, 'connect')
  let got = Buffer.alloc(0)
  s.on('data', (d: Buffer) => { got = Buffer.concat([got, d]) })
  s.write(head)
  s.write(body)
  await delay(100) // the body read (or handed over) before the FIN
  const t0 = Date.now()
  s.end()
  const closed = await Promise.race([once(s, 'close').then(() => true), delay(10_000).then(() => false)])
  s.destroy()
  assert.ok(closed, `the connection closed after the reply: ${JSON.stringify(got.toString('latin1').slice(0, 200))}`)
  const end = got.indexOf('\r\n\r\n')
  assert.ok(end > 0, `a reply to a client that closed its side mid-body: ${JSON.stringify(got.toString('latin1'))}`)
  const h = got.subarray(0, end).toString('latin1')
  const length = Number(/\r\ncontent-length: *(\d+)/i.exec(h)?.[1] ?? '0')
  return { head: h, status: Number(h.slice(9, 12)), body: got.subarray(end + 4, end + 4 + length).toString(), ms: Date.now() - t0 }
}

function assertDisconnected (r: RawReply, what: string): void {
  assert.equal(r.status, 499, `${what}: ${r.head}\n${r.body}`)
  assert.match(r.head, /\r\nContent-Type: application\/json/i, what)
  assert.match(r.head, /\r\nConnection: close/i, what)
  assert.deepEqual(JSON.parse(r.body), CLIENT_DISCONNECTED, what)
}

async function startUpload (reg: TestRegistry, name: string): Promise<string> {
  const r = await request(reg.url, 'POST', `/v2/${name}/blobs/uploads/`)
  assert.equal(r.status, 202, r.text)
  return r.headers.location as string
}

async function uploadedSize (reg: TestRegistry, loc: string): Promise<number> {
  const r = await request(reg.url, 'GET', loc)
  assert.equal(r.status, 204, r.text)
  const m = /^0-(\d+)$/.exec(String(r.headers.range))
  assert.ok(m !== null, String(r.headers.range))
  return Number(m[1]) + 1
}

/** A cut body: what goes on the wire after the head, and how many of the blob's bytes it carries. */
interface Cut { name: string, headers: string, wire: Buffer, carried: number }

function cuts (data: Buffer, cutAt: number): Cut[] {
  const hex = data.length.toString(16)
  const half = Math.floor(cutAt / 2)
  return [
    { name: 'Content-Length body shorter than announced', headers: `Content-Length: ${data.length}\r\n`, wire: data.subarray(0, cutAt), carried: cutAt },
    { name: 'chunked body cut inside a chunk', headers: 'Transfer-Encoding: chunked\r\n', wire: Buffer.concat([Buffer.from(`${hex}\r\n`), data.subarray(0, cutAt)]), carried: cutAt },
    {
      name: 'chunked body cut before its last chunk',
      headers: 'Transfer-Encoding: chunked\r\n',
      wire: Buffer.concat([Buffer.from(`${half.toString(16)}\r\n`), data.subarray(0, half), Buffer.from(`\r\n${(cutAt - half).toString(16)}\r\n`), data.subarray(half, cutAt), Buffer.from('\r\n')]),
      carried: cutAt
    }
  ]
}

async function registries (t: Parameters<typeof startRegistry>[0]): Promise<Array<[string, TestRegistry]>> {
  return [
    ['filesystem (blob helper when built)', await startRegistry(t)],
    ['filesystem without the helper', await startRegistry(t, { blobSender: null })],
    ['in memory', await startRegistry(t, { driver: new MemoryDriver() })]
  ]
}

test('PATCH and PUT bodies cut by a FIN: 499 with distribution\'s errors JSON, the upload keeps what arrived and goes on from there', { timeout: 120_000 }, async (t) => {
  for (const [where, reg] of await registries(t)) {
    // 40 of 100 bytes: read by the registry; 3 of 4 MiB: taken by the blob helper where it is built
    for (const [size, cutAt] of [[100, 40], [4 * MiB, 3 * MiB + 5]] as const) {
      const data = randomBytes(size)
      for (const cut of cuts(data, cutAt)) {
        for (const method of ['PATCH', 'PUT']) {
          const what = `${where}, ${method} ${size} bytes, ${cut.name}`
          const loc = await startUpload(reg, 'cut/x')
          const target = method === 'PUT' ? `${loc}${loc.includes('?') ? '&' : '?'}digest=${sha256(data)}` : loc
          const r = await halfClosed(reg, `${method} ${target} HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\n${cut.headers}\r\n`, cut.wire)
          // before: a bare 400 with no body (read by the registry), or no reply at all (the helper)
          assertDisconnected(r, what)
          assert.ok(r.ms < 900, `${what}: closed right after the reply (the client sends nothing more), not lingering: ${r.ms} ms`)
          // nothing committed by the cut PUT
          assert.equal((await request(reg.url, 'HEAD', `/v2/cut/x/blobs/${sha256(data)}`)).status, 404, what)
          // the session stays, with every byte that arrived
          assert.equal(await uploadedSize(reg, loc), cut.carried, what)
          const rest = await request(reg.url, 'PATCH', loc, { body: data.subarray(cut.carried), headers: { 'Content-Type': 'application/octet-stream', 'Content-Range': `${cut.carried}-${size - 1}` } })
          assert.equal(rest.status, 202, `${what}: ${rest.text}`)
          const put = await request(reg.url, 'PUT', `${loc}${loc.includes('?') ? '&' : '?'}digest=${sha256(data)}`)
          assert.equal(put.status, 201, `${what}: ${put.text}`)
          const blob = await request(reg.url, 'GET', `/v2/cut/x/blobs/${sha256(data)}`)
          assert.ok(blob.body.equals(data), `${what}: the blob is the bytes sent`)
          assert.equal((await request(reg.url, 'DELETE', `/v2/cut/x/blobs/${sha256(data)}`)).status, 202, what)
        }
      }
    }
  }
})

test('a monolithic upload and a manifest cut by a FIN: 499 with distribution\'s errors JSON, nothing stored', { timeout: 60_000 }, async (t) => {
  for (const [where, reg] of await registries(t)) {
    for (const size of [100, 2 * MiB]) {
      const data = randomBytes(size)
      for (const cut of cuts(data, Math.floor(size / 2))) {
        const what = `${where}, monolithic ${size} bytes, ${cut.name}`
        const r = await halfClosed(reg, `POST /v2/mono/x/blobs/uploads/?digest=${sha256(data)} HTTP/1.1\r\nHost: x\r\n${cut.headers}\r\n`, cut.wire)
        assertDisconnected(r, what)
        assert.equal((await request(reg.url, 'HEAD', `/v2/mono/x/blobs/${sha256(data)}`)).status, 404, what)
      }
    }
    const img = makeImage({ layers: 1 })
    for (const b of [img.config, ...img.layers]) assert.equal((await pushBlob(reg.url, 'mono/m', b)).status, 201)
    for (const cut of cuts(img.manifest, img.manifest.length - 3)) {
      const what = `${where}, manifest, ${cut.name}`
      const r = await halfClosed(reg, `PUT /v2/mono/m/manifests/v1 HTTP/1.1\r\nHost: x\r\nContent-Type: ${OCI_MANIFEST}\r\n${cut.headers}\r\n`, cut.wire)
      assertDisconnected(r, what)
      assert.equal((await request(reg.url, 'GET', '/v2/mono/m/manifests/v1', { headers: { Accept: OCI_MANIFEST } })).status, 404, what)
    }
    // a whole manifest after a chunked body that ended with its data but without its last chunk: still not stored
    const whole = cuts(img.manifest, img.manifest.length)[2] as Cut
    assertDisconnected(await halfClosed(reg, `PUT /v2/mono/m/manifests/v1 HTTP/1.1\r\nHost: x\r\nContent-Type: ${OCI_MANIFEST}\r\n${whole.headers}\r\n`, whole.wire), `${where}: whole manifest, no last chunk`)
    assert.equal((await request(reg.url, 'GET', '/v2/mono/m/manifests/v1', { headers: { Accept: OCI_MANIFEST } })).status, 404, where)
    if (where.startsWith('filesystem')) assert.deepEqual(readdirSync(join(reg.dataRoot, 'ingest')), [], `${where}: no upload file left`)
    assert.equal((await request(reg.url, 'GET', '/v2/')).status, 200)
  }
})
