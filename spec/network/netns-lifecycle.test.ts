// A container's network namespace and veths are made by its monitor at the start (no process spawned by the daemon)
// and removed at its exit: the namespace file (SandboxKey) is mounted exactly while the container runs, its veth is on
// the bridge exactly while it runs, with --network none too; a start that fails leaves neither. A daemon killed while
// it started a container (the monitor running it, the record not yet saying so) finds it Created at its restart, its
// process stopped, with no namespace and no veth left.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { once } from 'node:events'
import { startEngine, containerSkipReason, importBusybox, createContainer, request, tmpDir, uniqueNetworkOptions, daemonNetworkArgs, cleanupDaemon, startDaemonProcess } from '../helpers/engine.js'
import { until } from '../helpers/poll.js'

const skip = containerSkipReason() ?? (spawnSync('ip', ['-V']).status === 0 ? null : 'iproute2 is not installed')

const mounted = (path: string): boolean => readFileSync('/proc/self/mountinfo', 'utf8').includes(` ${path} `)
/** The host ends of this engine's veths (its prefix, lower case, then `v`). */
function veths (prefix: string): string[] {
  const out = spawnSync('ip', ['-o', 'link', 'show'], { encoding: 'utf8' }).stdout ?? ''
  return [...out.matchAll(/^\d+:\s+([^:@\s]+)/gm)].map((m) => m[1] as string).filter((n) => n.startsWith(`${prefix.toLowerCase()}v`))
}

interface Inspect { State: { Status: string, Pid: number, ExitCode: number }, NetworkSettings: { SandboxKey: string, Networks: Record<string, { IPAddress: string }> } }

test('the monitor makes and removes a container\'s namespace and veths', { skip: skip ?? false }, async (t) => {
  const te = await startEngine(t)
  const sock = te.socket
  const prefix = te.engine.network.prefix
  await importBusybox(sock)

  for (const mode of ['bridge', 'none']) {
    const id = await createContainer(sock, { Image: 'busybox', Cmd: ['sh', '-c', 'ip -o addr; ip route; sleep 600'], HostConfig: { NetworkMode: mode } })
    assert.equal((await request(sock, 'POST', `/containers/${id}/start`)).status, 204)
    const info = (await request(sock, 'GET', `/containers/${id}/json`)).json() as Inspect
    const key = info.NetworkSettings.SandboxKey
    assert.ok(key.startsWith(join(te.dir, 'run', 'netns')), key)
    assert.ok(mounted(key), `${mode}: the namespace is mounted on ${key} while the container runs`)
    // the container's own view: loopback up; on the bridge its address (with the broadcast) and the default route
    const netns = spawnSync('nsenter', [`--net=${key}`, 'ip', '-o', 'addr'], { encoding: 'utf8' }).stdout ?? ''
    assert.match(netns, /^1: lo\s+inet 127\.0\.0\.1\/8/m)
    if (mode === 'bridge') {
      const ip = info.NetworkSettings.Networks.bridge?.IPAddress ?? ''
      assert.match(netns, new RegExp(`eth0\\s+inet ${ip.replace(/\./g, '\\.')}/24 brd `))
      const route = spawnSync('nsenter', [`--net=${key}`, 'ip', 'route'], { encoding: 'utf8' }).stdout ?? ''
      assert.match(route, /^default via \S+ dev eth0/m)
      assert.equal(veths(prefix).length, 1, 'one veth on the host while it runs')
    } else {
      assert.doesNotMatch(netns, /eth0/)
      assert.deepEqual(veths(prefix), [])
    }
    assert.equal((await request(sock, 'POST', `/containers/${id}/stop?t=0`)).status, 204)
    assert.equal(mounted(key), false, `${mode}: the namespace is unmounted once the container stopped`)
    assert.equal(existsSync(key), false)
    await te.engine.network.settled()
    assert.deepEqual(veths(prefix), [], `${mode}: no veth left`)
    assert.equal((await request(sock, 'DELETE', `/containers/${id}`)).status, 204)
  }

  // a start the runtime refuses: the monitor undoes the namespace and the veth it made before reporting the failure
  const bad = await createContainer(sock, { Image: 'busybox', Cmd: ['/no/such/command'] })
  const r = await request(sock, 'POST', `/containers/${bad}/start`)
  assert.equal(r.status, 400, r.text)
  const after = (await request(sock, 'GET', `/containers/${bad}/json`)).json() as Inspect
  assert.equal(after.State.ExitCode, 127)
  await te.engine.network.settled()
  assert.deepEqual(veths(prefix), [])
  assert.deepEqual(readdirSync(join(te.dir, 'run', 'netns')), [])
})

test('a daemon killed while it started a container: at its restart the container is Created, stopped, with no namespace or veth', { skip: skip ?? false }, async (t) => {
  const dir = tmpDir()
  const net = uniqueNetworkOptions()
  const sock = join(dir, 'b.sock')
  let daemon = await startDaemonProcess(dir, daemonNetworkArgs(net))
  t.after(async () => { await cleanupDaemon(daemon, dir, net) })
  await importBusybox(sock)
  const id = await createContainer(sock, { Image: 'busybox', Cmd: ['sleep', '600'] }, 'caught')
  const recordPath = join(dir, 'data', 'containers', id, 'container.json')
  // the record as the create left it: the crash comes after the monitor started the container, before this changed
  const asCreated = readFileSync(recordPath, 'utf8')
  assert.equal((await request(sock, 'POST', `/containers/${id}/start`)).status, 204)
  const info = (await request(sock, 'GET', `/containers/${id}/json`)).json() as Inspect
  const key = info.NetworkSettings.SandboxKey
  const pid = info.State.Pid
  assert.ok(mounted(key))
  assert.equal(veths(net.networkPrefix).length, 1)
  daemon.kill('SIGKILL')
  await once(daemon, 'exit')
  writeFileSync(recordPath, asCreated)

  daemon = await startDaemonProcess(dir, daemonNetworkArgs(net))
  const again = (await request(sock, 'GET', `/containers/${id}/json`)).json() as Inspect
  assert.equal(again.State.Status, 'created')
  assert.equal(existsSync(`/proc/${pid}`) && !readFileSync(`/proc/${pid}/stat`, 'utf8').includes(') Z '), false, 'its process is gone')
  assert.equal(mounted(key), false, 'no namespace left')
  await until('no veth left', async () => veths(net.networkPrefix).length === 0, 10_000)
  // and it starts again as any created container does
  assert.equal((await request(sock, 'POST', `/containers/${id}/start`)).status, 204)
  assert.equal((await request(sock, 'DELETE', `/containers/${id}?force=1`)).status, 204)
})
