// Upload sessions cannot be hoarded (caps per repository and per user, not only in all), a chunk never writes past
// its Content-Range, and a blob never grows past the configured maximum.
import { describe, it, before } from 'node:test'
import assert from 'node:assert/strict'
import http from 'node:http'
import { randomBytes } from 'node:crypto'
import { useRegistry, client, sha256, type Reply } from './helpers.js'

const MAX_BLOB = 64 * 1024

function codeOf (r: Reply): string | undefined {
  return (r.json() as { errors?: Array<{ code: string }> }).errors?.[0]?.code
}

/** A request whose body goes out chunked (no Content-Length), in the pieces given. */
async function chunked (base: string, method: string, path: string, headers: Record<string, string>, pieces: Buffer[]): Promise<{ status: number, text: string, headers: http.IncomingHttpHeaders }> {
  const u = new URL(base)
  return await new Promise((resolve, reject) => {
    const req = http.request({ host: u.hostname, port: u.port, method, path, headers, agent: false }, (res) => {
      let text = ''
      res.setEncoding('utf8')
      res.on('data', (d: string) => { text += d })
      res.on('end', () => { resolve({ status: res.statusCode ?? 0, text, headers: res.headers }) })
    })
    // the server may answer and close before the whole body is out
    req.on('error', (err: NodeJS.ErrnoException) => { if (err.code !== 'EPIPE' && err.code !== 'ECONNRESET') reject(err) })
    for (const p of pieces) req.write(p)
    req.end()
  })
}

describe('upload limits', () => {
  const reg = useRegistry({ maxUploadsPerRepository: 3, maxUploadsPerUser: 5, maxBlobSize: MAX_BLOB })
  let req: ReturnType<typeof client>
  before(() => { req = client(reg.current.url) })

  const start = async (name: string): Promise<Reply> => await req('POST', `/v2/${name}/blobs/uploads/`)

  it('sessions are capped per repository and per client, with 429 TOOMANYREQUESTS and Retry-After', async () => {
    const open: string[] = []
    for (let i = 0; i < 3; i++) {
      const r = await start('cap/one')
      assert.equal(r.status, 202, r.text)
      open.push(String(r.headers.location))
    }
    const fourth = await start('cap/one')
    assert.equal(fourth.status, 429, fourth.text)
    assert.equal(codeOf(fourth), 'TOOMANYREQUESTS')
    assert.match(String(fourth.headers['retry-after']), /^\d+$/)
    // another repository still works, up to the per-client cap
    for (let i = 0; i < 2; i++) {
      const r = await start('cap/two')
      assert.equal(r.status, 202, r.text)
      open.push(String(r.headers.location))
    }
    assert.equal((await start('cap/three')).status, 429)
    // a cancelled session frees its place
    assert.equal((await req('DELETE', open.shift() as string)).status, 204)
    const again = await start('cap/one')
    assert.equal(again.status, 202, again.text)
    open.push(String(again.headers.location))
    for (const loc of open) assert.equal((await req('DELETE', loc)).status, 204)
  })

  it('a chunk longer than its Content-Range is refused and nothing past the range is written', async () => {
    const s = await start('chunks/x')
    assert.equal(s.status, 202, s.text)
    const loc = String(s.headers.location)
    const r = await chunked(reg.current.url, 'PATCH', loc, { 'Content-Range': '0-9', 'Content-Type': 'application/octet-stream' }, [randomBytes(6), randomBytes(14)])
    assert.equal(r.status, 400, r.text)
    assert.equal(JSON.parse(r.text).errors[0].code, 'SIZE_INVALID')
    const st = await req('GET', loc)
    assert.equal(st.status, 204)
    const end = Number(String(st.headers.range).split('-')[1])
    assert.ok(end <= 9, `the session reports ${String(st.headers.range)}`)
    assert.equal((await req('DELETE', loc)).status, 204)
  })

  it('a blob larger than the maximum: 413 before reading (Content-Length) or before writing past it (chunked)', async () => {
    const big = randomBytes(MAX_BLOB + 1)
    const mono = await req('POST', `/v2/big/x/blobs/uploads/?digest=${sha256(big)}`, { body: big })
    assert.equal(mono.status, 413, mono.text)
    assert.equal(codeOf(mono), 'SIZE_INVALID')
    const s = await start('big/x')
    const loc = String(s.headers.location)
    const half = randomBytes(MAX_BLOB / 2)
    assert.equal((await req('PATCH', loc, { body: half, headers: { 'Content-Range': `0-${half.length - 1}` } })).status, 202)
    const over = await chunked(reg.current.url, 'PATCH', loc, {}, [randomBytes(MAX_BLOB / 2), randomBytes(10)])
    assert.equal(over.status, 413, over.text)
    const st = await req('GET', loc)
    assert.ok(Number(String(st.headers.range).split('-')[1]) < MAX_BLOB, String(st.headers.range))
    // exactly the maximum is fine
    const exact = randomBytes(MAX_BLOB)
    assert.equal((await req('POST', `/v2/big/x/blobs/uploads/?digest=${sha256(exact)}`, { body: exact })).status, 201)
    assert.equal((await req('DELETE', loc)).status, 204)
  })
})
