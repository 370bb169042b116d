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

test('a restart answers /_ping, its Swarm header included, before the records are read', { skip: skip ?? false }, async (t) => {
  const dir = tmpDir()
  const sock = join(dir, 'b.sock')
  const net2 = uniqueNetworkOptions()
  let daemon: ChildProcess = await startDaemonProcess(dir, daemonNetworkArgs(net2))
  t.after(async () => { await cleanupDaemon(daemon, dir, net2) })
  await importBusybox(sock)
  assert.equal((await request(sock, 'POST', '/swarm/init', { body: { ListenAddr: '127.0.0.1:0', AdvertiseAddr: '127.0.0.1' } })).status, 200)
  const id = await createContainer(sock, { Image: 'busybox', Cmd: ['true'] }, 'unread')
  daemon.kill('SIGKILL')
  await once(daemon, 'exit')

  // the container's record becomes a named pipe: reading the records blocks until the test writes it
  const recordFile = join(dir, 'data', 'containers', id, 'container.json')
  const record = readFileSync(recordFile, 'utf8')
  rmSync(recordFile)
  execFileSync('mkfifo', ['-m', '600', recordFile])
  let unblocked = false
  t.after(() => { if (!unblocked) void writeFile(recordFile, record).catch(() => {}) })

  daemon = spawn(process.execPath, [join(ROOT, 'dist', 'lib', 'cli', 'main.js'), 'daemon', '--config-file', '/dev/null', '-H', `unix://${sock}`, '--data-root', join(dir, 'data'), '--exec-root', join(dir, 'run'), ...daemonNetworkArgs(net2)], { stdio: 'ignore' })
  // each try bounded: a /_ping held until the records are read would never answer
  let ping
  for (let i = 0; i < 60 && ping === undefined; i++) {
    const tried = existsSync(sock) ? request(sock, 'GET', '/_ping').then((r) => r.status === 200 ? r : undefined, () => undefined) : Promise.resolve(undefined)
    ping = await Promise.race([tried, new Promise<undefined>((resolve) => setTimeout(resolve, 2000))])
    if (ping === undefined) await new Promise((resolve) => setTimeout(resolve, 50))
  }
  assert.ok(ping !== undefined, '/_ping answers while the records cannot be read')
  assert.equal(ping.headers.swarm, 'active', 'the swarm\'s state is known before the records')
  let settled = false
  const version = request(sock, 'GET', '/version').finally(() => { settled = true })
  await new Promise((resolve) => setTimeout(resolve, 500))
  assert.equal(settled, false, 'any other request waits for the boot')

  await writeFile(recordFile, record)
  unblocked = true
  assert.equal((await version).status, 200)
  const all = (await request(sock, 'GET', '/containers/json?all=1')).json() as Array<{ Id: string }>
  assert.ok(all.some((c) => c.Id === id), 'the record was read')
  rmSync(recordFile)
  writeFileSync(recordFile, record, { mode: 0o600 })
  assert.equal((await request(sock, 'POST', '/swarm/leave?force=1')).status, 200)
})
