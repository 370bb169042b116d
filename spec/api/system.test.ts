// The system routes over a fake SystemBackend: the wire shapes of /version and /info from the backend's facts, the
// ping's Swarm header, and the /events stream's ends that a real daemon rarely reaches (a subscriber that fell
// behind, an `until` already past, a backend failure before the stream starts).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { pingRoutes, systemRoutes } from '../../lib/api/system/routes.js'
import type { SystemBackend, SystemInfo } from '../../lib/api/system/backend.js'
import { EventBus } from '../../lib/events/event-bus.js'
import { internal } from '../../lib/errors.js'
import { request } from '../helpers/engine.js'
import { notCalled, serveRoutes } from '../helpers/api-server.js'

const INFO: SystemInfo = {
  id: 'BERTH:/data',
  containers: { total: 5, running: 2, paused: 1 },
  images: 3,
  ipv4Forwarding: true,
  debug: false,
  loggingDriver: 'json-file',
  cgroupVersion: '2',
  kernelVersion: '6.1.0',
  operatingSystem: 'Debian GNU/Linux 12 (bookworm)',
  osVersion: '12',
  architecture: 'x86_64',
  cpus: 2,
  memTotal: 1 << 30,
  dataRoot: '/data',
  hostname: 'box',
  runtime: { name: 'runc', version: '1.1.5' },
  runtimes: [{ name: 'runc', path: '/usr/sbin/runc', args: [] }, { name: 'io.containerd.runc.v2', path: '/usr/sbin/runc', args: [] }, { name: 'traced', path: '/opt/traced', args: ['--debug'], features: '{"ociVersionMin":"1.0.0"}' }],
  swarm: { LocalNodeState: 'inactive' },
  warnings: ['WARNING: containers get loopback only: no bridge']
}

function backend (over: Partial<SystemBackend> = {}): SystemBackend {
  return {
    versionInfo: () => ({ berthVersion: '0.1.0', gitCommit: 'berth', nodeVersion: 'v20.0.0', kernelVersion: '6.1.0', arch: 'amd64', buildTime: '0001-01-01T00:00:00Z', runtimeName: 'runc', runtimeVersion: '1.1.5' }),
    systemInfo: async () => INFO,
    diskUsage: notCalled('diskUsage'),
    subscribeEvents: notCalled('subscribeEvents'),
    ...over
  }
}

test('ping: HEAD has no body, and the Swarm header is the backend\'s state', async (t) => {
  const socket = await serveRoutes(t, pingRoutes({ swarmState: () => 'active' }))
  const head = await request(socket, 'HEAD', '/_ping')
  assert.equal(head.status, 200)
  assert.equal(head.headers.swarm, 'active')
  assert.equal(head.headers['content-length'], '0')
  assert.equal(head.text, '')
  const get = await request(socket, 'GET', '/v1.44/_ping')
  assert.equal(get.text, 'OK')
  assert.equal(get.headers['cache-control'], 'no-cache, no-store, must-revalidate')
})

test('version and info: the backend\'s facts under dockerd\'s names', async (t) => {
  const socket = await serveRoutes(t, systemRoutes(backend()))
  const v = (await request(socket, 'GET', '/version')).json() as Record<string, unknown>
  assert.equal(v.Os, 'linux')
  assert.equal(v.Arch, 'amd64')
  assert.deepEqual((v.Components as Array<{ Name: string, Version: string }>).map((c) => [c.Name, c.Version]).slice(1), [['berth', '0.1.0'], ['runc', '1.1.5']])
  const i = (await request(socket, 'GET', '/info')).json() as Record<string, unknown>
  assert.equal(i.ContainersStopped, 2)
  assert.equal(i.ContainersRunning, 2)
  assert.equal(i.CgroupVersion, '2')
  // every runtime, runtimeArgs where a runtime has them (dockerd's system.Runtime)
  // and the runtime's features document in status from API 1.44 on (dockerd 25's system.RuntimeWithStatus)
  assert.deepEqual(i.Runtimes, { runc: { path: '/usr/sbin/runc' }, 'io.containerd.runc.v2': { path: '/usr/sbin/runc' }, traced: { path: '/opt/traced', runtimeArgs: ['--debug'], status: { 'org.opencontainers.runtime-spec.features': '{"ociVersionMin":"1.0.0"}' } } })
  const older = (await request(socket, 'GET', '/v1.43/info')).json() as Record<string, unknown>
  assert.deepEqual(older.Runtimes, { runc: { path: '/usr/sbin/runc' }, 'io.containerd.runc.v2': { path: '/usr/sbin/runc' }, traced: { path: '/opt/traced', runtimeArgs: ['--debug'] } })
  assert.equal(i.DefaultRuntime, 'runc')
  assert.deepEqual(i.RuncCommit, { ID: '1.1.5' })
  assert.deepEqual(i.Warnings, INFO.warnings)
  assert.deepEqual(i.Swarm, { LocalNodeState: 'inactive' })
  assert.ok(!Number.isNaN(Date.parse(i.SystemTime as string)))
})

test('info: a backend failure is a 500 with its message, not a dropped connection', async (t) => {
  const socket = await serveRoutes(t, systemRoutes(backend({ systemInfo: async () => { throw internal('cannot read /etc/os-release') } })))
  const r = await request(socket, 'GET', '/info')
  assert.equal(r.status, 500)
  assert.deepEqual(r.json(), { message: 'cannot read /etc/os-release' })
})

test('system df: an unknown type is refused before the backend is asked', async (t) => {
  const socket = await serveRoutes(t, systemRoutes(backend()))
  const r = await request(socket, 'GET', '/system/df?type=image&type=bogus')
  assert.equal(r.status, 400)
  assert.deepEqual(r.json(), { message: 'unknown type: bogus' })
})

test('events: a subscriber that fell behind gets what was queued, then the stream ends', async (t) => {
  const bus = new EventBus()
  const socket = await serveRoutes(t, systemRoutes(backend({
    subscribeEvents: (filters, since) => {
      const sub = bus.subscribe(filters, since)
      // more events at once than a subscription queues (4096): it overflows before the writer takes one
      for (let i = 0; i < 5000; i++) bus.emit('container', 'start', `c${i}`, { name: `n${i}` })
      return sub
    }
  })))
  const r = await request(socket, 'GET', '/events')
  assert.equal(r.status, 200)
  const lines = r.text.trim().split('\n').map((l) => JSON.parse(l) as { Actor: { ID: string }, status: string })
  assert.equal(lines.length, 4096)
  assert.equal(lines[0]?.Actor.ID, 'c0')
  assert.equal(lines[0]?.status, 'start')
})

test('events: `until` already past writes the remembered events up to it and ends', async (t) => {
  const bus = new EventBus()
  bus.emit('image', 'pull', 'busybox:latest')
  const socket = await serveRoutes(t, systemRoutes(backend({ subscribeEvents: (filters, since) => bus.subscribe(filters, since) })))
  const until = (Date.now() + 100) / 1000
  await new Promise((resolve) => setTimeout(resolve, 300))
  bus.emit('image', 'tag', 'late')
  const r = await request(socket, 'GET', `/events?since=0&until=${until.toFixed(3)}`)
  assert.equal(r.status, 200)
  const lines = r.text.trim().split('\n').map((l) => JSON.parse(l) as { Type: string, Action: string, id: string })
  assert.deepEqual(lines.map((l) => [l.Type, l.Action, l.id]), [['image', 'pull', 'busybox:latest']])
})

test('events: a bad filter or timestamp is a 400 before any byte of the stream', async (t) => {
  const socket = await serveRoutes(t, systemRoutes(backend()))
  const f = await request(socket, 'GET', `/events?filters=${encodeURIComponent('{"colour":["red"]}')}`)
  assert.equal(f.status, 400)
  const s = await request(socket, 'GET', '/events?since=yesterday')
  assert.equal(s.status, 400)
})
