// §4.1 of the reference: reply framing, header order, keep-alive and close, pipelining, version echo.

import { test } from 'node:test'
import { checkRow, installHandlers, startServer, type Row } from './helpers.js'

// Replies recorded from libevent 2.1.12 (Debian) evhttp for the same request bytes, Date masked.
const ROWS: Row[] = [
  ['001 GET /about HTTP/1.0 + Connection: close', 'GET /about HTTP/1.0\r\nConnection: close\r\n\r\n',
    'HTTP/1.0 200 OK\r\nContent-Type: text/html; charset=ISO-8859-1\r\nConnection: close\r\n\r\n', 'closed'],
  ['005 GET /about HTTP/1.0', 'GET /about HTTP/1.0\r\n\r\n',
    'HTTP/1.0 200 OK\r\nContent-Type: text/html; charset=ISO-8859-1\r\n\r\n', 'closed'],
  ['006 HTTP/1.0 + Connection: keep-alive', 'GET /about HTTP/1.0\r\nConnection: keep-alive\r\n\r\n',
    'HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\nContent-Type: text/html; charset=ISO-8859-1\r\n\r\n', 'open'],
  ['keep-alive is a case-insensitive prefix', 'GET /about HTTP/1.0\r\nConnection: Keep-Alive, x\r\n\r\n',
    'HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\nContent-Type: text/html; charset=ISO-8859-1\r\n\r\n', 'open'],
  ['007 GET /about HTTP/1.1', 'GET /about HTTP/1.1\r\n\r\n',
    'HTTP/1.1 200 OK\r\nDate: D\r\nContent-Length: 0\r\nContent-Type: text/html; charset=ISO-8859-1\r\n\r\n', 'open'],
  ['010 HTTP/1.1 + Connection: close', 'GET /about HTTP/1.1\r\nConnection: close\r\n\r\n',
    'HTTP/1.1 200 OK\r\nDate: D\r\nContent-Length: 0\r\nContent-Type: text/html; charset=ISO-8859-1\r\nConnection: close\r\n\r\n', 'closed'],
  ['close must be the whole value', 'GET /about HTTP/1.1\r\nConnection: close, x\r\n\r\n',
    'HTTP/1.1 200 OK\r\nDate: D\r\nContent-Length: 0\r\nContent-Type: text/html; charset=ISO-8859-1\r\n\r\n', 'open'],
  ['close is case-insensitive', 'GET /about HTTP/1.1\r\nConnection: CLOSE\r\n\r\n',
    'HTTP/1.1 200 OK\r\nDate: D\r\nContent-Length: 0\r\nContent-Type: text/html; charset=ISO-8859-1\r\nConnection: close\r\n\r\n', 'closed'],
  ['only the first Connection header counts', 'GET /about HTTP/1.1\r\nConnection: keep-alive\r\nConnection: close\r\n\r\n',
    'HTTP/1.1 200 OK\r\nDate: D\r\nContent-Length: 0\r\nContent-Type: text/html; charset=ISO-8859-1\r\n\r\n', 'open'],
  ['067 handler Content-Type before Date and Content-Length', 'GET /body HTTP/1.1\r\n\r\n',
    'HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=ISO-8859-1\r\nDate: D\r\nContent-Length: 41\r\n\r\n<html><body><h1>About</h1></body></html>\n', 'open'],
  ['body on HTTP/1.0: no Content-Length, close', 'GET /body HTTP/1.0\r\n\r\n',
    'HTTP/1.0 200 OK\r\nContent-Type: text/html; charset=ISO-8859-1\r\n\r\n<html><body><h1>About</h1></body></html>\n', 'closed'],
  ['049 HTTP/1.2 is echoed', 'GET /about HTTP/1.2\r\n\r\n',
    'HTTP/1.2 200 OK\r\nDate: D\r\nContent-Length: 0\r\nContent-Type: text/html; charset=ISO-8859-1\r\n\r\n', 'open'],
  ['050 HTTP/0.9 is echoed', 'GET /about HTTP/0.9\r\n\r\n',
    'HTTP/0.9 200 OK\r\nContent-Type: text/html; charset=ISO-8859-1\r\n\r\n', 'closed'],
  ['HTTP/0.9 keep-alive is not 1.0 keep-alive', 'GET /about HTTP/0.9\r\nConnection: keep-alive\r\n\r\n',
    'HTTP/0.9 200 OK\r\nContent-Type: text/html; charset=ISO-8859-1\r\n\r\n', 'open'],
  ['sscanf version: leading zeros', 'GET /about HTTP/01.01\r\n\r\n',
    'HTTP/1.1 200 OK\r\nDate: D\r\nContent-Length: 0\r\nContent-Type: text/html; charset=ISO-8859-1\r\n\r\n', 'open'],
  ['sscanf version: white space and sign', 'GET /about HTTP/ +1.1\r\n\r\n',
    'HTTP/1.1 400 Bad Request\r\nContent-Type: text/html\r\nConnection: close\r\nDate: D\r\nContent-Length: 94\r\n\r\n<HTML><HEAD>\n<TITLE>400 Bad Request</TITLE>\n</HEAD><BODY>\n<H1>Bad Request</H1>\n</BODY></HTML>\n', 'closed'],
  ['sscanf version: negative major', 'GET /about HTTP/-1.1\r\n\r\n',
    'HTTP/-1.1 200 OK\r\nContent-Type: text/html; charset=ISO-8859-1\r\n\r\n', 'closed'],
  ['sscanf version: int overflow wraps', 'GET /about HTTP/4294967297.1\r\n\r\n',
    'HTTP/1.1 200 OK\r\nDate: D\r\nContent-Length: 0\r\nContent-Type: text/html; charset=ISO-8859-1\r\n\r\n', 'open'],
  ['302 with a Location header', 'GET /redirect HTTP/1.1\r\n\r\n',
    'HTTP/1.1 302 Found\r\nLocation: /about\r\nDate: D\r\nContent-Length: 0\r\nContent-Type: text/html; charset=ISO-8859-1\r\n\r\n', 'open'],
  ['handler Connection: close closes', 'GET /closeit HTTP/1.1\r\n\r\n',
    'HTTP/1.1 200 OK\r\nConnection: close\r\nDate: D\r\nContent-Length: 0\r\nContent-Type: text/html; charset=ISO-8859-1\r\n\r\n', 'closed'],
  ['handler Connection: close on 1.0 keep-alive', 'GET /closeit HTTP/1.0\r\nConnection: keep-alive\r\n\r\n',
    'HTTP/1.0 200 OK\r\nConnection: close\r\nConnection: keep-alive\r\nContent-Length: 0\r\nContent-Type: text/html; charset=ISO-8859-1\r\n\r\n', 'closed'],
  ['pipelined requests answered in order', 'GET /about HTTP/1.1\r\n\r\nGET /body HTTP/1.1\r\n\r\nGET /about HTTP/1.0\r\n\r\n',
    'HTTP/1.1 200 OK\r\nDate: D\r\nContent-Length: 0\r\nContent-Type: text/html; charset=ISO-8859-1\r\n\r\nHTTP/1.1 200 OK\r\nContent-Type: text/html; charset=ISO-8859-1\r\nDate: D\r\nContent-Length: 41\r\n\r\n<html><body><h1>About</h1></body></html>\nHTTP/1.0 200 OK\r\nContent-Type: text/html; charset=ISO-8859-1\r\n\r\n', 'closed'],
  ['pipelining stops at a 404', 'GET /about HTTP/1.1\r\n\r\nGET /unknown HTTP/1.1\r\n\r\nGET /about HTTP/1.1\r\n\r\n',
    'HTTP/1.1 200 OK\r\nDate: D\r\nContent-Length: 0\r\nContent-Type: text/html; charset=ISO-8859-1\r\n\r\nHTTP/1.1 404 Not Found\r\nContent-Type: text/html\r\nConnection: close\r\nDate: D\r\nContent-Length: 149\r\n\r\n<html><head><title>404 Not Found</title></head><body><h1>Not Found</h1><p>The requested URL /unknown was not found on this server.</p></body></html>\n', 'closed'],
  ['pipelining stops at Connection: close', 'GET /about HTTP/1.1\r\nConnection: close\r\n\r\nGET /about HTTP/1.1\r\n\r\n',
    'HTTP/1.1 200 OK\r\nDate: D\r\nContent-Length: 0\r\nContent-Type: text/html; charset=ISO-8859-1\r\nConnection: close\r\n\r\n', 'closed'],
  ['054 bare LF line ends', 'GET /about HTTP/1.1\nHost: x\n\n',
    'HTTP/1.1 200 OK\r\nDate: D\r\nContent-Length: 0\r\nContent-Type: text/html; charset=ISO-8859-1\r\n\r\n', 'open'],
  ['trailing spaces on the request line', 'GET /about HTTP/1.1   \r\n\r\n',
    'HTTP/1.1 200 OK\r\nDate: D\r\nContent-Length: 0\r\nContent-Type: text/html; charset=ISO-8859-1\r\n\r\n', 'open'],
]

test('reply framing matches evhttp byte for byte', async (t) => {
  const { port } = startServer(t, installHandlers)
  for (const row of ROWS) await t.test(row[0], () => checkRow(port, row))
})
