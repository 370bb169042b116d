// Swarm services hit by concurrent API calls and by a daemon kill -9 at random moments, against one daemon process:
// every reply is a documented status (never a 5xx, never a hang, the daemon alive), and afterwards every service is
// at its spec (its number of running tasks, slots 1..N, no slot twice), no task container of a removed service is
// left, and the service's inspect, the task list and the containers agree.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { join } from 'node:path'
import { existsSync, readdirSync } from 'node:fs'
import { containerSkipReason, request, dockerCli, hasDockerCli, type Reply } from '../helpers/engine.js'
import { daemonProcessOfFile } from '../helpers/daemon-process.js'
import { freeTcpPort } from '../helpers/net.js'
import { until, tasksOf, runningBySlot } from './helpers.js'

const skip = containerSkipReason()
if (skip !== null) process.stdout.write(`# skipping swarm chaos tests: ${skip}\n`)

const daemon = daemonProcessOfFile(skip, {
  ready: async ({ sock }) => {
    assert.equal((await request(sock, 'POST', '/images/busybox:latest/tag?repo=busybox&tag=alt')).status, 201)
    const r = await request(sock, 'POST', '/swarm/init', { body: { ListenAddr: '127.0.0.1:2377', AdvertiseAddr: '127.0.0.1' } })
    assert.equal(r.status, 200, r.text)
  }
})
const { call, assertAlive } = daemon

function expectOneOf (r: Reply, statuses: number[], what: string): void {
  assert.ok(statuses.includes(r.status), `${what}: ${r.status} ${r.text}`)
  if (r.status >= 400) assert.match(r.text, /"message":"[^"]+"/, what)
}

interface Svc { ID: string, Version: { Index: number }, Spec: Record<string, any> }

function serviceSpec (name: string, replicas: number, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    Name: name,
    TaskTemplate: {
      ContainerSpec: { Image: 'busybox:latest', Command: ['sleep', '600'], StopGracePeriod: 1_000_000_000 },
      RestartPolicy: { Condition: 'any', Delay: 0 },
      ...(extra.TaskTemplate as Record<string, unknown> ?? {})
    },
    Mode: { Replicated: { Replicas: replicas } },
    ...Object.fromEntries(Object.entries(extra).filter(([k]) => k !== 'TaskTemplate'))
  }
}

async function inspect (ref: string): Promise<Svc | undefined> {
  const r = await call('GET', `/services/${ref}`)
  if (r.status === 404) return undefined
  assert.equal(r.status, 200, r.text)
  return r.json() as Svc
}

/** An attachable overlay network (201), its ID. */
async function createOverlay (name: string, labels: Record<string, string> = {}): Promise<string> {
  const r = await call('POST', '/networks/create', { Name: name, Driver: 'overlay', Attachable: true, ...(Object.keys(labels).length > 0 ? { Labels: labels } : {}) })
  assert.equal(r.status, 201, r.text)
  return (r.json() as { Id: string }).Id
}

async function createService (name: string, replicas: number, extra: Record<string, unknown> = {}): Promise<string> {
  const r = await call('POST', '/services/create', serviceSpec(name, replicas, extra))
  assert.equal(r.status, 201, r.text)
  return (r.json() as { ID: string }).ID
}

interface Ctr { Id: string, State: string, Labels: Record<string, string> }
async function taskContainers (): Promise<Ctr[]> {
  const r = await call('GET', `/containers/json?all=1&filters=${encodeURIComponent(JSON.stringify({ label: ['com.docker.swarm.task.id'] }))}`)
  return r.json() as Ctr[]
}

/**
 * Every service at its spec: N running tasks in slots 1..N (one each), each task's container running, no other
 * running task container; no container or task of a service that is gone.
 */
async function assertConverged (what: string, ms = 45_000): Promise<void> {
  let last = ''
  await until(`${what}: converged (${last})`, async () => {
    const services = (await call('GET', '/services')).json() as Svc[]
    const ids = new Set(services.map((s) => s.ID))
    const wanted = new Set<string>()
    for (const s of services) {
      const n = s.Spec.Mode?.Replicated?.Replicas as number
      let running: Map<number, { Status: { ContainerStatus?: { ContainerID: string } } }>
      try { running = await runningBySlot(daemon.sock, s.ID) } catch (err) { last = (err as Error).message; return false }
      const slots = [...running.keys()].sort((a, b) => a - b)
      const want = Array.from({ length: n }, (_v, i) => i + 1)
      if (JSON.stringify(slots) !== JSON.stringify(want)) { last = `${s.Spec.Name as string}: slots ${JSON.stringify(slots)}, want ${n}`; return false }
      for (const t of running.values()) wanted.add(t.Status.ContainerStatus?.ContainerID ?? '')
    }
    const all = await taskContainers()
    const stray = all.filter((c) => !ids.has(c.Labels['com.docker.swarm.service.id'] ?? ''))
    if (stray.length > 0) { last = `containers of removed services: ${stray.map((c) => `${c.Labels['com.docker.swarm.service.name'] ?? ''}/${c.State}`).join(' ')}`; return false }
    const runningCtrs = all.filter((c) => c.State === 'running')
    const extra = runningCtrs.filter((c) => !wanted.has(c.Id))
    if (extra.length > 0) { last = `running task containers with no running task: ${extra.map((c) => c.Labels['com.docker.swarm.task.name'] ?? c.Id).join(' ')}`; return false }
    if (runningCtrs.length !== wanted.size) { last = `${runningCtrs.length} running task containers for ${wanted.size} running tasks`; return false }
    const allTasks = (await call('GET', '/tasks')).json() as Array<{ ID: string, ServiceID: string }>
    const orphanTasks = allTasks.filter((t) => !ids.has(t.ServiceID))
    if (orphanTasks.length > 0) { last = `${orphanTasks.length} tasks of removed services`; return false }
    // the secret and config files of tasks that are gone
    const taskIds = new Set(allTasks.map((t) => t.ID))
    const files = join(daemon.dir, 'run', 'swarm-files')
    const strayFiles = existsSync(files) ? readdirSync(files).filter((f) => !taskIds.has(f)) : []
    if (strayFiles.length > 0) { last = `secret/config files of tasks that are gone: ${strayFiles.join(' ')}`; return false }
    // the listing's counts agree
    const listed = (await call('GET', '/services?status=true')).json() as Array<Svc & { ServiceStatus: { RunningTasks: number, DesiredTasks: number } }>
    for (const s of listed) {
      if (s.ServiceStatus.RunningTasks !== s.ServiceStatus.DesiredTasks) { last = `${s.Spec.Name as string}: status ${JSON.stringify(s.ServiceStatus)}`; return false }
    }
    return true
  }, ms, 250).catch((err: Error) => { throw new Error(`${err.message}: ${last}\n${daemon.stderr.split('\n').filter((l) => !l.includes('level=info')).slice(-30).join('\n')}`) })
}

async function removeAll (): Promise<void> {
  for (const s of (await call('GET', '/services')).json() as Svc[]) await call('DELETE', `/services/${s.ID}`)
  await assertConverged('all removed')
}

test('one service hit by update, scale, rollback and rm at once', { skip: skip ?? false, timeout: 120_000 }, async () => {
  for (let round = 0; round < 3; round++) {
    const id = await createService(`hit${round}`, 2)
    await until('2 running', async () => (await runningBySlot(daemon.sock, id)).size === 2, 30_000)
    const s = await inspect(id) as Svc
    const v = s.Version.Index
    const env = { ...s.Spec, TaskTemplate: { ...s.Spec.TaskTemplate, ContainerSpec: { ...s.Spec.TaskTemplate.ContainerSpec, Env: [`R=${round}`] } } }
    const scaled = { ...s.Spec, Mode: { Replicated: { Replicas: 4 } } }
    const calls = [
      call('POST', `/services/${id}/update?version=${v}`, env).then((r) => { expectOneOf(r, [200, 404, 409, 400], 'update env') }),
      call('POST', `/services/${id}/update?version=${v}`, scaled).then((r) => { expectOneOf(r, [200, 404, 409, 400], 'scale') }),
      call('POST', `/services/${id}/update?version=${v}&rollback=previous`, s.Spec).then((r) => { expectOneOf(r, [200, 400, 404, 409], 'rollback') }),
      new Promise((resolve) => setTimeout(resolve, round * 150)).then(async () => await call('DELETE', `/services/${id}`)).then((r) => { expectOneOf(r, [200, 404], 'rm') }),
      call('DELETE', `/services/${id}`).then((r) => { expectOneOf(r, [200, 404], 'rm 2') })
    ]
    await Promise.all(calls)
    await assertAlive(`round ${round}`)
    assert.equal(await inspect(id), undefined)
    await assertConverged(`round ${round}`)
  }
})

test('one service hit by image, env, replica updates and rollbacks at once (no rm): it converges to the winner', { skip: skip ?? false, timeout: 120_000 }, async () => {
  const id = await createService('many', 2, { UpdateConfig: { Parallelism: 1, Delay: 0, Order: 'start-first', FailureAction: 'rollback' } })
  await until('2 running', async () => (await runningBySlot(daemon.sock, id)).size === 2, 30_000)
  for (let round = 0; round < 6; round++) {
    let rs: Reply[] = []
    // the previous round's rolling update may still move the service's version (its UpdateStatus), as swarmkit's
    // does: then every update of this round is "out of sequence", and the round is asked again at the new version
    for (let attempt = 0; attempt < 5; attempt++) {
      const s = await inspect(id) as Svc
      const v = s.Version.Index
      const cs = s.Spec.TaskTemplate.ContainerSpec
      const variants = [
        { ...s.Spec, TaskTemplate: { ...s.Spec.TaskTemplate, ContainerSpec: { ...cs, Image: round % 2 === 0 ? 'busybox:alt' : 'busybox:latest' } } },
        { ...s.Spec, TaskTemplate: { ...s.Spec.TaskTemplate, ContainerSpec: { ...cs, Env: [`R=${round}`] } } },
        { ...s.Spec, Mode: { Replicated: { Replicas: 1 + (round % 4) } } }
      ]
      rs = await Promise.all([
        ...variants.map(async (b) => await call('POST', `/services/${id}/update?version=${v}`, b)),
        call('POST', `/services/${id}/update?version=${v}&rollback=previous`, s.Spec)
      ])
      for (const r of rs) expectOneOf(r, [200, 400, 409], `round ${round}`)
      if (!rs.every((r) => r.status === 409 && r.text.includes('update out of sequence'))) break
    }
    assert.ok(rs.filter((r) => r.status === 200).length >= 1, rs.map((r) => `${r.status} ${r.text}`).join('\n'))
    // the next round sometimes starts before this one's update is over
    if (round % 2 === 1) await assertConverged(`round ${round}`)
  }
  await assertAlive('many')
  await assertConverged('many')
  await removeAll()
})

test('two services created with one name at once: one 201, the others 409', { skip: skip ?? false, timeout: 60_000 }, async () => {
  const rs = await Promise.all(Array.from({ length: 5 }, async () => await call('POST', '/services/create', serviceSpec('twin', 1))))
  assert.deepEqual(rs.map((r) => r.status).sort(), [201, 409, 409, 409, 409], rs.map((r) => r.text).join('\n'))
  for (const r of rs.filter((x) => x.status === 409)) assert.match(r.text, /name conflicts with an existing object: service twin already exists/)
  assert.equal(((await call('GET', '/services')).json() as Svc[]).filter((s) => s.Spec.Name === 'twin').length, 1)
  await assertConverged('twin')
  await removeAll()
})

test('a task container force-removed while its service updates', { skip: skip ?? false, timeout: 120_000 }, async () => {
  const id = await createService('rmf', 3, { UpdateConfig: { Parallelism: 1, Delay: 0, Order: 'stop-first' } })
  await until('3 running', async () => (await runningBySlot(daemon.sock, id)).size === 3, 30_000)
  for (let round = 0; round < 5; round++) {
    const s = await inspect(id) as Svc
    const order = round % 2 === 0 ? 'stop-first' : 'start-first'
    const spec = { ...s.Spec, UpdateConfig: { Parallelism: 1, Delay: 0, Order: order }, TaskTemplate: { ...s.Spec.TaskTemplate, ContainerSpec: { ...s.Spec.TaskTemplate.ContainerSpec, Env: [`R=${round}`] } } }
    const r = await call('POST', `/services/${id}/update?version=${s.Version.Index}${round === 3 ? '&rollback=previous' : ''}`, spec)
    assert.equal(r.status, 200, r.text)
    for (let i = 0; i < 4; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100 + Math.floor(Math.random() * 200)))
      const ctrs = (await taskContainers()).filter((c) => c.State === 'running' && c.Labels['com.docker.swarm.service.id'] === id)
      const victim = ctrs[Math.floor(Math.random() * ctrs.length)]
      if (victim === undefined) continue
      expectOneOf(await call('DELETE', `/containers/${victim.Id}?force=1`), [204, 404, 409], 'rm -f')
    }
    await assertAlive(`round ${round}`)
    await assertConverged(`round ${round}`)
    const tasks = await tasksOf(daemon.sock, id)
    assert.ok(tasks.some((t) => t.DesiredState === 'running'))
  }
  await removeAll()
})

test('a network or secret removed while a service using it is created', { skip: skip ?? false, timeout: 120_000 }, async () => {
  for (let round = 0; round < 8; round++) {
    const netId = await createOverlay(`n${round}`)
    const sec = await call('POST', '/secrets/create', { Name: `s${round}`, Data: Buffer.from('pw').toString('base64') })
    assert.equal(sec.status, 201, sec.text)
    const secId = (sec.json() as { ID: string }).ID
    const spec = serviceSpec(`u${round}`, 1, {
      TaskTemplate: {
        ContainerSpec: { Image: 'busybox:latest', Command: ['sleep', '600'], StopGracePeriod: 1_000_000_000, Secrets: [{ SecretName: `s${round}`, SecretID: secId, File: { Name: 'pw', UID: '0', GID: '0', Mode: 0o444 } }] },
        Networks: [{ Target: netId }]
      }
    })
    // the removals start first; the create comes 0..~30 ms later (while the network's removal is under way)
    const [nr, sr, c] = await Promise.all([
      call('DELETE', `/networks/${netId}`),
      call('DELETE', `/secrets/${secId}`),
      new Promise((resolve) => setTimeout(resolve, round * 4)).then(async () => await call('POST', '/services/create', spec))
    ])
    expectOneOf(c, [201, 400, 404], 'create')
    expectOneOf(nr, [204, 403, 409, 400], 'network rm')
    expectOneOf(sr, [204, 409, 400], 'secret rm')
    if (c.status === 201) {
      // the service exists: so must what it uses
      assert.notEqual(nr.status, 204, `network removed under service: ${nr.text}`)
      assert.notEqual(sr.status, 204, `secret removed under service: ${sr.text}`)
      await assertConverged(`round ${round}`)
    }
    await assertAlive(`round ${round}`)
    await removeAll()
    await call('DELETE', `/networks/${netId}`)
    await call('DELETE', `/secrets/${secId}`)
  }
})

async function assertNoAttachments (netId: string, what: string): Promise<void> {
  await until(`${what}: nothing left on network ${netId}`, async () => {
    const r = await call('GET', `/networks/${netId}`)
    if (r.status === 404) return true
    const n = r.json() as { Containers?: Record<string, unknown> }
    return Object.keys(n.Containers ?? {}).length === 0
  }, 20_000, 250)
}

test('the daemon killed -9 at random moments during create, scale, update and rm: the services converge', { skip: skip ?? false, timeout: 420_000 }, async () => {
  const netId = await createOverlay('knet')
  const sec = await call('POST', '/secrets/create', { Name: 'ksec', Data: Buffer.from('pw').toString('base64') })
  assert.equal(sec.status, 201, sec.text)
  const secId = (sec.json() as { ID: string }).ID
  // a bystander: re-adopted across every kill
  await createService('bystander', 2)
  // (a port free on the host now: another test run on this host may publish ports too)
  const port = await freeTcpPort()
  const k1 = (replicas: number): Record<string, unknown> => serviceSpec('k1', replicas, {
    TaskTemplate: {
      ContainerSpec: { Image: 'busybox:latest', Command: ['sleep', '600'], StopGracePeriod: 1_000_000_000, Secrets: [{ SecretName: 'ksec', SecretID: secId, File: { Name: 'pw', UID: '0', GID: '0', Mode: 0o444 } }] },
      Networks: [{ Target: netId }]
    },
    EndpointSpec: { Mode: 'dnsrr', Ports: [{ Protocol: 'tcp', TargetPort: 80, PublishedPort: port }] }
  })
  const update = async (change: (spec: Record<string, any>) => Record<string, unknown>): Promise<void> => {
    const s = await inspect('k1'); if (s === undefined) return
    await call('POST', `/services/k1/update?version=${s.Version.Index}`, change(s.Spec), 30_000, true)
  }
  const actions: Array<[string, () => Promise<void>]> = [
    ['create', async () => { await call('POST', '/services/create', k1(3), 30_000, true) }],
    ['scale up', async () => { await update((s) => ({ ...s, Mode: { Replicated: { Replicas: 5 } } })) }],
    ['update start-first', async () => { await update((s) => ({ ...s, UpdateConfig: { Parallelism: 2, Order: 'start-first' }, TaskTemplate: { ...s.TaskTemplate, ContainerSpec: { ...s.TaskTemplate.ContainerSpec, Env: [`A=${Math.random()}`] } } })) }],
    ['scale down', async () => { await update((s) => ({ ...s, Mode: { Replicated: { Replicas: 2 } } })) }],
    ['update stop-first', async () => { await update((s) => ({ ...s, UpdateConfig: { Parallelism: 1, Order: 'stop-first' }, TaskTemplate: { ...s.TaskTemplate, ContainerSpec: { ...s.TaskTemplate.ContainerSpec, Env: [`A=${Math.random()}`] } } })) }],
    ['rm', async () => { await call('DELETE', '/services/k1', undefined, 30_000, true) }]
  ]
  const rounds = Number(process.env.SWARM_CHAOS_ROUNDS ?? 2)
  for (let round = 0; round < rounds; round++) {
    for (const [what, act] of actions) {
      const delay = Math.floor(Math.random() * 500)
      const label = `round ${round}: ${what} (killed after ${delay} ms)`
      const acting = act()
      await new Promise((resolve) => setTimeout(resolve, delay))
      await daemon.kill9()
      await acting.catch(() => {})
      await daemon.start()
      if (round % 2 === 1) {
        // and again while the restart recovers the tasks
        await new Promise((resolve) => setTimeout(resolve, Math.floor(Math.random() * 300)))
        await daemon.kill9()
        await daemon.start()
      }
      await assertAlive(label)
      await assertConverged(label)
      if (what === 'rm' && await inspect('k1') !== undefined) await call('DELETE', '/services/k1')
      if (what === 'rm') {
        await assertConverged(label)
        await assertNoAttachments(netId, label)
        await until(`${label}: port ${port} closed`, async () => {
          const { connect } = await import('node:net')
          return await new Promise<boolean>((resolve) => {
            const c = connect({ host: '127.0.0.1', port })
            c.once('connect', () => { c.destroy(); resolve(false) })
            c.once('error', () => { resolve(true) })
          })
        }, 10_000, 200)
      }
    }
  }
  await removeAll()
  expectOneOf(await call('DELETE', `/networks/${netId}`), [204], 'network rm')
  expectOneOf(await call('DELETE', `/secrets/${secId}`), [204], 'secret rm')
})

test('a stack removed (its services, then its network at once) with the daemon killed -9 right after: nothing of it is left', { skip: skip ?? false, timeout: 240_000 }, async () => {
  const { execFileSync } = await import('node:child_process')
  const links = (): string[] => execFileSync('ip', ['-o', 'link', 'show'], { encoding: 'utf8' }).split('\n').map((l) => l.split(': ')[1]?.split('@')[0] ?? '').filter((n) => n.startsWith(daemon.netOpts.networkPrefix)).sort()
  const baseline = links()
  for (let round = 0; round < 4; round++) {
    const netId = await createOverlay(`st${round}_default`, { 'com.docker.stack.namespace': `st${round}` })
    const ids = [
      await createService(`st${round}_a`, 2, { TaskTemplate: { Networks: [{ Target: netId, Aliases: ['a'] }] } }),
      await createService(`st${round}_b`, 1, { TaskTemplate: { Networks: [{ Target: netId, Aliases: ['b'] }] } })
    ]
    await until('3 running', async () => (await runningBySlot(daemon.sock, ids[0] as string)).size === 2 && (await runningBySlot(daemon.sock, ids[1] as string)).size === 1, 30_000)
    const delay = Math.floor(Math.random() * 300)
    const removing = (async () => {
      for (const id of ids) await call('DELETE', `/services/${id}`, undefined, 30_000, true)
      await call('DELETE', `/networks/${netId}`, undefined, 30_000, true)
    })()
    await new Promise((resolve) => setTimeout(resolve, delay))
    await daemon.kill9()
    await removing.catch(() => {})
    await daemon.start()
    const label = `round ${round} (killed after ${delay} ms)`
    await assertAlive(label)
    // what the kill cut short is asked again (as a client would)
    for (const id of ids) expectOneOf(await call('DELETE', `/services/${id}`), [200, 404], `${label}: service rm again`)
    await until(`${label}: network rm again`, async () => { const r = await call('DELETE', `/networks/${netId}`); expectOneOf(r, [204, 404, 403], 'network rm'); return r.status !== 403 }, 20_000, 250)
    await assertConverged(label)
    assert.equal((await call('GET', `/networks/${netId}`)).status, 404)
    await until(`${label}: the network's links gone (${links().join(' ')} vs ${baseline.join(' ')})`, async () => JSON.stringify(links()) === JSON.stringify(baseline), 20_000, 250)
  }
})

test('task containers no task record names (made before a crash, their ID never recorded) go with their task, or as strays', { skip: skip ?? false, timeout: 60_000 }, async () => {
  // a task that cannot be placed (pending, no container of its own), and a container carrying its label as one made
  // by a start the daemon was killed in, before it recorded the container's ID
  const id = await createService('ghost', 1, { TaskTemplate: { Placement: { Constraints: ['node.labels.nowhere==1'] } } })
  let tasks: Awaited<ReturnType<typeof tasksOf>> = []
  await until('a pending task', async () => { tasks = await tasksOf(daemon.sock, id); return tasks.some((t) => t.Status.State === 'pending') }, 20_000, 100)
  const made = async (task: string): Promise<string> => {
    const r = await call('POST', '/containers/create', { Image: 'busybox:latest', Cmd: ['sleep', '600'], Labels: { 'com.docker.swarm.task.id': task, 'com.docker.swarm.service.id': id, 'com.docker.swarm.service.name': 'ghost' } })
    assert.equal(r.status, 201, r.text)
    return (r.json() as { Id: string }).Id
  }
  const ofTask = await made(tasks[0]?.ID as string)
  // and one whose task is gone already (forgotten while the daemon was down)
  const stray = await made('0123456789abcdefghijklmno')
  expectOneOf(await call('DELETE', `/services/${id}`), [200], 'rm')
  const left = async (): Promise<string[]> => (await taskContainers()).map((c) => c.Id).filter((c) => c === ofTask || c === stray)
  await until('both containers removed', async () => (await left()).length === 0, 20_000, 250)
    .catch(async (err: Error) => { throw new Error(`${err.message}: ${(await left()).map((c) => c === ofTask ? 'the task\'s' : 'the stray').join(', ')} left`) })
  await assertConverged('ghost removed')
})

test('random concurrent updates, scales, rm -f of task containers and rm, with a kill -9 in the middle: converged after each restart', { skip: skip ?? false, timeout: 400_000 }, async () => {
  const rounds = Number(process.env.SWARM_CHAOS_ROUNDS ?? 3)
  const names = ['r1', 'r2']
  const pick = <T>(xs: T[]): T => xs[Math.floor(Math.random() * xs.length)] as T
  const op = async (): Promise<void> => {
    const name = pick(names)
    const s = await inspect(name)
    const kind = Math.floor(Math.random() * 6)
    if (s === undefined) { await call('POST', '/services/create', serviceSpec(name, 1 + Math.floor(Math.random() * 3), { UpdateConfig: { Parallelism: 1, Order: pick(['start-first', 'stop-first']) } }), 30_000, true); return }
    const cs = s.Spec.TaskTemplate.ContainerSpec
    if (kind === 0) await call('POST', `/services/${name}/update?version=${s.Version.Index}`, { ...s.Spec, Mode: { Replicated: { Replicas: Math.floor(Math.random() * 5) } } }, 30_000, true)
    else if (kind === 1) await call('POST', `/services/${name}/update?version=${s.Version.Index}`, { ...s.Spec, TaskTemplate: { ...s.Spec.TaskTemplate, ContainerSpec: { ...cs, Env: [`X=${Math.random()}`] } } }, 30_000, true)
    else if (kind === 2) await call('POST', `/services/${name}/update?version=${s.Version.Index}&rollback=previous`, s.Spec, 30_000, true)
    else if (kind === 3) await call('DELETE', `/services/${name}`, undefined, 30_000, true)
    else {
      const ctrs = (await taskContainers()).filter((c) => c.State === 'running' && c.Labels['com.docker.swarm.service.id'] === s.ID)
      const victim = ctrs.length > 0 ? pick(ctrs) : undefined
      if (victim !== undefined) await call(kind === 4 ? 'DELETE' : 'POST', kind === 4 ? `/containers/${victim.Id}?force=1` : `/containers/${victim.Id}/kill`, undefined, 30_000, true)
    }
  }
  for (let round = 0; round < rounds; round++) {
    let stop = false
    const workers = Array.from({ length: 3 }, async () => { while (!stop) await op().catch((err: Error) => { if (!stop) throw err }) })
    const delay = 300 + Math.floor(Math.random() * 1200)
    await new Promise((resolve) => setTimeout(resolve, delay))
    if (round % 2 === 0) {
      stop = true
      await daemon.kill9()
      await Promise.allSettled(workers)
      await daemon.start()
    } else {
      stop = true
      await Promise.all(workers)
    }
    const label = `round ${round} (${round % 2 === 0 ? 'killed' : 'stopped'} after ${delay} ms)`
    await assertAlive(label)
    await assertConverged(label)
  }
  await removeAll()
})

test('the docker CLI: concurrent update, scale and rollback waiting for convergence (--detach=false) all finish', { skip: skip ?? (hasDockerCli() ? false : 'the docker CLI is not installed'), timeout: 240_000 }, async () => {
  const run = async (...args: string[]): Promise<{ status: number, stdout: string, stderr: string }> => {
    const r = await dockerCli(daemon.sock, args)
    assert.notEqual(r.status, -1, `docker ${args.join(' ')}: killed after 60 s (a hang): ${r.stdout} ${r.stderr}`)
    assert.doesNotMatch(r.stderr, /\b5\d\d\b|Internal Server Error/, `docker ${args.join(' ')}`)
    return r
  }
  const created = await Promise.all([1, 2, 3].map(async () => await run('service', 'create', '-d', '--name', 'cli', '--replicas', '2', '--stop-grace-period', '1s', '--update-parallelism', '1', '--update-delay', '0s', 'busybox', 'sleep', '600')))
  assert.deepEqual(created.map((r) => r.status).sort(), [0, 1, 1], created.map((r) => r.stderr).join('\n'))
  for (const r of created.filter((x) => x.status !== 0)) assert.match(r.stderr, /name conflicts with an existing object: service cli already exists/)
  await until('2 running', async () => (await runningBySlot(daemon.sock, 'cli')).size === 2, 30_000)
  for (let round = 0; round < 3; round++) {
    const rs = await Promise.all([
      run('service', 'update', '--detach=false', '--env-add', `R=${round}`, 'cli'),
      run('service', 'scale', '--detach=false', `cli=${1 + round}`),
      run('service', 'update', '--detach=false', '--update-order', 'start-first', '--image', round % 2 === 0 ? 'busybox:alt' : 'busybox:latest', 'cli'),
      run('service', 'rollback', '--detach=false', 'cli')
    ])
    for (const r of rs) if (r.status !== 0) assert.match(r.stderr, /update out of sequence|does not have a previous spec|rollback|paused/, r.stderr)
    await assertAlive(`round ${round}`)
    await assertConverged(`round ${round}`)
  }
  await removeAll()
})

test('a stop-first update cut by a scale down and a second update: the second update runs at once, not after the first gives up', { skip: skip ?? false, timeout: 120_000 }, async () => {
  // tasks that take their grace period (2 s) to stop: the first update is still replacing when the next changes come
  const id = await createService('cut', 3, {
    TaskTemplate: { ContainerSpec: { Image: 'busybox:latest', Command: ['sh', '-c', 'trap "" TERM; sleep 600 & wait'], StopGracePeriod: 2_000_000_000 } },
    UpdateConfig: { Parallelism: 0, Delay: 0, Order: 'stop-first' }
  })
  await until('3 running', async () => (await runningBySlot(daemon.sock, id)).size === 3, 30_000)
  const change = async (f: (spec: Record<string, any>) => Record<string, unknown>): Promise<void> => {
    const s = await inspect(id) as Svc
    const r = await call('POST', `/services/${id}/update?version=${s.Version.Index}`, f(s.Spec))
    assert.equal(r.status, 200, r.text)
  }
  const env = (v: string) => (s: Record<string, any>) => ({ ...s, TaskTemplate: { ...s.TaskTemplate, ContainerSpec: { ...s.TaskTemplate.ContainerSpec, Env: [`V=${v}`] } } })
  await change(env('1'))
  await new Promise((resolve) => setTimeout(resolve, 300))
  await change((s) => ({ ...s, Mode: { Replicated: { Replicas: 2 } } }))
  await change(env('2'))
  await assertConverged('after the second update', 30_000)
  // a third: no update of this service is stuck in the way
  await change(env('3'))
  const status = async (): Promise<string | undefined> => ((await inspect(id)) as Svc & { UpdateStatus?: { State: string } }).UpdateStatus?.State
  await until('the third update completed', async () => await status() === 'completed', 25_000, 250)
    .catch(async (err: Error) => { throw new Error(`${err.message}: ${String(await status())}`) })
  await assertConverged('after the third update', 20_000)
  const running = await runningBySlot(daemon.sock, id)
  for (const t of running.values()) {
    const c = (await call('GET', `/containers/${t.Status.ContainerStatus?.ContainerID as string}/json`)).json() as { Config: { Env: string[] } }
    assert.ok(c.Config.Env.includes('V=3'), `slot ${String(t.Slot)} runs ${JSON.stringify(c.Config.Env)}`)
  }
  await removeAll()
})

test('creates of services on a network while it is removed: the network stays if one was created', { skip: skip ?? false, timeout: 120_000 }, async () => {
  for (let round = 0; round < 6; round++) {
    const netId = await createOverlay(`w${round}`)
    const removal = call('DELETE', `/networks/${netId}`)
    const creates = Array.from({ length: 12 }, async (_v, i) => {
      await new Promise((resolve) => setTimeout(resolve, i * (1 + round)))
      return await call('POST', '/services/create', serviceSpec(`w${round}-${i}`, 1, { TaskTemplate: { Networks: [{ Target: netId }] } }))
    })
    const [nr, ...cs] = await Promise.all([removal, ...creates])
    expectOneOf(nr as Reply, [204, 400], 'network rm')
    for (const c of cs) expectOneOf(c, [201, 404], 'create')
    const made = cs.filter((c) => c.status === 201).length
    if (made > 0) assert.notEqual((nr as Reply).status, 204, `network removed while ${made} services on it were created: ${cs.map((c) => c.status).join(' ')}`)
    await assertAlive(`round ${round}`)
    await removeAll()
    await until('network rm', async () => { const r = await call('DELETE', `/networks/${netId}`); return r.status === 204 || r.status === 404 }, 20_000, 250)
  }
})

test('a replicated job across kills -9: exactly its total completions, then nothing runs', { skip: skip ?? false, timeout: 150_000 }, async () => {
  const r = await call('POST', '/services/create', {
    Name: 'job',
    TaskTemplate: { ContainerSpec: { Image: 'busybox:latest', Command: ['sleep', '1'] }, RestartPolicy: { Condition: 'on-failure', Delay: 0 } },
    Mode: { ReplicatedJob: { MaxConcurrent: 2, TotalCompletions: 5 } }
  })
  assert.equal(r.status, 201, r.text)
  const id = (r.json() as { ID: string }).ID
  for (let i = 0; i < 3; i++) {
    const delay = 300 + Math.floor(Math.random() * 900)
    await new Promise((resolve) => setTimeout(resolve, delay))
    await daemon.kill9()
    await daemon.start()
    await assertAlive(`kill ${i} after ${delay} ms`)
  }
  const done = async (): Promise<WireTaskLike[]> => (await tasksOf(daemon.sock, id)).filter((t) => t.Status.State === 'complete')
  type WireTaskLike = Awaited<ReturnType<typeof tasksOf>>[number]
  await until('5 completions', async () => (await done()).length >= 5, 60_000, 250)
  await new Promise((resolve) => setTimeout(resolve, 1500))
  const tasks = await tasksOf(daemon.sock, id)
  const completed = tasks.filter((t) => t.Status.State === 'complete')
  assert.equal(completed.length, 5, JSON.stringify(tasks.map((t) => [t.Slot, t.Status.State, t.DesiredState])))
  assert.deepEqual([...new Set(completed.map((t) => t.Slot))].sort(), [1, 2, 3, 4, 5])
  assert.equal(tasks.filter((t) => t.Status.State === 'running').length, 0)
  assert.equal((await taskContainers()).filter((c) => c.State === 'running').length, 0)
  const listed = ((await call('GET', '/services?status=true')).json() as Array<{ ID: string, ServiceStatus: { CompletedTasks: number } }>).find((s) => s.ID === id)
  assert.equal(listed?.ServiceStatus.CompletedTasks, 5)
  await removeAll()
})

test('the swarm left (--force) while a service starts its tasks: no task container is left, and a new swarm starts clean', { skip: skip ?? false, timeout: 150_000 }, async () => {
  for (let round = 0; round < 8; round++) {
    await createService(`lv${round}`, 4)
    await new Promise((resolve) => setTimeout(resolve, Math.floor(Math.random() * 150)))
    expectOneOf(await call('POST', '/swarm/leave?force=1'), [200], 'leave')
    await assertAlive(`round ${round}`)
    let left: Ctr[] = []
    await until(`round ${round}: no task container left`, async () => { left = await taskContainers(); return left.length === 0 }, 20_000, 250)
      .catch((err: Error) => { throw new Error(`${err.message}: ${left.map((c) => `${c.Labels['com.docker.swarm.task.name'] ?? c.Id}/${c.State}`).join(' ')}`) })
    const r = await call('POST', '/swarm/init', { ListenAddr: '127.0.0.1:2377', AdvertiseAddr: '127.0.0.1' })
    assert.equal(r.status, 200, r.text)
  }
})

test('the daemon killed -9 during a swarm leave: after the restart no task container is left', { skip: skip ?? false, timeout: 150_000 }, async () => {
  for (let round = 0; round < 3; round++) {
    const id = await createService(`kl${round}`, 3)
    await until('3 running', async () => (await runningBySlot(daemon.sock, id)).size === 3, 30_000)
    const delay = Math.floor(Math.random() * 200)
    const leaving = call('POST', '/swarm/leave?force=1', undefined, 30_000, true)
    await new Promise((resolve) => setTimeout(resolve, delay))
    await daemon.kill9()
    await leaving.catch(() => {})
    await daemon.start()
    await assertAlive(`round ${round} (killed after ${delay} ms)`)
    const info = (await call('GET', '/info')).json() as { Swarm: { LocalNodeState: string } }
    if (info.Swarm.LocalNodeState === 'active') expectOneOf(await call('POST', '/swarm/leave?force=1'), [200], 'leave again')
    let left: Ctr[] = []
    await until(`round ${round} (killed after ${delay} ms): no task container left`, async () => { left = await taskContainers(); return left.length === 0 }, 20_000, 250)
      .catch((err: Error) => { throw new Error(`${err.message}: ${left.map((c) => `${c.Labels['com.docker.swarm.task.name'] ?? c.Id}/${c.State}`).join(' ')}`) })
    const r = await call('POST', '/swarm/init', { ListenAddr: '127.0.0.1:2377', AdvertiseAddr: '127.0.0.1' })
    assert.equal(r.status, 200, r.text)
  }
})
