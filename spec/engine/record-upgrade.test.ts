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

/**
 * Two containers made from `body` by the current code, the engine then closed: `fresh` (what `want` inspects as) and
 * `old`, whose record the test replaces with a fixture's (`current`: the record the current code wrote for it).
 */
async function twoContainers (t: Parameters<typeof startEngine>[0], body: Record<string, unknown>, suffix: string): Promise<{ dir: string, fresh: string, old: string, want: Inspect, recordPath: string, current: Record<string, unknown> }> {
  const dir = tmpDir()
  t.after(async () => { await cleanupDir(dir) })
  const e = await startEngine(t, { dir })
  await importBusybox(e.socket)
  const fresh = await createContainer(e.socket, body, `fresh${suffix}`)
  const old = await createContainer(e.socket, body, `oldrec${suffix}`)
  const want = (await request(e.socket, 'GET', `/containers/${fresh}/json`)).json() as Inspect
  await e.close()
  const recordPath = join(e.dataRoot, 'containers', old, 'container.json')
  return { dir, fresh, old, want, recordPath, current: JSON.parse(readFileSync(recordPath, 'utf8')) as Record<string, unknown> }
}

test('a container record in the earlier shape loads, inspects as a new one, runs, and is written back in the current shape', { skip: skip ?? false }, async (t) => {
  const { dir, old, want, recordPath, current } = await twoContainers(t, BODY, '')
  const stored = JSON.parse(readFileSync(join(ROOT, 'spec/engine/fixtures/container-record-v1.json'), 'utf8')) as Record<string, unknown>
  // a health log as that version kept it (the Engine API's shape)
  const health = { Status: 'unhealthy', FailingStreak: 3, Log: [{ Start: '2026-01-01T00:00:00.000000001Z', End: '2026-01-01T00:00:01Z', ExitCode: 1, Output: 'down\n' }] }
  const state = { ...(stored.state as Record<string, unknown>), health }
  writeFileSync(recordPath, JSON.stringify({ ...stored, id: current.id, name: current.name, created: current.created, imageId: current.imageId, state }))

  let e = await startEngine(t, { dir })
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

/** The create body of the record written by the main of before the record lost its HostConfig copy (fixtures/container-record-v2.json). */
const BODY2 = {
  Image: 'busybox',
  Cmd: ['sh', '-c', 'id -G; ulimit -n; cat /proc/sys/kernel/shmmni; grep -c scratch /proc/mounts'],
  Healthcheck: { Test: ['CMD-SHELL', 'true'], Interval: 2000000000, Retries: 4 },
  HostConfig: {
    Tmpfs: { '/scratch': 'size=1m' },
    Ulimits: [{ Name: 'nofile', Soft: 1000, Hard: 2000 }],
    Sysctls: { 'kernel.shmmni': '1000' },
    SecurityOpt: ['no-new-privileges'],
    GroupAdd: ['10'],
    Devices: [{ PathOnHost: '/dev/null', PathInContainer: '/dev/null2', CgroupPermissions: 'rwm' }],
    DeviceCgroupRules: ['c 1:3 rwm'],
    IpcMode: 'shareable',
    PidMode: '',
    OomScoreAdj: 10,
    Init: false,
    MemorySwappiness: 10,
    OomKillDisable: false,
    PortBindings: { '80/tcp': [{ HostIp: '127.0.0.1', HostPort: '' }] },
    PublishAllPorts: false,
    Links: null,
    Mounts: [{ Type: 'tmpfs', Target: '/tm', TmpfsOptions: { SizeBytes: 1000000 } }],
    ContainerIDFile: '',
    CpuCount: 0
  }
}

test('a record written with the PascalCase HostConfig copy (the main of before it went) is upgraded at load, written back at once, and runs as a new one', { skip: skip ?? false }, async (t) => {
  const { dir, fresh, old, want, recordPath, current } = await twoContainers(t, BODY2, '2')
  assert.equal(current.hostConfig, undefined)
  const stored = JSON.parse(readFileSync(join(ROOT, 'spec/engine/fixtures/container-record-v2.json'), 'utf8')) as Record<string, unknown>
  assert.equal(typeof stored.hostConfig, 'object')
  writeFileSync(recordPath, JSON.stringify({ ...stored, id: current.id, name: current.name, created: current.created, imageId: current.imageId }))

  let e = await startEngine(t, { dir })
  // written back in the current shape as the daemon loaded it, before anything else touched the container
  const rewritten = JSON.parse(readFileSync(recordPath, 'utf8')) as Record<string, unknown>
  assert.equal(rewritten.hostConfig, undefined)
  assert.deepEqual(rewritten.namespaces, current.namespaces)
  assert.deepEqual(rewritten.process, current.process)
  assert.deepEqual(rewritten.devices, current.devices)
  assert.deepEqual(rewritten.mountRequests, current.mountRequests)
  assert.deepEqual(rewritten.portRequests, current.portRequests)
  assert.deepEqual(rewritten.unapplied, current.unapplied)
  assert.deepEqual(rewritten.config, current.config)
  const got = (await request(e.socket, 'GET', `/containers/${old}/json`)).json() as Inspect
  assert.deepEqual(canonical(got.HostConfig), canonical(want.HostConfig))
  // (the default hostname is each container's ID)
  assert.deepEqual(canonical({ ...got.Config, Hostname: '' }), canonical({ ...want.Config, Hostname: '' }))

  // both run the same way
  const outputs: string[] = []
  for (const id of [fresh, old]) {
    assert.equal((await request(e.socket, 'POST', `/containers/${id}/start`)).status, 204)
    assert.equal(((await request(e.socket, 'POST', `/containers/${id}/wait`)).json() as { StatusCode: number }).StatusCode, 0)
    outputs.push(demuxAll((await request(e.socket, 'GET', `/containers/${id}/logs?stdout=1`)).body).stdout.toString())
  }
  assert.equal(outputs[1], outputs[0])
  assert.match(outputs[0] ?? '', /\b10\b[\s\S]*\n1000\n1000\n1\n$/)
  await e.close()
})
