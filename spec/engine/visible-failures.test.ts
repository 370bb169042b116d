// Failures of state changes that the engine survives are in the operator's log (warn and error records), not lost.
// Each is provoked for real: a read-only mount over a store's directory, something mounted inside a volume.
import { test, type TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { existsSync, mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { enableLogs, routeLogs } from '../../lib/log.js'
import { startEngine, request, importBusybox, createContainer, containerSkipReason } from '../helpers/engine.js'
import { until } from '../helpers/poll.js'

const skip = containerSkipReason()

// this test file owns its process: the operator's records go to this list instead of stderr
const records: string[] = []
enableLogs('berth:*:warn,berth:*:error')
routeLogs((namespace, message) => { records.push(`${namespace} ${message}`) })

async function logged (re: RegExp): Promise<string> {
  return await until(`a log record matching ${String(re)}`, async () => records.find((r) => re.test(r)), 10_000)
}

/** Makes `dir` read-only with a bind mount over itself, undone after the test (where `now()` says it is then). */
function readOnly (t: TestContext, dir: string, now = (): string => dir): void {
  execFileSync('mount', ['--bind', dir, dir])
  t.after(() => { execFileSync('umount', ['-l', now()]) })
  execFileSync('mount', ['-o', 'remount,bind,ro', dir, dir])
}

test('failures the engine survives are logged', { skip: skip ?? false }, async (t) => {
  const { socket, dataRoot } = await startEngine(t)

  await t.test('an image removed while its blobs cannot be deleted: removed, and the blobs left are named', async (t) => {
    const id = await importBusybox(socket, 'visible-failures')
    readOnly(t, join(dataRoot, 'content', 'blobs', 'sha256'))
    const r = await request(socket, 'DELETE', '/images/visible-failures?force=1')
    assert.equal(r.status, 200, r.text)
    const line = await logged(new RegExp(`^berth:engine:images:warn removing image ${id.slice(7, 19)} leaves blob ${id}: .*read-only`))
    assert.match(line, /EROFS/)
  })

  await t.test('a volume whose data cannot all be removed: removed, and where its data stays is said', async (t) => {
    assert.equal((await request(socket, 'POST', '/volumes/create', { body: { Name: 'stuck' } })).status, 201)
    const inside = join(dataRoot, 'volumes', 'stuck', '_data', 'mounted')
    mkdirSync(inside)
    writeFileSync(join(inside, 'file'), 'x')
    // the removal renames the volume's directory away first: the mount goes along
    let trash = ''
    readOnly(t, inside, () => trash === '' ? inside : join(trash, '_data', 'mounted'))
    const r = await request(socket, 'DELETE', '/volumes/stuck')
    assert.equal(r.status, 204, r.text)
    const line = await logged(/^berth:volumes:warn removing volume stuck leaves its data in (\S+): /)
    trash = (/leaves its data in (\S+):/.exec(line) as RegExpExecArray)[1] as string
    assert.ok(existsSync(join(trash, '_data', 'mounted', 'file')))
  })

  await t.test('an exit whose record cannot be written: the container is seen exited, and the failed write is logged', async (t) => {
    await importBusybox(socket)
    const id = await createContainer(socket, { Image: 'busybox', Cmd: ['sleep', '300'] })
    assert.equal((await request(socket, 'POST', `/containers/${id}/start`)).status, 204)
    readOnly(t, join(dataRoot, 'containers', id))
    assert.equal((await request(socket, 'POST', `/containers/${id}/kill`)).status, 204)
    assert.equal(((await request(socket, 'POST', `/containers/${id}/wait`)).json() as { StatusCode: number }).StatusCode, 137)
    await logged(new RegExp(`^berth:engine:containers:warn container ${id}: writing its exit .*: .*read-only`))
  })

  await t.test('a stop whose networking record cannot be written: the container stops, and the failed write is logged', async (t) => {
    const id = await createContainer(socket, { Image: 'busybox', Cmd: ['sleep', '300'] })
    assert.equal((await request(socket, 'POST', `/containers/${id}/start`)).status, 204)
    readOnly(t, join(dataRoot, 'network', 'sandboxes'))
    assert.equal((await request(socket, 'POST', `/containers/${id}/stop?t=0`)).status, 204)
    await logged(new RegExp(`^berth:engine:network:warn container ${id.slice(0, 12)}: its released networking was not written .*read-only`))
  })
})
