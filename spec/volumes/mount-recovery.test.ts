// Volumes with driver options across a daemon kill -9: a running container's volume stays mounted and its hold is
// rebuilt at start (stopping it unmounts), a volume whose container exited while the daemon was down and a mount
// no container holds are unmounted at start.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import type { ChildProcess } from 'node:child_process'
import { execFileSync } from 'node:child_process'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { once } from 'node:events'
import { tmpDir, request, importBusybox, createContainer, containerSkipReason, uniqueNetworkOptions, daemonNetworkArgs, cleanupDaemon, startDaemonProcess } from '../helpers/engine.js'

const skip = containerSkipReason()
const net = uniqueNetworkOptions()

function hostMounted (path: string): boolean {
  return readFileSync('/proc/self/mountinfo', 'utf8').split('\n').some((l) => l.split(' ')[4] === path)
}

async function until (what: string, fn: () => boolean | Promise<boolean>): Promise<void> {
  for (let i = 0; i < 300; i++) {
    if (await fn()) return
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  assert.fail(`timed out: ${what}`)
}

test('volume mounts across a daemon kill -9', { skip: skip ?? false }, async (t) => {
  const dir = tmpDir()
  const sock = join(dir, 'b.sock')
  const mp = (name: string): string => join(dir, 'data', 'volumes', name, '_data')
  let daemon: ChildProcess = await startDaemonProcess(dir, daemonNetworkArgs(net))
  t.after(async () => {
    await cleanupDaemon(daemon, dir, net)
  })
  await importBusybox(sock)
  for (const name of ['held', 'exits', 'stray']) {
    assert.equal((await request(sock, 'POST', '/volumes/create', { body: { Name: name, DriverOpts: { type: 'tmpfs', device: 'tmpfs', o: 'size=1m' } } })).status, 201)
  }
  const held = await createContainer(sock, { Image: 'busybox', Cmd: ['sh', '-c', 'echo x > /v/f; sleep 600'], HostConfig: { Binds: ['held:/v'] } })
  const exits = await createContainer(sock, { Image: 'busybox', Cmd: ['sh', '-c', 'read line'], OpenStdin: true, HostConfig: { Binds: ['exits:/v'] } })
  assert.equal((await request(sock, 'POST', `/containers/${held}/start`)).status, 204)
  assert.equal((await request(sock, 'POST', `/containers/${exits}/start`)).status, 204)
  assert.ok(hostMounted(mp('held')) && hostMounted(mp('exits')))
  await until('the held volume is written', () => { try { return readFileSync(join(mp('held'), 'f'), 'utf8') === 'x\n' } catch { return false } })
  const pidOf = async (id: string): Promise<number> => ((await request(sock, 'GET', `/containers/${id}/json`)).json() as { State: { Pid: number } }).State.Pid
  const exitsPid = await pidOf(exits)

  daemon.kill('SIGKILL')
  await once(daemon, 'exit')
  // while no daemon runs: one container ends, and a leftover mount appears on a volume no container uses
  process.kill(exitsPid, 'SIGKILL')
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', mp('stray')])
  writeFileSync(join(mp('stray'), 'junk'), 'y')

  daemon = await startDaemonProcess(dir, daemonNetworkArgs(net))
  await until('the exit recorded', async () => ((await request(sock, 'GET', `/containers/${exits}/json`)).json() as { State: { Running: boolean } }).State.Running === false)
  assert.equal(hostMounted(mp('stray')), false, 'a mount no container holds is undone at start')
  await until('the exited container\'s volume unmounted', () => !hostMounted(mp('exits')))
  assert.equal(hostMounted(mp('held')), true, 'the running container\'s volume stays mounted')
  assert.equal(readFileSync(join(mp('held'), 'f'), 'utf8'), 'x\n')

  // the hold was rebuilt: a second user coming and going leaves the mount; the re-adopted container's stop ends it
  const other = await createContainer(sock, { Image: 'busybox', Cmd: ['cat', '/v/f'], HostConfig: { Binds: ['held:/v'] } })
  assert.equal((await request(sock, 'POST', `/containers/${other}/start`)).status, 204)
  assert.equal(((await request(sock, 'POST', `/containers/${other}/wait`)).json() as { StatusCode: number }).StatusCode, 0)
  assert.equal(hostMounted(mp('held')), true)
  assert.equal((await request(sock, 'DELETE', '/volumes/held')).status, 409)
  assert.equal((await request(sock, 'POST', `/containers/${held}/stop?t=0`)).status, 204)
  assert.equal(hostMounted(mp('held')), false, 'unmounted when the last container stopped')
  for (const id of [held, exits, other]) assert.equal((await request(sock, 'DELETE', `/containers/${id}`)).status, 204)
  for (const name of ['held', 'exits', 'stray']) assert.equal((await request(sock, 'DELETE', `/volumes/${name}`)).status, 204)
})
