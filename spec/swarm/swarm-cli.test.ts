// Swarm mode on one node through the real docker CLI: init/inspect/leave, the node and drain, and services whose
// task containers are replaced in their slot when they exit, are stopped, killed or removed (the seed's rule).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { startEngine, containerSkipReason, hasDockerCli, dockerCli, busyboxTar, request } from '../helpers/engine.js'
import { dockerOk, until, tasksOf, runningBySlot } from './helpers.js'

const skip = containerSkipReason() ?? (hasDockerCli() ? null : 'the docker CLI is not installed')
const NOT_MANAGER = 'This node is not a swarm manager. Use "docker swarm init" or "docker swarm join" to connect this node to swarm and try again.'

test('swarm mode through the docker CLI', { skip: skip ?? false }, async (t) => {
  const { socket } = await startEngine(t)
  const docker = dockerOk(socket)
  const fails = async (...args: string[]): Promise<string> => {
    const r = await dockerCli(socket, args)
    assert.notEqual(r.status, 0, `docker ${args.join(' ')} should fail: ${r.stdout}`)
    return r.stderr
  }
  await docker('import', busyboxTar(), 'busybox:latest')

  await t.test('before init: dockerd\'s 503 on every swarm route; /info says inactive', async () => {
    for (const path of ['/swarm', '/services', '/nodes', '/tasks', '/secrets', '/configs']) {
      const r = await request(socket, 'GET', path)
      assert.equal(r.status, 503, path)
      assert.deepEqual(r.json(), { message: NOT_MANAGER })
    }
    assert.match(await fails('service', 'ls'), /This node is not a swarm manager/)
    assert.match(await fails('swarm', 'leave'), /This node is not part of a swarm/)
    assert.equal((await docker('info', '--format', '{{.Swarm.LocalNodeState}}')).trim(), 'inactive')
  })

  await t.test('init, info, inspect, node ls; leave without --force and join are refused', async () => {
    const out = await docker('swarm', 'init', '--advertise-addr', '127.0.0.1')
    assert.match(out, /Swarm initialized: current node \(([0-9a-z]{25})\) is now a manager\./)
    const nodeId = /\(([0-9a-z]{25})\)/.exec(out)?.[1] as string
    const info = JSON.parse(await docker('info', '--format', '{{json .Swarm}}')) as Record<string, unknown>
    assert.equal(info.LocalNodeState, 'active')
    assert.equal(info.NodeID, nodeId)
    assert.equal(info.ControlAvailable, true)
    assert.equal(info.Nodes, 1)
    assert.equal(info.Managers, 1)
    const sw = (await request(socket, 'GET', '/swarm')).json() as { Spec: { Orchestration: { TaskHistoryRetentionLimit: number } }, JoinTokens: { Worker: string } }
    assert.equal(sw.Spec.Orchestration.TaskHistoryRetentionLimit, 5)
    assert.match(sw.JoinTokens.Worker, /^SWMTKN-1-/)
    assert.match(await docker('swarm', 'join-token', 'worker'), /docker swarm join --token SWMTKN-1-\S+ 127\.0\.0\.1:2377/)
    assert.match(await docker('node', 'ls'), new RegExp(`${nodeId} \\*\\s+\\S+\\s+Ready\\s+Active\\s+Leader`))
    assert.match(await fails('swarm', 'leave'), /You are attempting to leave the swarm on a node that is participating as a manager/)
    assert.match(await fails('swarm', 'init'), /This node is already part of a swarm/)
    assert.match(await fails('swarm', 'join', '--token', 'SWMTKN-1-x', '10.0.0.1:2377'), /already part of a swarm/)
    await docker('swarm', 'update', '--task-history-limit', '3')
    assert.equal((await docker('info', '--format', '{{.Swarm.Cluster.Spec.Orchestration.TaskHistoryRetentionLimit}}')).trim(), '3')
    await docker('swarm', 'update', '--task-history-limit', '5')
  })

  await t.test('service create: tasks named <service>.<slot>.<task id> with the swarm labels', async () => {
    const id = (await docker('service', 'create', '-d', '--name', 'web', '--replicas', '3', '--restart-delay', '0s', '--stop-grace-period', '1s', '--label', 'tier=front', '--env', 'A=1', 'busybox', 'sleep', '600')).trim()
    assert.match(id, /^[0-9a-z]{25}$/)
    const running = await until('3 running tasks', async () => { const m = await runningBySlot(socket, 'web'); return m.size === 3 ? m : undefined })
    assert.deepEqual([...running.keys()].sort(), [1, 2, 3])
    const names = (await docker('ps', '--format', '{{.Names}}')).trim().split('\n').sort()
    for (const [slot, task] of running) assert.ok(names.includes(`web.${slot}.${task.ID}`), `web.${slot}.${task.ID} in ${names.join(' ')}`)
    const labels = JSON.parse(await docker('inspect', '--format', '{{json .Config.Labels}}', `web.1.${running.get(1)?.ID as string}`)) as Record<string, string>
    assert.equal(labels['com.docker.swarm.service.id'], id)
    assert.equal(labels['com.docker.swarm.service.name'], 'web')
    assert.equal(labels['com.docker.swarm.task.id'], running.get(1)?.ID)
    assert.equal(labels['com.docker.swarm.task.name'], `web.1.${running.get(1)?.ID as string}`)
    assert.match(labels['com.docker.swarm.node.id'] ?? '', /^[0-9a-z]{25}$/)
    assert.match(await docker('service', 'ls'), /web\s+replicated\s+3\/3\s+busybox:latest/)
    const insp = JSON.parse(await docker('service', 'inspect', 'web')) as Array<{ Version: { Index: number }, Spec: { Labels: Record<string, string>, Mode: unknown } }>
    assert.deepEqual(insp[0]?.Spec.Labels, { tier: 'front' })
    assert.deepEqual(insp[0]?.Spec.Mode, { Replicated: { Replicas: 3 } })
    assert.ok((insp[0]?.Version.Index ?? 0) > 0)
    assert.match((await docker('ps', '--filter', 'is-task=true', '--format', '{{.Names}}')), /web\.1\./)
  })

  for (const how of ['stop', 'kill', 'rm -f'] as const) {
    await t.test(`a task container that is ended by ${how} is replaced in its slot; the old task stays in the history`, async () => {
      const before = await runningBySlot(socket, 'web')
      const old = before.get(2)
      assert.ok(old !== undefined)
      const cid = old.Status.ContainerStatus?.ContainerID as string
      const t0 = Date.now()
      if (how === 'stop') await docker('stop', '-t', '1', cid)
      else if (how === 'kill') await docker('kill', cid)
      else await docker('rm', '-f', cid)
      const fresh = await until('a new task in slot 2', async () => { const m = await runningBySlot(socket, 'web'); const n = m.get(2); return n !== undefined && n.ID !== old.ID ? n : undefined })
      const ms = Date.now() - t0
      // restart delay 0 (+ the 1 s grace period of a stop: sleep ignores SIGTERM as PID 1); the bound is loose
      // because test files share two cores (tools/bench/swarm.mjs measures the time itself)
      assert.ok(ms < 15_000, `replacement took ${ms} ms`)
      assert.equal((await runningBySlot(socket, 'web')).size, 3)
      const hist = (await tasksOf(socket, 'web')).find((x) => x.ID === old.ID)
      assert.ok(hist !== undefined, 'the old task is kept')
      assert.equal(hist.DesiredState, 'shutdown')
      assert.equal(hist.Status.State, 'failed')
      assert.match(hist.Status.Err ?? '', /^task: non-zero exit \(\d+\)$/)
      assert.notEqual(fresh.ID, old.ID)
      const ps = await docker('service', 'ps', 'web')
      assert.match(ps, new RegExp(`${old.ID.slice(0, 12)}\\s+\\\\_ web\\.2\\s+busybox:latest\\s+\\S+\\s+Shutdown\\s+Failed`))
    })
  }

  await t.test('history is capped at TaskHistoryRetentionLimit per slot', async () => {
    await docker('swarm', 'update', '--task-history-limit', '2')
    for (let i = 0; i < 3; i++) {
      const cur = (await runningBySlot(socket, 'web')).get(3)
      await docker('kill', cur?.Status.ContainerStatus?.ContainerID as string)
      await until('slot 3 replaced', async () => { const n = (await runningBySlot(socket, 'web')).get(3); return n !== undefined && n.ID !== cur?.ID })
    }
    await until('slot 3 history pruned to 2', async () => (await tasksOf(socket, 'web')).filter((x) => x.Slot === 3).length === 2)
    await docker('swarm', 'update', '--task-history-limit', '5')
  })

  await t.test('scale up and down; update with a stale version is refused; a name in use is refused', async () => {
    await docker('service', 'scale', '-d', 'web=5')
    await until('5 running', async () => (await runningBySlot(socket, 'web')).size === 5)
    await docker('service', 'scale', '-d', 'web=2')
    await until('2 running', async () => { const m = await runningBySlot(socket, 'web'); return m.size === 2 && m.has(1) && m.has(2) })
    await until('scaled-down containers stopped', async () => (await docker('ps', '--filter', 'label=com.docker.swarm.service.name=web', '-q')).trim().split('\n').length === 2)
    const svc = JSON.parse((await request(socket, 'GET', '/services/web')).text) as { Version: { Index: number }, Spec: Record<string, unknown> }
    const stale = await request(socket, 'POST', `/services/web/update?version=${svc.Version.Index - 1}`, { body: svc.Spec })
    assert.equal(stale.status, 409)
    assert.deepEqual(stale.json(), { message: 'rpc error: code = Unknown desc = update out of sequence' })
    assert.match(await fails('service', 'create', '-d', '--name', 'web', 'busybox', 'true'), /rpc error: code = AlreadyExists desc = name conflicts with an existing object: service web already exists/)
    const bad = await request(socket, 'POST', '/services/create', { body: { Name: 'x', TaskTemplate: { ContainerSpec: { Image: 'busybox' } }, Mode: { Replicated: { Replicas: -1 } } } })
    assert.equal(bad.status, 400)
    assert.match((bad.json() as { message: string }).message, /cannot unmarshal number -1 into Go struct field ReplicatedService.Mode.Replicated.Replicas of type uint64/)
    const typed = await request(socket, 'POST', '/services/create', { body: { Name: 'x', TaskTemplate: { ContainerSpec: { Image: 'busybox', Hosts: 5 } } } })
    assert.equal(typed.status, 400)
    assert.deepEqual(typed.json(), { message: 'json: cannot unmarshal number into Go struct field ContainerSpec.TaskTemplate.ContainerSpec.Hosts of type []string' })
    assert.equal((await request(socket, 'POST', '/services/create', { body: { Name: ['x'], TaskTemplate: { ContainerSpec: { Image: 'busybox' } } } })).status, 400)
    // a health check's fields too (main took the service and rejected every task at its container's create)
    const health = await request(socket, 'POST', '/services/create', { body: { Name: 'x', TaskTemplate: { ContainerSpec: { Image: 'busybox', Healthcheck: { Test: ['CMD', 'true'], Interval: '1s' } } } } })
    assert.equal(health.status, 400)
    assert.deepEqual(health.json(), { message: 'json: cannot unmarshal string into Go struct field HealthConfig.TaskTemplate.ContainerSpec.Healthcheck.Interval of type int64' })
    assert.equal((await request(socket, 'POST', '/services/create', { body: { Name: 'x', TaskTemplate: { ContainerSpec: { Image: 'busybox' }, Networks: 5 } } })).status, 400)
    const status = JSON.parse((await request(socket, 'GET', '/services?status=true')).text) as Array<{ ServiceStatus: { RunningTasks: number, DesiredTasks: number } }>
    assert.deepEqual(status[0]?.ServiceStatus, { RunningTasks: 2, DesiredTasks: 2, CompletedTasks: 0 })
  })

  await t.test('Labels that are not strings are refused on every swarm object in dockerd\'s words; a null label is Go\'s ""', async () => {
    type Versioned = { Version: { Index: number }, Spec: Record<string, unknown> }
    const svc = (await request(socket, 'GET', '/services/web')).json() as Versioned
    const node = (await request(socket, 'GET', '/nodes/self')).json() as Versioned & { ID: string }
    const sw = (await request(socket, 'GET', '/swarm')).json() as Versioned
    const image = { ContainerSpec: { Image: 'busybox' } }
    // each message as dockerd 20.10 answers it (read off a real dockerd)
    const cases: Array<[string, Record<string, unknown>, string]> = [
      ['/services/create', { Name: 'lbl', Labels: { a: { b: 1 } }, TaskTemplate: image }, 'object into Go struct field ServiceSpec.Labels of type string'],
      ['/services/create', { Name: 'lbl', Labels: ['a'], TaskTemplate: image }, 'array into Go struct field ServiceSpec.Labels of type map[string]string'],
      ['/services/create', { Name: 'lbl', TaskTemplate: { ContainerSpec: { Image: 'busybox', Labels: { a: true } } } }, 'bool into Go struct field ContainerSpec.TaskTemplate.ContainerSpec.Labels of type string'],
      [`/services/web/update?version=${svc.Version.Index}`, { ...svc.Spec, Labels: { a: { b: 1 } } }, 'object into Go struct field ServiceSpec.Labels of type string'],
      ['/secrets/create', { Name: 'lbl', Data: 'eA==', Labels: { a: { b: 1 } } }, 'object into Go struct field SecretSpec.Labels of type string'],
      ['/configs/create', { Name: 'lbl', Data: 'eA==', Labels: { a: 1 } }, 'number into Go struct field ConfigSpec.Labels of type string'],
      [`/nodes/${node.ID}/update?version=${node.Version.Index}`, { ...node.Spec, Labels: { a: {} } }, 'object into Go struct field NodeSpec.Labels of type string'],
      [`/swarm/update?version=${sw.Version.Index}`, { ...sw.Spec, Labels: { a: [] } }, 'array into Go struct field Spec.Labels of type string']
    ]
    for (const [path, body, message] of cases) {
      const r = await request(socket, 'POST', path, { body })
      assert.equal(r.status, 400, `${path}: ${r.text}`)
      assert.deepEqual(r.json(), { message: `json: cannot unmarshal ${message}` }, path)
    }
    // nothing was made or changed by the refused requests
    assert.equal((await request(socket, 'GET', '/services/lbl')).status, 404)
    assert.equal(((await request(socket, 'GET', '/services/web')).json() as Versioned).Version.Index, svc.Version.Index)
    assert.equal(((await request(socket, 'GET', '/nodes/self')).json() as Versioned).Version.Index, node.Version.Index)
    assert.doesNotMatch(await docker('secret', 'ls'), /lbl/)
    // a null value is the empty string, as Go decodes it, on the service and on its task containers
    const made = await request(socket, 'POST', '/services/create', { body: { Name: 'lbl', Labels: { a: null }, TaskTemplate: { ContainerSpec: { Image: 'busybox', Command: ['sleep', '600'], Labels: { c: null } } } } })
    assert.equal(made.status, 201, made.text)
    const spec = ((await request(socket, 'GET', '/services/lbl')).json() as Versioned).Spec as { Labels: unknown, TaskTemplate: { ContainerSpec: { Labels: unknown } } }
    assert.deepEqual(spec.Labels, { a: '' })
    assert.deepEqual(spec.TaskTemplate.ContainerSpec.Labels, { c: '' })
    await until('its task container', async () => (await docker('ps', '--filter', 'label=com.docker.swarm.service.name=lbl', '--format', '{{.Label "c"}}|')).trim() === '|')
    await docker('service', 'rm', 'lbl')
  })

  await t.test('restart conditions: none leaves the slot empty; on-failure stops after max attempts', async () => {
    await docker('service', 'create', '-d', '--name', 'once', '--restart-condition', 'none', 'busybox', 'sh', '-c', 'exit 3')
    await until('the task failed', async () => (await tasksOf(socket, 'once')).some((x) => x.Status.State === 'failed'))
    await new Promise((resolve) => setTimeout(resolve, 300))
    assert.equal((await tasksOf(socket, 'once')).length, 1)
    await docker('service', 'create', '-d', '--name', 'flaky', '--restart-condition', 'on-failure', '--restart-max-attempts', '2', '--restart-delay', '0s', 'busybox', 'sh', '-c', 'exit 1')
    await until('3 failed tasks', async () => (await tasksOf(socket, 'flaky')).filter((x) => x.Status.State === 'failed').length === 3)
    await new Promise((resolve) => setTimeout(resolve, 300))
    assert.equal((await tasksOf(socket, 'flaky')).length, 3)
    await docker('service', 'create', '-d', '--name', 'done', '--restart-condition', 'on-failure', 'busybox', 'true')
    await until('complete', async () => (await tasksOf(socket, 'done')).some((x) => x.Status.State === 'complete'))
    await docker('service', 'rm', 'once', 'flaky', 'done')
  })

  await t.test('an unknown image: the task is rejected with the error, the service stays', async () => {
    await docker('service', 'create', '-d', '--name', 'ghost', '--restart-delay', '0s', '--restart-max-attempts', '1', 'nosuchimage:1')
    const tasks = await until('a rejected task', async () => { const ts = await tasksOf(socket, 'ghost'); return ts.some((x) => x.Status.State === 'rejected') ? ts : undefined })
    assert.match(tasks[0]?.Status.Err ?? '', /No such image: nosuchimage:1/)
    assert.match(await docker('service', 'ls'), /ghost/)
    await docker('service', 'rm', 'ghost')
  })

  await t.test('node update --availability drain shuts the tasks down; active brings them back', async () => {
    await docker('node', 'update', '--availability', 'drain', 'self')
    await until('no running task', async () => (await runningBySlot(socket, 'web')).size === 0)
    const pending = await until('pending tasks', async () => { const ts = (await tasksOf(socket, 'web')).filter((x) => x.DesiredState === 'running'); return ts.length === 2 && ts.every((x) => x.Status.State === 'pending') ? ts : undefined })
    assert.match(pending[0]?.Status.Err ?? '', /no suitable node/)
    assert.match(await docker('node', 'ls'), /Ready\s+Drain\s+Leader/)
    await docker('node', 'update', '--availability', 'active', 'self')
    await until('2 running again', async () => (await runningBySlot(socket, 'web')).size === 2)
  })

  await t.test('events of services, nodes, secrets and overlay networks have scope swarm (docker events --filter scope=swarm)', async () => {
    const since = (Date.now() / 1000 - 0.001).toFixed(3)
    const before = (await runningBySlot(socket, 'web')).size
    await docker('service', 'scale', '-d', `web=${before + 1}`)
    const created = await request(socket, 'POST', '/secrets/create', { body: { Name: 'ev-secret', Data: Buffer.from('s3cret').toString('base64') } })
    assert.equal(created.status, 201, created.text)
    const secretId = (created.json() as { ID: string }).ID
    await docker('secret', 'rm', 'ev-secret')
    const node = JSON.parse(await docker('info', '--format', '{{json .Swarm.NodeID}}')) as string
    await docker('node', 'update', '--availability', 'pause', node)
    await docker('node', 'update', '--label-add', 'ev=1', node)
    await docker('node', 'update', '--availability', 'active', '--label-rm', 'ev', node)
    await docker('network', 'create', '-d', 'overlay', 'ev-net')
    const netId = (await docker('network', 'inspect', '--format', '{{.Id}}', 'ev-net')).trim()
    assert.match(await docker('network', 'ls', '--filter', 'scope=swarm', '--format', '{{.Name}}'), /^ev-net$/m)
    assert.doesNotMatch(await docker('network', 'ls', '--filter', 'scope=local', '--format', '{{.Name}}'), /ev-net/)
    await docker('network', 'rm', 'ev-net')
    await docker('network', 'create', 'ev-bridge')
    const bridgeId = (await docker('network', 'inspect', '--format', '{{.Id}}', 'ev-bridge')).trim()
    await docker('network', 'rm', 'ev-bridge')
    await docker('container', 'run', '--rm', 'busybox', 'true')
    const upTo = ((Date.now() + 100) / 1000).toFixed(3)
    type Ev = { Type: string, Action: string, Actor: { ID: string, Attributes: Record<string, string> }, scope: string }
    const read = async (scope: string): Promise<Ev[]> => (await docker('events', '--since', since, '--until', upTo, '--filter', `scope=${scope}`, '--format', '{{json .}}'))
      .trim().split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as Ev)
    const swarm = await read('swarm')
    assert.ok(swarm.length > 0)
    assert.ok(swarm.every((e) => e.scope === 'swarm'), JSON.stringify(swarm))
    const scale = swarm.find((e) => e.Type === 'service' && e.Action === 'update')
    assert.deepEqual(scale?.Actor.Attributes, { name: 'web', 'replicas.old': String(before), 'replicas.new': String(before + 1) })
    assert.deepEqual(swarm.filter((e) => e.Type === 'secret').map((e) => [e.Action, e.Actor.ID, e.Actor.Attributes.name]), [['create', secretId, 'ev-secret'], ['remove', secretId, 'ev-secret']])
    // an overlay network's events as dockerd relays the cluster's: create, the allocator's update, remove; name only
    assert.deepEqual(swarm.filter((e) => e.Type === 'network').map((e) => [e.Action, e.Actor.ID, e.Actor.Attributes]),
      [['create', netId, { name: 'ev-net' }], ['update', netId, { name: 'ev-net' }], ['remove', netId, { name: 'ev-net' }]])
    const host = JSON.parse(await docker('info', '--format', '{{json .Name}}')) as string
    assert.deepEqual(swarm.filter((e) => e.Type === 'node').map((e) => e.Actor.Attributes), [
      { name: host, 'availability.old': 'active', 'availability.new': 'pause' }, { name: host }, { name: host, 'availability.old': 'pause', 'availability.new': 'active' }])
    assert.ok(!swarm.some((e) => e.Type === 'container'))
    const local = await read('local')
    assert.ok(local.some((e) => e.Type === 'container' && e.Action === 'start'))
    // a local bridge network's: create and destroy with its driver, scope local
    assert.deepEqual(local.filter((e) => e.Type === 'network' && e.Actor.ID === bridgeId).map((e) => [e.Action, e.Actor.Attributes]),
      [['create', { name: 'ev-bridge', type: 'bridge' }], ['destroy', { name: 'ev-bridge', type: 'bridge' }]])
    assert.ok(!local.some((e) => e.Type === 'network' && e.Actor.ID === netId))
    assert.ok(local.every((e) => e.scope === 'local' && e.Type !== 'service' && e.Type !== 'secret'), JSON.stringify(local))
    await until('scaled', async () => (await runningBySlot(socket, 'web')).size === before + 1)
  })

  await t.test('service rm removes its tasks and containers; leave --force ends the swarm with its task containers and overlay networks', async () => {
    await docker('service', 'rm', 'web')
    await until('containers gone', async () => (await docker('ps', '-aq', '--filter', 'label=com.docker.swarm.service.name=web')).trim() === '')
    assert.match(await fails('service', 'inspect', 'web'), /service web not found|no such service: web/)
    await docker('network', 'create', '-d', 'overlay', 'leave-net')
    // no virtual IPs: the CLI's vip mode is served as dnsrr, and the reply says so; inspect shows the mode served
    const created = await dockerCli(socket, ['service', 'create', '-d', '--name', 'stay', '--replicas', '2', '--network', 'leave-net', '--stop-grace-period', '1s', 'busybox', 'sleep', '600'])
    assert.equal(created.status, 0, created.stderr)
    assert.match(created.stderr, /EndpointSpec\.Mode vip is served as dnsrr by Berth: the service name resolves to its task addresses, no virtual IP/)
    const ep = JSON.parse(await docker('service', 'inspect', '--format', '{{json .Endpoint}}', 'stay')) as { Spec: { Mode: string }, VirtualIPs?: unknown }
    assert.equal(ep.Spec.Mode, 'dnsrr')
    assert.equal(ep.VirtualIPs, undefined)
    assert.equal((await docker('service', 'inspect', '--format', '{{.Spec.EndpointSpec.Mode}}', 'stay')).trim(), 'vip')
    await until('2 running', async () => (await runningBySlot(socket, 'stay')).size === 2)
    await docker('swarm', 'leave', '--force')
    assert.equal((await docker('info', '--format', '{{.Swarm.LocalNodeState}}')).trim(), 'inactive')
    assert.equal((await request(socket, 'GET', '/services')).status, 503)
    assert.equal((await docker('ps', '-aq', '--filter', 'label=com.docker.swarm.task')).trim(), '', 'task containers are removed')
    assert.doesNotMatch(await docker('network', 'ls', '--format', '{{.Name}}'), /leave-net/)
  })
})
