// Bounded memory without limits set, backpressure towards clients that do not read, and exit behaviour.

import assert from 'node:assert/strict'
import { createServer, type Socket } from 'node:net'
import { test } from 'node:test'
import { EventBase, EventBuffer, EventHttp } from '../../lib/evhttp/index.js'
import { SAFETY_MAX_BODY_SIZE, SAFETY_MAX_HEADERS_SIZE } from '../../lib/evhttp/constants.js'
import { installHandlers, RawClient, startServer } from './helpers.js'

const PAGE_400 = 'HTTP/1.1 400 Bad Request\r\nContent-Type: text/html\r\nConnection: close\r\nDate: D\r\nContent-Length: 94' +
  '\r\n\r\n<HTML><HEAD>\n<TITLE>400 Bad Request</TITLE>\n</HEAD><BODY>\n<H1>Bad Request</H1>\n</BODY></HTML>\n'
const PAGE_413 = 'HTTP/1.1 413 Request Entity Too Large\r\nContent-Type: text/html\r\nConnection: close\r\nDate: D\r\n' +
  'Content-Length: 120\r\n\r\n<HTML><HEAD>\n<TITLE>413 Request Entity Too Large</TITLE>\n</HEAD><BODY>\n' +
  '<H1>Request Entity Too Large</H1>\n</BODY></HTML>\n'

test('without setMaxHeadersSize a header block cannot grow past the safety cap', async (t) => {
  const { port } = startServer(t, installHandlers)
  const client = await RawClient.open(port)
  const line = 'GET /about HTTP/1.1\r\nX-Big: '
  await client.send(line + 'a'.repeat(SAFETY_MAX_HEADERS_SIZE + 1 - line.length + 2))
  assert.equal(await client.waitClosed(), PAGE_400)
})

test('a 64 KiB header is still served with no limit set (055)', async (t) => {
  const { port } = startServer(t, installHandlers)
  const client = await RawClient.open(port)
  await client.send(`GET /about HTTP/1.1\r\nX-Big: ${'a'.repeat(64 * 1024)}\r\nConnection: close\r\n\r\n`)
  assert.match(await client.waitClosed(), /^HTTP\/1\.1 200 OK\r\n/)
})

test('without setMaxBodySize a declared or chunked body cannot exceed the safety cap', async (t) => {
  const { port } = startServer(t, installHandlers)
  const declared = await RawClient.open(port)
  await declared.send(`POST /echo HTTP/1.1\r\nContent-Length: ${SAFETY_MAX_BODY_SIZE + 1}\r\n\r\n`)
  assert.equal(await declared.waitClosed(), PAGE_413)
  const chunked = await RawClient.open(port)
  await chunked.send(`POST /echo HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n${(SAFETY_MAX_BODY_SIZE + 1).toString(16)}\r\n`)
  assert.equal(await chunked.waitClosed(), PAGE_413)
  const huge = await RawClient.open(port)
  await huge.send('POST /echo HTTP/1.1\r\nContent-Length: 99999999999999999999999\r\n\r\n')
  assert.equal(await huge.waitClosed(), PAGE_413)
  const endless = await RawClient.open(port)
  await endless.send(`POST /echo HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n${'1'.repeat(5000)}`)
  assert.equal(await endless.waitClosed(), PAGE_413)
})

test('a client that pipelines without reading is not answered faster than it reads', async (t) => {
  // The server is given through accept() so the test can watch its side of the connection.
  const server = createServer({ allowHalfOpen: true })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.after(() => server.close())
  let serverSocket: Socket | undefined
  server.on('connection', (s: Socket) => { serverSocket = s })
  const base = new EventBase()
  const http = new EventHttp(base)
  t.after(() => base.free())
  assert.equal(http.accept(server), true)
  const body = Buffer.alloc(64 * 1024, 120)
  let calls = 0
  let worstQueued = 0
  let engaged: () => void = () => {}
  const backpressure = new Promise<void>((resolve) => { engaged = resolve })
  http.setCallback('/big', (req) => {
    calls++
    // Each request is read only once the previous reply went below the socket's high-water mark.
    worstQueued = Math.max(worstQueued, serverSocket!.writableLength)
    const buf = new EventBuffer()
    buf.add(body)
    req.sendReply(200, 'OK', buf)
    if (serverSocket!.writableNeedDrain) engaged()
  })
  const client = await RawClient.open((server.address() as { port: number }).port)
  client.socket.pause() // do not read until the server has had to hold back
  const requests = 400
  client.socket.write('GET /big HTTP/1.1\r\n\r\n'.repeat(requests))
  await backpressure
  assert.ok(calls < requests, `all ${requests} requests were read although nothing was read back`)
  client.socket.resume()
  client.socket.write('GET /big HTTP/1.1\r\nConnection: close\r\n\r\n')
  const text = await client.waitClosed(60_000)
  assert.equal(text.split('HTTP/1.1 200 OK').length - 1, requests + 1)
  assert.equal(calls, requests + 1)
  assert.ok(worstQueued < serverSocket!.writableHighWaterMark, `a request was read with ${worstQueued} bytes queued`)
})

test('bind() listeners: pipelined requests are not read while a reply is stuck above the high-water mark', async (t) => {
  const requests = 300
  let calls = 0
  let stuck = -1
  let engaged: () => void = () => {}
  const backpressure = new Promise<void>((resolve) => { engaged = resolve })
  const { port } = startServer(t, (http) => {
    http.setCallback('/big', (req) => {
      calls++
      req.sendReplyStart(200, 'OK')
      const buf = new EventBuffer()
      buf.add(Buffer.alloc(64 * 1024, 120))
      if (!req.sendReplyChunk(buf) && stuck === -1) {
        stuck = calls
        engaged()
      }
      req.sendReplyEnd()
    })
  })
  const client = await RawClient.open(port)
  client.socket.pause()
  client.socket.write('GET /big HTTP/1.1\r\n\r\n'.repeat(requests))
  await backpressure
  // The request after the stuck reply must wait for the client to read: nothing else was dispatched.
  await new Promise((resolve) => setImmediate(resolve))
  assert.equal(calls, stuck)
  client.socket.resume()
  client.socket.write('GET /big HTTP/1.1\r\nConnection: close\r\n\r\n')
  const text = await client.waitClosed(60_000)
  assert.equal(text.split('HTTP/1.1 200 OK').length - 1, requests + 1)
})

test('clients resetting in the middle of replies do not disturb the server', async (t) => {
  const { port } = startServer(t, (http) => {
    installHandlers(http)
    http.setCallback('/huge', (req) => {
      const buf = new EventBuffer()
      buf.add(Buffer.alloc(2 * 1024 * 1024, 121))
      req.sendReply(200, 'OK', buf)
    })
  })
  for (let i = 0; i < 20; i++) {
    const client = await RawClient.open(port)
    await client.send('GET /huge HTTP/1.1\r\n\r\n')
    await client.atLeast(1)
    client.socket.resetAndDestroy()
  }
  const client = await RawClient.open(port)
  await client.send('GET /about HTTP/1.0\r\n\r\n')
  assert.match(await client.waitClosed(), /^HTTP\/1\.0 200 OK\r\n/)
})

test('sendReplyChunk reports a full socket buffer (false) to a producer', async (t) => {
  let full = false
  let streamed: () => void = () => {}
  const done = new Promise<void>((resolve) => { streamed = resolve })
  const { port } = startServer(t, (http) => {
    http.setCallback('/flood', (req) => {
      req.sendReplyStart(200, 'OK')
      const chunk = Buffer.alloc(64 * 1024, 97)
      for (let i = 0; i < 1000 && !full; i++) {
        const buf = new EventBuffer()
        buf.add(chunk)
        full = !req.sendReplyChunk(buf)
      }
      req.sendReplyEnd()
      streamed()
    })
  })
  const client = await RawClient.open(port)
  client.socket.pause()
  await client.send('GET /flood HTTP/1.1\r\nConnection: close\r\n\r\n')
  await done
  assert.equal(full, true)
  client.destroy()
})

test('a 413 reaches a client still sending its body (lingering close, no reset)', async (t) => {
  const { port } = startServer(t, (http) => {
    installHandlers(http)
    http.setMaxBodySize(10)
  })
  const client = await RawClient.open(port)
  const body = Buffer.alloc(4 * 1024 * 1024, 98)
  client.socket.write(`POST /echo HTTP/1.1\r\nContent-Length: ${body.length}\r\n\r\n`)
  client.socket.write(body)
  assert.equal(await client.waitClosed(), PAGE_413)
})

test('garbage after a rejected request does not keep the connection', async (t) => {
  const { port } = startServer(t, installHandlers)
  const client = await RawClient.open(port)
  await client.send('BROKEN\r\n\r\n' + '\u0000\u00ff'.repeat(10000))
  assert.equal((await client.waitClosed()).slice(0, PAGE_400.length), PAGE_400)
})
