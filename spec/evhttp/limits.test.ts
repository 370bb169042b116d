// What setTimeout, setMaxHeadersSize and setMaxBodySize bound (headers, bodies, idle and trickling connections), and
// the reply-splitting guards: CR/LF in a handler's reason phrase or header values never reach the wire.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { EventBuffer, EventHttpRequest } from '../../lib/evhttp/index.js'
import { RawClient, installHandlers, startServer } from './helpers.js'

const sleep = async (ms: number): Promise<void> => { await new Promise((resolve) => setTimeout(resolve, ms)) }

test('setTimeout bounds a header block trickled a byte at a time (each byte inside the idle timeout)', async (t) => {
  const { port } = startServer(t, (http) => {
    installHandlers(http)
    http.setTimeout(1)
  })
  const c = await RawClient.open(port)
  const started = Date.now()
  const head = 'GET /about HTTP/1.1\r\nX-Slow: ' + 'a'.repeat(200)
  for (const ch of head) {
    if (c.closed) break
    await c.send(ch)
    await sleep(300)
    if (Date.now() - started > 8000) break
  }
  assert.equal(await c.waitClosed(), '', 'closed silently, as evhttp timeouts are')
  assert.ok(Date.now() - started < 4000, `closed after ${Date.now() - started} ms`)
})

test('setTimeout does not cut a request whose head arrives in time and whose body keeps moving', async (t) => {
  const { port } = startServer(t, (http) => {
    installHandlers(http)
    http.setTimeout(1)
  })
  const c = await RawClient.open(port)
  await c.send('POST /echo HTTP/1.1\r\nContent-Length: 6\r\nConnection: close\r\n\r\n')
  for (const ch of 'abcdef') { await sleep(400); await c.send(ch) }
  assert.match(await c.waitClosed(), /^HTTP\/1\.1 200 OK\r\n[^]*body=abcdef$/)
})

test('setMaxHeadersSize bounds trailers; setMaxBodySize bounds chunked bodies, however they are split', async (t) => {
  const { port } = startServer(t, (http) => {
    installHandlers(http)
    http.setMaxHeadersSize(100)
    http.setMaxBodySize(64)
  })
  const trailers = await RawClient.open(port)
  await trailers.send('POST /echo HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nx\r\n0\r\n', `X-T: ${'t'.repeat(200)}\r\n\r\n`)
  assert.match(await trailers.waitClosed(), /^HTTP\/1\.1 413 /)
  const chunks = await RawClient.open(port)
  await chunks.send('POST /echo HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n', ...Array.from({ length: 10 }, () => '10\r\n' + 'y'.repeat(16) + '\r\n'))
  assert.match(await chunks.waitClosed(), /^HTTP\/1\.1 413 /)
  const line = await RawClient.open(port)
  await line.send('GET /' + 'p'.repeat(300))
  assert.match(await line.waitClosed(), /^HTTP\/1\.1 400 /)
})

test('with no limits set, the safety caps apply: 1 MiB of headers, 16 MiB of body', async (t) => {
  const { port } = startServer(t, installHandlers)
  const big = await RawClient.open(port)
  await big.send(`POST /echo HTTP/1.1\r\nContent-Length: ${16 * 1024 * 1024 + 1}\r\n\r\n`)
  assert.match(await big.waitClosed(), /^HTTP\/1\.1 413 /)
  const headers = await RawClient.open(port)
  await headers.send('GET /about HTTP/1.1\r\n', `X-Big: ${'h'.repeat(1024 * 1024)}\r\n`)
  assert.match(await headers.waitClosed(), /^HTTP\/1\.1 400 /)
})

test('CR or LF in a reason phrase or a header value never reaches the wire', async (t) => {
  const { port } = startServer(t, (http) => {
    http.setCallback('/reason', (req) => {
      req.addHeader('Connection', 'close', EventHttpRequest.OUTPUT_HEADER)
      req.sendReply(200, 'OK\r\nSet-Cookie: evil=1\r\n\r\nHTTP/1.1 200 Forged')
    })
    http.setCallback('/error', (req) => { req.sendError(404, 'Gone\r\nX-Injected: 1') })
    http.setCallback('/start', (req) => {
      req.sendReplyStart(200, 'OK\nX-Injected: 1')
      const b = new EventBuffer()
      b.add('x')
      req.sendReplyChunk(b)
      req.sendReplyEnd()
    })
    http.setCallback('/header', (req) => {
      const refused = [
        req.addHeader('X-A', 'v\r\nSet-Cookie: evil=1', EventHttpRequest.OUTPUT_HEADER),
        req.addHeader('X-B', 'v\nX-C: 1', EventHttpRequest.OUTPUT_HEADER),
        req.addHeader('X-D\r\nX-E', 'v', EventHttpRequest.OUTPUT_HEADER)
      ]
      req.addHeader('Connection', 'close', EventHttpRequest.OUTPUT_HEADER)
      const b = new EventBuffer()
      b.add(refused.map(String).join(','))
      req.sendReply(200, 'OK', b)
    })
  })
  for (const [path, status] of [['/reason', '200 OK'], ['/error', '404 Not Found'], ['/start', '200 OK'], ['/header', '200 OK']] as const) {
    const c = await RawClient.open(port)
    await c.send(`GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`)
    const text = await c.until((s) => s.includes('\r\n\r\n') && (path !== '/start' || s.endsWith('0\r\n\r\n')))
    c.socket.destroy()
    const head = text.slice(0, text.indexOf('\r\n\r\n'))
    assert.equal(head.split('\r\n')[0], `HTTP/1.1 ${status}`, text)
    assert.doesNotMatch(head, /Set-Cookie|X-Injected|X-C|X-E|Forged/, text)
    if (path === '/header') assert.match(text, /false,false,false$/)
  }
})
