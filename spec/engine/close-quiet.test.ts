// An embedded engine's close() leaves nothing of its own running: operations under way when it is called (a stop
// waiting out its grace period) end with it, and no runtime command runs afterwards. The runtime (runc 1.1) makes its
// --root again, parents included, at any command: a stop's kill run after close, once the exec root was removed, left
// an empty <exec root>/runtime behind (a test's temp directory, /tmp/berth-*/run/runtime, after spec/swarm/modes'
// last `service rm`).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { spawnSync } from 'node:child_process'
import { setTimeout as delay } from 'node:timers/promises'
import { startEngine, request, importBusybox, createContainer, containerSkipReason, tmpDir, cleanupDir } from '../helpers/engine.js'

const skip = containerSkipReason()

/** A container whose command ignores SIGTERM (PID 1 without a handler): a stop waits out its whole grace period. */
async function running (socket: string): Promise<string> {
  const id = await createContainer(socket, { Image: 'busybox', Cmd: ['sleep', '600'], HostConfig: { NetworkMode: 'none' } })
  assert.equal((await request(socket, 'POST', `/containers/${id}/start`)).status, 204)
  return id
}

test('close() with a stop under way: the stop ends with it, and nothing runs the runtime afterwards', { skip: skip ?? false }, async (t) => {
  const dir = tmpDir()
  t.after(async () => { await cleanupDir(dir) })
  const te = await startEngine(t, { dir })
  await importBusybox(te.socket)
  const id = await running(te.socket)
  // a stop with a 2 s grace period (the swarm's stop of a removed service's task is one), waiting for the exit
  const stop = request(te.socket, 'POST', `/containers/${id}/stop?t=2`).then((r) => r.status, () => 'cut')
  await delay(500)
  await te.close()
  await stop
  // the container keeps running (the next engine adopts it): the test removes it and the directory
  assert.equal(spawnSync('runc', ['--root', join(dir, 'run', 'runtime'), 'state', id], { encoding: 'utf8' }).stdout.includes('"running"'), true, 'the container runs on')
  await cleanupDir(dir)
  assert.equal(existsSync(dir), false)
  // past the stop's grace period: nothing of the closed engine made its roots again
  await delay(3000)
  assert.equal(existsSync(dir), false, `${dir} made again after the engine's close (a runtime command run after it)`)
})
