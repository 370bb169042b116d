// Detach keys (issue 23.9): `docker attach`, `docker run -it` and `docker exec -it` through a real terminal (python3's
// pty module) detach on ctrl-p ctrl-q, on --detach-keys and on the config file's detachKeys, and the container (or
// the exec'd process) keeps running; API clients get the same from the daemon (the attach `detachKeys` query, the
// exec's `DetachKeys`): the stream ends, the keys never reach the process, a `detach` / `exec_detach` event is sent.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import net from 'node:net'
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { startEngine, containerSkipReason, hasDockerCli, dockerCli, importBusybox, request } from '../helpers/engine.js'
import { runTool } from '../helpers/tools.js'
import { until } from '../helpers/poll.js'
import { DetachDetector, parseDetachKeys } from '../../lib/stream/detach-keys.js'

const skip = containerSkipReason()

// Runs the docker CLI in a pseudo-terminal: waits for the prompt, runs `echo hi`, types the keys, and prints what the
// terminal showed and how the CLI ended (JSON).
const PTY_DRIVER = `
import json, os, pty, select, sys, time
keys = bytes.fromhex(sys.argv[1])
pid, fd = pty.fork()
if pid == 0:
    os.execvp('docker', ['docker'] + sys.argv[2:])
out = b''
def pump(seconds, want=None):
    global out
    end = time.time() + seconds
    while time.time() < end:
        if want is not None and want in out:
            return
        r, _, _ = select.select([fd], [], [], 0.05)
        if r:
            try:
                d = os.read(fd, 4096)
            except OSError:
                return
            if not d:
                return
            out += d
pump(15, b'# ')
os.write(fd, b'echo hi\\r')
pump(5, b'hi\\r\\n')
for k in keys:
    os.write(fd, bytes([k]))
    time.sleep(0.2)
status = None
end = time.time() + 10
while time.time() < end:
    pump(0.1)
    p, st = os.waitpid(pid, os.WNOHANG)
    if p != 0:
        status = os.waitstatus_to_exitcode(st)
        break
if status is None:
    os.kill(pid, 9)
    os.waitpid(pid, 0)
print(json.dumps({'out': out.decode('utf8', 'replace'), 'status': status}))
`

test('detach keys', { skip: skip ?? false }, async (t) => {
  const { socket, dir } = await startEngine(t)
  await importBusybox(socket)
  const ok = async (...args: string[]): Promise<string> => {
    const r = await dockerCli(socket, args)
    assert.equal(r.status, 0, `docker ${args.join(' ')}: ${r.stderr}`)
    return r.stdout
  }
  const state = async (name: string): Promise<string> => (await ok('inspect', '-f', '{{.State.Status}}', name)).trim()
  const config = join(dir, 'docker-config')
  mkdirSync(config, { recursive: true })
  writeFileSync(join(config, 'config.json'), JSON.stringify({ detachKeys: 'ctrl-e,e' }))
  const inTerminal = async (keys: string, ...args: string[]): Promise<{ out: string, status: number | null }> => {
    const r = await runTool('python3', ['-c', PTY_DRIVER, Buffer.from(keys, 'latin1').toString('hex'), ...args], { env: { ...process.env, DOCKER_HOST: `unix://${socket}` } })
    assert.equal(r.status, 0, r.stderr)
    return JSON.parse(r.stdout) as { out: string, status: number | null }
  }
  const cli = hasDockerCli() ? false : 'the docker CLI is not installed'

  await t.test('docker attach, run -it and exec -it detach on ctrl-p ctrl-q; the container and the exec go on', { skip: cli }, async () => {
    await ok('run', '-dit', '--name', 'shell', 'busybox', 'sh')
    const attached = await inTerminal('\x10\x11', 'attach', 'shell')
    assert.match(attached.out, /hi\r\n/)
    assert.match(attached.out, /read escape sequence/)
    assert.notEqual(attached.status, null, 'the CLI ended')
    assert.equal(await state('shell'), 'running')

    const ran = await inTerminal('\x10\x11', 'run', '-it', '--name', 'ran', 'busybox', 'sh')
    assert.notEqual(ran.status, null, 'the CLI ended')
    assert.equal(await state('ran'), 'running')

    const exec = await inTerminal('\x10\x11', 'exec', '-it', 'shell', 'sh')
    assert.match(exec.out, /read escape sequence/)
    // the exec'd shell is still there: two shells in the container
    const ps = await ok('exec', 'shell', 'ps', '-o', 'comm')
    assert.equal(ps.split('\n').filter((l) => l.trim() === 'sh').length, 2, ps)
    await ok('rm', '-f', 'ran')
  })

  await t.test('--detach-keys and the config file\'s detachKeys', { skip: cli }, async () => {
    const custom = await inTerminal('\x18y', 'attach', '--detach-keys', 'ctrl-x,y', 'shell')
    assert.match(custom.out, /read escape sequence/)
    assert.equal(await state('shell'), 'running')
    const fromConfig = await inTerminal('\x05e', '--config', config, 'attach', 'shell')
    assert.match(fromConfig.out, /read escape sequence/)
    assert.equal(await state('shell'), 'running')
    // the default keys mean nothing when others are configured: the CLI is still attached after ctrl-p ctrl-q
    const other = await inTerminal('\x10\x11', 'attach', '--detach-keys', 'ctrl-x,y', 'shell')
    assert.equal(other.status, null)
  })

  await t.test('the API: attach?detachKeys= ends the stream, the keys never reach the container, a detach event', async () => {
    const since = Math.floor(Date.now() / 1000) - 1
    const c = await request(socket, 'POST', '/containers/create', { body: { Image: 'busybox', Cmd: ['cat'], Tty: true, OpenStdin: true } })
    const id = (c.json() as { Id: string }).Id
    assert.equal((await request(socket, 'POST', `/containers/${id}/start`)).status, 204)
    assert.equal((await request(socket, 'POST', `/containers/${id}/attach?stream=1&stdin=1&detachKeys=ctrl-1`)).status, 400)
    const s = net.connect(socket)
    const got: Buffer[] = []
    s.on('data', (d: Buffer) => got.push(d))
    const closed = new Promise<void>((resolve) => { s.on('close', () => { resolve() }) })
    s.write(`POST /containers/${id}/attach?stream=1&stdin=1&stdout=1&detachKeys=ctrl-a,b HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n\r\n`)
    await until('the upgrade', async () => Buffer.concat(got).includes('\r\n\r\n'))
    s.write('one\x01')
    await new Promise((resolve) => setTimeout(resolve, 200))
    s.write('xtwo\x01')
    await until('the echo', async () => Buffer.concat(got).includes('xtwo'))
    s.write('b')
    await Promise.race([closed, new Promise((resolve, reject) => setTimeout(() => { reject(new Error('the stream did not end')) }, 10_000))])
    const text = Buffer.concat(got).toString('latin1')
    // a begun sequence that breaks goes on to the container (the tty echoes ^A); the full one never does
    assert.match(text, /one\^Axtwo/)
    assert.doesNotMatch(text, /\^B|xtwo\^A/)
    assert.equal((await request(socket, 'GET', `/containers/${id}/json`)).text.includes('"Status":"running"'), true)
    const ev = await request(socket, 'GET', `/events?since=${since}&until=${Math.floor(Date.now() / 1000) + 1}&filters=${encodeURIComponent(JSON.stringify({ container: [id], event: ['detach'] }))}`)
    assert.equal(ev.text.trim().split('\n').filter((l) => l !== '').length, 1, ev.text)
    await request(socket, 'DELETE', `/containers/${id}?force=1`)
  })

  await t.test('the API: an exec\'s DetachKeys end its stream; the process goes on; exec_detach', async () => {
    const since = Math.floor(Date.now() / 1000) - 1
    assert.equal((await request(socket, 'POST', '/containers/shell/exec', { body: { Cmd: ['sh'], DetachKeys: 'ctrl-nope' } })).status, 400)
    const e = await request(socket, 'POST', '/containers/shell/exec', { body: { Cmd: ['sh', '-c', 'cat; sleep 600'], Tty: true, AttachStdin: true, AttachStdout: true, DetachKeys: 'ctrl-q' } })
    const execId = (e.json() as { Id: string }).Id
    assert.equal((await request(socket, 'GET', `/exec/${execId}/json`)).json() instanceof Object && ((await request(socket, 'GET', `/exec/${execId}/json`)).json() as { DetachKeys: string }).DetachKeys, Buffer.from([17]).toString('base64'))
    const s = net.connect(socket)
    const got: Buffer[] = []
    s.on('data', (d: Buffer) => got.push(d))
    const closed = new Promise<void>((resolve) => { s.on('close', () => { resolve() }) })
    const body = JSON.stringify({ Tty: true })
    s.write(`POST /exec/${execId}/start HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: tcp\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`)
    await until('the upgrade', async () => Buffer.concat(got).includes('\r\n\r\n'))
    s.write('typed\r')
    await until('the echo', async () => Buffer.concat(got).includes('typed'))
    s.write('\x11')
    await Promise.race([closed, new Promise((resolve, reject) => setTimeout(() => { reject(new Error('the stream did not end')) }, 10_000))])
    const info = (await request(socket, 'GET', `/exec/${execId}/json`)).json() as { Running: boolean }
    assert.equal(info.Running, true)
    const ev = await request(socket, 'GET', `/events?since=${since}&until=${Math.floor(Date.now() / 1000) + 1}&filters=${encodeURIComponent(JSON.stringify({ event: ['exec_detach'] }))}`)
    assert.equal(ev.text.trim().split('\n').filter((l) => l !== '').length, 1, ev.text)
    await ok('rm', '-f', 'shell')
  })
})

test('detach keys: moby/term\'s key names and its escape proxy\'s matching', () => {
  assert.deepEqual(parseDetachKeys('ctrl-p,ctrl-q'), Buffer.from([16, 17]))
  assert.deepEqual(parseDetachKeys('ctrl-@,ctrl-_,a,DEL'), Buffer.from([0, 31, 97, 127]))
  assert.equal(parseDetachKeys('ctrl-'), null)
  assert.equal(parseDetachKeys('ctrl-P'), null)
  assert.equal(parseDetachKeys('ab'), null)
  const d = new DetachDetector(Buffer.alloc(0))
  assert.deepEqual(d.push(Buffer.from('ab\x10')), { data: Buffer.from('ab'), detached: false })
  assert.deepEqual(d.push(Buffer.from('x')), { data: Buffer.from('\x10x'), detached: false })
  assert.deepEqual(d.push(Buffer.from('c\x10')), { data: Buffer.from('c'), detached: false })
  assert.deepEqual(d.push(Buffer.from('\x11rest')), { data: Buffer.alloc(0), detached: true })
})
