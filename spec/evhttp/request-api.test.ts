// EventHttpRequest's methods as PHP names them: headers, buffers, commands, hosts, reply state.

import assert from 'node:assert/strict'
import { test } from 'node:test'
import { EventBuffer, EventHttp, EventHttpRequest } from '../../lib/evhttp/index.js'
import { checkRow, RawClient, startServer } from './helpers.js'

const ABOUT_11 = 'HTTP/1.1 200 OK\r\nDate: D\r\nContent-Length: 0\r\nContent-Type: text/html; charset=ISO-8859-1\r\n\r\n'

/** Serves one request with `inspect` as the default callback and returns what it returned. */
async function withRequest<T> (t: import('node:test').TestContext, request: string,
  inspect: (req: EventHttpRequest) => T, setup?: (http: EventHttp) => void): Promise<{ value: T, reply: string }> {
  let value: T | undefined
  const { port } = startServer(t, (http) => {
    setup?.(http)
    http.setDefaultCallback((req) => {
      value = inspect(req)
      if (req.getResponseCode() === 0) req.sendReply(200, 'OK')
    })
  })
  const client = await RawClient.open(port)
  await client.send(request)
  client.socket.end()
  const reply = await client.waitClosed()
  return { value: value as T, reply }
}

test('constants have the PHP values', () => {
  assert.deepEqual([EventHttpRequest.CMD_GET, EventHttpRequest.CMD_POST, EventHttpRequest.CMD_HEAD,
    EventHttpRequest.CMD_PUT, EventHttpRequest.CMD_DELETE, EventHttpRequest.CMD_OPTIONS, EventHttpRequest.CMD_TRACE,
    EventHttpRequest.CMD_CONNECT, EventHttpRequest.CMD_PATCH], [1, 2, 4, 8, 16, 32, 64, 128, 256])
  assert.equal(EventHttpRequest.INPUT_HEADER, 1)
  assert.equal(EventHttpRequest.OUTPUT_HEADER, 2)
})

test('getCommand for every method', async (t) => {
  const seen: number[] = []
  const { port } = startServer(t, (http) => {
    http.setAllowedMethods(511)
    http.setDefaultCallback((req) => {
      seen.push(req.getCommand())
      req.sendReply(200, 'OK')
    })
  })
  for (const m of ['GET', 'POST', 'HEAD', 'PUT', 'DELETE', 'OPTIONS', 'TRACE', 'PATCH']) {
    const client = await RawClient.open(port)
    await client.send(`${m} /x HTTP/1.1\r\nConnection: close\r\n\r\n`)
    await client.waitClosed()
  }
  assert.deepEqual(seen, [1, 2, 4, 8, 16, 32, 64, 256])
})

test('getUri is raw; getHost strips a Host port and is null without one', async (t) => {
  const a = await withRequest(t, 'GET /%61bout?q=%20#f HTTP/1.1\r\nHost: Example.com:8080\r\n\r\n',
    (req) => [req.getUri(), req.getHost()])
  assert.deepEqual(a.value, ['/%61bout?q=%20#f', 'Example.com'])
  const b = await withRequest(t, 'GET / HTTP/1.1\r\n\r\n', (req) => req.getHost())
  assert.equal(b.value, null)
})

test('getInputHeaders: wire order, names as sent, an exactly repeated name keeps the last value', async (t) => {
  const { value } = await withRequest(t, 'GET / HTTP/1.1\r\nB: 1\r\nA: 2\r\nx-dup: 3\r\nX-Dup: 4\r\nB: 5\r\n\r\n',
    (req) => req.getInputHeaders())
  assert.deepEqual(Object.entries(value), [['B', '5'], ['A', '2'], ['x-dup', '3'], ['X-Dup', '4']])
})

test('findHeader: first case-insensitive match, null when absent, false for a bad type', async (t) => {
  const { value } = await withRequest(t, 'GET / HTTP/1.1\r\nX-A: 1\r\nx-a: 2\r\n\r\n', (req) => [
    req.findHeader('X-A', EventHttpRequest.INPUT_HEADER),
    req.findHeader('x-A', EventHttpRequest.INPUT_HEADER),
    req.findHeader('missing', EventHttpRequest.INPUT_HEADER),
    req.findHeader('X-A', EventHttpRequest.OUTPUT_HEADER),
    req.findHeader('X-A', 3),
  ])
  assert.deepEqual(value, ['1', '1', null, null, false])
})

test('addHeader / removeHeader / clearHeaders / getOutputHeaders', async (t) => {
  const { value, reply } = await withRequest(t, 'GET / HTTP/1.1\r\n\r\n', (req) => {
    const out = EventHttpRequest.OUTPUT_HEADER
    const results = [
      req.addHeader('X-One', '1', out),
      req.addHeader('X-Two', '2', out),
      req.addHeader('X-Bad', 'a\r\nInjected: yes', out),
      req.addHeader('X-Bad\n', 'a', out),
      req.addHeader('X-In', 'input', EventHttpRequest.INPUT_HEADER),
      req.removeHeader('x-one', out),
      req.removeHeader('x-one', out),
    ]
    const input = req.findHeader('X-In', EventHttpRequest.INPUT_HEADER)
    const before = req.getOutputHeaders()
    req.clearHeaders()
    req.addHeader('X-Kept', 'k', out)
    req.addHeader('X-Kept', 'again', out)
    return { results, input, before, after: req.getOutputHeaders() }
  })
  assert.deepEqual(value.results, [true, true, false, false, true, true, false])
  assert.equal(value.input, 'input')
  assert.deepEqual({ ...value.before }, { 'X-Two': '2' })
  assert.deepEqual({ ...value.after }, { 'X-Kept': 'again' })
  assert.equal(reply, 'HTTP/1.1 200 OK\r\nX-Kept: k\r\nX-Kept: again\r\nDate: D\r\nContent-Length: 0\r\n' +
    'Content-Type: text/html; charset=ISO-8859-1\r\n\r\n')
})

test('getInputBuffer holds the body; getOutputBuffer is sent by sendReply without a buffer', async (t) => {
  const { value, reply } = await withRequest(t, 'PUT / HTTP/1.1\r\nContent-Length: 11\r\n\r\nhello world', (req) => {
    const body = req.getInputBuffer().read(100)
    req.getOutputBuffer().add('got ' + body)
    req.sendReply(201, 'Created')
    return [body, req.getResponseCode(), req.getInputBuffer().length]
  })
  assert.deepEqual(value, ['hello world', 201, 0])
  assert.equal(reply, 'HTTP/1.1 201 Created\r\nDate: D\r\nContent-Length: 15\r\nContent-Type: text/html; charset=ISO-8859-1' +
    '\r\n\r\ngot hello world')
})

test('sendReply with a buffer appends it to the output buffer and drains it', async (t) => {
  const { value, reply } = await withRequest(t, 'GET / HTTP/1.1\r\n\r\n', (req) => {
    req.getOutputBuffer().add('a')
    const buf = new EventBuffer()
    buf.add('b')
    req.sendReply(200, 'OK', buf)
    return buf.length
  })
  assert.equal(value, 0)
  assert.match(reply, /Content-Length: 2\r\n[^]*\r\n\r\nab$/)
})

test('a second reply is ignored; getResponseCode is 0 before any', async (t) => {
  const { value, reply } = await withRequest(t, 'GET / HTTP/1.1\r\n\r\n', (req) => {
    const before = req.getResponseCode()
    req.sendReply(202, 'Accepted')
    req.sendReply(500, 'Again')
    req.sendError(404)
    req.sendReplyStart(200, 'OK')
    return before
  })
  assert.equal(value, 0)
  assert.equal(reply, 'HTTP/1.1 202 Accepted\r\nDate: D\r\nContent-Length: 0\r\nContent-Type: text/html; charset=ISO-8859-1\r\n\r\n')
})

test('a handler may answer later; reads wait for it (one request at a time)', async (t) => {
  const order: string[] = []
  const { port } = startServer(t, (http) => {
    http.setDefaultCallback((req) => {
      order.push('start ' + req.getUri())
      setImmediate(() => {
        order.push('reply ' + req.getUri())
        req.sendReply(200, 'OK')
      })
    })
  })
  const client = await RawClient.open(port)
  await client.send('GET /1 HTTP/1.1\r\n\r\nGET /2 HTTP/1.1\r\n\r\nGET /3 HTTP/1.1\r\nConnection: close\r\n\r\n')
  const text = await client.waitClosed()
  assert.equal(text.split('HTTP/1.1 200 OK').length - 1, 3)
  assert.deepEqual(order, ['start /1', 'reply /1', 'start /2', 'reply /2', 'start /3', 'reply /3'])
})

test('setCallback: false for a path already registered; removeCallback; the arg is passed', async (t) => {
  const args: unknown[] = []
  const { http, port } = startServer(t)
  assert.equal(http.setCallback('/about', (req, arg) => { args.push(arg); req.sendReply(200, 'OK') }, 'first'), true)
  assert.equal(http.setCallback('/about', (req) => req.sendReply(500, 'No')), false)
  await checkRow(port, ['callback', 'GET /about HTTP/1.1\r\n\r\n', ABOUT_11, 'open'])
  assert.deepEqual(args, ['first'])
  assert.equal(http.removeCallback('/about'), true)
  assert.equal(http.removeCallback('/about'), false)
  http.setDefaultCallback((req, arg) => { args.push(arg); req.sendReply(200, 'OK') }, 'default')
  await checkRow(port, ['default', 'GET /about HTTP/1.1\r\n\r\n', ABOUT_11, 'open'])
  assert.deepEqual(args, ['first', 'default', 'default']) // checkRow's probe request reaches the default callback too
})

test('callback paths match the UTF-8 bytes of the request path', async (t) => {
  const { port } = startServer(t, (http) => {
    http.setCallback('/café', (req) => req.sendReply(200, 'OK'))
  })
  await checkRow(port, ['escaped', 'GET /caf%C3%A9 HTTP/1.1\r\n\r\n', ABOUT_11, 'open'])
  await checkRow(port, ['raw bytes', 'GET /caf\u00c3\u00a9 HTTP/1.1\r\n\r\n', ABOUT_11, 'open'])
})

test('closeConnection drops the connection without a reply', async (t) => {
  const { reply } = await withRequest(t, 'GET / HTTP/1.1\r\n\r\n', (req) => {
    req.closeConnection()
    req.sendReply(200, 'OK') // dropped
  })
  assert.equal(reply, '')
})

test('an EventSslContext is refused', () => {
  assert.throws(() => new EventHttp(new (class { })() as never, {}), /TLS/)
})
