// A restarted daemon answers /_ping as soon as it listens, before its containers are recovered; a request for a
// container waits until the recovery is over and never sees it half-recovered. The recovery is held back for real:
// the running container's shim.pid is swapped for a named pipe, so re-adopting it blocks in the read until the test
// writes the pid into the pipe.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawn, execFileSync, type ChildProcess } from 'node:child_process'
import { join } from 'node:path'
import { once } from 'node:events'
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { writeFile } from 'node:fs/promises'
import { ROOT, tmpDir, request, importBusybox, createContainer, containerSkipReason, uniqueNetworkOptions, daemonNetworkArgs, cleanupDaemon, startDaemonProcess } from '../helpers/engine.js'

const skip = containerSkipReason()
const net = uniqueNetworkOptions()

test('a restart answers /_ping before the recovery is over; container requests wait for it', { skip: skip ?? false }, async (t) => {
  const dir = tmpDir()
  const sock = join(dir, 'b.sock')
  let daemon: ChildProcess = await startDaemonProcess(dir, daemonNetworkArgs(net))
  t.after(async () => { await cleanupDaemon(daemon, dir, net) })
  await importBusybox(sock)
  const id = await createContainer(sock, { Image: 'busybox', Cmd: ['sleep', '600'] }, 'held')
  assert.equal((await request(sock, 'POST', '/containers/held/start')).status, 204)
  daemon.kill('SIGKILL')
  await once(daemon, 'exit')

  const pidFile = join(dir, 'run', id.slice(0, 16), 'shim.pid')
  const pid = readFileSync(pidFile, 'utf8')
  rmSync(pidFile)
  execFileSync('mkfifo', ['-m', '600', pidFile])
  let unblocked = false
  t.after(() => {
    // whatever happened, the pipe must not hold a reader for ever
    if (!unblocked) void writeFile(pidFile, pid).catch(() => {})
  })

  daemon = spawn(process.execPath, [join(ROOT, 'dist', 'lib', 'cli', 'main.js'), 'daemon', '--config-file', '/dev/null', '-H', `unix://${sock}`, '--data-root', join(dir, 'data'), '--exec-root', join(dir, 'run'), ...daemonNetworkArgs(net)], { stdio: 'ignore' })
  let pinged = false
  for (let i = 0; i < 1200 && !pinged; i++) {
    pinged = existsSync(sock) && await request(sock, 'GET', '/_ping').then((r) => r.status === 200, () => false)
    if (!pinged) await new Promise((resolve) => setTimeout(resolve, 50))
  }
  assert.ok(pinged, '/_ping answers while the container\'s recovery is held')

  let settled = false
  const inspect = request(sock, 'GET', '/containers/held/json').finally(() => { settled = true })
  const list = request(sock, 'GET', '/containers/json?all=1')
  await new Promise((resolve) => setTimeout(resolve, 500))
  assert.equal(settled, false, 'the container request waits for its recovery')

  // the recovery goes on once the pid can be read
  await writeFile(pidFile, pid)
  unblocked = true
  const r = await inspect
  assert.equal(r.status, 200)
  assert.equal((r.json() as { State: { Running: boolean } }).State.Running, true)
  const all = (await list).json() as Array<{ Id: string, State: string }>
  assert.equal(all.find((c) => c.Id === id)?.State, 'running')
  // a regular file again, for the removal
  rmSync(pidFile)
  writeFileSync(pidFile, pid)
  assert.equal((await request(sock, 'DELETE', '/containers/held?force=1')).status, 204)
})
