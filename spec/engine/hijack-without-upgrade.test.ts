// Attach and exec start sent WITHOUT `Upgrade`/`Connection: Upgrade` (older clients, curl-based scripts): dockerd
// takes the connection over all the same, answers `200 OK` with the raw-stream content type, and every byte after
// the request is stdin. Checked against dockerd 20.10 on raw sockets: non-tty output in multiplexed frames, tty
// output raw; stdin in later writes reaches the process (dockerd 20.10 drops the bytes sent in the same write as the
// request, left in its HTTP reader's buffer: here they are stdin too). Node's parser took them for a next request
// (400). An exec start with Detach stays an ordinary request on a kept-alive connection, as with dockerd.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import net from 'node:net'
import { once } from 'node:events'
import { setTimeout as delay } from 'node:timers/promises'
import { startEngine, request, importBusybox, createContainer, containerSkipReason } from '../helpers/engine.js'
import { demuxAll } from '../../lib/stream/stdcopy.js'

const skip = containerSkipReason()
const RAW_HEAD = 'HTTP/1.1 200 OK\r\nContent-Type: application/vnd.docker.raw-stream\r\n'

interface Conversation { got: () => Buffer, write: (b: string) => void, close: () => Promise<void> }

/** Connects to `socket`, sends `first` in one write, and keeps collecting what comes back. */
async function converse (socket: string, first: string): Promise<Conversation> {
  const s = net.connect(socket)
  s.on('error', () => {})
  let buf = Buffer.alloc(0)
  s.on('data', (d: Buffer) => { buf = Buffer.concat([buf, d]) })
  await once(s, 'connect')
  s.write(first)
  return {
    got: () => buf,
    write: (b) => { s.write(b) },
    close: async () => { if (!s.destroyed) { s.destroy(); await once(s, 'close') } }
  }
}

/** Waits (bounded) until what came back after the head satisfies `done`; returns head and body. */
async function until (c: Conversation, done: (body: Buffer) => boolean, what: string): Promise<{ head: string, body: Buffer }> {
  const split = (): { head: string, body: Buffer } | null => {
    const end = c.got().indexOf('\r\n\r\n')
    return end < 0 ? null : { head: c.got().subarray(0, end + 4).toString('latin1'), body: c.got().subarray(end + 4) }
  }
  for (let i = 0; i < 200; i++) {
    const r = split()
    if (r !== null && done(r.body)) return r
    await delay(50)
  }
  assert.fail(`${what}: not there after 10 s; got ${JSON.stringify(c.got().toString('latin1').slice(0, 400))}`)
}

const stdoutOf = (body: Buffer): string => { try { return demuxAll(body).stdout.toString() } catch { return '' } }

test('attach and exec start without an Upgrade header take the connection over; stdin sent with the request and after it reaches the process', { skip: skip ?? false, timeout: 120_000 }, async (t) => {
  const { socket } = await startEngine(t)
  await importBusybox(socket)

  for (const tty of [false, true]) {
    const id = await createContainer(socket, { Image: 'busybox', Cmd: ['cat'], OpenStdin: true, AttachStdin: true, AttachStdout: true, AttachStderr: true, Tty: tty })
    assert.equal((await request(socket, 'POST', `/containers/${id}/start`)).status, 204)

    // attach: as curl sends it (no body), and with an empty declared body
    for (const extra of ['', 'Content-Length: 0\r\n']) {
      const what = `attach tty=${String(tty)} ${extra === '' ? 'no body' : 'Content-Length: 0'}`
      const c = await converse(socket, `POST /v1.41/containers/${id}/attach?stream=1&stdin=1&stdout=1&stderr=1 HTTP/1.1\r\nHost: docker\r\nContent-Type: text/plain\r\n${extra}\r\nsame-write\n`)
      await delay(300)
      c.write('later-write\n')
      if (tty) {
        const { head, body } = await until(c, (b) => b.includes('later-write\r\nlater-write\r\n'), what)
        assert.equal(head, `${RAW_HEAD}\r\n`, what)
        // the terminal's echo and cat's copy, raw: no frame headers
        assert.ok(body.toString('latin1').startsWith('same-write\r\nsame-write\r\n'), `${what}: ${JSON.stringify(body.toString('latin1'))}`)
      } else {
        const { head, body } = await until(c, (b) => stdoutOf(b).includes('later-write\n'), what)
        // before: HTTP/1.1 400 Bad Request after the head (the stdin bytes parsed as a next request)
        assert.equal(head, `${RAW_HEAD}\r\n`, what)
        assert.equal(stdoutOf(body), 'same-write\nlater-write\n', `${what}: multiplexed frames, in order`)
      }
      await c.close()
    }

    // exec start: the JSON body, then stdin in the same write, then more
    const body = JSON.stringify({ Detach: false, Tty: tty })
    const ex = await request(socket, 'POST', `/containers/${id}/exec`, { body: { Cmd: ['cat'], AttachStdin: true, AttachStdout: true, AttachStderr: true, Tty: tty } })
    assert.equal(ex.status, 201, ex.text)
    const what = `exec start tty=${String(tty)}`
    const c = await converse(socket, `POST /v1.41/exec/${(ex.json() as { Id: string }).Id}/start HTTP/1.1\r\nHost: docker\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}exec-same\n`)
    await delay(300)
    c.write('exec-later\n')
    const got = await until(c, (b) => tty ? b.includes('exec-later\r\nexec-later\r\n') : stdoutOf(b).includes('exec-later\n'), what)
    assert.ok(got.head.startsWith(RAW_HEAD), `${what}: ${got.head}`)
    assert.match(got.head, /\r\nApi-Version: [0-9.]+\r\n/, what)
    if (tty) assert.ok(got.body.toString('latin1').startsWith('exec-same\r\nexec-same\r\n'), `${what}: ${JSON.stringify(got.body.toString('latin1'))}`)
    else assert.equal(stdoutOf(got.body), 'exec-same\nexec-later\n', what)
    await c.close()

    assert.equal((await request(socket, 'DELETE', `/containers/${id}?force=1`)).status, 204)
  }
})

test('an exec start with Detach and no Upgrade header is an ordinary request: its connection serves the next one', { skip: skip ?? false, timeout: 60_000 }, async (t) => {
  const { socket } = await startEngine(t)
  await importBusybox(socket)
  const id = await createContainer(socket, { Image: 'busybox', Cmd: ['sleep', '30'] })
  assert.equal((await request(socket, 'POST', `/containers/${id}/start`)).status, 204)
  const ex = await request(socket, 'POST', `/containers/${id}/exec`, { body: { Cmd: ['true'] } })
  const body = JSON.stringify({ Detach: true })
  const c = await converse(socket, `POST /exec/${(ex.json() as { Id: string }).Id}/start HTTP/1.1\r\nHost: docker\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}GET /_ping HTTP/1.1\r\nHost: docker\r\n\r\n`)
  await until(c, (b) => b.includes('OK'), 'exec start with Detach, then _ping on the same connection')
  const text = c.got().toString('latin1')
  assert.match(text, /^HTTP\/1\.1 200 OK\r\n/)
  assert.doesNotMatch(text.slice(0, text.indexOf('\r\n\r\n')), /\r\nConnection: close/i, 'kept alive')
  assert.equal(text.match(/HTTP\/1\.1 200 OK\r\n/g)?.length, 2, JSON.stringify(text))
  await c.close()
  assert.equal((await request(socket, 'DELETE', `/containers/${id}?force=1`)).status, 204)
})
