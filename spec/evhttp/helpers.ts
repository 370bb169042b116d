// Test helpers for berth/evhttp: a server on 127.0.0.1 port 0 with the handlers the reference's C program
// mirrors, and a raw client that writes literal request bytes and reads literal reply bytes (Date masked).

import assert from 'node:assert/strict'
import { connect, type Socket } from 'node:net'
import type { TestContext } from 'node:test'
import { EventBase, EventBuffer, EventHttp, EventHttpRequest } from '../../lib/evhttp/index.js'

/** A reply row: name, request (one write, or one write per part), expected reply (Date masked), state after. */
export type Row = [name: string, request: string | string[], reply: string, state: 'open' | 'closed']

const DATE_RE = /Date: [A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT/g

export function maskDate (text: string): string {
  return text.replace(DATE_RE, 'Date: D')
}

export interface TestServer {
  base: EventBase
  http: EventHttp
  port: number
}

/** EventHttp on 127.0.0.1:0, configured by `setup` before it binds; everything is closed in t.after. */
export function startServer (t: TestContext, setup?: (http: EventHttp) => void): TestServer {
  const base = new EventBase()
  const http = new EventHttp(base)
  setup?.(http)
  assert.equal(http.bind('127.0.0.1', 0), true, String(http.lastError))
  const port = http.getBoundAddresses()[0]!.port
  t.after(() => base.free())
  return { base, http, port }
}

function about (req: EventHttpRequest): void {
  req.sendReply(200, 'OK')
}

function body (req: EventHttpRequest): void {
  const buf = new EventBuffer()
  req.addHeader('Content-Type', 'text/html; charset=ISO-8859-1', EventHttpRequest.OUTPUT_HEADER)
  buf.add('<html><body><h1>About</h1></body></html>\n')
  req.sendReply(200, 'OK', buf)
}

/** Echoes what the request API sees: URI, host, command, headers (PHP array semantics) and the body. */
function echo (req: EventHttpRequest): void {
  const buf = new EventBuffer()
  let text = `uri=${req.getUri()} host=${req.getHost() ?? '(null)'} cmd=${req.getCommand()}\n`
  const headers = req.getInputHeaders()
  for (const k of Object.keys(headers)) text += `[${k}]=[${headers[k]}]\n`
  buf.add(Buffer.from(text + 'body=', 'latin1'))
  buf.addBuffer(req.getInputBuffer())
  req.sendReply(200, 'OK', buf)
}

function stream (req: EventHttpRequest): void {
  const buf = new EventBuffer()
  req.sendReplyStart(200, 'OK')
  buf.add('chunk-one\n')
  req.sendReplyChunk(buf)
  buf.add('chunk-two-longer\n')
  req.sendReplyChunk(buf)
  req.sendReplyEnd()
}

/** The handlers of the reference's C program (`/about` is the PHP manual's). */
export function installHandlers (http: EventHttp): void {
  http.setCallback('/about', about)
  http.setCallback('/body', body)
  http.setCallback('/echo', echo)
  http.setCallback('/stream', stream)
  http.setCallback('/error', (req) => req.sendError(503))
  http.setCallback('/error2', (req) => req.sendError(418, "I'm <a> teapot"))
  http.setCallback('/nocontent', (req) => {
    const buf = new EventBuffer()
    buf.add('x')
    req.sendReply(204, 'No Content', buf)
  })
  http.setCallback('/redirect', (req) => {
    req.addHeader('Location', '/about', EventHttpRequest.OUTPUT_HEADER)
    req.sendReply(302, 'Found')
  })
  http.setCallback('/closeit', (req) => {
    req.addHeader('Connection', 'close', EventHttpRequest.OUTPUT_HEADER)
    req.sendReply(200, 'OK')
  })
  http.setCallback('/a b', about)
}

/** A raw TCP (or Unix socket) client collecting every byte the server sends. */
export class RawClient {
  readonly socket: Socket
  private chunks: Buffer[] = []
  private closedFlag = false
  private waiters: Array<() => void> = []

  private constructor (socket: Socket) {
    this.socket = socket
    socket.on('data', (d: Buffer) => {
      this.chunks.push(d)
      this.wake()
    })
    socket.on('error', () => {}) // a reset shows up as 'close'
    socket.on('close', () => {
      this.closedFlag = true
      this.wake()
    })
  }

  static async open (target: number | string): Promise<RawClient> {
    const socket = typeof target === 'number' ? connect(target, '127.0.0.1') : connect(target)
    const client = new RawClient(socket)
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', resolve)
      socket.once('error', reject)
    })
    return client
  }

  get closed (): boolean {
    return this.closedFlag
  }

  /** Everything received so far, latin1, Date masked. */
  text (): string {
    return maskDate(Buffer.concat(this.chunks).toString('latin1'))
  }

  raw (): Buffer {
    return Buffer.concat(this.chunks)
  }

  /** Writes each part separately, letting the event loop turn between parts. */
  async send (...parts: Array<string | Buffer>): Promise<void> {
    for (const p of parts) {
      if (this.socket.destroyed) return
      await new Promise<void>((resolve) => this.socket.write(typeof p === 'string' ? Buffer.from(p, 'latin1') : p, () => resolve()))
      await new Promise((resolve) => setImmediate(resolve))
    }
  }

  /**
   * Resolves when `done(text)` holds or the connection is closed; rejects after `limitMs` (a bound for a server
   * that never answers, not a timing assertion).
   */
  async until (done: (text: string) => boolean, limitMs = 5000): Promise<string> {
    return await this.waitFor(() => done(this.text()), limitMs, 'no expected reply')
  }

  /** Resolves with everything received once the connection is closed (the text is decoded once, at the end). */
  async waitClosed (limitMs = 5000): Promise<string> {
    return await this.waitFor(() => false, limitMs, 'not closed')
  }

  private async waitFor (done: () => boolean, limitMs: number, what: string): Promise<string> {
    let expired = false
    const timer = setTimeout(() => {
      expired = true
      this.wake()
    }, limitMs)
    try {
      while (!this.closedFlag && !done()) {
        if (expired) throw new Error(`${what} within ${limitMs} ms; got ${JSON.stringify(this.text().slice(0, 2000))}`)
        await new Promise<void>((resolve) => this.waiters.push(resolve))
      }
    } finally {
      clearTimeout(timer)
    }
    return this.text()
  }

  /** Resolves once at least `n` (masked) characters arrived, or the connection closed. */
  async atLeast (n: number): Promise<string> {
    return this.until((t) => t.length >= n)
  }

  destroy (): void {
    this.socket.destroy()
  }

  private wake (): void {
    const w = this.waiters
    this.waiters = []
    for (const f of w) f()
  }
}

/**
 * Sends a row's request and checks the reply byte for byte. 'closed' waits for the server to close; 'open'
 * proves the connection still serves by sending one more request on it and getting a status line back.
 */
export async function checkRow (target: number | string, row: Row): Promise<void> {
  const [name, request, reply, state] = row
  const client = await RawClient.open(target)
  try {
    await client.send(...(Array.isArray(request) ? request : [request]))
    if (state === 'closed') {
      assert.equal(await client.waitClosed(), reply, name)
      return
    }
    assert.equal(await client.atLeast(reply.length), reply, name)
    assert.equal(client.closed, false, `${name}: connection closed`)
    await client.send('GET /probe HTTP/1.1\r\nConnection: close\r\n\r\n')
    const after = (await client.waitClosed()).slice(reply.length)
    assert.match(after, /^HTTP\/1\.1 \d{3} /, `${name}: connection does not serve a next request`)
  } finally {
    client.destroy()
  }
}
