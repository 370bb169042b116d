// EventBase: dispatch / loop / exit / stop, and closing everything so the process can exit.

import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test, type TestContext } from 'node:test'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { EventBase, EventHttp } from '../../lib/evhttp/index.js'
import { checkRow, RawClient } from './helpers.js'

const INDEX = pathToFileURL(fileURLToPath(new URL('../../lib/evhttp/index.js', import.meta.url))).href
const ABOUT_11 = 'HTTP/1.1 200 OK\r\nDate: D\r\nContent-Length: 0\r\nContent-Type: text/html; charset=ISO-8859-1\r\n\r\n'

function script (t: TestContext, body: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'evhttp-base-'))
  t.after(() => rmSync(dir, { recursive: true, force: true }))
  const file = join(dir, 'server.mjs')
  writeFileSync(file, `import { EventBase, EventHttp } from ${JSON.stringify(INDEX)}\n${body}\n`)
  return file
}

async function run (file: string, client?: (port: number) => Promise<void>): Promise<number | null> {
  const child = spawn(process.execPath, [file], { stdio: ['ignore', 'pipe', 'inherit'] })
  if (client !== undefined) {
    const [line] = await once(child.stdout, 'data') as [Buffer]
    await client(Number(/port (\d+)/.exec(String(line))![1]))
  }
  const [code] = await once(child, 'exit') as [number | null]
  return code
}

test('exit() from a callback closes listeners and connections and the process exits by itself', async (t) => {
  const file = script(t, `
const base = new EventBase()
const http = new EventHttp(base)
if (!http.bind('127.0.0.1', 0)) process.exit(3)
http.setCallback('/quit', (req) => { req.sendReply(200, 'OK'); base.exit() })
process.stdout.write('port ' + http.getBoundAddresses()[0].port + '\\n')
const ok = await base.dispatch()
process.stdout.write('dispatch returned ' + ok + '\\n')`)
  let idleClosed: Promise<string> | undefined
  const code = await run(file, async (port) => {
    const idle = await RawClient.open(port) // a kept-alive connection must not keep the process alive
    await idle.send('GET /nothing-yet')
    idleClosed = idle.waitClosed()
    const client = await RawClient.open(port)
    await client.send('GET /quit HTTP/1.1\r\n\r\n')
    assert.equal(await client.waitClosed(), ABOUT_11)
  })
  assert.equal(code, 0)
  assert.equal(await idleClosed, '')
})

test('without dispatch() the listeners do not keep the process alive', async (t) => {
  const file = script(t, `
const http = new EventHttp(new EventBase())
if (!http.bind('127.0.0.1', 0)) process.exit(3)`)
  assert.equal(await run(file), 0)
})

test('dispatch() resolves true after exit(); a second dispatch() while running resolves false', async (t) => {
  const base = new EventBase()
  const http = new EventHttp(base)
  assert.equal(http.bind('127.0.0.1', 0), true)
  const port = http.getBoundAddresses()[0]!.port
  const running = base.dispatch()
  assert.equal(await base.dispatch(), false)
  assert.equal(base.exit(), true)
  assert.equal(await running, true)
  assert.equal(base.gotExit(), true)
  assert.equal(http.getBoundAddresses().length, 0)
  const client = await RawClient.open(port).catch((err: NodeJS.ErrnoException) => err)
  assert.equal((client as NodeJS.ErrnoException).code, 'ECONNREFUSED')
  t.after(() => base.free())
})

test('stop() leaves the loop and closes everything', async () => {
  const base = new EventBase()
  const http = new EventHttp(base)
  assert.equal(http.bind('127.0.0.1', 0), true)
  const running = base.dispatch()
  assert.equal(base.stop(), true)
  assert.equal(await running, true)
  assert.equal(base.gotStop(), true)
})

test('exit(timeout) leaves the loop after the delay', async () => {
  const base = new EventBase()
  const running = base.dispatch()
  assert.equal(base.exit(0.05), true)
  assert.equal(await running, true)
})

test('LOOP_NONBLOCK returns after one round; LOOP_ONCE after the next callback', async (t) => {
  const base = new EventBase()
  const http = new EventHttp(base)
  t.after(() => base.free())
  assert.equal(http.bind('127.0.0.1', 0), true)
  http.setCallback('/about', (req) => req.sendReply(200, 'OK'))
  const port = http.getBoundAddresses()[0]!.port
  assert.equal(await base.loop(EventBase.LOOP_NONBLOCK), true)
  const once = base.loop(EventBase.LOOP_ONCE)
  await checkRow(port, ['served', 'GET /about HTTP/1.1\r\n\r\n', ABOUT_11, 'open'])
  assert.equal(await once, true)
  // The listeners survive a LOOP_ONCE round.
  await checkRow(port, ['still served', 'GET /about HTTP/1.1\r\n\r\n', ABOUT_11, 'open'])
})

test('a callback that throws while dispatching breaks the loop: dispatch() rejects with the error', async () => {
  const base = new EventBase()
  const http = new EventHttp(base)
  assert.equal(http.bind('127.0.0.1', 0), true)
  http.setCallback('/boom', () => { throw new Error('boom') })
  const port = http.getBoundAddresses()[0]!.port
  const running = base.dispatch()
  const client = await RawClient.open(port)
  await client.send('GET /boom HTTP/1.1\r\n\r\n')
  await assert.rejects(running, /boom/)
  assert.equal(await client.waitClosed(), '')
  assert.equal(http.getBoundAddresses().length, 0)
})

test('free() on an EventHttp closes its listeners and connections', async () => {
  const base = new EventBase()
  const http = new EventHttp(base)
  assert.equal(http.bind('127.0.0.1', 0), true)
  const port = http.getBoundAddresses()[0]!.port
  const client = await RawClient.open(port)
  await client.send('GET /partial')
  await http.free()
  assert.equal(await client.waitClosed(), '')
})
