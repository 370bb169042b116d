// sendFile serves byte ranges of a file through two pooled buffers over a real HTTP connection: every byte arrives
// in order whatever the range and the buffer size, a client that goes away ends it with an error (its buffers are
// not reused), and a file shorter than promised cuts the reply short instead of hanging.
import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import http from 'node:http'
import { once } from 'node:events'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { randomBytes } from 'node:crypto'
import { sendFile } from '../../lib/stream/send-file.js'
import { BufferPool } from '../../lib/util/buffer-pool.js'

describe('sendFile', () => {
  const dir = mkdtempSync(join(tmpdir(), 'berth-send-file-'))
  const file = join(dir, 'blob')
  const data = randomBytes(100_000)
  const pool = new BufferPool(4096, { keep: 2 })
  let server: http.Server
  let port = 0
  const outcomes: Array<Error | null> = []

  before(async () => {
    writeFileSync(file, data)
    server = http.createServer((req, res) => {
      const u = new URL(req.url ?? '/', 'http://x')
      const start = Number(u.searchParams.get('start') ?? 0)
      const length = Number(u.searchParams.get('length') ?? data.length)
      res.writeHead(200, { 'Content-Length': String(length) })
      sendFile(file, res, start, length, pool).then(() => { outcomes.push(null) }, (err: Error) => { outcomes.push(err) })
    })
    server.listen(0, '127.0.0.1')
    await once(server, 'listening')
    port = (server.address() as { port: number }).port
  })
  after(async () => {
    server.close()
    pool.clear()
    rmSync(dir, { recursive: true, force: true })
  })

  async function get (query: string): Promise<{ status: number, body: Buffer, complete: boolean }> {
    return await new Promise((resolve, reject) => {
      http.get(`http://127.0.0.1:${port}/?${query}`, (res) => {
        const parts: Buffer[] = []
        res.on('data', (c: Buffer) => parts.push(c))
        res.on('end', () => { resolve({ status: res.statusCode ?? 0, body: Buffer.concat(parts), complete: res.complete }) })
        res.on('error', () => { resolve({ status: res.statusCode ?? 0, body: Buffer.concat(parts), complete: false }) })
      }).on('error', reject)
    })
  }

  it('sends whole files and ranges, buffer by buffer, byte for byte', async () => {
    for (const [start, length] of [[0, data.length], [0, 1], [4095, 4098], [10, 4096], [99_999, 1], [12_345, 50_000], [0, 4096], [0, 8192]] as const) {
      const r = await get(`start=${start}&length=${length}`)
      assert.equal(r.status, 200)
      assert.ok(r.body.equals(data.subarray(start, start + length)), `range ${start}+${length}`)
    }
    assert.ok(pool.held <= 2, `${pool.held} spare buffers`)
  })

  it('a file shorter than the length promised cuts the reply short', async () => {
    const before = outcomes.length
    const r = await get(`start=${data.length - 10}&length=100`)
    assert.equal(r.complete, false)
    // the earlier test's last transfer may settle after its reply was read: look for this one's error among the
    // outcomes that come after, for up to 10 s (a loaded machine)
    const early = (): Error | null | undefined => outcomes.slice(before).find((o) => o instanceof Error)
    for (let i = 0; i < 1000 && early() === undefined; i++) await new Promise((resolve) => setTimeout(resolve, 10))
    assert.match(String(early()?.message), /ended \d+ bytes early/)
  })

  it('a client that goes away mid-transfer ends it with an error', async () => {
    const big = join(dir, 'big')
    writeFileSync(big, randomBytes(8 * 1024 * 1024))
    let s: http.Server | undefined
    const ended = new Promise<Error | null>((resolve) => {
      s = http.createServer((req, res) => {
        res.writeHead(200, { 'Content-Length': String(8 * 1024 * 1024) })
        sendFile(big, res, 0, 8 * 1024 * 1024, pool).then(() => { resolve(null) }, resolve)
      })
      s.listen(0, '127.0.0.1', () => {
        const req = http.get(`http://127.0.0.1:${(s?.address() as { port: number }).port}/`, (res) => {
          res.once('data', () => { req.destroy() }) // gone after the first bytes, never reading the rest
        })
        req.on('error', () => {})
      })
    })
    const err = await ended
    s?.close()
    assert.ok(err instanceof Error, 'sendFile rejected')
  })
})
