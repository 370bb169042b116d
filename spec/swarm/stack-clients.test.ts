// docker stack deploy of a compose v3 stack (a web server with a published port and a client that reaches it by
// service name on the stack's overlay network), stack ps/services/update/rm; and docker-py's swarm API.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { startEngine, containerSkipReason, hasDockerCli, dockerCli, busyboxTar } from '../helpers/engine.js'
import { runTool, dockerPySkipReason } from '../helpers/tools.js'
import { freeTcpPort, httpGet } from '../helpers/net.js'
import { dockerOk, until, runningBySlot } from './helpers.js'

const skip = containerSkipReason() ?? (hasDockerCli() ? null : 'the docker CLI is not installed')
const pySkip = dockerPySkipReason()

test('docker stack deploy and docker-py', { skip: skip ?? false }, async (t) => {
  const { socket, dir, swarmPool } = await startEngine(t)
  const docker = dockerOk(socket)
  await docker('import', busyboxTar(), 'busybox:latest')
  // the overlays' subnets from this engine's own pool, not the default 10.0.0.0/8 every swarm on the host shares: the
  // client reaches web, and the published port its tasks, over subnets no other engine (another test run's) holds
  await docker('swarm', 'init', '--advertise-addr', '127.0.0.1', '--default-addr-pool', swarmPool)

  await t.test('stack deploy: web with a published port, client reaching it by name; ps, services, update, rm', async () => {
    const port = await freeTcpPort()
    const compose = (replicas: number): string => `version: "3.8"
services:
  web:
    image: busybox:latest
    command: sh -c 'echo hello-web > /tmp/index.html; httpd -f -p 80 -h /tmp'
    ports:
      - "${port}:80"
    stop_grace_period: 1s
    deploy:
      replicas: ${replicas}
  client:
    image: busybox:latest
    command: sh -c 'while true; do wget -q -O - http://web/index.html; sleep 0.3; done'
    stop_grace_period: 1s
`
    const file = join(dir, 'stack.yml')
    writeFileSync(file, compose(2))
    const dep = await dockerCli(socket, ['stack', 'deploy', '-c', file, 'app'])
    assert.equal(dep.status, 0, dep.stderr)
    // the CLI creates the services in its map order
    assert.match(dep.stdout, /^Creating network app_default\n/)
    assert.match(dep.stdout, /^Creating service app_web$/m)
    assert.match(dep.stdout, /^Creating service app_client$/m)
    assert.doesNotMatch(dep.stderr, /not supported by Berth/)
    await until('web 2/2, client 1/1', async () => { const out = await docker('stack', 'services', 'app'); return /app_web\s+replicated\s+2\/2/.test(out) && /app_client\s+replicated\s+1\/1/.test(out) })
    assert.match(await docker('stack', 'services', 'app'), new RegExp(`\\*:${port}->80/tcp`))
    assert.match(await docker('network', 'ls'), /app_default\s+overlay\s+swarm/)
    const ps = await docker('stack', 'ps', 'app')
    assert.match(ps, /app_web\.1\s+busybox:latest/)
    assert.match(ps, /app_client\.1\s+busybox:latest/)
    // the client reaches web by its service name on the stack's network
    await until('the client got the page', async () => (await docker('service', 'logs', 'app_client')).includes('hello-web'), 60_000, 200)
    // tasks.<name> (the service's and its aliases') resolves to the task addresses, as dockerd's
    const clientTask = (await runningBySlot(socket, 'app_client')).get(1)
    const clientCid = clientTask?.Status.ContainerStatus?.ContainerID as string
    for (const name of ['tasks.web', 'tasks.app_web']) {
      await until(`${name} answers`, async () => (await dockerCli(socket, ['exec', clientCid, 'wget', '-q', '-O', '-', `http://${name}/index.html`])).stdout === 'hello-web\n', 15_000, 200)
    }
    // the published port reaches the tasks
    assert.equal(await until('the published port answers', async () => await httpGet(port, '/index.html', '127.0.0.1', 3000).catch(() => undefined), 20_000, 100), 'hello-web\n')
    writeFileSync(file, compose(3))
    assert.match(await docker('stack', 'deploy', '-c', file, 'app'), /Updating service app_web/)
    await until('web 3/3', async () => (await runningBySlot(socket, 'app_web')).size === 3)
    assert.match(await docker('stack', 'ls'), /app\s+2/)
    const rm = await dockerCli(socket, ['stack', 'rm', 'app'])
    assert.equal(rm.status, 0, rm.stderr)
    assert.match(rm.stdout, /^Removing service app_client$/m)
    assert.match(rm.stdout, /^Removing service app_web$/m)
    assert.match(rm.stdout, /^Removing network app_default$/m)
    // the stack's network left the API at once; its task containers shut down after the reply, as dockerd's do
    assert.doesNotMatch(await docker('network', 'ls'), /app_default/)
    await until('the stack\'s containers are gone', async () => (await docker('ps', '-aq', '--filter', 'label=com.docker.stack.namespace=app')).trim() === '', 30_000, 100)
    // and with them the network's bridge: nothing of the stack is left on the host
    assert.doesNotMatch(await docker('network', 'ls'), /app_default/)
    await until('the port is closed', async () => await httpGet(port, '/', '127.0.0.1', 3000).then(() => false, () => true))
  })

  await t.test('docker-py: swarm.init, services.create, scale, tasks', { skip: pySkip ?? false }, async () => {
    await docker('swarm', 'leave', '--force')
    const script = `
import docker, time
c = docker.DockerClient(base_url='unix://${socket}')
node = c.swarm.init(advertise_addr='127.0.0.1', default_addr_pool=['${swarmPool}'])
assert c.info()['Swarm']['LocalNodeState'] == 'active'
assert c.swarm.attrs['Spec']['Orchestration']['TaskHistoryRetentionLimit'] == 5
svc = c.services.create('busybox:latest', ['sleep', '600'], name='py', mode=docker.types.ServiceMode('replicated', replicas=2), stop_grace_period=1000000000)
def running():
    return [t for t in svc.tasks() if t['Status']['State'] == 'running' and t['DesiredState'] == 'running']
for _ in range(400):
    if len(running()) == 2: break
    time.sleep(0.05)
assert len(running()) == 2, svc.tasks()
svc.scale(4)
for _ in range(400):
    if len(running()) == 4: break
    time.sleep(0.05)
assert sorted(t['Slot'] for t in running()) == [1, 2, 3, 4]
svc.reload()
assert svc.attrs['Spec']['Mode']['Replicated']['Replicas'] == 4
assert [s.name for s in c.services.list()] == ['py']
assert len(c.nodes.list()) == 1
svc.remove()
c.swarm.leave(force=True)
print('ok')
`
    const r = await runTool('python3', ['-c', script])
    assert.equal(r.status, 0, r.out)
    assert.equal(r.out.trim(), 'ok')
  })
})
