// A service's published port (ingress mode) follows its running tasks: a task that begins running while a sync of the
// ports is under way is reached once that sync is over. It was skipped (one sync at a time, a later request dropped),
// so the routing mesh sent every client to the tasks that ran before until some later orchestrator pass, which a
// service at rest never makes (spec/swarm/modes' udp ingress test under load: every flow to one task). Real sockets:
// the mesh's listener on a free port, the tasks' servers on two loopback addresses; the swarm's state is given.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import net from 'node:net'
import { once } from 'node:events'
import { PublishedPorts } from '../../lib/swarm/published-ports.js'
import type { ServiceRecord, SwarmState, TaskRecord } from '../../lib/swarm/model.js'
import type { TaskContainers, TaskContainerState } from '../../lib/swarm/task-containers.js'
import { freeTcpPort } from '../helpers/net.js'

/** A server on `host` answering each connection with `name`. */
async function nameServer (host: string, port: number, name: string): Promise<net.Server> {
  const s = net.createServer((c) => { c.on('error', () => {}); c.end(name) })
  s.listen(port, host)
  await once(s, 'listening')
  return s
}

/** What one new connection to the published port gets. */
async function answer (port: number): Promise<string> {
  const c = net.connect(port, '127.0.0.1')
  const chunks: Buffer[] = []
  c.on('data', (d: Buffer) => chunks.push(d))
  await once(c, 'close')
  return Buffer.concat(chunks).toString()
}

test('a task that begins running during a sync of the published ports is reached once it is over', async (t) => {
  const published = await freeTcpPort()
  const target = await freeTcpPort()
  const servers = [await nameServer('127.0.0.2', target, 'a'), await nameServer('127.0.0.3', target, 'b')]
  t.after(() => { for (const s of servers) s.close() })
  const service = { id: 's1', endpoint: { spec: {}, ports: [{ protocol: 'tcp', publishMode: 'ingress', publishedPort: published, targetPort: target }] } } as unknown as ServiceRecord
  const state = { services: { s1: service } } as unknown as SwarmState
  const task = (id: string): TaskRecord => ({ id, serviceId: 's1', desiredState: 'running', status: { state: 'running', containerStatus: { containerId: id, pid: 1, exitCode: 0 } } }) as unknown as TaskRecord
  const ips: Record<string, string> = { a: '127.0.0.2', b: '127.0.0.3' }
  const containers = { inspect: (id: string) => ips[id] === undefined ? undefined : { id, running: true, ip: ips[id] } as unknown as TaskContainerState } as unknown as TaskContainers
  const tasks = [task('a')]
  const ports = new PublishedPorts({ state: () => state, tasksOf: () => tasks, containers })
  t.after(async () => { await ports.close() })

  // the first sync reads the tasks and opens the port; meanwhile the second task runs, and a pass asks for a sync
  const first = ports.sync()
  tasks.push(task('b'))
  const second = ports.sync()
  await Promise.all([first, second])
  // each new connection goes to the next task in turn
  const got = []
  for (let i = 0; i < 4; i++) got.push(await answer(published))
  assert.deepEqual([...new Set(got)].sort(), ['a', 'b'], `answers: ${got.join(' ')}`)
})
