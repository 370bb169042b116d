// bind() returns a real synchronous boolean (§5 of the reference), and accept() serves sockets already listening.

import assert from 'node:assert/strict'
import { mkdtempSync, openSync, closeSync, rmSync } from 'node:fs'
import { createServer, type Server } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test, type TestContext } from 'node:test'
import { EventBase, EventHttp } from '../../lib/evhttp/index.js'
import { checkRow } from './helpers.js'

const ABOUT_10_CLOSE = 'HTTP/1.0 200 OK\r\nContent-Type: text/html; charset=ISO-8859-1\r\nConnection: close\r\n\r\n'
const ABOUT_ROW = ['001', 'GET /about HTTP/1.0\r\nConnection: close\r\n\r\n', ABOUT_10_CLOSE, 'closed'] as const

function newHttp (t: TestContext): EventHttp {
  const base = new EventBase()
  const http = new EventHttp(base)
  http.setCallback('/about', (req) => req.sendReply(200, 'OK'))
  t.after(() => base.free())
  return http
}

function code (http: EventHttp): string | undefined {
  return (http.lastError as NodeJS.ErrnoException | null)?.code
}

async function listening (t: TestContext, server: Server, ...args: unknown[]): Promise<Server> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(...(args as [number, string]), () => resolve())
  })
  t.after(() => server.close())
  return server
}

function portOf (http: EventHttp, i = 0): number {
  return http.getBoundAddresses()[i]!.port
}

test('1-2 first bind and a second port: true, listening at once, both served', async (t) => {
  const http = newHttp(t)
  assert.equal(http.bind('127.0.0.1', 0), true)
  assert.equal(http.bind('127.0.0.1', 0), true)
  const [a, b] = http.getBoundAddresses()
  assert.equal(a!.address, '127.0.0.1')
  assert.equal(a!.family, 'IPv4')
  assert.ok(a!.port > 0 && b!.port > 0 && a!.port !== b!.port)
  await checkRow(a!.port, [...ABOUT_ROW])
  await checkRow(b!.port, [...ABOUT_ROW])
})

test('3 same port, same object: false (EADDRINUSE)', (t) => {
  const http = newHttp(t)
  assert.equal(http.bind('127.0.0.1', 0), true)
  assert.equal(http.bind('127.0.0.1', portOf(http)), false)
  assert.equal(code(http), 'EADDRINUSE')
  assert.equal(http.getBoundAddresses().length, 1)
})

test('4 same port, other object: false', (t) => {
  const a = newHttp(t)
  const b = newHttp(t)
  assert.equal(a.bind('127.0.0.1', 0), true)
  assert.equal(b.bind('127.0.0.1', portOf(a)), false)
  assert.equal(code(b), 'EADDRINUSE')
})

test('5 port held by a foreign listener: false', async (t) => {
  const foreign = await listening(t, createServer(), 0, '127.0.0.1')
  const http = newHttp(t)
  assert.equal(http.bind('127.0.0.1', (foreign.address() as { port: number }).port), false)
  assert.equal(code(http), 'EADDRINUSE')
})

test('6-7 IPv6 loopback, and IPv4 and IPv6 on the same port', async (t) => {
  const http = newHttp(t)
  assert.equal(http.bind('127.0.0.1', 0), true)
  const port = portOf(http)
  assert.equal(http.bind('::1', port), true, String(http.lastError))
  const v6 = http.getBoundAddresses()[1]!
  assert.deepEqual(v6, { address: '::1', family: 'IPv6', port })
  await checkRowAt6(port)
})

async function checkRowAt6 (port: number): Promise<void> {
  const { connect } = await import('node:net')
  const socket = connect(port, '::1')
  const chunks: Buffer[] = []
  socket.on('data', (d: Buffer) => chunks.push(d))
  socket.write('GET /about HTTP/1.0\r\nConnection: close\r\n\r\n')
  await new Promise((resolve) => socket.once('close', resolve))
  assert.equal(Buffer.concat(chunks).toString('latin1'), ABOUT_10_CLOSE)
}

test('8 localhost binds 127.0.0.1', (t) => {
  const http = newHttp(t)
  assert.equal(http.bind('localhost', 0), true)
  assert.equal(http.getBoundAddresses()[0]!.address, '127.0.0.1')
})

test('9 port 0 is ephemeral; 65536 is cast to uint16 (0) as PHP does', (t) => {
  const http = newHttp(t)
  assert.equal(http.bind('127.0.0.1', 0), true)
  assert.equal(http.bind('127.0.0.1', 65536), true)
  for (const a of http.getBoundAddresses()) assert.ok(a.port > 0)
})

test('10 non-local address: false (EADDRNOTAVAIL)', (t) => {
  const http = newHttp(t)
  assert.equal(http.bind('192.0.2.1', 0), false)
  assert.equal(code(http), 'EADDRNOTAVAIL')
})

test('11 empty address: false', (t) => {
  const http = newHttp(t)
  assert.equal(http.bind('', 0), false)
  assert.equal(code(http), 'EAI_NONAME')
})

test('12 bracketed IPv6 literal: false', (t) => {
  const http = newHttp(t)
  assert.equal(http.bind('[::1]', 0), false)
  assert.equal(code(http), 'EAI_NONAME')
})

test('names that would need DNS, malformed addresses and bad ports: false', (t) => {
  const http = newHttp(t)
  assert.equal(http.bind('999.1.2.3', 0), false)
  assert.equal(http.bind('no-such-host.invalid', 0), false)
  assert.equal(http.bind('127.0.0.1:80', 0), false)
  assert.equal(http.bind('127.0.0.1', 1.5), false)
  assert.equal(http.bind('127.0.0.1', Number.NaN), false)
  assert.equal(http.getBoundAddresses().length, 0)
})

test('the result is a boolean, never a Promise', (t) => {
  const http = newHttp(t)
  const ok = http.bind('127.0.0.1', 0)
  const ko = http.bind('192.0.2.1', 0)
  assert.equal(typeof ok, 'boolean')
  assert.equal(typeof ko, 'boolean')
})

test('accept(server): a listening net.Server is served (TCP)', async (t) => {
  const server = await listening(t, createServer({ allowHalfOpen: true }), 0, '127.0.0.1')
  const http = newHttp(t)
  assert.equal(http.accept(server), true)
  await checkRow((server.address() as { port: number }).port, [...ABOUT_ROW])
})

test('accept(server): a Unix socket answers the same bytes', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'evhttp-unix-'))
  t.after(() => rmSync(dir, { recursive: true, force: true }))
  const path = join(dir, 'http.sock')
  const server = await listening(t, createServer({ allowHalfOpen: true }), path)
  const http = newHttp(t)
  assert.equal(http.accept(server), true)
  await checkRow(path, [...ABOUT_ROW])
  assert.deepEqual(http.getBoundAddresses(), [{ address: path, family: 'unix', port: 0 }])
})

test('accept(): false for a server not listening, a non-socket fd and a bad fd', (t) => {
  const http = newHttp(t)
  assert.equal(http.accept(createServer()), false)
  const dir = mkdtempSync(join(tmpdir(), 'evhttp-fd-'))
  t.after(() => rmSync(dir, { recursive: true, force: true }))
  const fd = openSync(join(dir, 'file'), 'w')
  t.after(() => closeSync(fd))
  assert.equal(http.accept(fd), false)
  assert.equal(http.accept(-1), false)
  assert.equal(http.accept(1.5), false)
})

test('accept(fd): a bound socket given by descriptor is listened on and served', async (t) => {
  // A bound, not yet listening socket from Node's TCP handle: its descriptor is handed over, as PHP code hands
  // a socket resource to EventHttp::accept().
  interface Handle { bind (a: string, p: number): number, getsockname (o: object): number, fd: number }
  type Binding = { TCP: new (t: number) => Handle, constants: { SERVER: number } }
  const { TCP, constants } = (process as unknown as { binding (n: string): Binding }).binding('tcp_wrap')
  const handle = new TCP(constants.SERVER)
  assert.equal(handle.bind('127.0.0.1', 0), 0)
  const name: { port?: number } = {}
  handle.getsockname(name)
  const http = newHttp(t)
  assert.equal(http.accept(handle.fd), true)
  await checkRow(name.port!, [...ABOUT_ROW])
})
