// `berth registry` as an operator runs it: a JSON configuration file with BERTH_REGISTRY_* overrides (a flag and a
// file key for the same setting refused), warnings for an open registry on a non-loopback address and for token
// auth with no users, an access log line per request (text or JSON), GET / and /debug/health, passwd without echo
// on a terminal, gc refusing a data root that does not exist.
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { spawn, spawnSync } from 'node:child_process'
import { existsSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { once } from 'node:events'
import { tmpDir, request } from './helpers.js'

const MAIN = fileURLToPath(new URL('../../lib/cli/main.js', import.meta.url))
const PYTHON = '/usr/bin/python3'

function berth (args: string[], env: NodeJS.ProcessEnv = process.env): { status: number | null, stdout: string, stderr: string } {
  const r = spawnSync(process.execPath, [MAIN, ...args], { encoding: 'utf8', env, input: '' })
  return { status: r.status, stdout: r.stdout, stderr: r.stderr }
}

/** Starts `berth registry ARGS` and resolves once it listens, with its URL and its stderr so far. */
async function serve (t: { after: (fn: () => void) => void }, args: string[], env: NodeJS.ProcessEnv = process.env): Promise<{ url: string, stderr: () => string, stop: () => Promise<number | null> }> {
  const child = spawn(process.execPath, [MAIN, 'registry', ...args], { stdio: ['ignore', 'ignore', 'pipe'], env })
  t.after(() => { if (child.exitCode === null) child.kill('SIGKILL') })
  let err = ''
  child.stderr.on('data', (d: Buffer) => { err += d.toString() })
  const url = await new Promise<string>((resolve, reject) => {
    const check = (): void => {
      const m = /listening on tcp:\/\/([\d.]+:\d+)/.exec(err)
      if (m !== null) resolve(`http://${(m[1] as string).replace(/^0\.0\.0\.0/, '127.0.0.1')}`)
    }
    child.stderr.on('data', check)
    child.once('exit', () => { reject(new Error(`exited: ${err}`)) })
  })
  return {
    url,
    stderr: () => err,
    stop: async () => { const e = once(child, 'exit'); child.kill('SIGTERM'); return (await e)[0] as number | null }
  }
}

describe('berth registry for operators', () => {
  it('takes its settings from a JSON file, BERTH_REGISTRY_* overriding it; a flag and a file key together are refused', async (t) => {
    const dir = tmpDir()
    t.after(() => { rmSync(dir, { recursive: true, force: true }) })
    const conf = join(dir, 'registry.json')
    writeFileSync(conf, JSON.stringify({ listen: ['127.0.0.1:0'], 'data-root': join(dir, 'from-file'), 'log-format': 'json' }))
    const reg = await serve(t, ['--config', conf], { ...process.env, BERTH_REGISTRY_DATA_ROOT: join(dir, 'from-env') })
    assert.equal((await request(reg.url, 'GET', '/v2/')).status, 200)
    assert.equal(await reg.stop(), 0)
    const records = reg.stderr().split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as { level: string, msg: string })
    assert.ok(records.some((r) => r.msg.includes(`data root ${join(dir, 'from-env')}`)), 'the environment overrides the file')
    assert.ok(existsSync(join(dir, 'from-env')) && !existsSync(join(dir, 'from-file')))
    assert.ok(records.some((r) => r.level === 'info' && /^127\.0\.0\.1 "GET \/v2\/ HTTP\/1\.1" 200 \d+ [\d.]+ms ""$/.test(r.msg)), 'one access log line per request')

    const both = berth(['registry', '--config', conf, '--data-root', join(dir, 'flag')])
    assert.equal(both.status, 1)
    assert.match(both.stderr, /specified both as a flag and in the configuration file .*registry\.json: data-root/)
    writeFileSync(conf, JSON.stringify({ 'data-root': join(dir, 'x'), storage: 'inmemory' }))
    const unknown = berth(['registry', '--config', conf])
    assert.equal(unknown.status, 1)
    assert.match(unknown.stderr, /don't match any configuration option: storage/)
    assert.equal(berth(['registry', '--config', join(dir, 'missing.json')]).status, 1)
  })

  it('warns about an open registry on a non-loopback address, and about token auth without users', async (t) => {
    const dir = tmpDir()
    t.after(() => { rmSync(dir, { recursive: true, force: true }) })
    const open = await serve(t, ['--listen', '0.0.0.0:0', '--data-root', join(dir, 'open')])
    assert.match(open.stderr(), /level=warning msg="the registry is open on tcp:\/\/0\.0\.0\.0:\d+: anyone who can reach it can push, overwrite and delete images/)
    await open.stop()
    const local = await serve(t, ['--listen', '127.0.0.1:0', '--data-root', join(dir, 'local')])
    await local.stop()
    assert.doesNotMatch(local.stderr(), /level=warning/, 'loopback only: no warning')
    writeFileSync(join(dir, 'users'), '')
    const token = await serve(t, ['--listen', '127.0.0.1:0', '--data-root', join(dir, 'token'), '--auth', 'token', '--users', join(dir, 'users')])
    assert.match(token.stderr(), /level=warning msg="token auth with no users: nobody can log in/)
    await token.stop()
  })

  it('answers GET / and /debug/health with 200 {} without authentication', async (t) => {
    const dir = tmpDir()
    t.after(() => { rmSync(dir, { recursive: true, force: true }) })
    writeFileSync(join(dir, 'users'), '')
    const reg = await serve(t, ['--listen', '127.0.0.1:0', '--data-root', join(dir, 'data'), '--auth', 'token', '--users', join(dir, 'users')])
    for (const path of ['/', '/debug/health']) {
      const r = await request(reg.url, 'GET', path)
      assert.equal(r.status, 200, path)
      assert.deepEqual(r.json(), {})
      assert.equal(r.headers['cache-control'], 'no-cache')
    }
    assert.equal((await request(reg.url, 'GET', '/v2/')).status, 401, 'the API itself still needs a token')
    await reg.stop()
  })

  it('gc refuses a data root that does not exist, and creates nothing', (t) => {
    const dir = tmpDir()
    t.after(() => { rmSync(dir, { recursive: true, force: true }) })
    const r = berth(['registry', 'gc', '--data-root', join(dir, 'typo')])
    assert.equal(r.status, 1)
    assert.match(r.stderr, /berth registry gc: data root .*typo does not exist/)
    assert.ok(!existsSync(join(dir, 'typo')))
  })

  it('passwd asks twice without echo on a terminal', (t) => {
    if (spawnSync(PYTHON, ['--version']).status !== 0) { t.skip('python3 is not installed'); return }
    // a pseudo-terminal as the command's stdin, stdout and stderr; the password typed twice
    const script = `
import os, pty, sys, time
pid, fd = pty.fork()
if pid == 0:
    os.execv(sys.argv[1], sys.argv[1:])
out = b""
def read_until(token):
    global out
    while token not in out:
        out += os.read(fd, 1024)
read_until(b"Password: ")
os.write(fd, b"s3cret-pw\\r")
read_until(b"Retype password: ")
os.write(fd, b"s3cret-pw\\r")
try:
    while True:
        chunk = os.read(fd, 1024)
        if not chunk:
            break
        out += chunk
except OSError:
    pass
_, status = os.waitpid(pid, 0)
sys.stdout.write(out.decode())
sys.exit(os.waitstatus_to_exitcode(status))
`
    const r = spawnSync(PYTHON, ['-c', script, process.execPath, MAIN, 'registry', 'passwd', 'carol'], { encoding: 'utf8', timeout: 30_000 })
    assert.equal(r.status, 0, r.stdout + r.stderr)
    assert.match(r.stdout, /Password: [\s\S]*Retype password: [\s\S]*carol:\$scrypt\$/)
    assert.doesNotMatch(r.stdout, /s3cret-pw/, 'the password is never echoed')
  })
})
