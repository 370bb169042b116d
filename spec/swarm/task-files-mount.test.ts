// The tmpfs the daemon mounts for swarm tasks' secret and config files (<exec-root>/swarm-files) is there only
// while a task may use it: unmounted after `swarm leave --force`, and at a clean stop with no task left to run; the
// files of tasks that are gone are removed at a restart.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { readFileSync, existsSync, mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { cleanupDir, containerSkipReason, importBusybox, request, startEngine, tmpDir } from '../helpers/engine.js'
import { runningBySlot, until } from './helpers.js'

const skip = containerSkipReason()

function mounted (path: string): boolean {
  return readFileSync('/proc/self/mountinfo', 'utf8').split('\n').some((l) => l.split(' ')[4] === path)
}

async function serviceWithSecret (socket: string, name: string): Promise<void> {
  const secret = await request(socket, 'POST', '/secrets/create', { body: { Name: `${name}-pw`, Data: Buffer.from('hunter2').toString('base64') } })
  assert.equal(secret.status, 201, secret.text)
  const { ID } = secret.json() as { ID: string }
  const svc = await request(socket, 'POST', '/services/create', {
    body: { Name: name, TaskTemplate: { ContainerSpec: { Image: 'busybox', Command: ['sleep', '600'], StopGracePeriod: 1e9, Secrets: [{ SecretID: ID, SecretName: `${name}-pw`, File: { Name: 'pw', UID: '0', GID: '0', Mode: 292 } }] } } }
  })
  assert.equal(svc.status, 201, svc.text)
  await until(`${name} running`, async () => (await runningBySlot(socket, name)).get(1))
}

test('the swarm task files tmpfs goes when nothing needs it', { skip: skip ?? false }, async (t) => {
  const eng = await startEngine(t)
  const files = join(eng.dir, 'run', 'swarm-files')
  await importBusybox(eng.socket)
  const init = { ListenAddr: '127.0.0.1:2377', AdvertiseAddr: '127.0.0.1' }

  await t.test('after swarm leave --force', async () => {
    assert.equal((await request(eng.socket, 'POST', '/swarm/init', { body: init })).status, 200)
    await serviceWithSecret(eng.socket, 'first')
    assert.ok(mounted(files), 'mounted while a task uses it')
    const leave = await request(eng.socket, 'POST', '/swarm/leave?force=1')
    assert.equal(leave.status, 200, leave.text)
    assert.ok(!mounted(files), 'unmounted after the leave')
    assert.ok(!existsSync(files))
  })

  await t.test('at a clean stop with no task left', async () => {
    assert.equal((await request(eng.socket, 'POST', '/swarm/init', { body: init })).status, 200)
    await serviceWithSecret(eng.socket, 'second')
    assert.ok(mounted(files))
    assert.equal((await request(eng.socket, 'DELETE', '/services/second')).status, 200)
    // the service's tasks shut down after the removal answered: every task gone
    await until('tasks gone', async () => ((await request(eng.socket, 'GET', '/tasks')).json() as unknown[]).length === 0)
    await eng.close()
    assert.ok(!mounted(files), 'unmounted at the stop')
  })
})

test('after a restart, the files of tasks that are gone go; a running task keeps its own', { skip: skip ?? false }, async (t) => {
  const dir = tmpDir()
  t.after(async () => { await cleanupDir(dir) })
  const first = await startEngine(t, { dir })
  const files = join(first.dir, 'run', 'swarm-files')
  await importBusybox(first.socket)
  assert.equal((await request(first.socket, 'POST', '/swarm/init', { body: { ListenAddr: '127.0.0.1:2377', AdvertiseAddr: '127.0.0.1' } })).status, 200)
  await serviceWithSecret(first.socket, 'third')
  const running = (await runningBySlot(first.socket, 'third')).get(1)?.ID as string
  assert.ok(existsSync(join(files, running)), 'the running task has its files')
  // as a daemon killed between a task record's removal and its files' leaves them: nothing names them any more
  mkdirSync(join(files, 'gonetask0123456789abcdefg'), { mode: 0o700 })
  writeFileSync(join(files, 'gonetask0123456789abcdefg', 'secret-0'), 'hunter2', { mode: 0o600 })
  await first.close()
  const second = await startEngine(t, { dir })
  await until('the stray files removed', async () => !existsSync(join(files, 'gonetask0123456789abcdefg')), 10_000, 100)
  assert.ok(existsSync(join(files, running)), 'the running task keeps its files')
  assert.equal((await runningBySlot(second.socket, 'third')).get(1)?.ID, running)
  assert.equal((await request(second.socket, 'POST', '/swarm/leave?force=1')).status, 200)
})
