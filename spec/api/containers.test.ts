// The container routes over a fake ContainerBackend (real handles from the engine's decoders, nothing running): the
// list's cached bytes against a changed container, wait's replies and a client gone before it ends, a log stream
// that fails after its headers went out, and the refusals made before the backend is asked.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import http from 'node:http'
import { containerRoutes } from '../../lib/api/containers/routes.js'
import type { ContainerBackend } from '../../lib/api/containers/backend.js'
import type { ContainerHandle } from '../../lib/containers/container-handle.js'
import type { UpdateRequest } from '../../lib/containers/update-request.js'
import { invalidArgument, notFound } from '../../lib/errors.js'
import { request } from '../helpers/engine.js'
import { notCalled, serveRoutes } from '../helpers/api-server.js'
import { testContainer } from '../helpers/container-record.js'

const ID = 'c'.repeat(64)

function backend (c: ContainerHandle, over: Partial<ContainerBackend> = {}): ContainerBackend {
  return {
    get: (ref) => { if (ref === c.id || ref === c.rec.name.slice(1)) return c; throw notFound(`No such container: ${ref}`) },
    create: notCalled('create'),
    start: notCalled('start'),
    stop: notCalled('stop'),
    restart: notCalled('restart'),
    kill: notCalled('kill'),
    pause: notCalled('pause'),
    unpause: notCalled('unpause'),
    rename: notCalled('rename'),
    remove: notCalled('remove'),
    removeLink: notCalled('removeLink'),
    update: notCalled('update'),
    waitFor: notCalled('waitFor'),
    exitOfAutoRemoved: () => undefined,
    listContainers: () => [c],
    containerSizes: async () => ({ rw: 10, rootfs: 20 }),
    pruneContainers: notCalled('pruneContainers'),
    logs: notCalled('logs'),
    attach: notCalled('attach'),
    resize: notCalled('resize'),
    ...over
  }
}

test('list: cached item bytes follow the container\'s state; size=1 asks the backend for sizes', async (t) => {
  const c = testContainer(ID, 'web', { Labels: { app: 'x' } })
  const socket = await serveRoutes(t, containerRoutes(backend(c)))
  const list = async (q = ''): Promise<Array<Record<string, unknown>>> => (await request(socket, 'GET', `/containers/json${q}`)).json() as Array<Record<string, unknown>>
  const first = (await list())[0]
  assert.equal(first?.State, 'created')
  assert.equal(first?.Status, 'Created')
  assert.deepEqual(first?.Names, ['/web'])
  assert.deepEqual(first?.Labels, { app: 'x' })
  c.rec.state = { ...c.rec.state, status: 'exited', exitCode: 3, finishedAt: (BigInt(Date.now() - 90_000) * 1_000_000n).toString() }
  const second = (await list())[0]
  assert.equal(second?.State, 'exited')
  assert.equal(second?.Status, 'Exited (3) About a minute ago')
  const sized = (await list('?size=1'))[0]
  assert.equal(sized?.SizeRw, 10)
  assert.equal(sized?.SizeRootFs, 20)
})

test('wait: Error is null for a clean run and the run\'s error otherwise; a bad condition is a 400', async (t) => {
  const c = testContainer(ID, 'web')
  let result = { exitCode: 0 } as { exitCode: number, error?: string }
  const socket = await serveRoutes(t, containerRoutes(backend(c, { waitFor: async () => result })))
  assert.deepEqual((await request(socket, 'POST', '/containers/web/wait')).json(), { Error: null, StatusCode: 0 })
  result = { exitCode: 127, error: 'exec: "nope": executable file not found in $PATH' }
  assert.deepEqual((await request(socket, 'POST', '/containers/web/wait?condition=next-exit')).json(), { StatusCode: 127, Error: { Message: result.error } })
  const bad = await request(socket, 'POST', '/containers/web/wait?condition=forever')
  assert.equal(bad.status, 400)
  assert.deepEqual(bad.json(), { message: 'invalid condition: "forever"' })
})

test('wait: a client that goes away aborts the backend\'s wait', async (t) => {
  const c = testContainer(ID, 'web')
  let aborted!: () => void
  const gone = new Promise<void>((resolve) => { aborted = resolve })
  const socket = await serveRoutes(t, containerRoutes(backend(c, {
    waitFor: async (_c, _cond, signal) => await new Promise((_resolve, reject) => {
      signal.addEventListener('abort', () => { aborted(); reject(new Error('client went away')) })
    })
  })))
  const req = http.request({ socketPath: socket, method: 'POST', path: '/containers/web/wait' }, (res) => {
    assert.equal(res.statusCode, 200)
    // the headers came at once (the CLI waits for them before it starts the container): now leave
    req.destroy()
  })
  req.on('error', () => {})
  req.end()
  await gone
})

test('logs: a stream that fails after its headers went out cuts the connection (no second status)', async (t) => {
  const c = testContainer(ID, 'web')
  const socket = await serveRoutes(t, containerRoutes(backend(c, {
    logs: async (_c, r, out) => {
      assert.equal(r.tail, 1)
      out.write(Buffer.from([1, 0, 0, 0, 0, 0, 0, 3, 0x68, 0x69, 0x0a]))
      throw new Error('log file vanished')
    }
  })))
  await assert.rejects(request(socket, 'GET', '/containers/web/logs?stdout=1&tail=1'), /aborted|socket hang up|ECONNRESET/)
  const none = await request(socket, 'GET', '/containers/web/logs')
  assert.equal(none.status, 400)
  assert.deepEqual(none.json(), { message: 'Bad parameters: you must choose at least one stream' })
})

test('logs: a container logging to none is refused before any byte', async (t) => {
  const c = testContainer(ID, 'quiet', { HostConfig: { LogConfig: { Type: 'none' } } })
  const socket = await serveRoutes(t, containerRoutes(backend(c)))
  const r = await request(socket, 'GET', '/containers/quiet/logs?stdout=1')
  assert.equal(r.status, 501)
  assert.deepEqual(r.json(), { message: 'configured logging driver does not support reading' })
})

test('update: the body is decoded (dockerd\'s type errors) before the backend sees a typed request', async (t) => {
  const c = testContainer(ID, 'web')
  const seen: UpdateRequest[] = []
  const socket = await serveRoutes(t, containerRoutes(backend(c, { update: async (_ref, req) => { seen.push(req); return ['a warning'] } })))
  const bad = await request(socket, 'POST', '/containers/web/update', { body: { CpusetCpus: 1 } })
  assert.equal(bad.status, 400)
  assert.deepEqual(bad.json(), { message: 'json: cannot unmarshal number into Go struct field HostConfig.CpusetCpus of type string' })
  assert.equal(seen.length, 0)
  const ok = await request(socket, 'POST', '/containers/web/update', { body: { Memory: 1 << 26, RestartPolicy: { Name: 'always' }, Devices: [{ PathOnHost: '/dev/null' }] } })
  assert.deepEqual(ok.json(), { Warnings: ['a warning'] })
  assert.equal(seen[0]?.limits.resources.memory, 1 << 26)
  assert.deepEqual(seen[0]?.restartPolicy, { name: 'always', maximumRetryCount: 0 })
  assert.deepEqual(seen[0]?.unapplied, ['Devices'])
})

test('resize, prune and create: the backend\'s answers under dockerd\'s names; Subpath needs API 1.45', async (t) => {
  const c = testContainer(ID, 'web')
  const socket = await serveRoutes(t, containerRoutes(backend(c, {
    resize: () => { throw invalidArgument(`Container ${c.id} is not running`) },
    pruneContainers: async () => ({ deleted: [ID], reclaimed: 4096 }),
    create: async (_body, name) => ({ id: ID, warnings: [`named ${name ?? ''}`] })
  })))
  const rs = await request(socket, 'POST', '/containers/web/resize?h=10&w=80')
  assert.equal(rs.status, 400)
  assert.deepEqual((await request(socket, 'POST', '/containers/prune')).json(), { ContainersDeleted: [ID], SpaceReclaimed: 4096 })
  assert.deepEqual((await request(socket, 'POST', '/containers/create?name=x', { body: { Image: 'busybox' } })).json(), { Id: ID, Warnings: ['named x'] })
  const sub = { Image: 'busybox', HostConfig: { Mounts: [{ Type: 'volume', Source: 'v', Target: '/v', VolumeOptions: { Subpath: 'a' } }] } }
  const old = await request(socket, 'POST', '/v1.44/containers/create', { body: sub })
  assert.equal(old.status, 400)
  assert.deepEqual(old.json(), { message: 'VolumeOptions.Subpath needs API v1.45 or newer' })
})
