// §4.2 of the reference: the built-in 404 page and sendError()'s page, reason phrases.

import assert from 'node:assert/strict'
import { test } from 'node:test'
import { htmlEscape, notFoundPage } from '../../lib/evhttp/error-page.js'
import { reasonPhrase } from '../../lib/evhttp/reason-phrase.js'
import { checkRow, installHandlers, startServer, type Row } from './helpers.js'

// Replies recorded from libevent 2.1.12 (Debian) evhttp for the same request bytes, Date masked.
const ROWS: Row[] = [
  ['003 GET /unknown HTTP/1.0 + Connection: close', 'GET /unknown HTTP/1.0\r\nConnection: close\r\n\r\n',
    'HTTP/1.1 404 Not Found\r\nContent-Type: text/html\r\nDate: D\r\nContent-Length: 149\r\nConnection: close\r\n\r\n<html><head><title>404 Not Found</title></head><body><h1>Not Found</h1><p>The requested URL /unknown was not found on this server.</p></body></html>\n', 'closed'],
  ['004 GET /unknown HTTP/1.1', 'GET /unknown HTTP/1.1\r\n\r\n',
    'HTTP/1.1 404 Not Found\r\nContent-Type: text/html\r\nConnection: close\r\nDate: D\r\nContent-Length: 149\r\n\r\n<html><head><title>404 Not Found</title></head><body><h1>Not Found</h1><p>The requested URL /unknown was not found on this server.</p></body></html>\n', 'closed'],
  ['404 on HTTP/1.0 keep-alive still closes', 'GET /unknown HTTP/1.0\r\nConnection: keep-alive\r\n\r\n',
    'HTTP/1.1 404 Not Found\r\nContent-Type: text/html\r\nConnection: close\r\nDate: D\r\nContent-Length: 149\r\n\r\n<html><head><title>404 Not Found</title></head><body><h1>Not Found</h1><p>The requested URL /unknown was not found on this server.</p></body></html>\n', 'closed'],
  ['404 on HTTP/1.2 keeps the version', 'GET /unknown HTTP/1.2\r\n\r\n',
    'HTTP/1.2 404 Not Found\r\nContent-Type: text/html\r\nConnection: close\r\nDate: D\r\nContent-Length: 149\r\n\r\n<html><head><title>404 Not Found</title></head><body><h1>Not Found</h1><p>The requested URL /unknown was not found on this server.</p></body></html>\n', 'closed'],
  ['sendError with the default reason', 'GET /error HTTP/1.1\r\n\r\n',
    'HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/html\r\nConnection: close\r\nDate: D\r\nContent-Length: 110\r\n\r\n<HTML><HEAD>\n<TITLE>503 Service Unavailable</TITLE>\n</HEAD><BODY>\n<H1>Service Unavailable</H1>\n</BODY></HTML>\n', 'closed'],
  ['sendError on HTTP/1.0', 'GET /error HTTP/1.0\r\n\r\n',
    'HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/html\r\nConnection: close\r\nDate: D\r\nContent-Length: 110\r\n\r\n<HTML><HEAD>\n<TITLE>503 Service Unavailable</TITLE>\n</HEAD><BODY>\n<H1>Service Unavailable</H1>\n</BODY></HTML>\n', 'closed'],
  ['sendError reason is not escaped', 'GET /error2 HTTP/1.1\r\n\r\n',
    'HTTP/1.1 418 I\'m <a> teapot\r\nContent-Type: text/html\r\nConnection: close\r\nDate: D\r\nContent-Length: 100\r\n\r\n<HTML><HEAD>\n<TITLE>418 I\'m <a> teapot</TITLE>\n</HEAD><BODY>\n<H1>I\'m <a> teapot</H1>\n</BODY></HTML>\n', 'closed'],
]

test('error pages match evhttp byte for byte', async (t) => {
  const { port } = startServer(t, installHandlers)
  for (const row of ROWS) await t.test(row[0], () => checkRow(port, row))
})

test('the 404 body escapes exactly & < > " \' and is 141 bytes plus the URL', () => {
  assert.equal(htmlEscape('/a&b<c>d"e\'f%20g+h'), '/a&amp;b&lt;c&gt;d&quot;e&#039;f%20g+h')
  assert.equal(notFoundPage('/x').length, 141 + 2)
})

test('reason phrases are evhttp_response_phrase_internal()\'s, quirks included', () => {
  const cases: Array<[number, string]> = [
    [100, 'Continue'], [101, 'Switching Protocols'], [102, 'Informational'],
    [200, 'OK'], [204, 'No Content'], [206, 'Partial Content'], [207, 'Success'],
    [300, 'Multiple Choices'], [304, 'Not Modified'], [305, 'Use Proxy'],
    // libevent's 3xx table lacks 306: kept as is (clients ignore reason phrases).
    [306, 'Temporary Redirect'], [307, 'Redirection'], [308, 'Redirection'],
    [400, 'Bad Request'], [404, 'Not Found'], [408, 'Request Time-out'], [413, 'Request Entity Too Large'],
    [414, 'Request-URI Too Large'], [416, 'Requested range not satisfiable'], [417, 'Expectation Failed'],
    [418, 'Client Error'], [500, 'Internal Server Error'], [501, 'Not Implemented'], [504, 'Gateway Time-out'],
    [505, 'HTTP Version not supported'], [599, 'Server Error'], [99, 'Unknown Status Class'],
    [600, 'Unknown Status Class'], [0, 'Unknown Status Class'],
  ]
  for (const [code, phrase] of cases) assert.equal(reasonPhrase(code), phrase, String(code))
})
