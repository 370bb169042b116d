// A swarm state file written before the typed specs (fixtures/state-before-typed-specs.json, as main wrote it with
// a web service in the middle of an update, a pending, a failing and a rejected service, a job, a global service, a raw API body
// with fields Berth ignores, a secret and a config; its keys file holds that test swarm's throwaway data key) decodes,
// encodes back to the same document, and a daemon started on it shows every stored object byte for byte as it was
// (and, closed at once, leaves none of its published ports listening).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import net from 'node:net'
import { join } from 'node:path'
import { ROOT, tmpDir, cleanupDir, startEngine, request, containerSkipReason } from '../helpers/engine.js'
import { decodeState, encodeState } from '../../lib/swarm/state-file.js'
import { toService, toTask } from '../../lib/swarm/wire.js'

type Doc = Record<string, unknown>
const FIXTURE = join(ROOT, 'spec/swarm/fixtures/state-before-typed-specs.json')
const KEYS = join(ROOT, 'spec/swarm/fixtures/keys-before-typed-specs.json')

function fixture (): Doc { return JSON.parse(readFileSync(FIXTURE, 'utf8')) as Doc }
const records = (d: Doc, k: string): Record<string, Doc> => d[k] as Record<string, Doc>

test('a state file written before typed specs decodes and encodes back to the same document', () => {
  const stored = fixture()
  const st = decodeState(stored)
  assert.deepStrictEqual(encodeState(st), stored)
  // what the API showed was read from these stored objects: the same bytes, in the same order
  for (const [id, raw] of Object.entries(records(stored, 'services'))) {
    const shown = toService(st.services[id] as NonNullable<typeof st.services[string]>)
    for (const k of ['Spec', 'PreviousSpec', 'Endpoint', 'UpdateStatus', 'JobStatus']) assert.equal(JSON.stringify(shown[k]), JSON.stringify(raw[k]), `service ${id} ${k}`)
  }
  for (const [id, raw] of Object.entries(records(stored, 'tasks'))) {
    const shown = toTask(st.tasks[id] as NonNullable<typeof st.tasks[string]>)
    for (const k of ['Labels', 'Spec', 'Status', 'JobIteration']) assert.equal(JSON.stringify(shown[k]), JSON.stringify(raw[k]), `task ${id} ${k}`)
  }
  // the tasks of a template share its decoded spec
  const web = Object.values(st.services).find((s) => s.spec.name === 'web')
  const running = Object.values(st.tasks).filter((t) => t.serviceId === web?.id && t.desiredState === 'running')
  assert.ok(running.length > 0 && running.every((t) => t.spec === web?.spec.taskTemplate))
})

test('typed specs read what the stored documents say', () => {
  const st = decodeState(fixture())
  const by = (name: string): NonNullable<typeof st.services[string]> => Object.values(st.services).find((s) => s.spec.name === name) as NonNullable<typeof st.services[string]>
  const web = by('web')
  assert.deepEqual(web.spec.mode, { kind: 'replicated', replicas: 2 })
  assert.deepEqual(web.spec.taskTemplate.containerSpec.env, ['B=2'])
  assert.deepEqual(web.previousSpec?.taskTemplate.containerSpec.env, [])
  assert.equal(web.spec.taskTemplate.containerSpec.stopGracePeriodNs, 1_000_000_000)
  assert.deepEqual(web.spec.taskTemplate.containerSpec.healthcheck, { test: ['CMD-SHELL', 'true'], interval: 1_000_000_000 })
  assert.equal(web.spec.taskTemplate.containerSpec.secrets[0]?.file?.name, 's1')
  assert.equal(web.spec.taskTemplate.containerSpec.configs[0]?.file?.name, '/etc/c1')
  assert.equal(web.updateStatus?.state, 'updating') // the file was written while the update ran
  assert.equal(web.endpoint.ports?.[0]?.publishedPort, 20080)
  assert.deepEqual(by('job').spec.mode, { kind: 'replicated-job', maxConcurrent: 2, totalCompletions: 2 })
  assert.deepEqual(by('glob').spec.mode, { kind: 'global' })
  assert.deepEqual(by('pend').spec.taskTemplate.placement.constraints, ['node.labels.zone==nowhere'])
  assert.equal(by('fail').spec.taskTemplate.restartPolicy.condition, 'on-failure')
  assert.equal(by('fail').spec.taskTemplate.restartPolicy.maxAttempts, 1)
  // a field Berth ignores stays in the document the API shows, and nowhere else
  const raw = by('raw')
  assert.equal((raw.spec.wire.TaskTemplate as Doc).Foo, 'bar')
  assert.deepEqual(raw.spec.taskTemplate.containerSpec.command, ['sleep', '1000'])
  assert.equal(st.swarm?.spec.taskHistoryRetentionLimit, 5)
  assert.deepEqual(st.swarm?.node.spec.labels, { k: 'v' })
  const failed = Object.values(st.tasks).find((t) => t.status.state === 'failed' && t.restart === true)
  assert.equal(failed?.status.containerStatus?.exitCode, 3)
  assert.equal(failed?.status.err, 'task: non-zero exit (3)')
  // specs never change once decoded
  assert.throws(() => { (web.spec.wire as Doc).Name = 'other' }, TypeError)
})

test('a daemon started on that state shows every stored object as it was', { skip: containerSkipReason() ?? false }, async (t) => {
  const stored = fixture()
  const root = tmpDir()
  t.after(async () => { await cleanupDir(root) })
  const dir = join(root, 'data', 'swarm')
  mkdirSync(dir, { recursive: true, mode: 0o700 })
  writeFileSync(join(dir, 'state.json'), JSON.stringify(stored), { mode: 0o600 })
  writeFileSync(join(dir, 'keys.json'), readFileSync(KEYS), { mode: 0o600 })
  const e = await startEngine(t, { dir: root })
  // the task list first: the orchestrator starts on these tasks at once (and may prune the oldest of a slot later)
  const tasks = new Map(((await request(e.socket, 'GET', '/tasks')).json() as Doc[]).map((x) => [x.ID as string, x]))
  const get = async (path: string): Promise<Doc> => {
    const r = await request(e.socket, 'GET', path)
    assert.equal(r.status, 200, `${path}: ${r.text}`)
    return r.json() as Doc
  }
  const swarm = await get('/swarm')
  const s0 = stored.swarm as Doc
  assert.equal(JSON.stringify(swarm.Spec), JSON.stringify(s0.Spec))
  assert.deepEqual(swarm.JoinTokens, s0.JoinTokens)
  const node = (await get('/nodes/self'))
  assert.equal(JSON.stringify(node.Spec), JSON.stringify((s0.node as Doc).Spec))
  for (const [id, raw] of Object.entries(records(stored, 'services'))) {
    const got = await get(`/services/${id}`)
    for (const k of ['ID', 'CreatedAt', 'Spec', 'PreviousSpec', 'Endpoint', 'JobStatus']) assert.equal(JSON.stringify(got[k]), JSON.stringify(raw[k]), `service ${id} ${k}`)
  }
  for (const [id, raw] of Object.entries(records(stored, 'tasks'))) {
    const got = tasks.get(id) ?? {}
    for (const k of ['ID', 'CreatedAt', 'Labels', 'Spec', 'ServiceID', 'Slot', 'NodeID']) assert.equal(JSON.stringify(got[k]), JSON.stringify(raw[k]), `task ${id} ${k}`)
  }
  const config = await get(`/configs/${Object.keys(records(stored, 'configs'))[0] as string}`)
  assert.equal(Buffer.from((config.Spec as Doc).Data as string, 'base64').toString(), 'conf')
  const secrets = (await request(e.socket, 'GET', '/secrets')).json() as Doc[]
  assert.deepEqual(secrets.map((s) => s.Spec), Object.values(records(stored, 'secrets')).map((s) => ({ Name: (s.Spec as Doc).Name, Labels: (s.Spec as Doc).Labels })))
  await e.close()
  // a daemon closed while its published ports were being opened (the first pass ran) leaves none listening
  for (const port of [20080, 30000]) {
    const refused = await new Promise<boolean>((resolve) => {
      const sock = net.connect({ host: '127.0.0.1', port }, () => { sock.destroy(); resolve(false) })
      sock.on('error', () => { resolve(true) })
    })
    assert.ok(refused, `port ${port} still listens after close()`)
  }
  // what the daemon wrote back loads the same way
  const written = JSON.parse(readFileSync(join(dir, 'state.json'), 'utf8')) as Doc
  assert.deepStrictEqual(encodeState(decodeState(written)), written)
  for (const [id, raw] of Object.entries(records(stored, 'services'))) {
    assert.equal(JSON.stringify(records(written, 'services')[id]?.Spec), JSON.stringify(raw.Spec))
  }
})
