// The connections of a bind() listener read into one buffer, lent to a connection only while it handles that read:
// a partial request head, a body received in pieces and the input behind a request a handler holds must all be kept
// as they came while other connections' reads land in the same buffer.

import assert from 'node:assert/strict'
import { test } from 'node:test'
import { EventHttpRequest } from '../../lib/evhttp/index.js'
import { installHandlers, RawClient, startServer } from './helpers.js'

function echoReplyBody (text: string): string {
  return text.slice(text.indexOf('\r\n\r\n') + 4)
}

/** Another connection's requests: every byte it sends goes through the shared buffer. */
async function trample (port: number): Promise<void> {
  const other = await RawClient.open(port)
  try {
    const req = 'POST /echo HTTP/1.1\r\nX-Noise: ' + 'Z'.repeat(200) + '\r\nContent-Length: 64\r\n\r\n' + 'Z'.repeat(64)
    await other.send(req + req + req)
    await other.until((t) => t.split('HTTP/1.1 200 OK').length === 4)
  } finally {
    other.destroy()
  }
}

test('a request head split across reads survives other connections\' reads', async (t) => {
  const { port } = startServer(t, installHandlers)
  const client = await RawClient.open(port)
  try {
    await client.send('GET /echo HTTP/1.1\r\nX-Part: aaaa')
    await trample(port)
    await client.send('bbbb\r\n\r\n')
    const text = await client.until((s) => s.includes('body='))
    assert.match(text, /\[X-Part\]=\[aaaabbbb\]/)
  } finally {
    client.destroy()
  }
})

test('a body received in pieces survives other connections\' reads', async (t) => {
  const { port } = startServer(t, installHandlers)
  for (const framing of ['Content-Length: 10\r\n\r\nAAAAA', 'Transfer-Encoding: chunked\r\n\r\n5\r\nAAAAA\r\n']) {
    const client = await RawClient.open(port)
    try {
      await client.send(`POST /echo HTTP/1.1\r\n${framing}`)
      await trample(port)
      await client.send(framing.startsWith('Content-Length') ? 'BBBBB' : '5\r\nBBBBB\r\n0\r\n\r\n')
      const text = await client.until((s) => s.includes('body=') && s.endsWith('BBBBB'))
      assert.equal(echoReplyBody(text).split('body=')[1], 'AAAAABBBBB', framing)
    } finally {
      client.destroy()
    }
  }
})

test('a held request\'s body and the input queued behind it survive other connections\' reads', async (t) => {
  let held: EventHttpRequest | null = null
  const { port } = startServer(t, (http) => {
    installHandlers(http)
    http.setCallback('/hold', (req) => { held = req })
  })
  const client = await RawClient.open(port)
  try {
    // one write: the held request with its body, then the head of a pipelined request still incomplete
    await client.send('POST /hold HTTP/1.1\r\nContent-Length: 10\r\n\r\nAAAAAAAAAAGET /echo HTTP/1.1\r\nX-Part: cc')
    for (let i = 0; i < 100 && held === null; i++) await new Promise((resolve) => setTimeout(resolve, 10))
    assert.ok(held !== null, 'the /hold handler ran')
    await trample(port)
    const req = held as EventHttpRequest
    const body = req.getInputBuffer().read(100)
    req.sendReply(200, 'OK')
    assert.equal(body, 'AAAAAAAAAA')
    await client.send('dd\r\n\r\n')
    const text = await client.until((s) => s.includes('body='))
    assert.match(text, /\[X-Part\]=\[ccdd\]/)
  } finally {
    client.destroy()
  }
})
