// Uploads (docker cp into a container, image load) as real clients send them, where two things used to go wrong:
// - several `docker cp` into one directory at once (or one whose client left while it winds down) raced each other's
//   removal and creation of the same names: 400 "EEXIST: file already exists" and 500 "ENOENT ... unlink";
// - a reply sent before the route had read the whole body (a refusal, an archive that fails half way) left the rest
//   of the body unread and the connection paused: the client's upload never completed, the connection stayed open.
//   Now the rest is read and dropped up to a bound (the connection stays usable), and beyond it the connection closes.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import net from 'node:net'
import { randomBytes } from 'node:crypto'
import { startEngine, containerSkipReason, importBusybox, createContainer, request } from '../helpers/engine.js'
import { tarOf } from '../helpers/tar.js'
import { DISCARD_LIMIT } from '../../lib/http/body.js'

const skip = containerSkipReason()

interface RawExchange {
  /** The first reply, head and body as text (a chunked body left framed). */
  reply: string
  /** The whole request was written (the daemon took all of it). */
  written: boolean
  /** What a second request on the same connection got ('' when the connection had closed). */
  second: string
  /** The daemon closed the connection. */
  closed: boolean
}

/**
 * Sends `head` + `body` on one connection in a single write, waits for the first reply to be complete, then (if the
 * connection is still open) sends GET /_ping on it. Bounded: gives up after `limitMs`.
 */
async function exchange (socket: string, head: string, body: Buffer, limitMs = 10_000): Promise<RawExchange> {
  return await new Promise((resolve) => {
    const s = net.connect(socket)
    let got = ''
    let written = false
    let replyEnd = -1
    let closed = false
    const finish = (): void => {
      clearTimeout(timer)
      s.destroy()
      resolve({ reply: replyEnd === -1 ? got : got.slice(0, replyEnd), written, second: replyEnd === -1 ? '' : got.slice(replyEnd), closed })
    }
    const timer = setTimeout(finish, limitMs)
    s.on('error', () => {})
    s.on('close', () => { closed = true; finish() })
    s.on('connect', () => { s.write(Buffer.concat([Buffer.from(head), body]), () => { written = true }) })
    s.on('data', (d: Buffer) => {
      got += d.toString('latin1')
      if (replyEnd === -1) {
        const sep = got.indexOf('\r\n\r\n')
        if (sep === -1) return
        const length = /\r\ncontent-length: *(\d+)/i.exec(got.slice(0, sep))
        if (length !== null && got.length >= sep + 4 + Number(length[1])) replyEnd = sep + 4 + Number(length[1])
        else if (length === null && got.includes('\r\n0\r\n\r\n', sep)) replyEnd = got.indexOf('\r\n0\r\n\r\n', sep) + 7
        if (replyEnd === -1) return
        // once the daemon took the whole request, the same connection serves the next one
        const next = (): void => { s.write('GET /_ping HTTP/1.1\r\nHost: berth\r\n\r\n') }
        if (written) next(); else s.once('drain', next)
      } else if (got.slice(replyEnd).includes('\r\n\r\nOK')) {
        finish()
      }
    })
  })
}

test('uploads: concurrent docker cp into one directory; replies sent before the body was read', { skip: skip ?? false, timeout: 180_000 }, async (t) => {
  const { socket } = await startEngine(t)
  await importBusybox(socket)
  const id = await createContainer(socket, { Image: 'busybox', Cmd: ['sleep', '600'] })

  // several uploads of the same tree at once, a few rounds, while the container is created and while it runs
  const upload = await tarOf([
    { name: 'a.txt', body: 'hello' },
    { name: 'big', body: randomBytes(200_000) },
    { name: 'dir', type: 'directory' },
    { name: 'dir/more', body: randomBytes(50_000) },
    { name: 'link', type: 'symlink', linkname: 'a.txt' }
  ])
  for (const running of [false, true]) {
    if (running) assert.equal((await request(socket, 'POST', `/containers/${id}/start`)).status, 204)
    for (let round = 0; round < 4; round++) {
      const replies = await Promise.all(Array.from({ length: 6 }, async () =>
        await request(socket, 'PUT', `/containers/${id}/archive?path=/tmp`, { raw: upload, headers: { 'Content-Type': 'application/x-tar' } })))
      for (const r of replies) assert.equal(r.status, 200, `concurrent upload (${running ? 'running' : 'created'}, round ${round}): ${r.status} ${r.text}`)
    }
  }
  const back = await request(socket, 'GET', `/containers/${id}/archive?path=/tmp/a.txt`)
  assert.equal(back.status, 200)
  assert.ok(back.body.includes(Buffer.from('hello')))

  // refused before the body is read (the target is a file): the reply, then the rest of the body is taken and the
  // connection serves the next request
  const refusedHead = (length: number): string => `PUT /containers/${id}/archive?path=/tmp/a.txt HTTP/1.1\r\nHost: berth\r\nContent-Type: application/x-tar\r\nContent-Length: ${length}\r\n\r\n`
  const small = randomBytes(DISCARD_LIMIT / 2)
  const kept = await exchange(socket, refusedHead(small.length), small)
  assert.match(kept.reply, /^HTTP\/1\.1 400 /, kept.reply)
  assert.match(kept.reply, /extraction point is not a directory/)
  assert.ok(kept.written, 'the daemon read the rest of the refused upload')
  assert.match(kept.second, /^HTTP\/1\.1 200 [\s\S]*\r\n\r\nOK/, `the connection serves the next request: ${JSON.stringify(kept.second.slice(0, 200))}`)

  // an archive failing half way, in the first entry of a large upload: the same
  const bad = Buffer.concat([upload.subarray(0, 512 + 600), Buffer.alloc(1024, 0xff), randomBytes(DISCARD_LIMIT / 4)])
  const failedHead = `PUT /containers/${id}/archive?path=/tmp HTTP/1.1\r\nHost: berth\r\nContent-Type: application/x-tar\r\nContent-Length: ${bad.length + 200_000}\r\n\r\n`
  const failed = await exchange(socket, failedHead, Buffer.concat([bad, randomBytes(200_000)]))
  assert.match(failed.reply, /^HTTP\/1\.1 400 /, failed.reply)
  assert.ok(failed.written, 'the daemon read the rest of the failed upload')
  assert.match(failed.second, /^HTTP\/1\.1 200 [\s\S]*\r\n\r\nOK/, 'the connection serves the next request')

  // more left unread than the daemon drops: the reply, then the connection closes (it is not left hanging)
  const huge = randomBytes(DISCARD_LIMIT * 3)
  const cut = await exchange(socket, refusedHead(huge.length), huge)
  assert.match(cut.reply, /^HTTP\/1\.1 400 /, cut.reply)
  assert.ok(cut.closed, 'the daemon closed the connection')

  // an image load that is not an archive: the error record, and the connection serves the next request
  const junk = randomBytes(DISCARD_LIMIT / 2)
  const load = await exchange(socket, `POST /images/load?quiet=1 HTTP/1.1\r\nHost: berth\r\nContent-Type: application/x-tar\r\nContent-Length: ${junk.length}\r\n\r\n`, junk)
  assert.match(load.reply, /^HTTP\/1\.1 200 [\s\S]*"error(Detail)?"/, load.reply)
  assert.ok(load.written, 'the daemon read the rest of the load')
  assert.match(load.second, /^HTTP\/1\.1 200 [\s\S]*\r\n\r\nOK/, 'the connection serves the next request')

  // the daemon still answers whole requests
  assert.equal((await request(socket, 'DELETE', `/containers/${id}?force=1`)).status, 204)
})

/** Sends `head` and `part` of a body, then closes its side (FIN) and reads what comes back until the daemon closes. */
async function halfClose (socket: string, head: string, part: Buffer, limitMs = 10_000): Promise<string> {
  return await new Promise((resolve) => {
    const s = net.connect(socket)
    let got = ''
    const timer = setTimeout(() => { s.destroy(); resolve(`${got}<no close within ${limitMs} ms>`) }, limitMs)
    s.on('data', (d: Buffer) => { got += d.toString('latin1') })
    s.on('error', () => {})
    s.on('close', () => { clearTimeout(timer); resolve(got) })
    s.on('connect', () => { s.write(head); s.end(part) })
  })
}

test('a body its client cut with a FIN: the route answers in JSON (dockerd\'s invalid JSON for a JSON body), never a bare 400', { skip: skip ?? false, timeout: 60_000 }, async (t) => {
  const { socket } = await startEngine(t)
  await importBusybox(socket)
  const json = Buffer.from(JSON.stringify({ Image: 'busybox', Cmd: ['true'], Labels: { pad: 'x'.repeat(200) } }))
  for (const chunked of [false, true]) {
    const part = json.subarray(0, 40)
    const head = `POST /containers/create HTTP/1.1\r\nHost: berth\r\nContent-Type: application/json\r\n${chunked ? 'Transfer-Encoding: chunked' : `Content-Length: ${json.length}`}\r\n\r\n`
    const got = await halfClose(socket, head, chunked ? Buffer.concat([Buffer.from(`${json.length.toString(16)}\r\n`), part]) : part)
    assert.match(got, /^HTTP\/1\.1 400 /, got)
    assert.match(got, /\{"message":"invalid JSON: unexpected EOF"\}/, got)
    assert.doesNotMatch(got, /no close within/, 'the daemon closes its side after the reply')
    assert.match(got, /\r\nConnection: close\r\n/i, got)
  }
  assert.deepEqual((await request(socket, 'GET', '/containers/json?all=1')).json(), [])
  // an archive upload cut the same way: a JSON error, the container's file system left as it was
  const id = await createContainer(socket, { Image: 'busybox', Cmd: ['true'] })
  const tar = await tarOf([{ name: 'cut/', type: 'directory' }, { name: 'cut/big', body: randomBytes(200_000) }])
  const head = `PUT /containers/${id}/archive?path=/tmp HTTP/1.1\r\nHost: berth\r\nContent-Type: application/x-tar\r\nContent-Length: ${tar.length}\r\n\r\n`
  const got = await halfClose(socket, head, tar.subarray(0, 100_000))
  assert.match(got, /^HTTP\/1\.1 4\d\d /, got)
  assert.match(got, /\{"message":"[^"]+"\}/, got)
  assert.doesNotMatch(got, /no close within/, 'the daemon closes its side after the reply')
  // a build's context cut the same way (the route answers, then the connection closes)
  const build = await halfClose(socket, 'POST /build HTTP/1.1\r\nHost: berth\r\nContent-Type: application/x-tar\r\nTransfer-Encoding: chunked\r\n\r\n10\r\nabc', Buffer.alloc(0))
  assert.match(build, /^HTTP\/1\.1 4\d\d /, build)
  assert.doesNotMatch(build, /no close within/, 'the daemon closes its side after the reply')
  assert.equal((await request(socket, 'GET', '/_ping')).text, 'OK')
})
