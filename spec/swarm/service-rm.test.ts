// docker service rm and docker stack rm answer at once while the tasks shut down, as dockerd's do: the tasks stay
// listed (desired state remove) until their containers are gone, and the service's overlay network can be removed
// meanwhile: it leaves the API at once and the host when its last task container has left.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { existsSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { startEngine, containerSkipReason, hasDockerCli, dockerCli, busyboxTar, request } from '../helpers/engine.js'
import { dockerOk, until, runningBySlot } from './helpers.js'

const skip = containerSkipReason() ?? (hasDockerCli() ? null : 'the docker CLI is not installed')

test('service rm and stack rm do not wait for the tasks', { skip: skip ?? false }, async (t) => {
  const { socket, dataRoot, dir } = await startEngine(t)
  const docker = dockerOk(socket)
  await docker('import', busyboxTar(), 'busybox:latest')
  await docker('swarm', 'init', '--advertise-addr', '127.0.0.1')

  await t.test('service rm returns while the task container runs out its grace period; the network goes meanwhile', async () => {
    await docker('network', 'create', '-d', 'overlay', 'slow-net')
    const netId = (await docker('network', 'inspect', '--format', '{{.Id}}', 'slow-net')).trim()
    // sleep as PID 1 ignores SIGTERM: the stop takes the whole grace period (60 s) unless the test kills it
    await docker('service', 'create', '-d', '--name', 'slow', '--network', 'slow-net', '--stop-grace-period', '60s', 'busybox', 'sleep', '600')
    const task = await until('slow runs', async () => (await runningBySlot(socket, 'slow')).get(1))
    const cid = task.Status.ContainerStatus?.ContainerID as string
    await docker('service', 'rm', 'slow')
    assert.equal((await docker('inspect', '--format', '{{.State.Running}}', cid)).trim(), 'true')
    assert.match(await dockerCli(socket, ['service', 'inspect', 'slow']).then((r) => r.stderr), /no such service: slow/)
    // the task is still listed, on its way out
    const tasks = (await request(socket, 'GET', '/tasks')).json() as Array<{ ID: string, DesiredState: string }>
    assert.equal(tasks.find((x) => x.ID === task.ID)?.DesiredState, 'remove')
    // the network goes from the API now, from the host when its last endpoint has left
    const rm = await dockerCli(socket, ['network', 'rm', 'slow-net'])
    assert.equal(rm.status, 0, rm.stderr)
    assert.doesNotMatch(await docker('network', 'ls', '--format', '{{.Name}}'), /slow-net/)
    assert.equal((await dockerCli(socket, ['network', 'inspect', netId])).status, 1)
    assert.ok(existsSync(join(dataRoot, 'network', 'networks', `${netId}.json`)), 'the record stays while a task container is on it')
    // a network of the same name can be made again at once
    await docker('network', 'create', '-d', 'overlay', 'slow-net')
    await docker('network', 'rm', 'slow-net')
    await docker('kill', cid)
    await until('the task and its container are gone', async () => {
      const left = (await request(socket, 'GET', '/tasks')).json() as Array<{ ID: string }>
      return !left.some((x) => x.ID === task.ID) && (await dockerCli(socket, ['inspect', cid])).status !== 0
    }, 30_000, 100)
    await until('the network record is gone', async () => !existsSync(join(dataRoot, 'network', 'networks', `${netId}.json`)), 10_000, 50)
  })

  await t.test('a network a service still names cannot go (swarmkit\'s rule)', async () => {
    await docker('network', 'create', '-d', 'overlay', 'used-net')
    await docker('service', 'create', '-d', '--name', 'zero', '--replicas', '0', '--network', 'used-net', 'busybox', 'sleep', '600')
    const rm = await dockerCli(socket, ['network', 'rm', 'used-net'])
    assert.notEqual(rm.status, 0)
    const zeroId = (await docker('service', 'inspect', '--format', '{{.ID}}', 'zero')).trim()
    assert.match(rm.stderr, new RegExp(`network [0-9a-f]{64} is in use by service ${zeroId}`))
    await docker('service', 'rm', 'zero')
    await docker('network', 'rm', 'used-net')
  })

  await t.test('the ingress network: made at init, kept while a service publishes through it', async () => {
    assert.match(await docker('network', 'ls', '--filter', 'driver=overlay', '--format', '{{.Name}} {{.Scope}}'), /^ingress swarm$/m)
    await docker('service', 'create', '-d', '--name', 'pub', '--replicas', '0', '-p', '0:80', 'busybox', 'sleep', '600')
    const pubId = (await docker('service', 'inspect', '--format', '{{.ID}}', 'pub')).trim()
    const rm = await request(socket, 'DELETE', '/networks/ingress')
    assert.equal(rm.status, 400, rm.text)
    assert.match(rm.text, new RegExp(`ingress network cannot be removed because service ${pubId} depends on it`))
    await docker('service', 'rm', 'pub')
    assert.equal((await request(socket, 'DELETE', '/networks/ingress')).status, 204)
    assert.doesNotMatch(await docker('network', 'ls', '--format', '{{.Name}}'), /^ingress$/m)
  })

  await t.test('stack rm --detach=false waits on the stack\'s tasks', async () => {
    const file = join(dir, 'stack.yml')
    writeFileSync(file, [
      'version: "3.8"',
      'services:',
      '  a:',
      '    image: busybox:latest',
      '    command: ["sleep", "600"]',
      '    stop_grace_period: 1s',
      '    deploy:',
      '      replicas: 2'
    ].join('\n') + '\n')
    await docker('stack', 'deploy', '-c', file, 'st')
    await until('st_a 2/2', async () => (await runningBySlot(socket, 'st_a')).size === 2)
    const rm = await dockerCli(socket, ['stack', 'rm', '--detach=false', 'st'])
    assert.equal(rm.status, 0, rm.stderr)
    // the CLI polls the stack's tasks (still listed, desired state remove) until they reach a terminal state
    // (its loop stops at the first ones it sees ended); the containers are removed right after
    await until('the stack\'s containers are gone', async () => (await docker('ps', '-aq', '--filter', 'label=com.docker.stack.namespace=st')).trim() === '', 30_000, 100)
    assert.doesNotMatch(await docker('network', 'ls', '--format', '{{.Name}}'), /st_default/)
  })
})
