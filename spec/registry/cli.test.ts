// The `berth registry` command: passwd lines that the server accepts, the server itself (listen, SIGTERM), gc and
// the deprecation table.
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { spawn, spawnSync } from 'node:child_process'
import { once } from 'node:events'
import { writeFileSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { randomBytes } from 'node:crypto'
import { deprecationMarkdown } from '../../lib/registry/deprecation.js'
import { tmpDir, request, startRegistry, pushImage, pushBlob, makeImage } from './helpers.js'

const MAIN = fileURLToPath(new URL('../../lib/cli/main.js', import.meta.url))

function berth (args: string[], input?: string): { status: number | null, stdout: string, stderr: string } {
  const r = spawnSync(process.execPath, [MAIN, ...args], { input, encoding: 'utf8' })
  return { status: r.status, stdout: r.stdout, stderr: r.stderr }
}

describe('berth registry', () => {
  it('passwd NAME prints a users-file line that the token endpoint accepts', async (t) => {
    const r = berth(['registry', 'passwd', 'carol'], 'correct horse\n')
    assert.equal(r.status, 0, r.stderr)
    assert.match(r.stdout, /^carol:\$scrypt\$N=16384,r=8,p=1\$[A-Za-z0-9_-]{22}\$[A-Za-z0-9_-]{43}\n$/)
    const again = berth(['registry', 'passwd', 'carol'], 'correct horse\n')
    assert.notEqual(again.stdout, r.stdout, 'salted: two hashes of one password differ')
    const dir = tmpDir()
    t.after(() => { rmSync(dir, { recursive: true, force: true }) })
    writeFileSync(join(dir, 'users'), r.stdout)
    const reg = await startRegistry(t, { auth: 'token', users: join(dir, 'users') })
    const ok = await request(reg.url, 'GET', '/token?service=berth-registry&scope=repository:carol/x:push', {
      headers: { Authorization: `Basic ${Buffer.from('carol:correct horse').toString('base64')}` }
    })
    assert.equal(ok.status, 200)
    const bad = await request(reg.url, 'GET', '/token?service=berth-registry', {
      headers: { Authorization: `Basic ${Buffer.from('carol:correct horse\n').toString('base64')}` }
    })
    assert.equal(bad.status, 401)
  })
  it('passwd refuses a bad name or an empty password', () => {
    assert.equal(berth(['registry', 'passwd', 'Bad:Name'], 'x').status, 2)
    assert.equal(berth(['registry', 'passwd', 'dave'], '').status, 1)
  })
  it('serves on --listen with --data-root and stops cleanly on SIGTERM', async (t) => {
    const dir = tmpDir()
    t.after(() => { rmSync(dir, { recursive: true, force: true }) })
    const child = spawn(process.execPath, [MAIN, 'registry', '--listen', '127.0.0.1:0', '--data-root', join(dir, 'data')], { stdio: ['ignore', 'ignore', 'pipe'] })
    t.after(() => { if (child.exitCode === null) child.kill('SIGKILL') })
    let stderr = ''
    const url = await new Promise<string>((resolve, reject) => {
      child.stderr.on('data', (d: Buffer) => {
        stderr += d.toString()
        const m = /listening on tcp:\/\/(127\.0\.0\.1:\d+)/.exec(stderr)
        if (m !== null) resolve(`http://${m[1] as string}`)
      })
      child.once('exit', () => { reject(new Error(`exited: ${stderr}`)) })
    })
    const r = await request(url, 'GET', '/v2/')
    assert.equal(r.status, 200)
    assert.equal(r.headers['docker-distribution-api-version'], 'registry/2.0')
    const exited = once(child, 'exit')
    child.kill('SIGTERM')
    const [code] = await exited
    assert.equal(code, 0, stderr)
  })
  it('rejects an unknown --auth mode', () => {
    assert.equal(berth(['registry', '--auth', 'basic', '--data-root', '/nonexistent/x']).status, 2)
  })
  it('gc --dry-run reports, gc deletes', async (t) => {
    const dir = tmpDir()
    t.after(() => { rmSync(dir, { recursive: true, force: true }) })
    const reg = await startRegistry({ after: () => {} }, { dir })
    await pushImage(reg.url, 'cli/gc', 'v1', makeImage({ layers: 1 }))
    await pushBlob(reg.url, 'cli/gc', randomBytes(32))
    await reg.registry.close()
    const dry = berth(['registry', 'gc', '--data-root', reg.dataRoot, '--grace', '0', '--dry-run'])
    assert.equal(dry.status, 0, dry.stderr)
    assert.match(dry.stdout, /would delete sha256:[0-9a-f]{64}\n3 blobs referenced, 1 to delete \(32 bytes\)/)
    const real = berth(['registry', 'gc', '--data-root', reg.dataRoot, '--grace', '0'])
    assert.match(real.stdout, /^deleted sha256:[0-9a-f]{64}\n3 blobs referenced, 1 deleted/)
    assert.match(berth(['registry', 'gc', '--data-root', reg.dataRoot, '--grace', '0']).stdout, /^3 blobs referenced, 0 deleted/)
  })
  it('deprecations prints the table', () => {
    const r = berth(['registry', 'deprecations'])
    assert.equal(r.status, 0)
    assert.equal(r.stdout, deprecationMarkdown())
  })
})
