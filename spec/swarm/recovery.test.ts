// The swarm across a daemon kill -9: in the middle of a scale from 3 to 6, and with a task container that died
// while the daemon was down. After the restart: running task containers re-adopted, dead ones replaced, exactly
// one running task per slot.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import type { ChildProcess } from 'node:child_process'
import { join } from 'node:path'
import { once } from 'node:events'
import { tmpDir, request, containerSkipReason, hasDockerCli, busyboxTar, uniqueNetworkOptions, daemonNetworkArgs, cleanupDaemon, startDaemonProcess } from '../helpers/engine.js'
import { dockerOk, until, tasksOf, runningBySlot } from './helpers.js'

const skip = containerSkipReason() ?? (hasDockerCli() ? null : 'the docker CLI is not installed')

async function startDaemon (dir: string, n: ReturnType<typeof uniqueNetworkOptions>): Promise<ChildProcess> {
  return await startDaemonProcess(dir, daemonNetworkArgs(n))
}

test('swarm state and tasks across a daemon kill -9', { skip: skip ?? false }, async (t) => {
  const dir = tmpDir()
  const sock = join(dir, 'b.sock')
  const n = uniqueNetworkOptions()
  let daemon = await startDaemon(dir, n)
  t.after(async () => {
    await cleanupDaemon(daemon, dir, n)
  })
  const docker = dockerOk(sock)
  const kill9 = async (): Promise<void> => { daemon.kill('SIGKILL'); await once(daemon, 'exit') }
  await docker('import', busyboxTar(), 'busybox:latest')
  await docker('swarm', 'init', '--advertise-addr', '127.0.0.1')
  await docker('secret', 'create', 'pw', '-', '--label', 'k=v').catch(() => '')
  await docker('service', 'create', '-d', '--name', 'web', '--replicas', '3', '--restart-delay', '0s', '--stop-grace-period', '1s', 'busybox', 'sleep', '600')
  const first = await until('3 running', async () => { const m = await runningBySlot(sock, 'web'); return m.size === 3 ? m : undefined })

  await t.test('kill -9 in the middle of a scale 3 -> 6: after the restart exactly 6 run, one per slot', async () => {
    const svc = (await request(sock, 'GET', '/services/web')).json() as { Version: { Index: number }, Spec: { Mode: unknown } }
    const spec = { ...svc.Spec, Mode: { Replicated: { Replicas: 6 } } }
    const r = await request(sock, 'POST', `/services/web/update?version=${svc.Version.Index}`, { body: spec })
    assert.equal(r.status, 200, r.text)
    // kill as soon as the new slots exist, before they all run
    await until('new tasks recorded', async () => (await tasksOf(sock, 'web')).some((x) => (x.Slot ?? 0) > 3), 10_000, 5)
    await kill9()
    daemon = await startDaemon(dir, n)
    const running = await until('6 running', async () => { const m = await runningBySlot(sock, 'web'); return m.size === 6 ? m : undefined }, 30_000)
    assert.deepEqual([...running.keys()].sort(), [1, 2, 3, 4, 5, 6])
    // the first three were re-adopted, not replaced
    for (const slot of [1, 2, 3]) assert.equal(running.get(slot)?.ID, first.get(slot)?.ID)
    const containers = (await docker('ps', '-q', '--filter', 'label=com.docker.swarm.service.name=web')).trim().split('\n')
    assert.equal(containers.length, 6)
    // and stays so: no late duplicates
    await new Promise((resolve) => setTimeout(resolve, 500))
    assert.equal((await runningBySlot(sock, 'web')).size, 6)
    assert.equal((await docker('ps', '-q', '--filter', 'label=com.docker.swarm.service.name=web')).trim().split('\n').length, 6)
  })

  await t.test('a task container that died while the daemon was down is replaced in its slot', async () => {
    const before = await runningBySlot(sock, 'web')
    const victim = before.get(4)
    assert.ok(victim !== undefined)
    const pid = Number((await docker('inspect', '--format', '{{.State.Pid}}', victim.Status.ContainerStatus?.ContainerID as string)).trim())
    await kill9()
    process.kill(pid, 'SIGKILL')
    daemon = await startDaemon(dir, n)
    const fresh = await until('slot 4 replaced', async () => { const x = (await runningBySlot(sock, 'web')).get(4); return x !== undefined && x.ID !== victim.ID ? x : undefined }, 30_000)
    assert.notEqual(fresh.ID, victim.ID)
    const old = (await tasksOf(sock, 'web')).find((x) => x.ID === victim.ID)
    assert.equal(old?.Status.State, 'failed')
    assert.equal((await runningBySlot(sock, 'web')).size, 6)
    assert.match(await docker('service', 'ls'), /web\s+replicated\s+6\/6/)
    assert.equal(JSON.parse(await docker('info', '--format', '{{json .Swarm.LocalNodeState}}')), 'active')
  })
})
