// The PHP manual's EventHttp::bind() example, ported to berth/evhttp:
//
//   $base = new EventBase();
//   $http = new EventHttp($base);
//   if (!$http->bind("127.0.0.1", 8088)) exit("bind(1) failed\n");
//   if (!$http->bind("127.0.0.1", 8089)) exit("bind(2) failed\n");
//   $http->setCallback("/about", function($req) {
//       echo "URI: ", $req->getUri(), PHP_EOL;
//       $req->sendReply(200, "OK");
//       echo "OK\n";
//   });
//   $base->dispatch();
//
// Ports are 0 here (ephemeral); the bound ports are read back. Replies are evhttp's, byte for byte (Date masked).

import assert from 'node:assert/strict'
import { createServer } from 'node:net'
import { test } from 'node:test'
import { EventBase, EventHttp, type EventHttpRequest } from '../../lib/evhttp/index.js'
import { checkRow } from './helpers.js'

const ABOUT_10_CLOSE = 'HTTP/1.0 200 OK\r\nContent-Type: text/html; charset=ISO-8859-1\r\nConnection: close\r\n\r\n'
const NOT_FOUND_10_CLOSE = 'HTTP/1.1 404 Not Found\r\nContent-Type: text/html\r\nDate: D\r\nContent-Length: 149\r\n' +
  'Connection: close\r\n\r\n<html><head><title>404 Not Found</title></head><body><h1>Not Found</h1><p>The requested ' +
  'URL /unknown was not found on this server.</p></body></html>\n'
const NOT_FOUND_11 = 'HTTP/1.1 404 Not Found\r\nContent-Type: text/html\r\nConnection: close\r\nDate: D\r\n' +
  'Content-Length: 149\r\n\r\n<html><head><title>404 Not Found</title></head><body><h1>Not Found</h1><p>The requested ' +
  'URL /unknown was not found on this server.</p></body></html>\n'

test('the PHP manual example answers as evhttp on both ports', async (t) => {
  const output: string[] = []
  const base = new EventBase()
  const http = new EventHttp(base)
  assert.equal(http.bind('127.0.0.1', 0), true, 'bind(1) failed')
  assert.equal(http.bind('127.0.0.1', 0), true, 'bind(2) failed')
  http.setCallback('/about', (req: EventHttpRequest) => {
    output.push('URI: ' + req.getUri())
    req.sendReply(200, 'OK')
    output.push('OK')
  })
  const dispatched = base.dispatch()
  t.after(async () => {
    base.exit()
    assert.equal(await dispatched, true)
  })
  const ports = http.getBoundAddresses().map((a) => a.port)
  assert.equal(ports.length, 2)
  assert.notEqual(ports[0], ports[1])
  for (const port of ports) {
    await checkRow(port, ['001 /about, HTTP/1.0 + Connection: close', 'GET /about HTTP/1.0\r\nConnection: close\r\n\r\n',
      ABOUT_10_CLOSE, 'closed'])
    await checkRow(port, ['003 the manual transcript\'s 404', 'GET /unknown HTTP/1.0\r\nConnection: close\r\n\r\n',
      NOT_FOUND_10_CLOSE, 'closed'])
    await checkRow(port, ['004 404 on HTTP/1.1', 'GET /unknown HTTP/1.1\r\n\r\n', NOT_FOUND_11, 'closed'])
  }
  assert.deepEqual(output, ['URI: /about', 'OK', 'URI: /about', 'OK'])
})

test('a third bind on a busy port fails and the first two keep serving', async (t) => {
  const busy = createServer()
  await new Promise<void>((resolve) => busy.listen(0, '127.0.0.1', resolve))
  t.after(() => busy.close())
  const busyPort = (busy.address() as { port: number }).port
  const base = new EventBase()
  const http = new EventHttp(base)
  t.after(() => base.free())
  assert.equal(http.bind('127.0.0.1', 0), true)
  assert.equal(http.bind('127.0.0.1', 0), true)
  assert.equal(http.bind('127.0.0.1', busyPort), false) // PHP: exit("bind(3) failed\n")
  assert.equal((http.lastError as NodeJS.ErrnoException).code, 'EADDRINUSE')
  http.setCallback('/about', (req) => req.sendReply(200, 'OK'))
  for (const { port } of http.getBoundAddresses()) {
    await checkRow(port, ['001', 'GET /about HTTP/1.0\r\nConnection: close\r\n\r\n', ABOUT_10_CLOSE, 'closed'])
  }
})
