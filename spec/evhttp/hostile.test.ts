// A hostile-input sweep of berth/evhttp with its limits set: malformed requests, truncated bodies and huge values
// get a 4xx or, where evhttp answers nothing (EOF before a full request), a silent close; never a 5xx, a crash or a
// hang, and the server still answers afterwards. (Unknown methods get evhttp's 501 by design: not part of this.)
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { RawClient, installHandlers, startServer } from './helpers.js'

const CASES: Array<[string, string | Buffer]> = [
  ['not HTTP', 'GARBAGE\r\n\r\n'],
  ['binary noise', Buffer.from(Array.from({ length: 512 }, (_, i) => (i * 131 + 7) % 256))],
  ['a NUL in the request line', 'GET /ab\0out HTTP/1.1\r\n\r\n'],
  ['version HTTP/9.9', 'GET /about HTTP/9.9\r\n\r\n'],
  ['a 1 MiB request line', `GET /${'u'.repeat(1024 * 1024)} HTTP/1.1\r\n\r\n`],
  ['headers over the limit', `GET /about HTTP/1.1\r\n${'X-H: v\r\n'.repeat(2000)}\r\n`],
  ['a header line without a colon', 'GET /about HTTP/1.1\r\nnocolon\r\n\r\n'],
  ['a Content-Length of 10^20', 'POST /echo HTTP/1.1\r\nContent-Length: 100000000000000000000\r\n\r\n'],
  ['a negative Content-Length', 'POST /echo HTTP/1.1\r\nContent-Length: -1\r\n\r\n'],
  ['a hex Content-Length', 'POST /echo HTTP/1.1\r\nContent-Length: 0x10\r\n\r\n'],
  ['differing Content-Lengths', 'POST /echo HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab'],
  ['Content-Length with chunked', 'POST /echo HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n'],
  ['a chunk size of 2^72', 'POST /echo HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffffff\r\nabc\r\n'],
  ['a chunk-size line of 8 KiB', `POST /echo HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n${'0'.repeat(8192)}`],
  ['a chunked body over the limit', `POST /echo HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n${'400\r\n' + 'b'.repeat(1024) + '\r\n'}`],
  ['Expect with a body over the limit', 'POST /echo HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 999999\r\n\r\n'],
  ['an unknown Expect', 'POST /echo HTTP/1.1\r\nExpect: teapot\r\nContent-Length: 1\r\n\r\nx'],
  ['a Transfer-Encoding that is not chunked last', 'POST /echo HTTP/1.1\r\nTransfer-Encoding: chunked, gzip\r\n\r\n']
]

test('hostile requests: 4xx or a silent close, never 5xx, crash or hang', async (t) => {
  const { port } = startServer(t, (http) => {
    installHandlers(http)
    http.setMaxHeadersSize(8192)
    http.setMaxBodySize(512)
    http.setTimeout(2)
  })
  for (const [name, bytes] of CASES) {
    const c = await RawClient.open(port)
    await c.send(bytes)
    const text = await c.waitClosed(8000)
    const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(text)?.[1] ?? 0)
    assert.ok(status === 0 || (status >= 400 && status < 500), `${name}: ${text.slice(0, 200)}`)
  }
  // truncated bodies: the client goes away part way
  for (const head of ['POST /echo HTTP/1.1\r\nContent-Length: 400\r\n\r\nabc', 'POST /echo HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n10\r\nabc']) {
    const c = await RawClient.open(port)
    await c.send(head)
    c.socket.end()
    assert.equal(await c.waitClosed(5000), '', 'no reply to an incomplete request')
  }
  const ok = await RawClient.open(port)
  await ok.send('GET /about HTTP/1.1\r\nConnection: close\r\n\r\n')
  assert.match(await ok.waitClosed(), /^HTTP\/1\.1 200 OK\r\n/)
})
