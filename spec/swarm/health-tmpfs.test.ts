// Service health checks and tmpfs mounts: a task with a health check is `starting` until its container is healthy
// (as dockerd's executor shows it), an unhealthy task container is stopped and the task fails with dockerd's error and
// is replaced; `--mount type=tmpfs` with size and mode is mounted in the task container.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { startEngine, containerSkipReason, hasDockerCli, busyboxTar, request } from '../helpers/engine.js'
import { dockerOk, until, tasksOf } from './helpers.js'

const skip = containerSkipReason() ?? (hasDockerCli() ? null : 'the docker CLI is not installed')

test('service health checks and tmpfs mounts', { skip: skip ?? false }, async (t) => {
  const { socket } = await startEngine(t)
  const docker = dockerOk(socket)
  await docker('import', busyboxTar(), 'busybox:latest')
  await docker('swarm', 'init', '--advertise-addr', '127.0.0.1')

  await t.test('a task is starting until its container is healthy, then running', async () => {
    await docker('service', 'create', '-d', '--name', 'hok', '--stop-grace-period', '1s', '--health-cmd', 'test -e /tmp/ok',
      '--health-interval', '200ms', '--health-retries', '1000', 'busybox', 'sh', '-c', 'sleep 2; touch /tmp/ok; exec sleep 600')
    // the container runs (health: starting) while the task stays starting
    const starting = await until('the task starting with its container up', async () => {
      const x = (await tasksOf(socket, 'hok')).find((x) => x.Status.State === 'starting' && x.Status.ContainerStatus?.ContainerID !== undefined)
      const cid = x?.Status.ContainerStatus?.ContainerID
      if (x === undefined || cid === undefined || !/\(health: starting\)/.test(await docker('ps', '--filter', `id=${cid}`, '--format', '{{.Status}}'))) return undefined
      return x
    }, 30_000, 20)
    assert.equal(starting.DesiredState, 'running')
    const cid = starting.Status.ContainerStatus?.ContainerID as string
    assert.match(await docker('service', 'ps', 'hok'), /hok\.1\s+busybox:latest\s+\S+\s+Running\s+Starting/)
    assert.equal((await tasksOf(socket, 'hok')).find((x) => x.ID === starting.ID)?.Status.State, 'starting')
    const running = await until('running once healthy', async () => (await tasksOf(socket, 'hok')).find((x) => x.ID === starting.ID && x.Status.State === 'running'), 30_000)
    assert.equal((running as unknown as { Status: { Message: string } }).Status.Message, 'started')
    assert.match(await docker('ps', '--filter', `id=${cid}`, '--format', '{{.Status}}'), /\(healthy\)/)
    assert.equal((await tasksOf(socket, 'hok')).length, 1, 'the healthy task was not replaced')
    await docker('service', 'rm', 'hok')
  })

  await t.test('an unhealthy task container is stopped; the task fails with dockerd\'s error and is replaced', async () => {
    const created = await request(socket, 'POST', '/services/create', {
      body: {
        Name: 'hbad',
        TaskTemplate: {
          ContainerSpec: { Image: 'busybox', Args: ['sleep', '600'], StopGracePeriod: 1e9, Healthcheck: { Test: ['CMD', 'false'], Interval: 200e6, Retries: 1 } },
          RestartPolicy: { Condition: 'any', Delay: 0 }
        }
      }
    })
    assert.equal(created.status, 201, created.text)
    assert.equal((created.json() as { Warnings?: unknown }).Warnings ?? null, null, 'a health check is honoured: no warning')
    const failed = await until('a failed task', async () => (await tasksOf(socket, 'hbad')).find((x) => x.Status.State === 'failed'), 30_000)
    assert.match(failed.Status.Err ?? '', /^task: non-zero exit \((137|143)\): dockerexec: unhealthy container$/)
    assert.equal((failed as unknown as { Status: { Message: string } }).Status.Message, 'starting')
    assert.equal(failed.DesiredState, 'shutdown')
    const cid = failed.Status.ContainerStatus?.ContainerID as string
    assert.equal((await docker('inspect', '--format', '{{.State.Running}}', cid)).trim(), 'false')
    await until('a replacement in slot 1', async () => (await tasksOf(socket, 'hbad')).some((x) => x.Slot === 1 && x.ID !== failed.ID && x.DesiredState === 'running'), 30_000)
    await docker('service', 'rm', 'hbad')
  })

  await t.test('tmpfs mounts with size and mode in the task container', async () => {
    await docker('service', 'create', '-d', '--name', 'tmp', '--stop-grace-period', '1s',
      '--mount', 'type=tmpfs,dst=/scratch,tmpfs-size=1m,tmpfs-mode=1770', 'busybox', 'sleep', '600')
    const task = await until('running', async () => (await tasksOf(socket, 'tmp')).find((x) => x.Status.State === 'running'), 30_000)
    const svc = (await request(socket, 'GET', '/services/tmp')).json() as { Spec: { TaskTemplate: { ContainerSpec: { Mounts: unknown[] } } } }
    assert.deepEqual(svc.Spec.TaskTemplate.ContainerSpec.Mounts, [{ Type: 'tmpfs', Target: '/scratch', TmpfsOptions: { SizeBytes: 1048576, Mode: 0o1770 } }])
    const cid = task.Status.ContainerStatus?.ContainerID as string
    const line = (await docker('exec', cid, 'grep', ' /scratch ', '/proc/mounts')).trim()
    assert.match(line, /^tmpfs \/scratch tmpfs /)
    assert.match(line, /size=1024k/)
    assert.match(line, /mode=1770/)
    assert.equal((await docker('exec', cid, 'stat', '-c', '%a', '/scratch')).trim(), '1770')
    await docker('exec', cid, 'sh', '-c', 'echo hi > /scratch/f')
    const mounts = JSON.parse(await docker('inspect', '--format', '{{json .Mounts}}', cid)) as Array<{ Type: string, Destination: string }>
    assert.ok(mounts.some((m) => m.Type === 'tmpfs' && m.Destination === '/scratch'), JSON.stringify(mounts))
    await docker('service', 'rm', 'tmp')
  })
})
