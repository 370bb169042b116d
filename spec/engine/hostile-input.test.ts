// Hostile input across the whole Engine API: every route the engine serves gets malformed, truncated, wrongly typed
// and oversized requests; each answer is a 4xx (or an ordinary success), never a 5xx, a crash or a hang, and the
// daemon keeps answering. Raw sockets cover what no HTTP client sends (broken framing, truncated bodies).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import http from 'node:http'
import net from 'node:net'
import { startEngine, request, importBusybox, createContainer, containerSkipReason, rawExchange } from '../helpers/engine.js'

const skip = containerSkipReason()

/** Routes that would reach a registry outside this machine (tests talk to loopback only): left out. */
const REMOTE = /^(POST \/images\/\{[^}]+\}\/push|GET \/distribution\/|POST \/auth$|GET \/images\/search$|POST \/swarm\/join$|POST \/plugins)/

/** Routes that stream until the client goes away or hold the connection: asked only with bad parameters. */
const STREAMING = new Set(['GET /events', 'POST /containers/{name:.*}/attach', 'POST /exec/{id}/start', 'POST /containers/{name:.*}/wait', 'GET /containers/{name:.*}/logs', 'GET /containers/{name:.*}/stats'])

async function send (socket: string, method: string, path: string, body: Buffer | undefined, headers: Record<string, string>): Promise<{ status: number, text: string }> {
  return await new Promise((resolve, reject) => {
    const req = http.request({ socketPath: socket, method, path, headers: { ...headers, ...(body !== undefined ? { 'Content-Length': String(body.length) } : {}) } }, (res) => {
      let text = ''
      res.on('data', (d: Buffer) => { if (text.length < 4096) text += d.toString('latin1') })
      res.on('end', () => { resolve({ status: res.statusCode ?? 0, text }) })
      res.on('error', reject)
    })
    req.setTimeout(20_000, () => { req.destroy(new Error(`${method} ${path}: no answer within 20 s`)) })
    req.on('error', reject)
    req.end(body)
  })
}

/** Writes everything it can and collects the answer until the server closes; write errors after an early answer are expected. */
async function pushExchange (socket: string, bytes: Buffer): Promise<string> {
  return await new Promise((resolve) => {
    const s = net.connect(socket)
    const chunks: Buffer[] = []
    const timer = setTimeout(() => { s.destroy() }, 20_000)
    s.on('connect', () => { s.end(bytes) })
    s.on('data', (d: Buffer) => chunks.push(d))
    s.on('error', () => {})
    s.on('close', () => { clearTimeout(timer); resolve(Buffer.concat(chunks).toString('latin1')) })
  })
}

test('hostile input to the Engine API', { skip: skip ?? false, timeout: 120_000 }, async (t) => {
  const { engine, socket } = await startEngine(t)
  await importBusybox(socket)
  // a container that exists, so handlers get past their lookup with the bad input
  await createContainer(socket, { Image: 'busybox', Cmd: ['true'] }, 'victim')
  const routes = engine.api.router.list()
  assert.ok(routes.length > 50, `only ${routes.length} routes`)

  const json = { 'Content-Type': 'application/json' }
  const bodies: Array<[string, Buffer | undefined, Record<string, string>]> = [
    ['no body', undefined, {}],
    ['malformed JSON', Buffer.from('{"Image":'), json],
    ['a JSON array', Buffer.from('[1,2,3]'), json],
    ['a JSON string', Buffer.from('"x"'), json],
    ['a huge number', Buffer.from('1e400'), json],
    ['wrong field types', Buffer.from(JSON.stringify({ Image: 5, Cmd: { a: 1 }, HostConfig: 'x', Name: [], Labels: 7, Spec: 'x', Driver: 1, Config: [], Filters: 3, RemoteAddrs: 'x', ListenAddr: {}, Force: 'yes' })), json],
    ['deep nesting', Buffer.from('['.repeat(5000) + ']'.repeat(5000)), json],
    // 21.8: 100,000 levels ran a walk of the value out of stack (500 "Maximum call stack size exceeded")
    ['nesting 100,000 deep', Buffer.from('{"a":'.repeat(100_000) + '1' + '}'.repeat(100_000)), json],
    ['text/plain', Buffer.from('a=b'), { 'Content-Type': 'text/plain' }],
    ['a form post', Buffer.from('a=b&c=d'), { 'Content-Type': 'application/x-www-form-urlencoded' }],
    ['garbage bytes', Buffer.from([0xff, 0xfe, 0x00, 0x01, 0x80]), { 'Content-Type': 'application/octet-stream' }]
  ]
  const queries = [
    '',
    '?filters=%7Bbad&all=maybe&limit=-1&size=x',
    '?filters=%5B%5D&t=abc&signal=SIGNOPE&tail=99999999999999999999999',
    '?filters=' + encodeURIComponent(JSON.stringify({ name: ['('.repeat(3000)], reference: ['*'.repeat(3000)], label: [{}], until: ['x'] }))
  ]
  // dockerd's own answer to swarm state conflicts ("already part of a swarm", leaving as the last manager) is 503
  const swarmState = (key: string, res: { status: number, text: string }): boolean =>
    res.status === 503 && key.startsWith('POST /swarm/') && /part of a swarm|attempting to leave|not a swarm manager/.test(res.text)
  // a feature Berth does not have is dockerd's NotImplemented (501), with one message: installing a plugin
  const unsupported = (key: string, res: { status: number, text: string }): boolean =>
    res.status === 501 && key.includes(' /plugins/') && res.text.includes('plugins are not supported by Berth')
  const failures: string[] = []
  for (const r of routes) {
    const key = `${r.method} ${r.path}`
    if (REMOTE.test(key) || STREAMING.has(key)) continue
    for (const id of ['nope', 'victim']) {
      const value = id === 'nope' ? 'nope' : r.path.startsWith('/images') ? 'busybox' : 'victim'
      const path = r.path.replace(/\{[^}]+\}/g, value)
      for (const [what, body, headers] of (id === 'nope' ? bodies : bodies.slice(0, 3))) {
        for (const q of (what === 'no body' ? queries : [''])) {
          let res: { status: number, text: string }
          try {
            res = await send(socket, r.method, path + q, body, headers)
          } catch (err) {
            failures.push(`${key} [${id}, ${what}, ${q.slice(0, 40)}]: ${(err as Error).message}`)
            continue
          }
          if (res.status >= 500 && !swarmState(key, res) && !unsupported(key, res)) failures.push(`${key} [${id}, ${what}, ${q.slice(0, 40)}]: ${res.status} ${res.text.slice(0, 200)}`)
        }
      }
    }
    // still answering after each route
    const ping = await send(socket, 'GET', '/_ping', undefined, {})
    assert.equal(ping.status, 200, `the daemon stopped answering after ${key}`)
  }
  assert.deepEqual(failures, [])

  await t.test('streaming routes refuse bad parameters at once; a huge query string is refused', async () => {
    for (const path of ['/events?since=yesterday', '/events?filters=%7Bbad', '/containers/victim/logs?follow=1&since=x', '/containers/nope/attach?stream=1', '/containers/nope/wait?condition=bogus', '/exec/nope/start']) {
      const res = await send(socket, path.startsWith('/events') || path.includes('/logs') ? 'GET' : 'POST', path, undefined, {})
      assert.ok(res.status >= 400 && res.status < 500, `${path}: ${res.status} ${res.text}`)
    }
    const longQuery = await send(socket, 'GET', '/containers/json?' + 'x='.padEnd(100_000, 'y'), undefined, {})
    assert.ok(longQuery.status < 500, `${longQuery.status}`)
  })

  await t.test('broken framing on a raw socket: 4xx or a closed connection, never a hang', async () => {
    const cases: Array<[string, string, RegExp | null]> = [
      ['a malformed request line', 'GARBAGE\r\n\r\n', /^HTTP\/1\.1 400/],
      ['a bad header', 'GET /_ping HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n', /^HTTP\/1\.1 400/],
      ['conflicting lengths', 'POST /containers/create HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n', /^HTTP\/1\.1 400/],
      ['bad chunk framing', 'POST /containers/create HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n', /^HTTP\/1\.1 400/],
      ['a truncated body (half-close)', 'POST /containers/create HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"Image":"busy', null],
      ['a truncated chunked body (half-close)', 'POST /build HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-tar\r\nTransfer-Encoding: chunked\r\n\r\n10\r\nabc', null]
    ]
    for (const [what, bytes, expect] of cases) {
      const t0 = Date.now()
      const got = (await rawExchange(socket, bytes, { halfClose: true })).toString('latin1')
      assert.ok(Date.now() - t0 < 20_000, `${what}: took ${Date.now() - t0} ms`)
      if (expect !== null) assert.match(got, expect, what)
      else assert.doesNotMatch(got, /^HTTP\/1\.1 5/, what)
    }
    // oversized headers: 431; a JSON body past the cap: 4xx (the server may answer and close before all is sent)
    const big = await pushExchange(socket, Buffer.from(`GET /_ping HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(2 * 1024 * 1024)}\r\n\r\n`))
    assert.match(big, /^HTTP\/1\.1 431/)
    const size = 8 * 1024 * 1024
    const huge = await pushExchange(socket, Buffer.concat([Buffer.from(`POST /containers/create HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${size}\r\n\r\n`), Buffer.alloc(size, 0x20)]))
    assert.match(huge, /^HTTP\/1\.1 4\d\d/)
    // a client that sends headers and goes away without a body
    const s = net.connect(socket)
    await new Promise<void>((resolve) => s.on('connect', () => resolve()))
    s.write('POST /containers/create HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 50\r\n\r\n')
    s.destroy()
    assert.equal((await request(socket, 'GET', '/_ping')).status, 200)
  })
})
