// Fuzzing: random and mutated requests, sent over real sockets in random pieces, must never crash the server
// or leave a connection hanging (each is half-closed by the client and must be closed by the server within a
// bound). The parser is also fed random bytes in-process. EVHTTP_FUZZ_SEED replays a run; EVHTTP_FUZZ_CASES
// scales it.

import assert from 'node:assert/strict'
import { test } from 'node:test'
import { RequestParser, PARSE } from '../../lib/evhttp/request-parser.js'
import { installHandlers, RawClient, startServer } from './helpers.js'

const SEED = Number(process.env.EVHTTP_FUZZ_SEED ?? Math.floor(Math.random() * 2 ** 31))
const CASES = Number(process.env.EVHTTP_FUZZ_CASES ?? 300)

function prng (seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6D2B79F5) >>> 0
    let r = Math.imul(a ^ (a >>> 15), 1 | a)
    r = (r + Math.imul(r ^ (r >>> 7), 61 | r)) ^ r
    return ((r ^ (r >>> 14)) >>> 0) / 4294967296
  }
}

const CORPUS = [
  'GET /about HTTP/1.1\r\nHost: x\r\n\r\n',
  'GET /about HTTP/1.0\r\nConnection: close\r\n\r\n',
  'GET /about HTTP/1.0\r\nConnection: keep-alive\r\n\r\nGET /body HTTP/1.1\r\n\r\n',
  'POST /echo HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello',
  'POST /echo HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\nT: 1\r\n\r\n',
  'POST /echo HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\nabc',
  'HEAD /stream HTTP/1.1\r\n\r\nGET /stream HTTP/1.1\r\n\r\n',
  'GET http://example.com:80/echo?x=%41 HTTP/1.1\r\nProxy-Connection: keep-alive\r\n\r\n',
  'CONNECT example.com:443 HTTP/1.1\r\n\r\n',
  'GET /error HTTP/1.1\r\nX: a\r\n folded\r\n\r\n',
  'PUT /nocontent HTTP/1.1\r\nContent-Length: 0\r\n\r\n',
]
const ALPHABET = '\r\n\0 :%/?#;,\t0123456789abcdefHTTP/1.GETPOSTchunkedContent-Length'

function mutate (rand: () => number, input: string): string {
  let s = input
  const n = 1 + Math.floor(rand() * 4)
  for (let i = 0; i < n; i++) {
    const at = Math.floor(rand() * (s.length + 1))
    switch (Math.floor(rand() * 7)) {
      case 0: s = s.slice(0, at) + String.fromCharCode(Math.floor(rand() * 256)) + s.slice(at + 1); break
      case 1: s = s.slice(0, at) + ALPHABET[Math.floor(rand() * ALPHABET.length)] + s.slice(at); break
      case 2: s = s.slice(0, at) + s.slice(at + Math.floor(rand() * 8)); break
      case 3: s = s.slice(0, at) + s.slice(at, at + Math.floor(rand() * 40)).repeat(2 + Math.floor(rand() * 3)) + s.slice(at); break
      case 4: s = s.slice(0, at); break
      case 5: s = s + CORPUS[Math.floor(rand() * CORPUS.length)]!; break
      default: s = s.slice(0, at) + randomBytes(rand, 1 + Math.floor(rand() * 16)) + s.slice(at)
    }
  }
  return s
}

function randomBytes (rand: () => number, n: number): string {
  let s = ''
  for (let i = 0; i < n; i++) s += String.fromCharCode(Math.floor(rand() * 256))
  return s
}

function makeCase (rand: () => number): string {
  const r = rand()
  if (r < 0.15) return randomBytes(rand, Math.floor(rand() * 600))
  return mutate(rand, CORPUS[Math.floor(rand() * CORPUS.length)]!)
}

function pieces (rand: () => number, s: string): string[] {
  const out: string[] = []
  let rest = s
  while (rest.length > 0 && out.length < 4) {
    const cut = out.length === 3 ? rest.length : 1 + Math.floor(rand() * rest.length)
    out.push(rest.slice(0, cut))
    rest = rest.slice(cut)
  }
  return out
}

async function sendCase (port: number, parts: string[]): Promise<string> {
  const client = await RawClient.open(port)
  try {
    await client.send(...parts)
    client.socket.end()
    return await client.waitClosed(10_000) // the server must close a half-closed connection
  } finally {
    client.destroy()
  }
}

test(`fuzz over sockets (seed ${SEED}, ${CASES} cases)`, { timeout: 300_000 }, async (t) => {
  const rand = prng(SEED)
  const plain = startServer(t, installHandlers)
  const limited = startServer(t, (http) => {
    installHandlers(http)
    http.setDefaultCallback((req) => req.sendReply(200, 'OK'))
    http.setMaxHeadersSize(200)
    http.setMaxBodySize(64)
    http.setAllowedMethods(511)
  })
  const batch = 10
  for (let i = 0; i < CASES; i += batch) {
    const runs: Array<Promise<string>> = []
    for (let j = 0; j < batch && i + j < CASES; j++) {
      const input = makeCase(rand)
      const port = rand() < 0.5 ? plain.port : limited.port
      runs.push(sendCase(port, pieces(rand, input)).catch((err: Error) => {
        throw new Error(`seed ${SEED}, input ${JSON.stringify(input)}: ${err.message}`)
      }))
    }
    for (const text of await Promise.all(runs)) {
      if (text.length > 0) assert.match(text, /^HTTP\/-?\d+\.-?\d+ \d{3} /, `seed ${SEED}`)
    }
  }
  // Both servers still answer.
  for (const port of [plain.port, limited.port]) {
    assert.match(await sendCase(port, ['GET /about HTTP/1.0\r\n\r\n']), /^HTTP\/1\.0 200 OK\r\n/)
  }
})

test(`fuzz the parser in-process (seed ${SEED})`, () => {
  const rand = prng(SEED ^ 0x5bd1e995)
  const limits = { maxHeadersSize: 300, maxBodySize: 100 }
  for (let i = 0; i < CASES * 20; i++) {
    const parser = new RequestParser({ isServerAlias: () => rand() < 0.5 }, limits)
    const input = Buffer.from(makeCase(rand), 'latin1')
    let pending = Buffer.alloc(0)
    for (const part of pieces(rand, input.toString('latin1'))) {
      pending = Buffer.concat([pending, Buffer.from(part, 'latin1')])
      let off = 0
      for (;;) {
        const status = parser.execute(pending, off)
        assert.ok(parser.offset >= off && parser.offset <= pending.length, `seed ${SEED}: offset out of range`)
        off = parser.offset
        if (status === PARSE.CONTINUE) continue
        if (status === PARSE.MORE) break
        parser.reset()
        if (status === PARSE.ERROR) { off = pending.length; break }
      }
      pending = pending.subarray(off)
    }
  }
})
