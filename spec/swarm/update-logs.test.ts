// Service logs (multiplexed, with task details) and rolling updates: UpdateConfig parallelism/order/failure action,
// `docker service rollback`, and the automatic rollback on failure.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { startEngine, containerSkipReason, hasDockerCli, dockerCli, busyboxTar, request } from '../helpers/engine.js'
import { dockerOk, until, tasksOf, runningBySlot, type WireTask } from './helpers.js'
import { frames } from '../helpers/frames.js'

const skip = containerSkipReason() ?? (hasDockerCli() ? null : 'the docker CLI is not installed')

interface Svc { Spec: { TaskTemplate: { ContainerSpec: { Image: string } } }, PreviousSpec?: unknown, UpdateStatus?: { State: string, Message: string } }

test('service logs and rolling updates', { skip: skip ?? false }, async (t) => {
  const { socket } = await startEngine(t)
  const docker = dockerOk(socket)
  await docker('import', busyboxTar(), 'busybox:latest')
  await docker('tag', 'busybox:latest', 'busybox:v2')
  await docker('swarm', 'init', '--advertise-addr', '127.0.0.1')
  const image = async (name: string): Promise<string[]> => (await tasksOf(socket, name)).filter((x) => x.DesiredState === 'running').map((x) => x.Status.State + ':' + ((x as unknown as { Spec: { ContainerSpec: { Image: string } } }).Spec.ContainerSpec.Image))
  const svc = async (name: string): Promise<Svc> => (await request(socket, 'GET', `/services/${name}`)).json() as Svc

  await t.test('docker service logs: every task\'s lines, prefixed with the task; the API multiplexes with details', async () => {
    await docker('service', 'create', '-d', '--name', 'talk', '--replicas', '2', '--stop-grace-period', '1s', 'busybox', 'sh', '-c', 'echo out-$HOSTNAME; echo err-line >&2; sleep 600')
    const running = await until('2 running', async () => { const m = await runningBySlot(socket, 'talk'); return m.size === 2 ? m : undefined })
    await until('both wrote', async () => (await dockerCli(socket, ['service', 'logs', 'talk'])).stdout.split('\n').filter((l) => l.includes('out-')).length === 2)
    const r = await dockerCli(socket, ['service', 'logs', 'talk'])
    for (const [slot, task] of running) {
      assert.match(r.stdout, new RegExp(`^talk\\.${slot}\\.${task.ID.slice(0, 12)}@\\S+\\s+\\| out-[0-9a-f]{12}$`, 'm'))
      assert.match(r.stderr, new RegExp(`^talk\\.${slot}\\.${task.ID.slice(0, 12)}@\\S+\\s+\\| err-line$`, 'm'))
    }
    const raw = await request(socket, 'GET', '/v1.45/services/talk/logs?stdout=1&stderr=1&details=1')
    assert.equal(raw.status, 200)
    assert.equal(raw.headers['content-type'], 'application/vnd.docker.multiplexed-stream')
    const fr = frames(raw.body)
    assert.equal(fr.length, 4)
    const t1 = running.get(1) as WireTask
    assert.ok(fr.some(([s, text]) => s === 2 && text === `com.docker.swarm.node.id=${t1.NodeID},com.docker.swarm.service.id=${t1.ServiceID},com.docker.swarm.task.id=${t1.ID} err-line\n`), JSON.stringify(fr))
    const one = await request(socket, 'GET', `/tasks/${t1.ID}/logs?stdout=1`)
    assert.deepEqual(frames(one.body).map(([, text]) => text.startsWith('out-')), [true])
    assert.equal((await request(socket, 'GET', '/services/nope/logs?stdout=1')).status, 404)
    await docker('service', 'rm', 'talk')
  })

  await t.test('update --image rolls one slot at a time (stop-first), then UpdateStatus completed', async () => {
    await docker('service', 'create', '-d', '--name', 'roll', '--replicas', '3', '--update-monitor', '200ms', '--rollback-monitor', '200ms', '--update-parallelism', '1', '--stop-grace-period', '1s', 'busybox', 'sleep', '600')
    await until('3 running', async () => (await runningBySlot(socket, 'roll')).size === 3)
    // watch: never more than one slot being replaced, never two live tasks in a slot
    let watching = true
    let maxOld = 0
    const watch = (async () => {
      while (watching) {
        const ts = await tasksOf(socket, 'roll')
        const perSlot = new Map<number, number>()
        for (const x of ts) if (x.Status.State === 'running') perSlot.set(x.Slot as number, (perSlot.get(x.Slot as number) ?? 0) + 1)
        for (const v of perSlot.values()) maxOld = Math.max(maxOld, v)
        await new Promise((resolve) => setTimeout(resolve, 20))
      }
    })()
    await docker('service', 'update', '-d', '--image', 'busybox:v2', 'roll')
    await until('all on v2', async () => { const s = await svc('roll'); return s.UpdateStatus?.State === 'completed' }, 90_000)
    watching = false
    await watch
    assert.equal(maxOld, 1, 'stop-first: one running task per slot at any time')
    assert.deepEqual((await image('roll')).sort(), ['running:busybox:v2', 'running:busybox:v2', 'running:busybox:v2'])
    assert.equal((await svc('roll')).UpdateStatus?.Message, 'update completed')
    assert.match(await docker('service', 'ps', 'roll'), /\\_ roll\.1\s+busybox:latest\s+\S+\s+Shutdown\s+Shutdown/)
  })

  await t.test('docker service rollback returns to the previous spec', async () => {
    await docker('service', 'rollback', '-d', 'roll')
    await until('rolled back', async () => (await svc('roll')).UpdateStatus?.State === 'rollback_completed', 90_000)
    assert.equal((await svc('roll')).Spec.TaskTemplate.ContainerSpec.Image, 'busybox:latest')
    assert.deepEqual((await image('roll')).sort(), ['running:busybox:latest', 'running:busybox:latest', 'running:busybox:latest'])
  })

  await t.test('start-first: the new task runs before the old one stops', async () => {
    await docker('service', 'update', '-d', '--update-order', 'start-first', '--update-parallelism', '0', '--env-add', 'X=1', 'roll')
    let overlap = false
    await until('completed', async () => {
      const ts = await tasksOf(socket, 'roll')
      const perSlot = new Map<number, number>()
      for (const x of ts) if (x.Status.State === 'running') perSlot.set(x.Slot as number, (perSlot.get(x.Slot as number) ?? 0) + 1)
      if ([...perSlot.values()].some((v) => v > 1)) overlap = true
      return (await svc('roll')).UpdateStatus?.State === 'completed'
    }, 30_000, 10)
    assert.ok(overlap, 'old and new ran side by side')
    assert.equal((await runningBySlot(socket, 'roll')).size, 3)
  })

  await t.test('a failing update pauses (failure action pause), or rolls back (failure action rollback)', async () => {
    await docker('service', 'update', '-d', '--update-order', 'stop-first', '--update-parallelism', '1', '--update-failure-action', 'pause', '--update-monitor', '2s', '--restart-delay', '10s', '--args', 'sh -c "exit 1"', 'roll')
    const paused = await until('paused', async () => { const s = await svc('roll'); return s.UpdateStatus?.State === 'paused' ? s : undefined }, 90_000)
    assert.match(paused.UpdateStatus?.Message ?? '', /^update paused due to failure or early termination of task [0-9a-z]{25}$/)
    // only the first slot was touched
    assert.equal((await runningBySlot(socket, 'roll')).size, 2)
    await docker('service', 'rollback', '-d', 'roll')
    await until('rolled back', async () => (await svc('roll')).UpdateStatus?.State === 'rollback_completed', 60_000)
    await until('3 running', async () => (await runningBySlot(socket, 'roll')).size === 3)
    await docker('service', 'update', '-d', '--update-failure-action', 'rollback', '--update-order', 'stop-first', '--update-parallelism', '1', '--update-monitor', '2s', '--args', 'sh -c "exit 1"', 'roll')
    const back = await until('auto rollback', async () => { const s = await svc('roll'); return s.UpdateStatus?.State === 'rollback_completed' ? s : undefined }, 150_000)
    assert.match(back.UpdateStatus?.Message ?? '', /rollback completed/)
    assert.deepEqual((await request(socket, 'GET', '/services/roll')).json() !== null, true)
    await until('3 running', async () => (await runningBySlot(socket, 'roll')).size === 3)
    await docker('service', 'rm', 'roll')
  })
})
