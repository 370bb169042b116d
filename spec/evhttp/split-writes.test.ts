// Requests split across writes, at every byte boundary, get the same reply as in one write.

import assert from 'node:assert/strict'
import { test } from 'node:test'
import { installHandlers, RawClient, startServer } from './helpers.js'

const CASES: Array<[string, string]> = [
  ['GET /about HTTP/1.1\r\nHost: example.com\r\nAccept: */*\r\n\r\n',
    'HTTP/1.1 200 OK\r\nDate: D\r\nContent-Length: 0\r\nContent-Type: text/html; charset=ISO-8859-1\r\n\r\n'],
  ['POST /echo HTTP/1.1\r\nContent-Length: 11\r\n\r\nhello world',
    'HTTP/1.1 200 OK\r\nDate: D\r\nContent-Length: 66\r\nContent-Type: text/html; charset=ISO-8859-1\r\n\r\n' +
    'uri=/echo host=(null) cmd=2\n[Content-Length]=[11]\nbody=hello world'],
  ['POST /echo HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\nT: x\r\n\r\n',
    'HTTP/1.1 200 OK\r\nDate: D\r\nContent-Length: 74\r\nContent-Type: text/html; charset=ISO-8859-1\r\n\r\n' +
    'uri=/echo host=(null) cmd=2\n[Transfer-Encoding]=[chunked]\nbody=hello world'],
  ['GET /unknown HTTP/1.0\r\nConnection: close\r\n\r\n',
    'HTTP/1.1 404 Not Found\r\nContent-Type: text/html\r\nDate: D\r\nContent-Length: 149\r\nConnection: close\r\n\r\n' +
    '<html><head><title>404 Not Found</title></head><body><h1>Not Found</h1><p>The requested URL /unknown was not ' +
    'found on this server.</p></body></html>\n'],
]

async function exchange (port: number, parts: string[], expectedLength: number): Promise<string> {
  const client = await RawClient.open(port)
  try {
    await client.send(...parts)
    return await client.atLeast(expectedLength)
  } finally {
    client.destroy()
  }
}

test('every split point in two writes', async (t) => {
  const { port } = startServer(t, installHandlers)
  for (const [request, reply] of CASES) {
    await t.test(request.split('\r\n')[0]!, async () => {
      for (let i = 1; i < request.length; i++) {
        const got = await exchange(port, [request.slice(0, i), request.slice(i)], reply.length)
        assert.equal(got, reply, `split at ${i}`)
      }
    })
  }
})

test('one byte per write', async (t) => {
  const { port } = startServer(t, installHandlers)
  for (const [request, reply] of CASES) {
    assert.equal(await exchange(port, [...request], reply.length), reply)
  }
})

test('pipelined requests split in the middle of the second one', async (t) => {
  const { port } = startServer(t, installHandlers)
  const one = CASES[0]!
  const two = CASES[1]!
  const all = one[0] + two[0]
  for (const cut of [one[0].length - 1, one[0].length, one[0].length + 3, all.length - 2]) {
    assert.equal(await exchange(port, [all.slice(0, cut), all.slice(cut)], one[1].length + two[1].length),
      one[1] + two[1], `cut at ${cut}`)
  }
})
