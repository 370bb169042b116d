// The Berth engine pulling from and pushing to this registry (docker CLI and Engine API), with and without token
// auth; digests unchanged. Only a missing host tool (docker CLI, skopeo, container support) skips.
import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { execFile, spawn, spawnSync } from 'node:child_process'
import { readFileSync, writeFileSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { hashPassword } from '../../lib/registry/auth/passwords.js'
import { busyboxTar, containerSkipReason, request as engineRequest, startEngine, type TestEngine } from '../helpers/engine.js'
import { useRegistry, client, request, tmpDir } from './helpers.js'
import { writeOciLayout } from './oci-layout.js'

const run = promisify(execFile)

function staticSkip (): string | null {
  const c = containerSkipReason()
  if (c !== null) return c
  if (spawnSync('docker', ['--version']).status !== 0) return 'the docker CLI is not installed'
  if (spawnSync('skopeo', ['--version']).status !== 0) return 'skopeo is not installed (apt-get install -y skopeo)'
  return null
}
const SKIP = staticSkip()

const work = tmpDir('berth-engine-pull-')
process.once('exit', () => { rmSync(work, { recursive: true, force: true }) })
const AUTH_FILE = join(work, 'auth.json')
writeFileSync(AUTH_FILE, '{}')
const USERS = join(work, 'users')
writeFileSync(USERS, `alice:${await hashPassword('wonderland')}\nbob:${await hashPassword('builder')}\n`)
const LAYOUT = join(work, 'layout')
if (SKIP === null) writeOciLayout(LAYOUT, [readFileSync(busyboxTar())])

async function skopeo (...args: string[]): Promise<void> {
  await run('skopeo', args, { env: { ...process.env, REGISTRY_AUTH_FILE: AUTH_FILE } })
}

/** Runs a command with stdin (the registry runs in this process: never spawnSync against it); killed after `ms`. */
async function runWith (cmd: string, args: string[], input: string, env: NodeJS.ProcessEnv, ms: number): Promise<{ status: number | null, signal: string | null, stdout: string, stderr: string }> {
  return await new Promise((resolve, reject) => {
    const p = spawn(cmd, args, { env, stdio: ['pipe', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    p.stdout.setEncoding('utf8').on('data', (d: string) => { stdout += d })
    p.stderr.setEncoding('utf8').on('data', (d: string) => { stderr += d })
    const timer = setTimeout(() => { p.kill('SIGKILL') }, ms)
    p.once('error', (err) => { clearTimeout(timer); reject(err) })
    p.once('close', (status, signal) => { clearTimeout(timer); resolve({ status, signal, stdout, stderr }) })
    p.stdin.end(input)
  })
}

function registryAuth (username: string, password: string, serveraddress: string): string {
  return Buffer.from(JSON.stringify({ username, password, serveraddress })).toString('base64url')
}

/** Pull through the Engine API; returns the progress stream text, or null when the engine cannot pull at all. */
async function enginePull (eng: TestEngine, ref: string, tag: string, auth?: string): Promise<{ status: number, text: string }> {
  return await engineRequest(eng.socket, 'POST', `/images/create?fromImage=${encodeURIComponent(ref)}&tag=${tag}`, auth === undefined ? {} : { headers: { 'X-Registry-Auth': auth } })
}

/** An engine for a describe() block, closed in its after hook (suite hooks get no `t.after`). */
function useEngine (): { current: TestEngine } {
  const holder = { current: undefined as unknown as TestEngine }
  const cleanups: Array<() => Promise<void> | void> = []
  before(async () => { holder.current = await startEngine({ after: (fn) => { cleanups.push(fn) } }) })
  after(async () => { for (const fn of cleanups.reverse()) await fn() })
  return holder
}

describe('the Berth engine against the registry (auth none)', { skip: SKIP ?? false }, () => {
  const reg = useRegistry()
  let host = ''
  let pushed = ''
  let original = ''
  const engine = useEngine()
  let eng: TestEngine
  before(async () => {
    eng = engine.current
    host = new URL(reg.current.url).host
    await skopeo('copy', '--format', 'v2s2', '--dest-tls-verify=false', `oci:${LAYOUT}:latest`, `docker://${host}/test/busybox:latest`)
    const m = await client(reg.current.url)('GET', '/v2/test/busybox/manifests/latest')
    pushed = String(m.headers['docker-content-digest'])
    original = m.text
  })

  it('docker pull: the image carries the pushed digest', async () => {
    const env = { ...process.env, DOCKER_HOST: `unix://${eng.socket}` }
    await run('docker', ['pull', `${host}/test/busybox:latest`], { env })
    const inspect = JSON.parse((await run('docker', ['image', 'inspect', `${host}/test/busybox:latest`], { env })).stdout) as Array<{ RepoDigests: string[] }>
    assert.ok(inspect[0]?.RepoDigests.includes(`${host}/test/busybox@${pushed}`), JSON.stringify(inspect[0]?.RepoDigests))
    const hub = (await client(reg.current.url)('GET', '/v2/namespaces/test/repositories/busybox')).json()
    assert.ok(hub.pull_count >= 1, 'the Hub API counts the engine\'s pulls')
  })
  it('docker push: config and layer digests unchanged; a second push is byte-identical', async () => {
    const env = { ...process.env, DOCKER_HOST: `unix://${eng.socket}` }
    await run('docker', ['tag', `${host}/test/busybox:latest`, `${host}/test/pushed:latest`], { env })
    await run('docker', ['push', `${host}/test/pushed:latest`], { env })
    const req = client(reg.current.url)
    const got = await req('GET', '/v2/test/pushed/manifests/latest')
    // like dockerd, the engine writes the manifest itself (its own JSON layout), so only the content digests must
    // survive a pull/push round trip, and pushing again must reproduce the same manifest bytes
    const refs = (text: string): string[] => {
      const m = JSON.parse(text) as { config: { digest: string }, layers: Array<{ digest: string, size: number }> }
      return [m.config.digest, ...m.layers.map((l) => `${l.digest}/${l.size}`)]
    }
    assert.deepEqual(refs(got.text), refs(original))
    await run('docker', ['tag', `${host}/test/busybox:latest`, `${host}/test/again:latest`], { env })
    await run('docker', ['push', `${host}/test/again:latest`], { env })
    const again = await req('HEAD', '/v2/test/again/manifests/latest')
    assert.equal(again.headers['docker-content-digest'], got.headers['docker-content-digest'])
  })
})

describe('the Berth engine against the registry (token auth)', { skip: SKIP ?? false }, () => {
  const reg = useRegistry({ auth: 'token', users: USERS })
  let host = ''
  const engine = useEngine()
  let eng: TestEngine
  before(async () => {
    eng = engine.current
    host = new URL(reg.current.url).host
    const hub = (await request(reg.current.url, 'POST', '/v2/auth/token', { json: { identifier: 'alice', secret: 'wonderland' } })).json().access_token as string
    assert.equal((await request(reg.current.url, 'POST', '/v2/namespaces/alice/repositories', { token: hub, json: { name: 'private', is_private: true } })).status, 201)
    for (const repo of ['public', 'private']) {
      await skopeo('copy', '--format', 'v2s2', '--dest-tls-verify=false', '--dest-creds', 'alice:wonderland', `oci:${LAYOUT}:latest`, `docker://${host}/alice/${repo}:1`)
    }
  })

  it('anonymous pull of a public repository', async () => {
    const r = await enginePull(eng, `${host}/alice/public`, '1')
    assert.equal(r.status, 200)
    assert.doesNotMatch(r.text, /"error"/, r.text)
  })
  it('a private repository needs credentials (X-Registry-Auth)', async () => {
    // dockerd: 404 "pull access denied for …, repository does not exist or may require 'docker login'"
    const anon = await enginePull(eng, `${host}/alice/private`, '1')
    assert.equal(anon.status, 404, anon.text)
    assert.match(anon.text, /pull access denied for .*alice\/private, repository does not exist or may require 'docker login'/)
    const ok = await enginePull(eng, `${host}/alice/private`, '1', registryAuth('alice', 'wonderland', host))
    assert.equal(ok.status, 200)
    assert.doesNotMatch(ok.text, /"error"/, ok.text)
    const bad = await enginePull(eng, `${host}/alice/private`, '1', registryAuth('alice', 'wrong', host))
    assert.ok(bad.status >= 400 || /"error"/.test(bad.text), `a wrong password must fail: ${bad.status} ${bad.text}`)
    assert.notEqual(bad.status, 200, bad.text)
  })
  it('docker push to a namespace one does not own fails at once with "denied" (no login prompt)', async () => {
    const cfg = join(work, 'bob-cli')
    const env = { ...process.env, DOCKER_HOST: `unix://${eng.socket}` }
    const login = await runWith('docker', ['--config', cfg, 'login', '-u', 'bob', '--password-stdin', host], 'builder\n', env, 60_000)
    assert.equal(login.status, 0, login.stderr)
    assert.equal((await enginePull(eng, `${host}/alice/public`, '1')).status, 200)
    await run('docker', ['--config', cfg, 'tag', `${host}/alice/public:1`, `${host}/alice/bobs:1`], { env })
    const started = Date.now()
    const push = await runWith('docker', ['--config', cfg, 'push', `${host}/alice/bobs:1`], '', env, 60_000)
    assert.notEqual(push.status, 0, push.stdout)
    assert.equal(push.signal, null, 'the push hung (killed by the timeout)')
    assert.match(push.stderr, /denied: requested access to the resource is denied/, push.stderr)
    assert.ok(Date.now() - started < 30_000)
  })
  it('push needs credentials: refused anonymously, accepted with X-Registry-Auth', async () => {
    const pulled = await enginePull(eng, `${host}/alice/public`, '1')
    assert.equal(pulled.status, 200, pulled.text)
    const tag = await engineRequest(eng.socket, 'POST', `/images/${encodeURIComponent(`${host}/alice/public:1`)}/tag?repo=${encodeURIComponent(`${host}/alice/copy`)}&tag=1`)
    assert.equal(tag.status, 201, tag.text)
    const path = `/images/${encodeURIComponent(`${host}/alice/copy`)}/push?tag=1`
    const anon = await engineRequest(eng.socket, 'POST', path, { headers: { 'X-Registry-Auth': registryAuth('', '', host) } })
    assert.ok(anon.status !== 200 || /"error"/.test(anon.text), `an anonymous push must fail: ${anon.status} ${anon.text}`)
    const ok = await engineRequest(eng.socket, 'POST', path, { headers: { 'X-Registry-Auth': registryAuth('alice', 'wonderland', host) } })
    assert.equal(ok.status, 200)
    assert.doesNotMatch(ok.text, /"error"/, ok.text)
    const token = (await request(reg.current.url, 'GET', '/token?service=berth-registry&scope=repository:alice/copy:pull')).json().token as string
    assert.equal((await request(reg.current.url, 'HEAD', '/v2/alice/copy/manifests/1', { token })).status, 200)
  })
})
