// §4.4 and §4.5 of the reference: streamed replies (sendReplyStart / Chunk / End), HEAD and other replies
// without a body. Two libevent quirks are plain framing bugs and are fixed here on purpose (see the comments).

import assert from 'node:assert/strict'
import { test } from 'node:test'
import { EventBuffer, EventHttpRequest } from '../../lib/evhttp/index.js'
import { checkRow, installHandlers, RawClient, startServer, type Row } from './helpers.js'

// Replies recorded from libevent 2.1.12 (Debian) evhttp for the same request bytes, Date masked, except the
// rows marked deliberate.
const ROWS: Row[] = [
  ['070 streamed reply on HTTP/1.1 is chunked', 'GET /stream HTTP/1.1\r\n\r\n',
    'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nDate: D\r\nContent-Type: text/html; charset=ISO-8859-1\r\n\r\na\r\nchunk-one\n\r\n11\r\nchunk-two-longer\n\r\n0\r\n\r\n', 'open'],
  ['071 streamed reply on HTTP/1.0', 'GET /stream HTTP/1.0\r\n\r\n',
    'HTTP/1.0 200 OK\r\nContent-Type: text/html; charset=ISO-8859-1\r\n\r\nchunk-one\nchunk-two-longer\n', 'closed'],
  // Deliberate: libevent announces Connection: keep-alive and Content-Length: 0, then streams the data anyway.
  ['072 streamed reply on HTTP/1.0 keep-alive is close-delimited', 'GET /stream HTTP/1.0\r\nConnection: keep-alive\r\n\r\n',
    'HTTP/1.0 200 OK\r\nContent-Type: text/html; charset=ISO-8859-1\r\n\r\nchunk-one\nchunk-two-longer\n', 'closed'],
  // Deliberate: libevent sends the handler's body after a HEAD reply; headers are kept, the body is not sent.
  ['069 HEAD: headers only', 'HEAD /body HTTP/1.1\r\n\r\n',
    'HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=ISO-8859-1\r\nDate: D\r\n\r\n', 'open'],
  ['034 HEAD /unknown: the 404 headers only', 'HEAD /unknown HTTP/1.1\r\n\r\n',
    'HTTP/1.1 404 Not Found\r\nContent-Type: text/html\r\nConnection: close\r\nDate: D\r\n\r\n', 'closed'],
  ['HEAD streamed', 'HEAD /stream HTTP/1.1\r\n\r\n',
    'HTTP/1.1 200 OK\r\nDate: D\r\n\r\n', 'open'],
  ['204 never carries a body', 'GET /nocontent HTTP/1.1\r\n\r\n',
    'HTTP/1.1 204 No Content\r\nDate: D\r\n\r\n', 'open'],
  // CONNECT is not allowed by default: 501 with Connection: close but no Content-Length, and libevent keeps the
  // connection open (CONNECT is exempt from the close rules); the page body is not sent (no framing for it).
  ['042 CONNECT: 501, connection stays open', 'CONNECT x:1 HTTP/1.1\r\n\r\n',
    'HTTP/1.1 501 Not Implemented\r\nContent-Type: text/html\r\nConnection: close\r\nDate: D\r\n\r\n', 'open'],
]

test('streamed and bodiless replies', async (t) => {
  const { port } = startServer(t, installHandlers)
  for (const row of ROWS) await t.test(row[0], () => checkRow(port, row))
})

test('bytes already in the output buffer go out as the first chunk (libevent sends them unframed)', async (t) => {
  const { port } = startServer(t, (http) => {
    http.setCallback('/prefilled', (req) => {
      req.getOutputBuffer().add('early\n')
      req.sendReplyStart(200, 'OK')
      const buf = new EventBuffer()
      buf.add('late\n')
      req.sendReplyChunk(buf)
      req.sendReplyEnd()
    })
  })
  await checkRow(port, ['prefilled', 'GET /prefilled HTTP/1.1\r\n\r\n',
    'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nDate: D\r\nContent-Type: text/html; charset=ISO-8859-1\r\n\r\n' +
    '6\r\nearly\n\r\n5\r\nlate\n\r\n0\r\n\r\n', 'open'])
})

test('a handler Content-Length turns chunking off on HTTP/1.1', async (t) => {
  const { port } = startServer(t, (http) => {
    http.setCallback('/sized', (req) => {
      req.addHeader('Content-Length', '4', EventHttpRequest.OUTPUT_HEADER)
      req.sendReplyStart(200, 'OK')
      const buf = new EventBuffer()
      buf.add('abcd')
      req.sendReplyChunk(buf)
      req.sendReplyEnd()
    })
  })
  await checkRow(port, ['sized', 'GET /sized HTTP/1.1\r\n\r\n',
    'HTTP/1.1 200 OK\r\nContent-Length: 4\r\nDate: D\r\nContent-Type: text/html; charset=ISO-8859-1\r\n\r\nabcd', 'open'])
})

test('chunks can be sent later, from outside the callback', async (t) => {
  const { port } = startServer(t, (http) => {
    http.setCallback('/later', (req) => {
      req.sendReplyStart(200, 'OK')
      setImmediate(() => {
        const buf = new EventBuffer()
        buf.add('x')
        assert.equal(req.sendReplyChunk(buf), true)
        assert.equal(buf.length, 0)
        assert.equal(req.sendReplyChunk(new EventBuffer()), true) // empty: no-op
        req.sendReplyEnd()
      })
    })
  })
  await checkRow(port, ['later', 'GET /later HTTP/1.1\r\n\r\n',
    'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nDate: D\r\nContent-Type: text/html; charset=ISO-8859-1\r\n\r\n' +
    '1\r\nx\r\n0\r\n\r\n', 'open'])
})

test('a large chunk is framed around its data', async (t) => {
  const size = 200 * 1024
  const { port } = startServer(t, (http) => {
    http.setCallback('/large', (req) => {
      req.sendReplyStart(200, 'OK')
      const buf = new EventBuffer()
      buf.add(Buffer.alloc(size, 122))
      req.sendReplyChunk(buf)
      req.sendReplyEnd()
    })
  })
  const head = 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nDate: D\r\nContent-Type: text/html; charset=ISO-8859-1\r\n\r\n'
  await checkRow(port, ['large', 'GET /large HTTP/1.1\r\n\r\n',
    head + size.toString(16) + '\r\n' + 'z'.repeat(size) + '\r\n0\r\n\r\n', 'open'])
})

test('sends after the client left are dropped without throwing', async (t) => {
  let resolveDone: () => void = () => {}
  const done = new Promise<void>((resolve) => { resolveDone = resolve })
  const { port } = startServer(t, (http) => {
    http.setCallback('/gone', (req) => {
      client.destroy()
      client.socket.once('close', () => setImmediate(() => {
        req.sendReply(200, 'OK')
        req.sendReplyChunk(new EventBuffer())
        req.sendReplyEnd()
        resolveDone()
      }))
    })
  })
  const client = await RawClient.open(port)
  await client.send('GET /gone HTTP/1.1\r\n\r\n')
  await done
})
