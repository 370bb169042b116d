// Service modes and placement: global (one task on the node, none while drained), replicated and global jobs run to
// completion, constraints the node does not meet leave the task pending, `update --force` replaces every task, and
// host-mode published ports, and ingress-mode UDP ports (beside a TCP port of the same number).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import http from 'node:http'
import { startEngine, containerSkipReason, hasDockerCli, busyboxTar, request } from '../helpers/engine.js'
import { dockerOk, until, tasksOf, runningBySlot } from './helpers.js'
import dgram from 'node:dgram'
import { dockerCli } from '../helpers/engine.js'
import { freeTcpPort, httpGet, udpAsk } from '../helpers/net.js'

/** A port number free for both TCP and UDP on the host. */
async function freeTcpUdpPort (): Promise<number> {
  for (let i = 0; i < 20; i++) {
    const port = await freeTcpPort()
    if (await udpBindable(port)) return port
  }
  throw new Error('no port free for both tcp and udp')
}

async function udpBindable (port: number): Promise<boolean> {
  const s = dgram.createSocket('udp4')
  return await new Promise((resolve) => {
    s.once('error', () => { s.close(); resolve(false) })
    s.bind(port, '0.0.0.0', () => { s.close(() => { resolve(true) }) })
  })
}

// a UDP server answering `<hostname> <message>`: busybox has none, so node from the host's /usr runs in the task
const UDP_ECHO = `require('dgram').createSocket('udp4').on('message', function (m, r) { this.send(require('os').hostname() + ' ' + m, r.port, r.address) }).bind(81)`
const HOST_NODE = ['--mount', 'type=bind,source=/usr,target=/usr,readonly', '--mount', 'type=bind,source=/lib,target=/lib,readonly', '--mount', 'type=bind,source=/lib64,target=/lib64,readonly']

const skip = containerSkipReason() ?? (hasDockerCli() ? null : 'the docker CLI is not installed')

test('service modes and placement', { skip: skip ?? false }, async (t) => {
  const { socket, swarmPool } = await startEngine(t)
  const docker = dockerOk(socket)
  await docker('import', busyboxTar(), 'busybox:latest')
  // (overlays from this engine's own pool: the published ports reach task addresses no other engine on the host holds)
  await docker('swarm', 'init', '--advertise-addr', '127.0.0.1', '--default-addr-pool', swarmPool)

  await t.test('global: one task on the node (named with the node ID), none while drained', async () => {
    await docker('service', 'create', '-d', '--name', 'g', '--mode', 'global', '--stop-grace-period', '1s', 'busybox', 'sleep', '600')
    const node = JSON.parse(await docker('info', '--format', '{{json .Swarm.NodeID}}')) as string
    const task = await until('the global task runs', async () => (await runningBySlot(socket, 'g')).get(0))
    assert.equal((task as unknown as { Slot?: number }).Slot, undefined)
    assert.match(await docker('ps', '--format', '{{.Names}}'), new RegExp(`^g\\.${node}\\.${task.ID}$`, 'm'))
    assert.match(await docker('service', 'ls'), /g\s+global\s+1\/1/)
    await docker('node', 'update', '--availability', 'drain', node)
    await until('no task', async () => (await runningBySlot(socket, 'g')).size === 0)
    await docker('node', 'update', '--availability', 'active', node)
    await until('back', async () => (await runningBySlot(socket, 'g')).size === 1)
    await docker('service', 'rm', 'g')
  })

  await t.test('replicated-job: runs to TotalCompletions with MaxConcurrent at a time; global-job once', async () => {
    await docker('service', 'create', '-d', '--name', 'job', '--mode', 'replicated-job', '--replicas', '3', '--max-concurrent', '2', 'busybox', 'sh', '-c', 'sleep 0.3')
    const done = await until('3 complete', async () => { const ts = await tasksOf(socket, 'job'); return ts.filter((x) => x.Status.State === 'complete').length === 3 ? ts : undefined })
    assert.deepEqual(done.map((x) => x.Slot).sort(), [1, 2, 3])
    assert.ok(done.every((x) => x.DesiredState === 'complete'))
    await new Promise((resolve) => setTimeout(resolve, 300))
    assert.equal((await tasksOf(socket, 'job')).length, 3)
    const st = (await request(socket, 'GET', '/services?status=true&filters={"name":["job"]}')).json() as Array<{ ServiceStatus: { CompletedTasks: number }, JobStatus: { JobIteration: { Index: number } } }>
    assert.equal(st[0]?.ServiceStatus.CompletedTasks, 3)
    assert.ok((st[0]?.JobStatus.JobIteration.Index ?? 0) > 0)
    await docker('service', 'create', '-d', '--name', 'gjob', '--mode', 'global-job', 'busybox', 'true')
    await until('complete', async () => (await tasksOf(socket, 'gjob')).some((x) => x.Status.State === 'complete'))
    await docker('service', 'rm', 'job', 'gjob')
  })

  await t.test('a constraint the node does not meet leaves the task pending with dockerd\'s reason', async () => {
    await docker('service', 'create', '-d', '--name', 'picky', '--constraint', 'node.role==worker', 'busybox', 'sleep', '600')
    const ts = await until('pending', async () => { const x = await tasksOf(socket, 'picky'); return x[0]?.Status.State === 'pending' ? x : undefined })
    assert.equal(ts[0]?.Status.Err, 'no suitable node (scheduling constraints not satisfied on 1 node)')
    await docker('service', 'update', '-d', '--constraint-rm', 'node.role==worker', '--constraint-add', 'node.role==manager', 'picky')
    await until('running', async () => (await runningBySlot(socket, 'picky')).size === 1)
    await docker('service', 'rm', 'picky')
  })

  await t.test('update --force replaces every task with the same spec', async () => {
    await docker('service', 'create', '-d', '--name', 'f', '--replicas', '2', '--update-parallelism', '0', '--update-monitor', '100ms', '--stop-grace-period', '1s', 'busybox', 'sleep', '600')
    const before = await until('2 running', async () => { const m = await runningBySlot(socket, 'f'); return m.size === 2 ? m : undefined })
    await docker('service', 'update', '-d', '--force', 'f')
    await until('both replaced', async () => { const m = await runningBySlot(socket, 'f'); return m.size === 2 && [...m.values()].every((x) => ![...before.values()].some((b) => b.ID === x.ID)) })
    await docker('service', 'rm', 'f')
  })

  await t.test('host-mode published port: bound by the task container', async () => {
    const port = await freeTcpPort()
    await docker('service', 'create', '-d', '--name', 'hweb', '--publish', `mode=host,published=${port},target=80`, '--stop-grace-period', '1s', 'busybox', 'sh', '-c', 'echo host-mode > /tmp/i; httpd -f -p 80 -h /tmp')
    await until('running', async () => (await runningBySlot(socket, 'hweb')).size === 1)
    const body = await until('answers', async () => await new Promise<string | undefined>((resolve) => {
      http.get({ host: '127.0.0.1', port, path: '/i', timeout: 2000 }, (res) => { let b = ''; res.on('data', (d: Buffer) => { b += d.toString() }); res.on('end', () => { resolve(b) }) }).on('error', () => { resolve(undefined) })
    }), 20_000, 100)
    assert.equal(body, 'host-mode\n')
    await docker('service', 'rm', 'hweb')
  })

  await t.test('ingress udp port beside a tcp port of the same number: each client flow to one task in turn', async () => {
    const port = await freeTcpUdpPort()
    const r = await dockerCli(socket, ['service', 'create', '-d', '--name', 'uweb', '--replicas', '2', '--stop-grace-period', '1s',
      '--publish', `published=${port},target=80`, '--publish', `published=${port},target=81,protocol=udp`, ...HOST_NODE,
      'busybox', 'sh', '-c', `echo tcp-side > /tmp/i; /bin/busybox httpd -p 80 -h /tmp; exec ${process.execPath} -e "${UDP_ECHO}"`])
    assert.equal(r.status, 0, r.stderr)
    assert.doesNotMatch(r.stderr + r.stdout, /only tcp/)
    const ports = JSON.parse(await docker('service', 'inspect', '--format', '{{json .Endpoint.Ports}}', 'uweb')) as Array<{ Protocol: string, PublishedPort: number, TargetPort: number }>
    assert.deepEqual(ports.map((p) => `${p.PublishedPort}/${p.Protocol}->${p.TargetPort}`).sort(), [`${port}/tcp->80`, `${port}/udp->81`])
    const tasks = await until('2 running', async () => { const m = await runningBySlot(socket, 'uweb'); return m.size === 2 ? m : undefined })
    const hosts = new Set(await Promise.all([...tasks.values()].map(async (x) => (await docker('inspect', '--format', '{{.Config.Hostname}}', x.Status.ContainerStatus?.ContainerID ?? '')).trim())))
    assert.equal(await until('the tcp port answers', async () => await httpGet(port, '/i', '127.0.0.1', 3000).catch(() => undefined), 20_000, 100), 'tcp-side\n')
    // each new client (a fresh socket) is a new flow: the flows go to the two tasks in turn (once the mesh has both:
    // a task shown running joins it after the orchestrator's next pass, a moment later)
    const seen = new Set<string>()
    let i = 0
    await until('both tasks answered', async () => {
      const answer = await udpAsk(port, `hi${i}`, 100)
      const [host, msg] = answer.split(' ')
      assert.equal(msg, `hi${i++}`)
      assert.ok(hosts.has(host ?? ''), `${answer}: from a task of the service (${[...hosts].join(', ')})`)
      seen.add(host ?? '')
      return seen.size === 2
    }, 10_000, 50)
    // the udp port is taken: another service may not publish it again
    const clash = await dockerCli(socket, ['service', 'create', '-d', '--name', 'uclash', '--publish', `published=${port},target=9,protocol=udp`, 'busybox', 'sleep', '600'])
    assert.notEqual(clash.status, 0)
    assert.match(clash.stderr, new RegExp(`port '${port}' is already in use by service 'uweb' \\(\\w+\\) as an ingress port`))
    await docker('service', 'rm', 'uweb')
    await until('the udp port is let go', async () => await udpBindable(port))
  })
})
