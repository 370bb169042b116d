// §4.3 of the reference: what evhttp answers to bad, oversized or unexpected requests.

import assert from 'node:assert/strict'
import { test } from 'node:test'
import { checkRow, installHandlers, RawClient, startServer, type Row } from './helpers.js'

const BAD_REQUEST_400 = 'HTTP/1.1 400 Bad Request\r\nContent-Type: text/html\r\nConnection: close\r\nDate: D\r\n' +
  'Content-Length: 94\r\n\r\n<HTML><HEAD>\n<TITLE>400 Bad Request</TITLE>\n</HEAD><BODY>\n<H1>Bad Request</H1>\n</BODY></HTML>\n'

// Replies recorded from libevent 2.1.12 (Debian) evhttp for the same request bytes, Date masked.
const ROWS: Row[] = [
  ['045 request line shorter than 14 bytes', 'GET / HTTP/1\r\n\r\n',
    'HTTP/1.1 400 Bad Request\r\nContent-Type: text/html\r\nConnection: close\r\nDate: D\r\nContent-Length: 94\r\n\r\n<HTML><HEAD>\n<TITLE>400 Bad Request</TITLE>\n</HEAD><BODY>\n<H1>Bad Request</H1>\n</BODY></HTML>\n', 'closed'],
  ['046 no space in the request line', 'GET/about HTTP/1.1\r\n\r\n',
    'HTTP/1.1 400 Bad Request\r\nContent-Type: text/html\r\nConnection: close\r\nDate: D\r\nContent-Length: 94\r\n\r\n<HTML><HEAD>\n<TITLE>400 Bad Request</TITLE>\n</HEAD><BODY>\n<H1>Bad Request</H1>\n</BODY></HTML>\n', 'closed'],
  ['empty first line', '\r\nGET /about HTTP/1.1\r\n\r\n',
    'HTTP/1.1 400 Bad Request\r\nContent-Type: text/html\r\nConnection: close\r\nDate: D\r\nContent-Length: 94\r\n\r\n<HTML><HEAD>\n<TITLE>400 Bad Request</TITLE>\n</HEAD><BODY>\n<H1>Bad Request</H1>\n</BODY></HTML>\n', 'closed'],
  ['047 version with trailing garbage', 'GET /about HTTP/1.1x\r\n\r\n',
    'HTTP/1.1 400 Bad Request\r\nContent-Type: text/html\r\nConnection: close\r\nDate: D\r\nContent-Length: 94\r\n\r\n<HTML><HEAD>\n<TITLE>400 Bad Request</TITLE>\n</HEAD><BODY>\n<H1>Bad Request</H1>\n</BODY></HTML>\n', 'closed'],
  ['048 lowercase protocol', 'GET /about http/1.1\r\n\r\n',
    'HTTP/1.1 400 Bad Request\r\nContent-Type: text/html\r\nConnection: close\r\nDate: D\r\nContent-Length: 94\r\n\r\n<HTML><HEAD>\n<TITLE>400 Bad Request</TITLE>\n</HEAD><BODY>\n<H1>Bad Request</H1>\n</BODY></HTML>\n', 'closed'],
  ['051 major version above 1', 'GET /about HTTP/2.0\r\n\r\n',
    'HTTP/1.1 400 Bad Request\r\nContent-Type: text/html\r\nConnection: close\r\nDate: D\r\nContent-Length: 94\r\n\r\n<HTML><HEAD>\n<TITLE>400 Bad Request</TITLE>\n</HEAD><BODY>\n<H1>Bad Request</H1>\n</BODY></HTML>\n', 'closed'],
  ['052 only the method and the target', 'GET /aboutxxxxxxxx\r\n\r\n',
    'HTTP/1.1 400 Bad Request\r\nContent-Type: text/html\r\nConnection: close\r\nDate: D\r\nContent-Length: 94\r\n\r\n<HTML><HEAD>\n<TITLE>400 Bad Request</TITLE>\n</HEAD><BODY>\n<H1>Bad Request</H1>\n</BODY></HTML>\n', 'closed'],
  ['053 header line without a colon', 'GET /about HTTP/1.1\r\nBadHeader\r\n\r\n',
    'HTTP/1.1 400 Bad Request\r\nContent-Type: text/html\r\nConnection: close\r\nDate: D\r\nContent-Length: 94\r\n\r\n<HTML><HEAD>\n<TITLE>400 Bad Request</TITLE>\n</HEAD><BODY>\n<H1>Bad Request</H1>\n</BODY></HTML>\n', 'closed'],
  ['header error on HTTP/1.0 answers HTTP/1.1', 'GET /about HTTP/1.0\r\nBadHeader\r\n\r\n',
    'HTTP/1.1 400 Bad Request\r\nContent-Type: text/html\r\nConnection: close\r\nDate: D\r\nContent-Length: 94\r\n\r\n<HTML><HEAD>\n<TITLE>400 Bad Request</TITLE>\n</HEAD><BODY>\n<H1>Bad Request</H1>\n</BODY></HTML>\n', 'closed'],
  ['header error on HTTP/1.2 keeps the version', 'GET /about HTTP/1.2\r\nBadHeader\r\n\r\n',
    'HTTP/1.2 400 Bad Request\r\nContent-Type: text/html\r\nConnection: close\r\nDate: D\r\nContent-Length: 94\r\n\r\n<HTML><HEAD>\n<TITLE>400 Bad Request</TITLE>\n</HEAD><BODY>\n<H1>Bad Request</H1>\n</BODY></HTML>\n', 'closed'],
  ['CR inside a header value', 'GET /about HTTP/1.1\r\nA: b\rc\r\n\r\n',
    'HTTP/1.1 400 Bad Request\r\nContent-Type: text/html\r\nConnection: close\r\nDate: D\r\nContent-Length: 94\r\n\r\n<HTML><HEAD>\n<TITLE>400 Bad Request</TITLE>\n</HEAD><BODY>\n<H1>Bad Request</H1>\n</BODY></HTML>\n', 'closed'],
  ['CR inside a header name', 'GET /about HTTP/1.1\r\nA\r: b\r\n\r\n',
    'HTTP/1.1 400 Bad Request\r\nContent-Type: text/html\r\nConnection: close\r\nDate: D\r\nContent-Length: 94\r\n\r\n<HTML><HEAD>\n<TITLE>400 Bad Request</TITLE>\n</HEAD><BODY>\n<H1>Bad Request</H1>\n</BODY></HTML>\n', 'closed'],
  ['continuation line first', 'GET /echo HTTP/1.1\r\n folded-first\r\n\r\n',
    'HTTP/1.1 400 Bad Request\r\nContent-Type: text/html\r\nConnection: close\r\nDate: D\r\nContent-Length: 94\r\n\r\n<HTML><HEAD>\n<TITLE>400 Bad Request</TITLE>\n</HEAD><BODY>\n<H1>Bad Request</H1>\n</BODY></HTML>\n', 'closed'],
  ['063 Content-Length not a number', 'POST /echo HTTP/1.1\r\nContent-Length: 5x\r\n\r\nhello',
    'HTTP/1.1 400 Bad Request\r\nContent-Type: text/html\r\nConnection: close\r\nDate: D\r\nContent-Length: 94\r\n\r\n<HTML><HEAD>\n<TITLE>400 Bad Request</TITLE>\n</HEAD><BODY>\n<H1>Bad Request</H1>\n</BODY></HTML>\n', 'closed'],
  ['064 negative Content-Length', 'POST /echo HTTP/1.1\r\nContent-Length: -5\r\n\r\nhello',
    'HTTP/1.1 400 Bad Request\r\nContent-Type: text/html\r\nConnection: close\r\nDate: D\r\nContent-Length: 94\r\n\r\n<HTML><HEAD>\n<TITLE>400 Bad Request</TITLE>\n</HEAD><BODY>\n<H1>Bad Request</H1>\n</BODY></HTML>\n', 'closed'],
  ['empty Content-Length', 'POST /echo HTTP/1.1\r\nContent-Length: \r\n\r\nhello',
    'HTTP/1.1 400 Bad Request\r\nContent-Type: text/html\r\nConnection: close\r\nDate: D\r\nContent-Length: 94\r\n\r\n<HTML><HEAD>\n<TITLE>400 Bad Request</TITLE>\n</HEAD><BODY>\n<H1>Bad Request</H1>\n</BODY></HTML>\n', 'closed'],
  ['Content-Length with a plus sign', 'POST /echo HTTP/1.1\r\nContent-Length: +5\r\n\r\nhello',
    'HTTP/1.1 200 OK\r\nDate: D\r\nContent-Length: 60\r\nContent-Type: text/html; charset=ISO-8859-1\r\n\r\nuri=/echo host=(null) cmd=2\n[Content-Length]=[+5]\nbody=hello', 'open'],
  ['061 Transfer-Encoding with Content-Length', 'POST /echo HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n',
    'HTTP/1.1 400 Bad Request\r\nContent-Type: text/html\r\nConnection: close\r\nDate: D\r\nContent-Length: 94\r\n\r\n<HTML><HEAD>\n<TITLE>400 Bad Request</TITLE>\n</HEAD><BODY>\n<H1>Bad Request</H1>\n</BODY></HTML>\n', 'closed'],
  ['065 chunked not the last coding', 'POST /echo HTTP/1.1\r\nTransfer-Encoding: chunked, gzip\r\n\r\n5\r\nhello\r\n0\r\n\r\n',
    'HTTP/1.1 400 Bad Request\r\nContent-Type: text/html\r\nConnection: close\r\nDate: D\r\nContent-Length: 94\r\n\r\n<HTML><HEAD>\n<TITLE>400 Bad Request</TITLE>\n</HEAD><BODY>\n<H1>Bad Request</H1>\n</BODY></HTML>\n', 'closed'],
  ['chunked twice', 'POST /echo HTTP/1.1\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n',
    'HTTP/1.1 400 Bad Request\r\nContent-Type: text/html\r\nConnection: close\r\nDate: D\r\nContent-Length: 94\r\n\r\n<HTML><HEAD>\n<TITLE>400 Bad Request</TITLE>\n</HEAD><BODY>\n<H1>Bad Request</H1>\n</BODY></HTML>\n', 'closed'],
  ['062 identical Content-Length twice', 'POST /echo HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\nhello',
    // getInputHeaders() keeps one value per exact name (PHP array semantics); libevent's own list has both lines.
    'HTTP/1.1 200 OK\r\nDate: D\r\nContent-Length: 59\r\nContent-Type: text/html; charset=ISO-8859-1\r\n\r\nuri=/echo host=(null) cmd=2\n[Content-Length]=[5]\nbody=hello', 'open'],
  ['066 corrupt chunk size', 'POST /echo HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello!\r\n0\r\n\r\n',
    'HTTP/1.1 413 Request Entity Too Large\r\nContent-Type: text/html\r\nConnection: close\r\nDate: D\r\nContent-Length: 120\r\n\r\n<HTML><HEAD>\n<TITLE>413 Request Entity Too Large</TITLE>\n</HEAD><BODY>\n<H1>Request Entity Too Large</H1>\n</BODY></HTML>\n', 'closed'],
  ['077 chunk extension', 'POST /echo HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n6;ext=1\r\nhello!\r\n0\r\n\r\n',
    'HTTP/1.1 413 Request Entity Too Large\r\nContent-Type: text/html\r\nConnection: close\r\nDate: D\r\nContent-Length: 120\r\n\r\n<HTML><HEAD>\n<TITLE>413 Request Entity Too Large</TITLE>\n</HEAD><BODY>\n<H1>Request Entity Too Large</H1>\n</BODY></HTML>\n', 'closed'],
  ['no 100 Continue when the body came along', 'POST /echo HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\nhello',
    'HTTP/1.1 200 OK\r\nDate: D\r\nContent-Length: 83\r\nContent-Type: text/html; charset=ISO-8859-1\r\n\r\nuri=/echo host=(null) cmd=2\n[Expect]=[100-continue]\n[Content-Length]=[5]\nbody=hello', 'open'],
  ['no 100 Continue on HTTP/1.0', 'POST /echo HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\nhello',
    'HTTP/1.0 200 OK\r\nContent-Type: text/html; charset=ISO-8859-1\r\n\r\nuri=/echo host=(null) cmd=2\n[Expect]=[100-continue]\n[Content-Length]=[5]\nbody=hello', 'closed'],
  ['059 Expect: anything else', 'POST /echo HTTP/1.1\r\nExpect: foo\r\nContent-Length: 5\r\n\r\nhello',
    'HTTP/1.1 417 Expectation Failed\r\nContent-Type: text/html\r\nConnection: close\r\nDate: D\r\nContent-Length: 108\r\n\r\n<HTML><HEAD>\n<TITLE>417 Expectation Failed</TITLE>\n</HEAD><BODY>\n<H1>Expectation Failed</H1>\n</BODY></HTML>\n', 'closed'],
  ['Expect ignored without a body', 'GET /echo HTTP/1.1\r\nExpect: foo\r\n\r\n',
    'HTTP/1.1 200 OK\r\nDate: D\r\nContent-Length: 48\r\nContent-Type: text/html; charset=ISO-8859-1\r\n\r\nuri=/echo host=(null) cmd=1\n[Expect]=[foo]\nbody=', 'open'],
  ['039 unknown method', 'FOO /about HTTP/1.1\r\n\r\n',
    'HTTP/1.1 501 Not Implemented\r\nContent-Type: text/html\r\nConnection: close\r\nDate: D\r\nContent-Length: 102\r\n\r\n<HTML><HEAD>\n<TITLE>501 Not Implemented</TITLE>\n</HEAD><BODY>\n<H1>Not Implemented</H1>\n</BODY></HTML>\n', 'closed'],
  ['040 lowercase method', 'get /about HTTP/1.1\r\n\r\n',
    'HTTP/1.1 501 Not Implemented\r\nContent-Type: text/html\r\nConnection: close\r\nDate: D\r\nContent-Length: 102\r\n\r\n<HTML><HEAD>\n<TITLE>501 Not Implemented</TITLE>\n</HEAD><BODY>\n<H1>Not Implemented</H1>\n</BODY></HTML>\n', 'closed'],
  ['PATCH not allowed by default', 'PATCH /about HTTP/1.1\r\n\r\n',
    'HTTP/1.1 501 Not Implemented\r\nContent-Type: text/html\r\nConnection: close\r\nDate: D\r\nContent-Length: 102\r\n\r\n<HTML><HEAD>\n<TITLE>501 Not Implemented</TITLE>\n</HEAD><BODY>\n<H1>Not Implemented</H1>\n</BODY></HTML>\n', 'closed'],
  ['OPTIONS not allowed by default', 'OPTIONS /about HTTP/1.1\r\n\r\n',
    'HTTP/1.1 501 Not Implemented\r\nContent-Type: text/html\r\nConnection: close\r\nDate: D\r\nContent-Length: 102\r\n\r\n<HTML><HEAD>\n<TITLE>501 Not Implemented</TITLE>\n</HEAD><BODY>\n<H1>Not Implemented</H1>\n</BODY></HTML>\n', 'closed'],
  ['TRACE not allowed by default', 'TRACE /about HTTP/1.1\r\n\r\n',
    'HTTP/1.1 501 Not Implemented\r\nContent-Type: text/html\r\nConnection: close\r\nDate: D\r\nContent-Length: 102\r\n\r\n<HTML><HEAD>\n<TITLE>501 Not Implemented</TITLE>\n</HEAD><BODY>\n<H1>Not Implemented</H1>\n</BODY></HTML>\n', 'closed'],
  ['not allowed on HTTP/1.0 answers HTTP/1.1', 'FOO /about HTTP/1.0\r\n\r\n',
    'HTTP/1.1 501 Not Implemented\r\nContent-Type: text/html\r\nConnection: close\r\nDate: D\r\nContent-Length: 102\r\n\r\n<HTML><HEAD>\n<TITLE>501 Not Implemented</TITLE>\n</HEAD><BODY>\n<H1>Not Implemented</H1>\n</BODY></HTML>\n', 'closed'],
  // Deliberate: libevent accepts differing duplicate Content-Length headers and uses the first (its smuggling
  // patch only looks at duplicates when Transfer-Encoding is present). Rejected here, as RFC 9112 §6.3 says.
  ['differing Content-Length headers are rejected', 'POST /echo HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 3\r\n\r\nhello',
    BAD_REQUEST_400, 'closed'],
]

const MAX_HEADERS_ROWS: Row[] = [
  ['088 headers at the limit', 'GET /about HTTP/1.1\r\nX: 123456789012345678\r\n\r\n',
    'HTTP/1.1 200 OK\r\nDate: D\r\nContent-Length: 0\r\nContent-Type: text/html; charset=ISO-8859-1\r\n\r\n', 'open'],
  ['089 headers one byte over the limit', 'GET /about HTTP/1.1\r\nX: 1234567890123456789\r\n\r\n',
    'HTTP/1.1 400 Bad Request\r\nContent-Type: text/html\r\nConnection: close\r\nDate: D\r\nContent-Length: 94\r\n\r\n<HTML><HEAD>\n<TITLE>400 Bad Request</TITLE>\n</HEAD><BODY>\n<H1>Bad Request</H1>\n</BODY></HTML>\n', 'closed'],
  ['request line over the limit', 'GET /aboutxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx HTTP/1.1\r\n\r\n',
    'HTTP/1.1 400 Bad Request\r\nContent-Type: text/html\r\nConnection: close\r\nDate: D\r\nContent-Length: 94\r\n\r\n<HTML><HEAD>\n<TITLE>400 Bad Request</TITLE>\n</HEAD><BODY>\n<H1>Bad Request</H1>\n</BODY></HTML>\n', 'closed'],
  ['unterminated line over the limit', 'GET /about HTTP/1.1\r\nXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX',
    'HTTP/1.1 400 Bad Request\r\nContent-Type: text/html\r\nConnection: close\r\nDate: D\r\nContent-Length: 94\r\n\r\n<HTML><HEAD>\n<TITLE>400 Bad Request</TITLE>\n</HEAD><BODY>\n<H1>Bad Request</H1>\n</BODY></HTML>\n', 'closed'],
]

const MAX_BODY_ROWS: Row[] = [
  ['body at the limit', 'POST /echo HTTP/1.1\r\nContent-Length: 10\r\n\r\nhelloworld',
    'HTTP/1.1 200 OK\r\nDate: D\r\nContent-Length: 65\r\nContent-Type: text/html; charset=ISO-8859-1\r\n\r\nuri=/echo host=(null) cmd=2\n[Content-Length]=[10]\nbody=helloworld', 'open'],
  ['090 declared body over the limit', 'POST /echo HTTP/1.1\r\nContent-Length: 11\r\n\r\n',
    'HTTP/1.1 413 Request Entity Too Large\r\nContent-Type: text/html\r\nConnection: close\r\nDate: D\r\nContent-Length: 120\r\n\r\n<HTML><HEAD>\n<TITLE>413 Request Entity Too Large</TITLE>\n</HEAD><BODY>\n<H1>Request Entity Too Large</H1>\n</BODY></HTML>\n', 'closed'],
  ['093 100-continue with a declared length over the limit', 'POST /echo HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 11\r\n\r\n',
    'HTTP/1.1 413 Request Entity Too Large\r\nContent-Type: text/html\r\nConnection: close\r\nDate: D\r\nContent-Length: 120\r\n\r\n<HTML><HEAD>\n<TITLE>413 Request Entity Too Large</TITLE>\n</HEAD><BODY>\n<H1>Request Entity Too Large</H1>\n</BODY></HTML>\n', 'closed'],
  ['092 chunked body over the limit', 'POST /echo HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n',
    'HTTP/1.1 413 Request Entity Too Large\r\nContent-Type: text/html\r\nConnection: close\r\nDate: D\r\nContent-Length: 120\r\n\r\n<HTML><HEAD>\n<TITLE>413 Request Entity Too Large</TITLE>\n</HEAD><BODY>\n<H1>Request Entity Too Large</H1>\n</BODY></HTML>\n', 'closed'],
  ['413 on HTTP/1.0', 'POST /echo HTTP/1.0\r\nContent-Length: 11\r\n\r\nhello world',
    'HTTP/1.1 413 Request Entity Too Large\r\nContent-Type: text/html\r\nConnection: close\r\nDate: D\r\nContent-Length: 120\r\n\r\n<HTML><HEAD>\n<TITLE>413 Request Entity Too Large</TITLE>\n</HEAD><BODY>\n<H1>Request Entity Too Large</H1>\n</BODY></HTML>\n', 'closed'],
]

const METHOD_ROWS: Row[] = [
  ['094 POST outside setAllowedMethods', 'POST /about HTTP/1.1\r\n\r\n',
    'HTTP/1.1 501 Not Implemented\r\nContent-Type: text/html\r\nConnection: close\r\nDate: D\r\nContent-Length: 102\r\n\r\n<HTML><HEAD>\n<TITLE>501 Not Implemented</TITLE>\n</HEAD><BODY>\n<H1>Not Implemented</H1>\n</BODY></HTML>\n', 'closed'],
  ['PATCH allowed', 'PATCH /about HTTP/1.1\r\n\r\n',
    'HTTP/1.1 200 OK\r\nDate: D\r\nContent-Length: 0\r\nContent-Type: text/html; charset=ISO-8859-1\r\n\r\n', 'open'],
  ['GET allowed', 'GET /about HTTP/1.1\r\n\r\n',
    'HTTP/1.1 200 OK\r\nDate: D\r\nContent-Length: 0\r\nContent-Type: text/html; charset=ISO-8859-1\r\n\r\n', 'open'],
]

test('error statuses match evhttp byte for byte', async (t) => {
  const { port } = startServer(t, installHandlers)
  for (const row of ROWS) await t.test(row[0], () => checkRow(port, row))
})

test('setMaxHeadersSize(40): request line + header lines above it get 400', async (t) => {
  const { port } = startServer(t, (http) => {
    installHandlers(http)
    http.setMaxHeadersSize(40)
  })
  for (const row of MAX_HEADERS_ROWS) await t.test(row[0], () => checkRow(port, row))
})

test('setMaxBodySize(10): larger declared or received bodies get 413', async (t) => {
  const { port } = startServer(t, (http) => {
    installHandlers(http)
    http.setMaxBodySize(10)
  })
  for (const row of MAX_BODY_ROWS) await t.test(row[0], () => checkRow(port, row))
})

test('setAllowedMethods(GET | PATCH): others get 501', async (t) => {
  const { port } = startServer(t, (http) => {
    installHandlers(http)
    http.setAllowedMethods(1 | 256)
  })
  for (const row of METHOD_ROWS) await t.test(row[0], () => checkRow(port, row))
})

test('an allowed-methods mask with bit 15 lets unknown methods through (libevent\'s EVHTTP_REQ_UNKNOWN_)', async (t) => {
  const { port } = startServer(t, (http) => {
    installHandlers(http)
    http.setAllowedMethods(1 | 32768)
  })
  await checkRow(port, ['unknown method allowed', 'FOO /echo HTTP/1.1\r\n\r\n',
    'HTTP/1.1 200 OK\r\nDate: D\r\nContent-Length: 37\r\nContent-Type: text/html; charset=ISO-8859-1\r\n\r\n' +
    'uri=/echo host=(null) cmd=32768\nbody=', 'open'])
})

test('058 Expect: 100-continue: interim reply before the body is sent', async (t) => {
  const { port } = startServer(t, installHandlers)
  const client = await RawClient.open(port)
  await client.send('POST /echo HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n')
  assert.equal(await client.until((text) => text.length >= 25), 'HTTP/1.1 100 Continue\r\n\r\n')
  await client.send('hello')
  const reply = 'HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nDate: D\r\nContent-Length: 83\r\n' +
    'Content-Type: text/html; charset=ISO-8859-1\r\n\r\nuri=/echo host=(null) cmd=2\n[Expect]=[100-continue]\n' +
    '[Content-Length]=[5]\nbody=hello'
  assert.equal(await client.atLeast(reply.length), reply)
  client.destroy()
})

test('013 EOF before a full request: closed without a reply', async (t) => {
  const { port } = startServer(t, installHandlers)
  const client = await RawClient.open(port)
  await client.send('GET /about HTTP/1.1\r\nHost: x\r\n')
  client.socket.end()
  assert.equal(await client.waitClosed(), '')
})

test('a half-closed client still gets the replies to the requests it sent', async (t) => {
  const { port } = startServer(t, installHandlers)
  const client = await RawClient.open(port)
  await client.send('GET /about HTTP/1.1\r\n\r\nGET /about HTTP/1.0\r\nConnection: keep-alive\r\n\r\n')
  client.socket.end()
  assert.equal(await client.waitClosed(),
    'HTTP/1.1 200 OK\r\nDate: D\r\nContent-Length: 0\r\nContent-Type: text/html; charset=ISO-8859-1\r\n\r\n' +
    'HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\nContent-Type: text/html; charset=ISO-8859-1\r\n\r\n')
})

test('097-099 setTimeout: idle, partial and kept-alive connections close silently', async (t) => {
  const { port } = startServer(t, (http) => {
    installHandlers(http)
    http.setTimeout(1)
  })
  const idle = await RawClient.open(port)
  const partial = await RawClient.open(port)
  const kept = await RawClient.open(port)
  await partial.send('GET /about HTTP/1.1\r\nHost: x')
  await kept.send('GET /about HTTP/1.1\r\n\r\n')
  const [a, b, c] = await Promise.all([idle.waitClosed(), partial.waitClosed(), kept.waitClosed()])
  assert.equal(a, '')
  assert.equal(b, '')
  assert.equal(c, 'HTTP/1.1 200 OK\r\nDate: D\r\nContent-Length: 0\r\nContent-Type: text/html; charset=ISO-8859-1\r\n\r\n')
})

test('no timeout while a handler holds the request', async (t) => {
  let held: ((v?: unknown) => void) | undefined
  const { port } = startServer(t, (http) => {
    http.setTimeout(1)
    http.setCallback('/slow', (req) => {
      // Answer only after the connection has been silent for longer than the timeout.
      setTimeout(() => req.sendReply(200, 'OK'), 1500)
      held?.()
    })
  })
  const client = await RawClient.open(port)
  const started = new Promise((resolve) => { held = resolve })
  await client.send('GET /slow HTTP/1.1\r\nConnection: close\r\n\r\n')
  await started
  assert.match(await client.waitClosed(), /^HTTP\/1\.1 200 OK\r\n/)
})
