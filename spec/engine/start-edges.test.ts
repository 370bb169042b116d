// The edges of a start: a start returns once the container runs its command (a signal sent right after it reaches the
// command, never the runtime's own code still running in the container); an unlimited rlimit reaches the runtime as
// the exact uint64 it reads; an auto-removed container that does not run when the daemon starts again is removed then
// (as dockerd does: a crash between its exit and its removal).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { once } from 'node:events'
import { join } from 'node:path'
import { existsSync } from 'node:fs'
import { startEngine, request, importBusybox, createContainer, containerSkipReason, tmpDir, uniqueNetworkOptions, daemonNetworkArgs, cleanupDaemon, startDaemonProcess } from '../helpers/engine.js'
import { demuxAll } from '../../lib/stream/stdcopy.js'

const skip = containerSkipReason()

interface Inspect { State: { Running: boolean, ExitCode: number } }

test('a signal sent right after the start reaches the command', { skip: skip ?? false }, async (t) => {
  const { socket } = await startEngine(t)
  await importBusybox(socket)
  // sleep runs as PID 1 of its namespace with no handler: SIGTERM is not delivered to it; the runtime's init, which
  // ran in the container a moment longer than its start took, had handlers and died of it
  for (let i = 0; i < 20; i++) {
    const id = await createContainer(socket, { Image: 'busybox', Cmd: ['sleep', '60'], HostConfig: { NetworkMode: 'none' } })
    assert.equal((await request(socket, 'POST', `/containers/${id}/start`)).status, 204)
    // at once, from the host (a kill through the runtime would give the process time to get there)
    const pid = ((await request(socket, 'GET', `/containers/${id}/json`)).json() as { State: { Pid: number } }).State.Pid
    process.kill(pid, 'SIGTERM')
    await new Promise((resolve) => setTimeout(resolve, 100))
    const info = (await request(socket, 'GET', `/containers/${id}/json`)).json() as Inspect
    assert.equal(info.State.Running, true, `run ${i}: the container ended (exit code ${info.State.ExitCode})`)
    assert.equal((await request(socket, 'DELETE', `/containers/${id}?force=1`)).status, 204)
  }
})

test('an unlimited rlimit (-1, RLIM_INFINITY as dockerd casts it) reaches the container and its execs', { skip: skip ?? false }, async (t) => {
  const { socket } = await startEngine(t)
  await importBusybox(socket)
  const id = await createContainer(socket, { Image: 'busybox', Cmd: ['sh', '-c', 'ulimit -c; sleep 60'], HostConfig: { NetworkMode: 'none', Ulimits: [{ Name: 'core', Soft: -1, Hard: -1 }] } })
  const start = await request(socket, 'POST', `/containers/${id}/start`)
  assert.equal(start.status, 204, start.text)
  let logs = ''
  for (let i = 0; i < 100 && !logs.includes('unlimited'); i++) {
    logs = demuxAll((await request(socket, 'GET', `/containers/${id}/logs?stdout=1`)).body).stdout.toString()
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
  assert.equal(logs, 'unlimited\n')
  const exec = await request(socket, 'POST', `/containers/${id}/exec`, { body: { Cmd: ['sh', '-c', 'ulimit -Hc'], AttachStdout: true } })
  assert.equal(exec.status, 201, exec.text)
  const out = await request(socket, 'POST', `/exec/${(exec.json() as { Id: string }).Id}/start`, { body: { Detach: false } })
  assert.equal(demuxAll(out.body).stdout.toString(), 'unlimited\n')
  assert.equal((await request(socket, 'DELETE', `/containers/${id}?force=1`)).status, 204)
})

test('an auto-removed container that does not run is removed when the daemon starts again', { skip: skip ?? false }, async (t) => {
  const dir = tmpDir()
  const net = uniqueNetworkOptions()
  const sock = join(dir, 'b.sock')
  let daemon = await startDaemonProcess(dir, daemonNetworkArgs(net))
  t.after(async () => { await cleanupDaemon(daemon, dir, net) })
  await importBusybox(sock)
  const created = await createContainer(sock, { Image: 'busybox', Cmd: ['true'], HostConfig: { AutoRemove: true } }, 'never-started')
  const kept = await createContainer(sock, { Image: 'busybox', Cmd: ['true'] }, 'kept')
  daemon.kill('SIGKILL')
  await once(daemon, 'exit')
  daemon = await startDaemonProcess(dir, daemonNetworkArgs(net))
  assert.equal((await request(sock, 'GET', `/containers/${created}/json`)).status, 404)
  assert.equal((await request(sock, 'GET', `/containers/${kept}/json`)).status, 200)
  for (let i = 0; i < 100 && existsSync(join(dir, 'data', 'containers', created)); i++) await new Promise((resolve) => setTimeout(resolve, 50))
  assert.equal(existsSync(join(dir, 'data', 'containers', created)), false, 'its directory goes too')
})
