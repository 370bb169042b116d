// The daemon killed with -9 mid-workload restarts with every container and image intact; running containers keep
// running and are re-adopted; an exit that happened while the daemon was down is recorded.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import type { ChildProcess } from 'node:child_process'
import { join } from 'node:path'
import { once } from 'node:events'
import { tmpDir, request, importBusybox, createContainer, containerSkipReason, uniqueNetworkOptions, daemonNetworkArgs, cleanupDaemon, startDaemonProcess } from '../helpers/engine.js'
import { demuxAll } from '../../lib/stream/stdcopy.js'

const skip = containerSkipReason()
const net = uniqueNetworkOptions()

async function startDaemon (dir: string): Promise<ChildProcess> {
  return await startDaemonProcess(dir, daemonNetworkArgs(net))
}

test('kill -9 and restart', { skip: skip ?? false }, async (t) => {
  const dir = tmpDir()
  const sock = join(dir, 'b.sock')
  let daemon = await startDaemon(dir)
  t.after(async () => {
    await cleanupDaemon(daemon, dir, net)
  })
  const imageId = await importBusybox(sock)
  const long = await createContainer(sock, { Image: 'busybox', Cmd: ['sh', '-c', 'echo long; sleep 600'] }, 'long')
  const short = await createContainer(sock, { Image: 'busybox', Cmd: ['sh', '-c', 'echo short; sleep 1; exit 7'] }, 'short')
  const created = await createContainer(sock, { Image: 'busybox', Cmd: ['true'] }, 'created')
  assert.equal((await request(sock, 'POST', '/containers/long/start')).status, 204)
  assert.equal((await request(sock, 'POST', '/containers/short/start')).status, 204)
  // mid-workload: requests in flight while the daemon dies
  const inflight = Promise.allSettled([
    request(sock, 'POST', '/containers/create?name=inflight', { body: { Image: 'busybox', Cmd: ['true'] } }),
    request(sock, 'POST', `/containers/${short}/wait`)
  ])
  daemon.kill('SIGKILL')
  await once(daemon, 'exit')
  await inflight
  // the short container exits while nobody supervises it but its shim
  await new Promise((resolve) => setTimeout(resolve, 1500))

  daemon = await startDaemon(dir)
  // on a loaded machine the short one may still be finishing: its exit is recorded when it comes (bounded poll)
  let all: Array<{ Id: string, State: string }> = []
  for (let i = 0; i < 300; i++) {
    all = (await request(sock, 'GET', '/containers/json?all=1')).json() as Array<{ Id: string, State: string }>
    if (all.find((c) => c.Id === short)?.State !== 'running') break
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  const byId = new Map(all.map((c) => [c.Id, c]))
  assert.equal(byId.get(long)?.State, 'running')
  assert.equal(byId.get(short)?.State, 'exited')
  assert.equal(byId.get(created)?.State, 'created')
  const shortInfo = (await request(sock, 'GET', `/containers/${short}/json`)).json() as { State: { ExitCode: number } }
  assert.equal(shortInfo.State.ExitCode, 7)
  assert.equal(demuxAll((await request(sock, 'GET', '/containers/short/logs?stdout=1')).body).stdout.toString(), 'short\n')
  const imgs = (await request(sock, 'GET', '/images/json')).json() as Array<{ Id: string }>
  assert.deepEqual(imgs.map((i) => i.Id), [imageId])

  // the re-adopted container is fully controllable: logs, exec, stop with an exit code, restart
  assert.equal(demuxAll((await request(sock, 'GET', '/containers/long/logs?stdout=1')).body).stdout.toString(), 'long\n')
  const wait = request(sock, 'POST', '/containers/long/wait')
  assert.equal((await request(sock, 'POST', '/containers/long/stop?t=0')).status, 204)
  assert.equal(((await wait).json() as { StatusCode: number }).StatusCode, 137)
  assert.equal((await request(sock, 'POST', '/containers/short/start')).status, 204)
  assert.equal(((await request(sock, 'POST', '/containers/short/wait')).json() as { StatusCode: number }).StatusCode, 7)

  // a clean SIGTERM shutdown leaves running containers running too
  assert.equal((await request(sock, 'POST', '/containers/long/start')).status, 204)
  daemon.kill('SIGTERM')
  assert.equal((await once(daemon, 'exit'))[0], 0)
  daemon = await startDaemon(dir)
  assert.equal(((await request(sock, 'GET', '/containers/long/json')).json() as { State: { Running: boolean } }).State.Running, true)
  assert.equal((await request(sock, 'DELETE', '/containers/long?force=1')).status, 204)
})
