// The token endpoint cannot be turned against the registry: password hashing is capped (a storm of wrong passwords
// leaves blob requests fast), failed logins are throttled per client address and per user (429 with Retry-After),
// and an unknown user costs as much time as a known one (no user enumeration by timing).
import { describe, it, before } from 'node:test'
import assert from 'node:assert/strict'
import http from 'node:http'
import { writeFileSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { hashPassword } from '../../lib/registry/auth/passwords.js'
import { useRegistry, request, makeImage, pushImage, sha256, tmpDir } from './helpers.js'

const PASSWORDS: Record<string, string> = { alice: 'alice-pw', bob: 'bob-pw', carol: 'carol-pw' }
const usersDir = tmpDir()
process.once('exit', () => { rmSync(usersDir, { recursive: true, force: true }) })
const USERS_FILE = join(usersDir, 'users')
writeFileSync(USERS_FILE, (await Promise.all(Object.entries(PASSWORDS).map(async ([n, pw]) => `${n}:${await hashPassword(pw)}:*`))).join('\n') + '\n')

interface Got { status: number, headers: http.IncomingHttpHeaders, text: string }

/** GET /token with Basic credentials from a chosen loopback address; a connection refused at the door counts as 0. */
async function login (base: string, user: string, password: string, from = '127.0.0.1'): Promise<Got> {
  const u = new URL(base)
  const auth = `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`
  return await new Promise((resolve) => {
    const req = http.request({ host: u.hostname, port: u.port, path: '/token?service=berth-registry', headers: { Authorization: auth }, agent: false, localAddress: from }, (res) => {
      let text = ''
      res.setEncoding('utf8')
      res.on('data', (d: string) => { text += d })
      res.on('end', () => { resolve({ status: res.statusCode ?? 0, headers: res.headers, text }) })
      res.on('error', () => { resolve({ status: 0, headers: {}, text: '' }) })
    })
    req.on('error', () => { resolve({ status: 0, headers: {}, text: '' }) })
    req.end()
  })
}

describe('token endpoint under attack', () => {
  const reg = useRegistry({ auth: 'token', users: USERS_FILE, logins: { failuresPerClient: 20, failuresPerUser: 10, windowMs: 60_000 } })
  let base = ''
  let blobPath = ''
  let pull = ''
  before(async () => {
    base = reg.current.url
    const t = (await request(base, 'GET', '/token?service=berth-registry&scope=repository:alice/app:pull,push', { headers: { Authorization: `Basic ${Buffer.from('alice:alice-pw').toString('base64')}` } })).json().token as string
    const img = makeImage({ layers: 1 })
    assert.equal((await pushImage(base, 'alice/app', 'latest', img, t)).status, 201)
    blobPath = `/v2/alice/app/blobs/${sha256(img.layers[0] as Buffer)}`
    pull = t
  })

  it('300 parallel wrong-password logins: each 401 or 429, and a blob HEAD stays fast meanwhile', async () => {
    // the sampler's connection is open before the storm: what is timed is the registry's work, not TCP set-up
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 })
    const u = new URL(base)
    const head = async (): Promise<number> => await new Promise((resolve, reject) => {
      const t0 = performance.now()
      const req = http.request({ host: u.hostname, port: u.port, method: 'HEAD', path: blobPath, headers: { Authorization: `Bearer ${pull}` }, agent }, (res) => {
        res.resume()
        res.on('end', () => { if (res.statusCode === 200) resolve(performance.now() - t0); else reject(new Error(`HEAD ${res.statusCode ?? 0}`)) })
      })
      req.on('error', reject)
      req.end()
    })
    try {
      await head()
      const storm = Promise.all(Array.from({ length: 300 }, async () => await login(base, 'carol', 'wrong')))
      let done = false
      void storm.finally(() => { done = true })
      const heads: number[] = []
      for (let i = 0; i < 50 && (!done || heads.length < 3); i++) heads.push(await head())
      const replies = await storm
      // a hang guard, not a benchmark: with uncapped hashing a HEAD waited for the thread pool for seconds
      assert.ok(Math.max(...heads) < 2500, `blob HEAD took up to ${Math.round(Math.max(...heads))} ms: ${heads.map(Math.round).join(' ')}`)
      for (const r of replies) assert.ok([401, 429, 0].includes(r.status), `${r.status} ${r.text}`)
      assert.ok(replies.some((r) => r.status === 429), 'some logins are refused at once')
      const refused = replies.find((r) => r.status === 429)
      assert.match(String(refused?.headers['retry-after']), /^\d+$/)
    } finally {
      agent.destroy()
    }
  })

  it('failed logins are throttled per user: after 10, the right password is refused too, from anywhere, with Retry-After', async () => {
    for (let i = 0; i < 10; i++) assert.equal((await login(base, 'bob', 'nope', `127.0.0.${10 + i}`)).status, 401)
    const r = await login(base, 'bob', 'bob-pw', '127.0.0.30')
    assert.equal(r.status, 429, r.text)
    assert.ok(Number(r.headers['retry-after']) > 0)
    assert.equal(typeof JSON.parse(r.text).details, 'string')
    // other users are not affected
    assert.equal((await login(base, 'alice', 'alice-pw', '127.0.0.30')).status, 200)
  })

  it('failed logins are throttled per client address', async () => {
    for (let i = 0; i < 20; i++) assert.equal((await login(base, `nobody${i}`, 'x', '127.0.0.40')).status, 401)
    assert.equal((await login(base, 'alice', 'alice-pw', '127.0.0.40')).status, 429)
    assert.equal((await login(base, 'alice', 'alice-pw', '127.0.0.41')).status, 200)
  })

  it('an unknown user takes as long as a known one with a wrong password', async () => {
    const time = async (user: string, from: string): Promise<number> => {
      const t0 = performance.now()
      assert.equal((await login(base, user, 'wrong', from)).status, 401)
      return performance.now() - t0
    }
    const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number
    const known: number[] = []
    const unknown: number[] = []
    for (let i = 0; i < 5; i++) {
      known.push(await time('alice', '127.0.0.50'))
      unknown.push(await time(`ghost${i}`, '127.0.0.51'))
    }
    const ratio = median(known) / median(unknown)
    assert.ok(ratio < 3 && ratio > 1 / 3, `known ${known.map(Math.round).join(' ')} ms, unknown ${unknown.map(Math.round).join(' ')} ms`)
  })
})
