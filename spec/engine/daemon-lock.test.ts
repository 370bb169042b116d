// One daemon per data root and exec root: a second daemon on the same roots (or the same live pidfile) fails with a
// clear message before it reads, repairs or removes anything; a daemon killed with -9 gives the lock back.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawn, type ChildProcess } from 'node:child_process'
import { join } from 'node:path'
import { once } from 'node:events'
import { existsSync, readFileSync, readdirSync, mkdirSync } from 'node:fs'
import { ROOT, tmpDir, request, importBusybox, createContainer, containerSkipReason, uniqueNetworkOptions, daemonNetworkArgs, cleanupDaemon } from '../helpers/engine.js'

const skip = containerSkipReason()
const net = uniqueNetworkOptions()

function spawnDaemon (dir: string, o: { sock: string, pidfile?: string, dataRoot?: string, execRoot?: string }): { child: ChildProcess, stderr: () => string } {
  const args = [join(ROOT, 'dist', 'lib', 'cli', 'main.js'), 'daemon', '--config-file', '/dev/null', '-H', `unix://${o.sock}`, '--data-root', o.dataRoot ?? join(dir, 'data'),
    '--exec-root', o.execRoot ?? join(dir, 'run'), ...(o.pidfile !== undefined ? ['--pidfile', o.pidfile] : []), ...daemonNetworkArgs(net)]
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'ignore', 'pipe'] })
  let err = ''
  child.stderr?.on('data', (d: Buffer) => { err += d.toString() })
  return { child, stderr: () => err }
}

async function up (sock: string, d: { child: ChildProcess, stderr: () => string }): Promise<void> {
  for (let i = 0; i < 800; i++) {
    if (existsSync(sock) && await request(sock, 'GET', '/_ping').then((r) => r.status === 200, () => false)) return
    if (d.child.exitCode !== null) throw new Error(`daemon exited: ${d.stderr()}`)
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
  throw new Error(`daemon did not come up: ${d.stderr()}`)
}

async function pidfileOf (path: string, pid: number | undefined): Promise<void> {
  for (let i = 0; i < 200 && (existsSync(path) ? readFileSync(path, 'utf8').trim() : '') !== String(pid); i++) await new Promise((resolve) => setTimeout(resolve, 25))
  assert.equal(readFileSync(path, 'utf8').trim(), String(pid))
}

async function exits (d: { child: ChildProcess, stderr: () => string }): Promise<{ code: number | null, stderr: string }> {
  const timer = setTimeout(() => { d.child.kill('SIGKILL') }, 30_000)
  const [code] = await once(d.child, 'exit') as [number | null]
  clearTimeout(timer)
  return { code, stderr: d.stderr() }
}

test('one daemon per data root', { skip: skip ?? false }, async (t) => {
  const dir = tmpDir()
  const sock = join(dir, 'b.sock')
  const pidfile = join(dir, 'berth.pid')
  let first = spawnDaemon(dir, { sock, pidfile })
  t.after(async () => {
    await cleanupDaemon(first.child, dir, net)
  })
  await up(sock, first)
  await pidfileOf(pidfile, first.child.pid)
  await importBusybox(sock)
  const id = await createContainer(sock, { Image: 'busybox', Cmd: ['sleep', '60'] }, 'keep')
  assert.equal((await request(sock, 'POST', '/containers/keep/start')).status, 204)
  const partial = join(dir, 'data', 'layers', 'tmp-inprogress')
  const hadLayers = existsSync(join(dir, 'data', 'layers'))
  if (hadLayers) mkdirSync(partial)

  await t.test('the locks are held without helper processes: the daemon\'s only children are container monitors', () => {
    const children = readdirSync('/proc').filter((d) => /^\d+$/.test(d)).flatMap((d) => {
      try {
        const stat = readFileSync(`/proc/${d}/stat`, 'utf8')
        const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1])
        return ppid === first.child.pid ? [readFileSync(`/proc/${d}/cmdline`, 'utf8').replace(/\0/g, ' ').trim()] : []
      } catch { return [] }
    })
    assert.deepEqual(children.filter((c) => !/berth-shim /.test(c)), [])
  })

  await t.test('a second daemon on the same data root fails, naming the first, and touches nothing', async () => {
    const sock2 = join(dir, 'b2.sock')
    const second = spawnDaemon(dir, { sock: sock2, pidfile: join(dir, 'second.pid') })
    const r = await exits(second)
    assert.equal(r.code, 1)
    assert.match(r.stderr, new RegExp(`data root ${join(dir, 'data').replace(/[/.]/g, '\\$&')} is in use by another berth daemon \\(pid ${String(first.child.pid)}\\)`))
    assert.ok(!existsSync(sock2), 'the second daemon must not listen')
    assert.ok(!existsSync(join(dir, 'second.pid')), 'nor write its pidfile')
    if (hadLayers) assert.ok(existsSync(partial), 'nor run the first daemon\'s recovery')
    assert.equal(readFileSync(pidfile, 'utf8').trim(), String(first.child.pid))
    const c = (await request(sock, 'GET', `/containers/${id}/json`)).json() as { State: { Running: boolean } }
    assert.equal(c.State.Running, true)
  })

  await t.test('the same exec root with another data root fails too', async () => {
    const second = spawnDaemon(dir, { sock: join(dir, 'b3.sock'), dataRoot: join(dir, 'data3') })
    const r = await exits(second)
    assert.equal(r.code, 1)
    assert.match(r.stderr, /exec root .* is in use by another berth daemon/)
  })

  await t.test('a pidfile naming a live process is refused, as dockerd does; a stale one is taken over', async () => {
    const second = spawnDaemon(dir, { sock: join(dir, 'b4.sock'), pidfile, dataRoot: join(dir, 'data4'), execRoot: join(dir, 'run4') })
    const r = await exits(second)
    assert.equal(r.code, 1)
    assert.match(r.stderr, /pid file found, ensure berth is not running or delete/)
    assert.equal(readFileSync(pidfile, 'utf8').trim(), String(first.child.pid))
  })

  await t.test('kill -9 gives the lock back: a new daemon starts on the same roots and keeps the container', async () => {
    first.child.kill('SIGKILL')
    await once(first.child, 'exit')
    // the dead daemon's pidfile is stale now
    first = spawnDaemon(dir, { sock, pidfile })
    await up(sock, first)
    await pidfileOf(pidfile, first.child.pid)
    const c = (await request(sock, 'GET', `/containers/${id}/json`)).json() as { State: { Running: boolean } }
    assert.equal(c.State.Running, true)
    assert.equal((await request(sock, 'DELETE', `/containers/${id}?force=1`)).status, 204)
    first.child.kill('SIGTERM')
    assert.equal((await exits(first)).code, 0)
    assert.ok(!existsSync(pidfile), 'a clean exit removes its own pidfile')
  })
})
