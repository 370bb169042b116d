// A hostile-input sweep of the registry over raw sockets: malformed requests, truncated bodies, wrong types and huge
// values on every surface (distribution, Hub, token server). Each gets an answer below 500 — a 4xx for what is
// wrong, a 2xx where the input is odd but harmless (a long `last`, an unknown mount source) — never a 5xx, a crash
// or a hang; the registry still answers after.
import { describe, it, before } from 'node:test'
import assert from 'node:assert/strict'
import net from 'node:net'
import { writeFileSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { hashPassword } from '../../lib/registry/auth/passwords.js'
import { useRegistry, request, makeImage, pushImage, sha256, tmpDir } from './helpers.js'

const usersDir = tmpDir()
process.once('exit', () => { rmSync(usersDir, { recursive: true, force: true }) })
const USERS_FILE = join(usersDir, 'users')
writeFileSync(USERS_FILE, `alice:${await hashPassword('alice-pw')}\n`)

/** Sends raw bytes (half-closing only when `end`: Node's server drops a reply still pending at a half-close), returns
 * the first status code (0: none) within `ms`. */
async function raw (port: number, bytes: string | Buffer, opts: { end?: boolean, ms?: number } = {}): Promise<{ status: number, text: string }> {
  return await new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1')
    let text = ''
    let done = false
    const finish = (): void => {
      if (done) return
      done = true
      clearTimeout(timer)
      s.destroy()
      const m = /^HTTP\/1\.[01] (\d{3})/.exec(text)
      resolve({ status: m === null ? 0 : Number(m[1]), text })
    }
    const timer = setTimeout(finish, opts.ms ?? 10_000)
    s.setEncoding('latin1')
    s.on('data', (d: string) => {
      text += d
      // one full reply is enough
      const end = text.indexOf('\r\n\r\n')
      if (end === -1) return
      const len = /content-length: (\d+)/i.exec(text.slice(0, end))
      if (len !== null && text.length >= end + 4 + Number(len[1])) finish()
    })
    s.on('error', finish)
    s.on('close', finish)
    s.write(bytes, () => { if (opts.end === true) s.end() })
  })
}

describe('hostile input to the registry', () => {
  const reg = useRegistry({ auth: 'token', users: USERS_FILE })
  let port = 0
  let token = ''
  let upload = ''
  before(async () => {
    port = reg.current.port
    const base = reg.current.url
    token = (await request(base, 'GET', '/token?service=berth-registry&scope=repository:alice/app:pull,push,delete', { headers: { Authorization: `Basic ${Buffer.from('alice:alice-pw').toString('base64')}` } })).json().token as string
    assert.equal((await pushImage(base, 'alice/app', 'latest', makeImage({ layers: 1 }), token)).status, 201)
    upload = String((await request(base, 'POST', '/v2/alice/app/blobs/uploads/', { token })).headers.location)
  })

  const auth = (): string => `Authorization: Bearer ${token}\r\n`
  const req = (line: string, headers = '', body = ''): string => `${line} HTTP/1.1\r\nHost: x\r\n${headers}${body !== '' && !/content-length|transfer-encoding/i.test(headers) ? `Content-Length: ${Buffer.byteLength(body)}\r\n` : ''}\r\n${body}`
  const huge = 'x'.repeat(200_000)

  const cases: Array<[string, () => string | Buffer]> = [
    ['not HTTP at all', () => 'GARBAGE\r\n\r\n'],
    ['a NUL in the path', () => 'GET /v2/\0 HTTP/1.1\r\nHost: x\r\n\r\n'],
    ['2 MiB of headers', () => `GET /v2/ HTTP/1.1\r\nHost: x\r\nX-Big: ${'h'.repeat(2 * 1024 * 1024)}\r\n\r\n`],
    ['an unknown method', () => req('BREW /v2/')],
    ['a 200 KB repository name', () => req(`GET /v2/${huge}/tags/list`, auth())],
    ['a bad digest', () => req('GET /v2/alice/app/blobs/sha256:zz', auth())],
    ['a digest of another algorithm', () => req(`GET /v2/alice/app/blobs/sha512:${'a'.repeat(128)}`, auth())],
    ['a huge n', () => req('GET /v2/alice/app/tags/list?n=99999999999999999999999', auth())],
    ['a negative n', () => req('GET /v2/alice/app/tags/list?n=-5', auth())],
    ['a huge last', () => req(`GET /v2/alice/app/tags/list?last=${huge}`, auth())],
    ['a malformed Range', () => req(`GET /v2/alice/app/blobs/${sha256('nothing')}`, auth() + 'Range: bytes=99999999999999999999-1\r\n')],
    ['a garbage bearer token', () => req('GET /v2/alice/app/tags/list', 'Authorization: Bearer a.b.c\r\n')],
    ['a huge bearer token', () => req('GET /v2/alice/app/tags/list', `Authorization: Bearer ${'A'.repeat(100_000)}\r\n`)],
    ['an unknown auth scheme', () => req('GET /v2/', 'Authorization: Digest x\r\n')],
    ['Basic auth without a colon', () => req('GET /token', `Authorization: Basic ${Buffer.from('nocolon').toString('base64')}\r\n`)],
    ['Basic auth that is not base64', () => req('GET /token', 'Authorization: Basic !!!***\r\n')],
    ['a huge Basic password', () => req('GET /token', `Authorization: Basic ${Buffer.from(`alice:${huge}`).toString('base64')}\r\n`)],
    ['garbage scopes', () => req(`GET /token?scope=${encodeURIComponent(':::,,,')}&scope=repository:../../x:push&scope=${huge}`)],
    ['POST /token with a wrong grant', () => req('POST /token', 'Content-Type: application/x-www-form-urlencoded\r\n', 'grant_type=client_credentials')],
    ['POST /token with a body over its limit', () => req('POST /token', 'Content-Type: application/x-www-form-urlencoded\r\n', `grant_type=password&username=alice&password=${'p'.repeat(70_000)}`)],
    ['Hub login with wrong types', () => req('POST /v2/auth/token', 'Content-Type: application/json\r\n', '{"identifier":5,"secret":[1]}')],
    ['Hub login with invalid JSON', () => req('POST /v2/auth/token', 'Content-Type: application/json\r\n', '{"identifier":')],
    ['Hub create with wrong types', () => req('POST /v2/namespaces/alice/repositories', auth() + 'Content-Type: application/json\r\n', '{"name":{"a":1},"is_private":"yes"}')],
    ['Hub page that is not a number', () => req('GET /v2/namespaces/alice/repositories?page=abc&page_size=1e10')],
    ['Hub ordering that does not exist', () => req('GET /v2/namespaces/alice/repositories?ordering=__proto__')],
    ['a manifest that is not JSON', () => req('PUT /v2/alice/app/manifests/x', auth() + 'Content-Type: application/vnd.oci.image.manifest.v1+json\r\n', '{"schemaVersion":2,')],
    ['a manifest nested a million deep', () => req('PUT /v2/alice/app/manifests/x', auth() + 'Content-Type: application/vnd.oci.image.manifest.v1+json\r\n', '['.repeat(1_000_000))],
    ['a manifest with wrong types everywhere', () => req('PUT /v2/alice/app/manifests/x', auth() + 'Content-Type: application/vnd.oci.image.manifest.v1+json\r\n', JSON.stringify({ schemaVersion: 2, mediaType: 'application/vnd.oci.image.manifest.v1+json', config: { mediaType: 7, digest: null, size: 'big' }, layers: {} }))],
    ['a manifest with a huge size', () => req('PUT /v2/alice/app/manifests/x', auth() + 'Content-Type: application/vnd.oci.image.manifest.v1+json\r\n', JSON.stringify({ schemaVersion: 2, mediaType: 'application/vnd.oci.image.manifest.v1+json', config: { mediaType: 'application/vnd.oci.image.config.v1+json', digest: sha256('x'), size: 1e300 }, layers: [] }))],
    ['a manifest over the size limit', () => req('PUT /v2/alice/app/manifests/x', auth() + 'Content-Type: application/vnd.oci.image.manifest.v1+json\r\nContent-Length: 99999999\r\n', '{')],
    ['a manifest __proto__ annotation', () => req('PUT /v2/alice/app/manifests/x', auth() + 'Content-Type: application/vnd.oci.image.manifest.v1+json\r\n', '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"a/b","digest":"sha256:' + '0'.repeat(64) + '","size":1},"layers":[],"annotations":{"__proto__":{"x":1}}}')],
    ['a Content-Range of 10^25', () => req(`PATCH ${upload}`, auth() + 'Content-Range: 0-9999999999999999999999999\r\n', 'abc')],
    ['a malformed Content-Range', () => req(`PATCH ${upload}`, auth() + 'Content-Range: bytes=a-b\r\n', 'abc')],
    ['a Content-Length that is not a number', () => `PATCH ${upload} HTTP/1.1\r\nHost: x\r\n${auth()}Content-Length: abc\r\n\r\n`],
    ['bad chunked encoding', () => `PATCH ${upload} HTTP/1.1\r\nHost: x\r\n${auth()}Transfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n`],
    ['an upload PUT with a bad digest', () => req(`PUT ${upload}?digest=sha256:nothex`, auth())],
    ['an upload PUT without a digest', () => req(`PUT ${upload}`, auth())],
    ['an unknown upload id', () => req('PATCH /v2/alice/app/blobs/uploads/00000000-0000-0000-0000-000000000000', auth(), 'x')],
    ['an upload id that is a path', () => req('GET /v2/alice/app/blobs/uploads/..%2F..%2Fetc', auth())],
    ['a mount from a bad name', () => req(`POST /v2/alice/app/blobs/uploads/?mount=${sha256('x')}&from=../../etc`, auth())],
    ['a digest-algorithm we do not have', () => req('POST /v2/alice/app/blobs/uploads/?digest-algorithm=md5', auth())],
    ['a referrers digest that is not one', () => req('GET /v2/alice/app/referrers/latest', auth())],
    ['a catalog with a huge n', () => req('GET /v2/_catalog?n=1e400', auth())]
  ]
  /** Cases that must be refused (4xx), not merely answered. */
  const MUST_REFUSE = new Set(cases.map(([n]) => n).filter((n) => !['a huge last', 'garbage scopes', 'a mount from a bad name', 'Hub ordering that does not exist'].includes(n)))
  for (const [name, make] of cases) {
    it(name, async () => {
      const r = await raw(port, make())
      assert.ok(r.status >= 200 && r.status < 500, `${r.status}: ${r.text.slice(0, 300)}`)
      if (MUST_REFUSE.has(name)) assert.ok(r.status >= 400, `${r.status}: ${r.text.slice(0, 300)}`)
    })
  }

  it('truncated bodies (the client goes away mid-body) leave nothing broken', async () => {
    for (const head of [
      `PATCH ${upload} HTTP/1.1\r\nHost: x\r\n${auth()}Content-Length: 1000\r\n\r\nabc`,
      `PUT /v2/alice/app/manifests/y HTTP/1.1\r\nHost: x\r\n${auth()}Content-Type: application/vnd.oci.image.manifest.v1+json\r\nContent-Length: 1000\r\n\r\n{"schema`,
      `POST /v2/alice/app/blobs/uploads/?digest=${sha256('whole')} HTTP/1.1\r\nHost: x\r\n${auth()}Content-Length: 5000\r\n\r\nwho`,
      `POST /token HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 500\r\n\r\ngrant_type=pass`
    ]) {
      const r = await raw(port, head, { ms: 3000 })
      assert.ok(r.status === 0 || (r.status >= 400 && r.status < 500), `${r.status}: ${r.text.slice(0, 300)}`)
    }
    // the session is still usable and reports what it has
    const st = await request(reg.current.url, 'GET', upload, { token })
    assert.equal(st.status, 204, st.text)
  })

  it('still answers after all of it', async () => {
    const r = await request(reg.current.url, 'GET', '/v2/alice/app/manifests/latest', { token })
    assert.equal(r.status, 200)
  })
})
