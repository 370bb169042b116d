// A data root written before the typed container model still loads: a container record in the earlier shape (all
// settings in a PascalCase HostConfig; fixtures/container-record-v1.json, as that version wrote it) is decoded when the
// daemon starts, inspects as a container created now with the same body, runs with its settings, and is written back
// in the current shape.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { ROOT, tmpDir, cleanupDir, startEngine, importBusybox, createContainer, request, containerSkipReason } from '../helpers/engine.js'
import { demuxAll } from '../../lib/stream/stdcopy.js'

const skip = containerSkipReason()

/** The create body the fixture record was made from. */
const BODY = {
  Image: 'busybox',
  Cmd: ['sh', '-c', 'echo hi'],
  Env: ['A=1'],
  Labels: { l: 'v' },
  Hostname: 'oldhost',
  ExposedPorts: { '80/tcp': {} },
  StopSignal: 'SIGUSR1',
  StopTimeout: 3,
  WorkingDir: '/tmp',
  User: '0',
  HostConfig: {
    RestartPolicy: { Name: 'on-failure', MaximumRetryCount: 2 },
    LogConfig: { Type: 'json-file', Config: { 'max-size': '1m' } },
    Dns: ['10.9.9.9'],
    DnsSearch: ['example.test'],
    DnsOptions: ['ndots:2'],
    ExtraHosts: ['oldpeer:10.1.2.3'],
    Tmpfs: { '/scratch': 'size=1m' },
    Ulimits: [{ Name: 'nofile', Soft: 1000, Hard: 2000 }],
    Memory: 64 * 1024 * 1024,
    CpuShares: 512,
    PidsLimit: 100,
    Binds: ['/tmp:/hosttmp:ro'],
    ReadonlyRootfs: false,
    CapAdd: ['NET_ADMIN'],
    ShmSize: 32 * 1024 * 1024,
    OomScoreAdj: 100
  }
}

/** Objects with their keys sorted, so that key order does not count. */
function canonical (v: unknown): unknown {
  if (Array.isArray(v)) return v.map(canonical)
  if (v === null || typeof v !== 'object') return v
  return Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => a.localeCompare(b)).map(([k, x]) => [k, canonical(x)]))
}

interface Inspect { HostConfig: Record<string, unknown>, Config: Record<string, unknown>, Mounts: unknown[], State: { ExitCode: number, Health?: unknown } }

test('a container record in the earlier shape loads, inspects as a new one, runs, and is written back in the current shape', { skip: skip ?? false }, async (t) => {
  const dir = tmpDir()
  t.after(async () => { await cleanupDir(dir) })
  let e = await startEngine(t, { dir })
  await importBusybox(e.socket)
  const fresh = await createContainer(e.socket, BODY, 'fresh')
  const old = await createContainer(e.socket, BODY, 'oldrec')
  const want = (await request(e.socket, 'GET', `/containers/${fresh}/json`)).json() as Inspect
  await e.close()

  const recordPath = join(e.dataRoot, 'containers', old, 'container.json')
  const current = JSON.parse(readFileSync(recordPath, 'utf8')) as Record<string, unknown>
  const stored = JSON.parse(readFileSync(join(ROOT, 'spec/engine/fixtures/container-record-v1.json'), 'utf8')) as Record<string, unknown>
  // a health log as that version kept it (the Engine API's shape)
  const health = { Status: 'unhealthy', FailingStreak: 3, Log: [{ Start: '2026-01-01T00:00:00.000000001Z', End: '2026-01-01T00:00:01Z', ExitCode: 1, Output: 'down\n' }] }
  const state = { ...(stored.state as Record<string, unknown>), health }
  writeFileSync(recordPath, JSON.stringify({ ...stored, id: current.id, name: current.name, created: current.created, imageId: current.imageId, state }))

  e = await startEngine(t, { dir })
  const got = (await request(e.socket, 'GET', `/containers/${old}/json`)).json() as Inspect
  assert.deepEqual(canonical(got.HostConfig), canonical(want.HostConfig))
  assert.deepEqual(canonical(got.Config), canonical(want.Config))
  assert.deepEqual(canonical(got.Mounts), canonical(want.Mounts))
  assert.deepEqual(got.State.Health, health)

  assert.equal((await request(e.socket, 'POST', `/containers/${old}/start`)).status, 204)
  const wait = (await request(e.socket, 'POST', `/containers/${old}/wait`)).json() as { StatusCode: number }
  assert.equal(wait.StatusCode, 0)
  assert.equal(demuxAll((await request(e.socket, 'GET', `/containers/${old}/logs?stdout=1`)).body).stdout.toString(), 'hi\n')
  // exit 0 under on-failure: not restarted
  const after = (await request(e.socket, 'GET', `/containers/${old}/json`)).json() as { State: { Status: string }, RestartCount: number }
  assert.equal(after.State.Status, 'exited')
  assert.equal(after.RestartCount, 0)

  // written back in the current shape, which loads as well
  const rewritten = JSON.parse(readFileSync(recordPath, 'utf8')) as Record<string, unknown>
  assert.equal(typeof rewritten.restartPolicy, 'object')
  await e.close()
  e = await startEngine(t, { dir })
  const again = (await request(e.socket, 'GET', `/containers/${old}/json`)).json() as Inspect
  assert.deepEqual(canonical(again.HostConfig), canonical(want.HostConfig))
  await e.close()
})
