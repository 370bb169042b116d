// §4.6 and §4.7 of the reference: request-target parsing, %-decoding, exact-match dispatch, absolute form,
// proxy requests and server aliases, getHost(), header parsing and request bodies.

import { test } from 'node:test'
import { checkRow, installHandlers, startServer, type Row } from './helpers.js'

// Replies recorded from libevent 2.1.12 (Debian) evhttp for the same request bytes, Date masked.
const ROWS: Row[] = [
  ['019 %-escape in the path', 'GET /%61bout HTTP/1.1\r\n\r\n',
    'HTTP/1.1 200 OK\r\nDate: D\r\nContent-Length: 0\r\nContent-Type: text/html; charset=ISO-8859-1\r\n\r\n', 'open'],
  ['020 %-escape, upper-case hex', 'GET /%61%62out HTTP/1.1\r\n\r\n',
    'HTTP/1.1 200 OK\r\nDate: D\r\nContent-Length: 0\r\nContent-Type: text/html; charset=ISO-8859-1\r\n\r\n', 'open'],
  ['021 escape decoded to a different case does not match', 'GET /%41bout HTTP/1.1\r\n\r\n',
    'HTTP/1.1 404 Not Found\r\nContent-Type: text/html\r\nConnection: close\r\nDate: D\r\nContent-Length: 149\r\n\r\n<html><head><title>404 Not Found</title></head><body><h1>Not Found</h1><p>The requested URL /%41bout was not found on this server.</p></body></html>\n', 'closed'],
  ['022 %00 ends the path', 'GET /about%00.html HTTP/1.1\r\n\r\n',
    'HTTP/1.1 200 OK\r\nDate: D\r\nContent-Length: 0\r\nContent-Type: text/html; charset=ISO-8859-1\r\n\r\n', 'open'],
  ['023 malformed escape kept literally', 'GET /abou%7 HTTP/1.1\r\n\r\n',
    'HTTP/1.1 404 Not Found\r\nContent-Type: text/html\r\nConnection: close\r\nDate: D\r\nContent-Length: 148\r\n\r\n<html><head><title>404 Not Found</title></head><body><h1>Not Found</h1><p>The requested URL /abou%7 was not found on this server.</p></body></html>\n', 'closed'],
  ['024 + is not a space', 'GET /a+b HTTP/1.1\r\n\r\n',
    'HTTP/1.1 404 Not Found\r\nContent-Type: text/html\r\nConnection: close\r\nDate: D\r\nContent-Length: 145\r\n\r\n<html><head><title>404 Not Found</title></head><body><h1>Not Found</h1><p>The requested URL /a+b was not found on this server.</p></body></html>\n', 'closed'],
  ['%20 is a space', 'GET /a%20b HTTP/1.1\r\n\r\n',
    'HTTP/1.1 200 OK\r\nDate: D\r\nContent-Length: 0\r\nContent-Type: text/html; charset=ISO-8859-1\r\n\r\n', 'open'],
  ['raw space inside the target', 'GET /a b HTTP/1.1\r\n\r\n',
    'HTTP/1.1 200 OK\r\nDate: D\r\nContent-Length: 0\r\nContent-Type: text/html; charset=ISO-8859-1\r\n\r\n', 'open'],
  ['query is ignored', 'GET /about?x=1&y=%zz HTTP/1.1\r\n\r\n',
    'HTTP/1.1 200 OK\r\nDate: D\r\nContent-Length: 0\r\nContent-Type: text/html; charset=ISO-8859-1\r\n\r\n', 'open'],
  ['fragment is ignored', 'GET /about#top HTTP/1.1\r\n\r\n',
    'HTTP/1.1 200 OK\r\nDate: D\r\nContent-Length: 0\r\nContent-Type: text/html; charset=ISO-8859-1\r\n\r\n', 'open'],
  ['017 trailing slash does not match', 'GET /about/ HTTP/1.1\r\n\r\n',
    'HTTP/1.1 404 Not Found\r\nContent-Type: text/html\r\nConnection: close\r\nDate: D\r\nContent-Length: 148\r\n\r\n<html><head><title>404 Not Found</title></head><body><h1>Not Found</h1><p>The requested URL /about/ was not found on this server.</p></body></html>\n', 'closed'],
  ['018 match is case-sensitive', 'GET /About HTTP/1.1\r\n\r\n',
    'HTTP/1.1 404 Not Found\r\nContent-Type: text/html\r\nConnection: close\r\nDate: D\r\nContent-Length: 147\r\n\r\n<html><head><title>404 Not Found</title></head><body><h1>Not Found</h1><p>The requested URL /About was not found on this server.</p></body></html>\n', 'closed'],
  ['084 no dot-segment removal', 'GET /./about HTTP/1.1\r\n\r\n',
    'HTTP/1.1 404 Not Found\r\nContent-Type: text/html\r\nConnection: close\r\nDate: D\r\nContent-Length: 149\r\n\r\n<html><head><title>404 Not Found</title></head><body><h1>Not Found</h1><p>The requested URL /./about was not found on this server.</p></body></html>\n', 'closed'],
  ['026 //x is an authority with an empty path', 'GET //about HTTP/1.1\r\n\r\n',
    'HTTP/1.1 404 Not Found\r\nContent-Type: text/html\r\nConnection: close\r\nDate: D\r\nContent-Length: 148\r\n\r\n<html><head><title>404 Not Found</title></head><body><h1>Not Found</h1><p>The requested URL //about was not found on this server.</p></body></html>\n', 'closed'],
  ['bad authority', 'GET //x<y/about HTTP/1.1\r\n\r\n',
    'HTTP/1.1 400 Bad Request\r\nContent-Type: text/html\r\nConnection: close\r\nDate: D\r\nContent-Length: 94\r\n\r\n<HTML><HEAD>\n<TITLE>400 Bad Request</TITLE>\n</HEAD><BODY>\n<H1>Bad Request</H1>\n</BODY></HTML>\n', 'closed'],
  ['asterisk target', 'GET * HTTP/1.1\r\n\r\n',
    'HTTP/1.1 404 Not Found\r\nContent-Type: text/html\r\nConnection: close\r\nDate: D\r\nContent-Length: 142\r\n\r\n<html><head><title>404 Not Found</title></head><body><h1>Not Found</h1><p>The requested URL * was not found on this server.</p></body></html>\n', 'closed'],
  ['relative target', 'GET about HTTP/1.1\r\n\r\n',
    'HTTP/1.1 404 Not Found\r\nContent-Type: text/html\r\nConnection: close\r\nDate: D\r\nContent-Length: 146\r\n\r\n<html><head><title>404 Not Found</title></head><body><h1>Not Found</h1><p>The requested URL about was not found on this server.</p></body></html>\n', 'closed'],
  ['colon in the first segment without a scheme', 'GET 1:x HTTP/1.1\r\n\r\n',
    'HTTP/1.1 400 Bad Request\r\nContent-Type: text/html\r\nConnection: close\r\nDate: D\r\nContent-Length: 94\r\n\r\n<HTML><HEAD>\n<TITLE>400 Bad Request</TITLE>\n</HEAD><BODY>\n<H1>Bad Request</H1>\n</BODY></HTML>\n', 'closed'],
  ['031 extra spaces belong to the target', 'GET  /about  HTTP/1.1\r\n\r\n',
    'HTTP/1.1 404 Not Found\r\nContent-Type: text/html\r\nConnection: close\r\nDate: D\r\nContent-Length: 149\r\n\r\n<html><head><title>404 Not Found</title></head><body><h1>Not Found</h1><p>The requested URL  /about  was not found on this server.</p></body></html>\n', 'closed'],
  ['404 escapes the raw target', 'GET /un<k>&"\'nown?x=<1> HTTP/1.1\r\n\r\n',
    'HTTP/1.1 404 Not Found\r\nContent-Type: text/html\r\nConnection: close\r\nDate: D\r\nContent-Length: 186\r\n\r\n<html><head><title>404 Not Found</title></head><body><h1>Not Found</h1><p>The requested URL /un&lt;k&gt;&amp;&quot;&#039;nown?x=&lt;1&gt; was not found on this server.</p></body></html>\n', 'closed'],
  ['NUL in the target', 'GET /ab\u0000out HTTP/1.1\r\n\r\n',
    'HTTP/1.1 400 Bad Request\r\nContent-Type: text/html\r\nConnection: close\r\nDate: D\r\nContent-Length: 94\r\n\r\n<HTML><HEAD>\n<TITLE>400 Bad Request</TITLE>\n</HEAD><BODY>\n<H1>Bad Request</H1>\n</BODY></HTML>\n', 'closed'],
  ['029 absolute form is a proxy request', 'GET http://Example.COM:8080/echo?q=1 HTTP/1.1\r\n\r\n',
    'HTTP/1.1 200 OK\r\nDate: D\r\nContent-Length: 65\r\nContent-Type: text/html; charset=ISO-8859-1\r\n\r\nuri=http://Example.COM:8080/echo?q=1 host=Example.COM cmd=1\nbody=', 'closed'],
  ['030 proxy request closes even with Proxy-Connection: keep-alive', 'GET http://example.com/echo HTTP/1.1\r\nProxy-Connection: keep-alive\r\n\r\n',
    'HTTP/1.1 200 OK\r\nDate: D\r\nContent-Length: 88\r\nContent-Type: text/html; charset=ISO-8859-1\r\n\r\nuri=http://example.com/echo host=example.com cmd=1\n[Proxy-Connection]=[keep-alive]\nbody=', 'closed'],
  ['proxy request: Connection: close not echoed', 'GET http://example.com/echo HTTP/1.1\r\nConnection: close\r\n\r\n',
    'HTTP/1.1 200 OK\r\nDate: D\r\nContent-Length: 77\r\nContent-Type: text/html; charset=ISO-8859-1\r\n\r\nuri=http://example.com/echo host=example.com cmd=1\n[Connection]=[close]\nbody=', 'closed'],
  ['proxy request 404', 'GET http://example.com/unknown HTTP/1.1\r\n\r\n',
    'HTTP/1.1 404 Not Found\r\nContent-Type: text/html\r\nDate: D\r\nContent-Length: 167\r\n\r\n<html><head><title>404 Not Found</title></head><body><h1>Not Found</h1><p>The requested URL http://example.com/unknown was not found on this server.</p></body></html>\n', 'closed'],
  ['081 getHost is the target\'s host', 'GET http://example.com/echo HTTP/1.1\r\nHost: other:1\r\n\r\n',
    'HTTP/1.1 200 OK\r\nDate: D\r\nContent-Length: 73\r\nContent-Type: text/html; charset=ISO-8859-1\r\n\r\nuri=http://example.com/echo host=example.com cmd=1\n[Host]=[other:1]\nbody=', 'closed'],
  ['non-http scheme is not a proxy request', 'GET ftp://example.com/echo HTTP/1.1\r\n\r\n',
    'HTTP/1.1 200 OK\r\nDate: D\r\nContent-Length: 55\r\nContent-Type: text/html; charset=ISO-8859-1\r\n\r\nuri=ftp://example.com/echo host=example.com cmd=1\nbody=', 'open'],
  ['port out of range', 'GET http://user@example.com:99999/echo HTTP/1.1\r\n\r\n',
    'HTTP/1.1 400 Bad Request\r\nContent-Type: text/html\r\nConnection: close\r\nDate: D\r\nContent-Length: 94\r\n\r\n<HTML><HEAD>\n<TITLE>400 Bad Request</TITLE>\n</HEAD><BODY>\n<H1>Bad Request</H1>\n</BODY></HTML>\n', 'closed'],
  ['IPv6 literal host', 'GET http://[::1]:80/echo HTTP/1.1\r\n\r\n',
    'HTTP/1.1 200 OK\r\nDate: D\r\nContent-Length: 47\r\nContent-Type: text/html; charset=ISO-8859-1\r\n\r\nuri=http://[::1]:80/echo host=[::1] cmd=1\nbody=', 'closed'],
  ['empty authority', 'GET http:///echo HTTP/1.1\r\n\r\n',
    'HTTP/1.1 200 OK\r\nDate: D\r\nContent-Length: 34\r\nContent-Type: text/html; charset=ISO-8859-1\r\n\r\nuri=http:///echo host= cmd=1\nbody=', 'closed'],
  ['Host header port is removed', 'GET /echo HTTP/1.1\r\nHost: example.com:8080\r\n\r\n',
    'HTTP/1.1 200 OK\r\nDate: D\r\nContent-Length: 64\r\nContent-Type: text/html; charset=ISO-8859-1\r\n\r\nuri=/echo host=example.com cmd=1\n[Host]=[example.com:8080]\nbody=', 'open'],
  ['Host header IPv6 with port', 'GET /echo HTTP/1.1\r\nHost: [::1]:80\r\n\r\n',
    'HTTP/1.1 200 OK\r\nDate: D\r\nContent-Length: 50\r\nContent-Type: text/html; charset=ISO-8859-1\r\n\r\nuri=/echo host=[::1] cmd=1\n[Host]=[[::1]:80]\nbody=', 'open'],
  ['Host header of digits only', 'GET /echo HTTP/1.1\r\nHost: 8080\r\n\r\n',
    'HTTP/1.1 200 OK\r\nDate: D\r\nContent-Length: 45\r\nContent-Type: text/html; charset=ISO-8859-1\r\n\r\nuri=/echo host=8080 cmd=1\n[Host]=[8080]\nbody=', 'open'],
  ['header values trimmed, folded, empty kept', 'GET /echo HTTP/1.1\r\nX-A:   a b  \t \r\nX-B:\tb\r\nX-C:\r\nX-D: d\r\n  folded  \r\n\tmore\r\n\r\n',
    'HTTP/1.1 200 OK\r\nDate: D\r\nContent-Length: 87\r\nContent-Type: text/html; charset=ISO-8859-1\r\n\r\nuri=/echo host=(null) cmd=1\n[X-A]=[a b]\n[X-B]=[\tb]\n[X-C]=[]\n[X-D]=[d folded more]\nbody=', 'open'],
  ['names are not validated', 'GET /echo HTTP/1.1\r\nA b: c\r\nD : e\r\n: f\r\n\r\n',
    'HTTP/1.1 200 OK\r\nDate: D\r\nContent-Length: 59\r\nContent-Type: text/html; charset=ISO-8859-1\r\n\r\nuri=/echo host=(null) cmd=1\n[A b]=[c]\n[D ]=[e]\n[]=[f]\nbody=', 'open'],
  ['NUL ends a header value', 'GET /echo HTTP/1.1\r\nA: b\u0000c\r\n\r\n',
    'HTTP/1.1 200 OK\r\nDate: D\r\nContent-Length: 41\r\nContent-Type: text/html; charset=ISO-8859-1\r\n\r\nuri=/echo host=(null) cmd=1\n[A]=[b]\nbody=', 'open'],
  ['line starting with NUL ends the headers', 'GET /echo HTTP/1.1\r\n\u0000garbage\r\nB: c\r\n\r\n',
    'HTTP/1.1 200 OK\r\nDate: D\r\nContent-Length: 33\r\nContent-Type: text/html; charset=ISO-8859-1\r\n\r\nuri=/echo host=(null) cmd=1\nbody=HTTP/1.1 400 Bad Request\r\nContent-Type: text/html\r\nConnection: close\r\nDate: D\r\nContent-Length: 94\r\n\r\n<HTML><HEAD>\n<TITLE>400 Bad Request</TITLE>\n</HEAD><BODY>\n<H1>Bad Request</H1>\n</BODY></HTML>\n', 'closed'],
  ['bytes above 0x7f pass through', 'GET /echoÿþ HTTP/1.1\r\nX: é\r\n\r\n',
    'HTTP/1.1 404 Not Found\r\nContent-Type: text/html\r\nConnection: close\r\nDate: D\r\nContent-Length: 148\r\n\r\n<html><head><title>404 Not Found</title></head><body><h1>Not Found</h1><p>The requested URL /echoÿþ was not found on this server.</p></body></html>\n', 'closed'],
  ['080 no body without a length', 'POST /echo HTTP/1.1\r\n\r\nGET /about HTTP/1.1\r\n\r\n',
    'HTTP/1.1 200 OK\r\nDate: D\r\nContent-Length: 33\r\nContent-Type: text/html; charset=ISO-8859-1\r\n\r\nuri=/echo host=(null) cmd=2\nbody=HTTP/1.1 200 OK\r\nDate: D\r\nContent-Length: 0\r\nContent-Type: text/html; charset=ISO-8859-1\r\n\r\n', 'open'],
  ['076 chunked body, trailers dropped', 'POST /echo HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\nTrailer: x\r\n\r\n',
    'HTTP/1.1 200 OK\r\nDate: D\r\nContent-Length: 74\r\nContent-Type: text/html; charset=ISO-8859-1\r\n\r\nuri=/echo host=(null) cmd=2\n[Transfer-Encoding]=[chunked]\nbody=hello world', 'open'],
  ['078 0x prefix in a chunk size', 'POST /echo HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0x5\r\nhello\r\n0\r\n\r\n',
    'HTTP/1.1 200 OK\r\nDate: D\r\nContent-Length: 68\r\nContent-Type: text/html; charset=ISO-8859-1\r\n\r\nuri=/echo host=(null) cmd=2\n[Transfer-Encoding]=[chunked]\nbody=hello', 'open'],
  ['079 gzip, chunked is de-chunked', 'POST /echo HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n',
    'HTTP/1.1 200 OK\r\nDate: D\r\nContent-Length: 74\r\nContent-Type: text/html; charset=ISO-8859-1\r\n\r\nuri=/echo host=(null) cmd=2\n[Transfer-Encoding]=[gzip, chunked]\nbody=hello', 'open'],
  ['transfer-coding parameters', 'POST /echo HTTP/1.1\r\nTransfer-Encoding: Chunked ; q=1\r\n\r\n5\r\nhello\r\n0\r\n\r\n',
    'HTTP/1.1 200 OK\r\nDate: D\r\nContent-Length: 74\r\nContent-Type: text/html; charset=ISO-8859-1\r\n\r\nuri=/echo host=(null) cmd=2\n[Transfer-Encoding]=[Chunked ; q=1]\nbody=hello', 'open'],
  ['chunk size followed by a space', 'POST /echo HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5 x\r\nhello\r\n0\r\n\r\n',
    'HTTP/1.1 200 OK\r\nDate: D\r\nContent-Length: 68\r\nContent-Type: text/html; charset=ISO-8859-1\r\n\r\nuri=/echo host=(null) cmd=2\n[Transfer-Encoding]=[chunked]\nbody=hello', 'open'],
  ['HEAD has no body to read', 'HEAD /about HTTP/1.1\r\nContent-Length: 5\r\n\r\nGET /about HTTP/1.1\r\n\r\n',
    'HTTP/1.1 200 OK\r\nDate: D\r\n\r\nHTTP/1.1 200 OK\r\nDate: D\r\nContent-Length: 0\r\nContent-Type: text/html; charset=ISO-8859-1\r\n\r\n', 'open'],
  ['CL body on GET is read', 'GET /echo HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc',
    'HTTP/1.1 200 OK\r\nDate: D\r\nContent-Length: 57\r\nContent-Type: text/html; charset=ISO-8859-1\r\n\r\nuri=/echo host=(null) cmd=1\n[Content-Length]=[3]\nbody=abc', 'open'],
]

const ALIAS_ROWS: Row[] = [
  ['095 server alias: absolute form is an ordinary request', 'GET http://Example.COM:8080/echo?q=1 HTTP/1.1\r\n\r\n',
    'HTTP/1.1 200 OK\r\nDate: D\r\nContent-Length: 65\r\nContent-Type: text/html; charset=ISO-8859-1\r\n\r\nuri=http://Example.COM:8080/echo?q=1 host=Example.COM cmd=1\nbody=', 'open'],
  ['server alias: Connection: close honoured', 'GET http://example.com/echo HTTP/1.1\r\nConnection: close\r\n\r\n',
    'HTTP/1.1 200 OK\r\nDate: D\r\nContent-Length: 77\r\nContent-Type: text/html; charset=ISO-8859-1\r\nConnection: close\r\n\r\nuri=http://example.com/echo host=example.com cmd=1\n[Connection]=[close]\nbody=', 'closed'],
  ['other host is still a proxy request', 'GET http://other.com/echo HTTP/1.1\r\n\r\n',
    'HTTP/1.1 200 OK\r\nDate: D\r\nContent-Length: 52\r\nContent-Type: text/html; charset=ISO-8859-1\r\n\r\nuri=http://other.com/echo host=other.com cmd=1\nbody=', 'closed'],
]

test('dispatch and request parsing match evhttp byte for byte', async (t) => {
  const { port } = startServer(t, installHandlers)
  for (const row of ROWS) await t.test(row[0], () => checkRow(port, row))
})

test('addServerAlias: absolute-form targets naming an alias are ordinary requests', async (t) => {
  const { port } = startServer(t, (http) => {
    installHandlers(http)
    http.addServerAlias('example.com')
  })
  for (const row of ALIAS_ROWS) await t.test(row[0], () => checkRow(port, row))
})

test('removeServerAlias makes the host a proxy request again', async (t) => {
  const { port } = startServer(t, (http) => {
    installHandlers(http)
    http.addServerAlias('example.com')
    http.removeServerAlias('EXAMPLE.com')
  })
  await checkRow(port, ['proxy again', 'GET http://example.com/about HTTP/1.1\r\n\r\n',
    'HTTP/1.1 200 OK\r\nDate: D\r\nContent-Length: 0\r\nContent-Type: text/html; charset=ISO-8859-1\r\n\r\n', 'closed'])
})
