// Large blob bodies served by berth-blob-sender (sendfile from a helper process the connection is handed to): whole
// and ranged bodies, keep-alive and pipelined requests on the same connection, a slow reader (the socket full for a
// while), a client that goes away mid-body, a registry closed with a transfer stalled, and the same answers
// without the helper. Raw sockets, so the bytes on the wire are what is checked.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import net from 'node:net'
import { once } from 'node:events'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { randomBytes } from 'node:crypto'
import { setTimeout as delay } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'
import { pushBlob, request, sha256, startRegistry } from './helpers.js'
import { childrenRunning, socketsOf } from '../helpers/helper-procs.js'

const HELPER = join(fileURLToPath(new URL('../../../', import.meta.url)), 'dist', 'berth-blob-sender')
const BIG = 6 * 1024 * 1024

/** This process's children running the helper. */
function helpers (): number[] { return childrenRunning(HELPER) }

interface RawReply { head: string, status: number, body: Buffer }

/** Reads `count` replies (Content-Length bodies) from a socket, in order. */
async function readReplies (s: net.Socket, count: number): Promise<RawReply[]> {
  const out: RawReply[] = []
  let buf = Buffer.alloc(0)
  for await (const chunk of s) {
    buf = Buffer.concat([buf, chunk as Buffer])
    for (;;) {
      const end = buf.indexOf('\r\n\r\n')
      if (end === -1) break
      const head = buf.subarray(0, end).toString('latin1')
      const length = Number(/\r\ncontent-length: *(\d+)/i.exec(head)?.[1] ?? '0')
      const bodyLength = length
      if (buf.length < end + 4 + bodyLength) break
      out.push({ head, status: Number(head.slice(9, 12)), body: buf.subarray(end + 4, end + 4 + bodyLength) })
      buf = buf.subarray(end + 4 + bodyLength)
      if (out.length === count) { s.destroy(); return out }
    }
  }
  return out
}

async function connect (port: number): Promise<net.Socket> {
  const s = net.connect(port, '127.0.0.1')
  await once(s, 'connect')
  return s
}

test('large blobs go out through the blob sender: whole, ranged, pipelined on one connection, to a slow reader', { skip: existsSync(HELPER) ? false : 'dist/berth-blob-sender not built (no C compiler)' }, async (t) => {
  const reg = await startRegistry(t)
  const data = randomBytes(BIG)
  const digest = sha256(data)
  assert.equal((await pushBlob(reg.url, 'big/blob', data)).status, 201)
  const path = `/v2/big/blob/blobs/${digest}`

  const whole = await request(reg.url, 'GET', path)
  assert.equal(whole.status, 200)
  assert.equal(whole.headers['content-length'], String(BIG))
  assert.equal(whole.headers['docker-content-digest'], digest)
  assert.ok(whole.body.equals(data))
  const pids = helpers()
  assert.equal(pids.length, 1, 'one helper process, started by the first large blob')

  const ranged = await request(reg.url, 'GET', path, { headers: { Range: 'bytes=1000-3000999' } })
  assert.equal(ranged.status, 206)
  assert.equal(ranged.headers['content-range'], `bytes 1000-3000999/${BIG}`)
  assert.ok(ranged.body.equals(data.subarray(1000, 3001000)))
  const suffix = await request(reg.url, 'GET', path, { headers: { Range: 'bytes=-1048576' } })
  assert.equal(suffix.status, 206)
  assert.ok(suffix.body.equals(data.subarray(BIG - 1048576)))
  const head = await request(reg.url, 'HEAD', path)
  assert.equal(head.status, 200)
  assert.equal(head.headers['content-length'], String(BIG))
  assert.equal(head.body.length, 0)

  // three requests written at once on one connection: the blob, a small request, the blob again
  const s = await connect(reg.port)
  s.write(`GET ${path} HTTP/1.1\r\nHost: x\r\n\r\nGET /v2/ HTTP/1.1\r\nHost: x\r\n\r\nGET ${path} HTTP/1.1\r\nHost: x\r\nRange: bytes=5-2000004\r\n\r\n`)
  const [a, b, c] = await readReplies(s, 3)
  assert.equal(a?.status, 200)
  assert.ok(a?.body.equals(data))
  assert.equal(b?.status, 200)
  assert.equal(b?.body.toString().trim(), '{}')
  assert.equal(c?.status, 206)
  assert.ok(c?.body.equals(data.subarray(5, 2000005)))

  // a reader that stops for a while (the socket fills, the helper waits for room) then reads everything
  const slow = await connect(reg.port)
  slow.pause()
  slow.write(`GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`)
  await delay(400)
  slow.resume()
  const [d] = await readReplies(slow, 1)
  assert.ok(d?.body.equals(data))
  assert.deepEqual(helpers(), pids, 'the same helper served every transfer')
  await delay(100)
  assert.equal(socketsOf(pids[0] as number), 0, 'the helper kept no connection')
})

test('a client that goes away mid-body: the transfer ends, the next client gets the whole blob', { skip: existsSync(HELPER) ? false : 'dist/berth-blob-sender not built (no C compiler)' }, async (t) => {
  const reg = await startRegistry(t)
  const data = randomBytes(BIG)
  const digest = sha256(data)
  assert.equal((await pushBlob(reg.url, 'big/blob', data)).status, 201)
  const path = `/v2/big/blob/blobs/${digest}`
  for (const how of ['reset', 'stalled then closed']) {
    const s = await connect(reg.port)
    s.write(`GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`)
    const [first] = await once(s, 'data') as [Buffer]
    assert.match(first.toString('latin1'), /^HTTP\/1\.1 200/)
    if (how === 'reset') s.resetAndDestroy()
    else { s.pause(); await delay(200); s.destroy() }
    const pid = helpers()[0] as number
    for (let i = 0; i < 50 && socketsOf(pid) > 0; i++) await delay(100)
    assert.equal(socketsOf(pid), 0, `${how}: the helper dropped the transfer`)
    const again = await request(reg.url, 'GET', path)
    assert.equal(again.status, 200)
    assert.ok(again.body.equals(data))
  }
})

test('closing the registry with a transfer stalled on a client that reads nothing ends the helper', { skip: existsSync(HELPER) ? false : 'dist/berth-blob-sender not built (no C compiler)' }, async (t) => {
  const reg = await startRegistry(t)
  const data = randomBytes(BIG)
  assert.equal((await pushBlob(reg.url, 'big/blob', data)).status, 201)
  const s = await connect(reg.port)
  s.pause()
  s.write(`GET /v2/big/blob/blobs/${sha256(data)} HTTP/1.1\r\nHost: x\r\n\r\n`)
  let pid: number | undefined
  for (let i = 0; i < 50 && pid === undefined; i++) { await delay(50); pid = helpers()[0] }
  assert.ok(pid !== undefined)
  for (let i = 0; i < 50 && socketsOf(pid) < 1; i++) await delay(50)
  assert.equal(socketsOf(pid), 1, 'the helper holds the stalled transfer')
  await reg.registry.close()
  assert.deepEqual(helpers(), [], 'no helper left after close')
  s.destroy()
})

test('without the blob sender (blobSender: null) the same bodies come from the registry process', async (t) => {
  const reg = await startRegistry(t, { blobSender: null })
  const data = randomBytes(BIG)
  const digest = sha256(data)
  assert.equal((await pushBlob(reg.url, 'big/blob', data)).status, 201)
  const whole = await request(reg.url, 'GET', `/v2/big/blob/blobs/${digest}`)
  assert.ok(whole.body.equals(data))
  const ranged = await request(reg.url, 'GET', `/v2/big/blob/blobs/${digest}`, { headers: { Range: 'bytes=7-1048582' } })
  assert.equal(ranged.status, 206)
  assert.ok(ranged.body.equals(data.subarray(7, 1048583)))
  assert.deepEqual(helpers(), [])
})
