// Issue 21.9: without --realm the registry named its token endpoint after the request's Host header, so a request
// with `Host: evil.example:1234` was told `realm="http://evil.example:1234/token"` (where a client would send its
// credentials). The realm now comes from --realm, else --public-url, else the listen address; never the request.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { execFile, spawnSync } from 'node:child_process'
import net from 'node:net'
import { startRegistry } from '../registry/helpers.js'

/** The WWW-Authenticate curl gets (asynchronously: the registry answers from this process). */
async function curlChallenge (url: string, host: string): Promise<string> {
  const out = await new Promise<string>((resolve, reject) => {
    execFile('curl', ['-s', '-o', '/dev/null', '-D', '-', '-H', `Host: ${host}`, url], { timeout: 10_000 }, (err, stdout) => { if (err !== null) reject(err); else resolve(stdout) })
  })
  return /^www-authenticate: (.*)\r$/im.exec(out)?.[1] ?? ''
}

/** Literal bytes to 127.0.0.1:port; everything until the server closes. */
async function rawTcp (port: number, bytes: string): Promise<string> {
  return await new Promise((resolve, reject) => {
    const s = net.connect(port, '127.0.0.1')
    const chunks: Buffer[] = []
    s.on('connect', () => { s.write(bytes) })
    s.on('data', (d: Buffer) => chunks.push(d))
    s.on('close', () => { resolve(Buffer.concat(chunks).toString('latin1')) })
    s.on('error', reject)
    s.setTimeout(10_000, () => { s.destroy() })
  })
}

const skip = spawnSync('curl', ['--version']).error !== undefined ? 'curl is not installed (apt-get install curl)' : false

test('the token realm never comes from the request (21.9)', { skip }, async (t) => {
  await t.test('no --realm: the listen address, whatever Host says', async () => {
    const reg = await startRegistry(t, { auth: 'token' })
    const want = `Bearer realm="http://127.0.0.1:${reg.port}/token",service="berth-registry"`
    assert.equal(await curlChallenge(`${reg.url}/v2/`, 'evil.example:1234'), want)
    assert.equal(await curlChallenge(`${reg.url}/v2/`, `127.0.0.1:${reg.port}`), want)
    // raw HTTP: a pull of a repository, with a hostile Host and no Host at all (HTTP/1.0)
    for (const head of ['GET /v2/team/app/manifests/latest HTTP/1.1\r\nHost: evil.example:1234\r\nConnection: close\r\n\r\n', 'GET /v2/ HTTP/1.0\r\n\r\n']) {
      const got = await rawTcp(reg.port, head)
      assert.match(got, /^HTTP\/1\.[01] 401 /)
      assert.match(got, new RegExp(`www-authenticate: Bearer realm="http://127\\.0\\.0\\.1:${reg.port}/token"`, 'i'), got)
      assert.doesNotMatch(got, /evil\.example/)
    }
  })

  await t.test('--public-url: its /token', async () => {
    const reg = await startRegistry(t, { auth: 'token', publicUrl: 'https://registry.example.test/' })
    assert.equal(await curlChallenge(`${reg.url}/v2/`, 'evil.example:1234'), 'Bearer realm="https://registry.example.test/token",service="berth-registry"')
  })

  await t.test('--realm: as given', async () => {
    const reg = await startRegistry(t, { auth: 'token', realm: 'https://auth.example.test/token', publicUrl: 'https://registry.example.test' })
    assert.equal(await curlChallenge(`${reg.url}/v2/`, 'evil.example:1234'), 'Bearer realm="https://auth.example.test/token",service="berth-registry"')
  })
})
