// The exec routes over a fake ExecBackend (a real container handle and exec instance, nothing running): the create
// body decoded before the backend is asked, inspect's wire shape, and a start that fails once the connection was
// taken over (its message on the raw stream, as dockerd writes it).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { execRoutes } from '../../lib/api/exec/routes.js'
import type { ExecBackend } from '../../lib/api/exec/backend.js'
import { ExecInstance, type ExecConfig } from '../../lib/containers/exec-service.js'
import { conflict, notFound } from '../../lib/errors.js'
import { rawExchange, request } from '../helpers/engine.js'
import { notCalled, serveRoutes } from '../helpers/api-server.js'
import { testContainer } from '../helpers/container-record.js'

const CID = 'c'.repeat(64)
const EID = 'e'.repeat(64)

function setup (over: Partial<ExecBackend> = {}): { b: ExecBackend, created: ExecConfig[] } {
  const c = testContainer(CID, 'web')
  const created: ExecConfig[] = []
  let inst: ExecInstance | undefined
  const b: ExecBackend = {
    container: (ref) => { if (ref === 'web') return c; throw notFound(`No such container: ${ref}`) },
    create: (_c, config) => { created.push(config); inst = new ExecInstance(EID, c, config); return inst },
    get: (ref) => { if (inst !== undefined && ref === EID) return inst; throw notFound(`No such exec instance: ${ref}`) },
    start: notCalled('start'),
    resize: notCalled('resize'),
    ...over
  }
  return { b, created }
}

test('create: the body is decoded first (no command, bad detach keys); inspect spells the instance as dockerd', async (t) => {
  const { b, created } = setup()
  const socket = await serveRoutes(t, execRoutes(b))
  const empty = await request(socket, 'POST', '/containers/web/exec', { body: { Cmd: [] } })
  assert.equal(empty.status, 400)
  assert.deepEqual(empty.json(), { message: 'No exec command specified' })
  const keys = await request(socket, 'POST', '/containers/web/exec', { body: { Cmd: ['sh'], DetachKeys: 'ctrl-' } })
  assert.equal(keys.status, 400)
  assert.deepEqual(keys.json(), { message: 'Invalid escape keys (ctrl-) provided' })
  assert.equal(created.length, 0)
  assert.equal((await request(socket, 'POST', '/containers/nope/exec', { body: { Cmd: ['sh'] } })).status, 404)
  const r = await request(socket, 'POST', '/containers/web/exec', { body: { cmd: ['ls', '-l'], tty: true, User: 'nobody', DetachKeys: 'ctrl-x', ConsoleSize: [24, 80] } })
  assert.deepEqual(r.json(), { Id: EID })
  assert.deepEqual(created[0]?.consoleSize, [24, 80])
  assert.deepEqual([...created[0]?.detachKeys ?? []], [24])
  assert.deepEqual((await request(socket, 'GET', `/exec/${EID}/json`)).json(), {
    ID: EID,
    Running: false,
    ExitCode: null,
    ProcessConfig: { tty: true, entrypoint: 'ls', arguments: ['-l'], privileged: false, user: 'nobody' },
    OpenStdin: false,
    OpenStderr: false,
    OpenStdout: false,
    CanRemove: false,
    ContainerID: CID,
    DetachKeys: 'GA==',
    Pid: 0
  })
})

test('create and resize: the backend\'s conflicts keep their status', async (t) => {
  const { b } = setup({ resize: (e) => { throw conflict(`Exec ${e.id} is not running`) } })
  const paused = { ...b, create: () => { throw conflict(`Container ${CID} is paused, unpause the container before exec`) } }
  const socket = await serveRoutes(t, execRoutes(b))
  const sockPaused = await serveRoutes(t, execRoutes(paused))
  assert.equal((await request(sockPaused, 'POST', '/containers/web/exec', { body: { Cmd: ['sh'] } })).status, 409)
  await request(socket, 'POST', '/containers/web/exec', { body: { Cmd: ['sh'] } })
  const rs = await request(socket, 'POST', `/exec/${EID}/resize?h=1&w=2`)
  assert.equal(rs.status, 409)
  assert.deepEqual(rs.json(), { message: `Exec ${EID} is not running` })
})

test('start: a failure after the connection was taken over is written on the raw stream', async (t) => {
  const starts: Array<{ detach: boolean, rawOutput: boolean }> = []
  const { b } = setup({
    start: async (_e, o) => {
      starts.push({ detach: o.detach, rawOutput: o.rawOutput })
      if (!o.detach) throw new Error('OCI runtime exec failed: exec: "nope": executable file not found in $PATH')
    }
  })
  const socket = await serveRoutes(t, execRoutes(b))
  await request(socket, 'POST', '/containers/web/exec', { body: { Cmd: ['nope'] } })
  const detached = await request(socket, 'POST', `/exec/${EID}/start`, { body: { Detach: true } })
  assert.equal(detached.status, 200)
  const body = '{"Detach":false,"Tty":true}'
  const got = (await rawExchange(socket, `POST /v1.44/exec/${EID}/start HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: tcp\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`)).toString()
  assert.match(got, /^HTTP\/1\.1 101 UPGRADED\r\nContent-Type: application\/vnd\.docker\.raw-stream\r\n/)
  assert.ok(got.endsWith('\r\n\r\nOCI runtime exec failed: exec: "nope": executable file not found in $PATH\r\n'), got)
  assert.deepEqual(starts, [{ detach: true, rawOutput: false }, { detach: false, rawOutput: true }])
})
