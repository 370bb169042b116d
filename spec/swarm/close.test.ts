// An embedded engine closed while its swarm is at work (a scale-up starting tasks, a start-first update, a stop-first
// update stopping tasks with their grace period): once close() has resolved nothing of the swarm runs any more (no
// runtime command, no file written or removed under the engine's roots, no warning or error logged), and an engine
// started again on the same roots converges: one running task per slot, of the latest spec, no task left between
// states, no task container without its task.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { existsSync, lstatSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { setTimeout as delay } from 'node:timers/promises'
import { enableLogs, routeLogs } from '../../lib/log.js'
import { cleanupDir, containerSkipReason, importBusybox, purgeNetwork, request, startEngine, tmpDir, uniqueNetworkOptions, type TestEngine } from '../helpers/engine.js'
import { until, tasksOf, runningBySlot } from './helpers.js'

const skip = containerSkipReason()

// the warnings and errors of every module, with the time they were logged
const records: Array<{ at: number, line: string }> = []
enableLogs('berth:*:warn,berth:*:error')
routeLogs((namespace, message) => { records.push({ at: Date.now(), line: `${namespace} ${message}` }) })

/** Every file, directory and link under `dir` (not following links): its kind, size and modification time. */
function tree (dir: string, skipName: string): Map<string, string> {
  const out = new Map<string, string>()
  const walk = (d: string): void => {
    let names: string[]
    try { names = readdirSync(d) } catch { return }
    for (const name of names) {
      const p = join(d, name)
      if (p === skipName) continue
      let st
      try { st = lstatSync(p) } catch { continue }
      out.set(p, st.isDirectory() ? 'dir' : `${st.isSymbolicLink() ? 'link' : 'file'} ${st.size} ${st.mtimeMs}`)
      if (st.isDirectory()) walk(p)
    }
  }
  walk(dir)
  return out
}

function changes (before: Map<string, string>, after: Map<string, string>): string[] {
  const out: string[] = []
  for (const [p, v] of after) if (before.get(p) !== v) out.push(`${before.has(p) ? 'changed' : 'made'} ${p}`)
  for (const p of before.keys()) if (!after.has(p)) out.push(`removed ${p}`)
  return out
}

interface Svc { Version: { Index: number }, Spec: Record<string, any>, UpdateStatus?: { State: string } }

test('engine.close() while the swarm starts, updates and stops tasks: nothing runs after it, and a restart converges', { skip: skip ?? false }, async (t) => {
  const dir = tmpDir()
  const n = uniqueNetworkOptions()
  t.after(async () => { await purgeNetwork(n, dir); await cleanupDir(dir) })
  // the engine's runtime records each command it runs
  const calls = join(dir, 'runtime.log')
  const runc = execFileSync('sh', ['-c', 'PATH="$PATH:/usr/sbin:/sbin" command -v runc'], { encoding: 'utf8' }).trim()
  const traced = join(dir, 'runc-traced')
  writeFileSync(traced, `#!/bin/sh\nprintf '%s\\n' "$*" >> '${calls}'\nexec '${runc}' "$@"\n`, { mode: 0o755 })
  const runtimeCalls = (): string[] => existsSync(calls) ? readFileSync(calls, 'utf8').split('\n').filter((l) => l !== '') : []
  const start = async (): Promise<TestEngine> => await startEngine(t, { dir, keepNetwork: true, options: { ...n, runtime: traced } })

  let e = await start()
  await importBusybox(e.socket)
  assert.equal((await request(e.socket, 'POST', '/swarm/init', { body: { ListenAddr: '127.0.0.1:2377', AdvertiseAddr: '127.0.0.1' } })).status, 200)
  const secret = await request(e.socket, 'POST', '/secrets/create', { body: { Name: 'pw', Data: Buffer.from('s3cret').toString('base64') } })
  assert.equal(secret.status, 201, secret.text)
  const secretId = (secret.json() as { ID: string }).ID
  // busybox's sleep as PID 1 ignores SIGTERM: each stop waits out the whole grace period (3 s)
  const spec = (replicas: number, env: string, order: 'start-first' | 'stop-first'): Record<string, unknown> => ({
    Name: 'web',
    TaskTemplate: {
      ContainerSpec: {
        Image: 'busybox:latest',
        Command: ['sleep', '600'],
        Env: [`ROUND=${env}`],
        StopGracePeriod: 3_000_000_000,
        Secrets: [{ SecretID: secretId, SecretName: 'pw', File: { Name: 'pw', UID: '0', GID: '0', Mode: 0o400 } }]
      },
      RestartPolicy: { Condition: 'any', Delay: 0 }
    },
    Mode: { Replicated: { Replicas: replicas } },
    UpdateConfig: { Parallelism: 0, Order: order, FailureAction: 'pause', Monitor: 0 }
  })
  const created = await request(e.socket, 'POST', '/services/create', { body: spec(2, 'a', 'start-first') })
  assert.equal(created.status, 201, created.text)

  /** The service runs `replicas` tasks of its spec, one per slot, and nothing else: every task either runs or has
   *  ended, every task container belongs to a task, no container is left created. */
  const converged = async (replicas: number, env: string): Promise<void> => {
    await until(`${replicas} tasks of ROUND=${env} running`, async () => {
      const run = await runningBySlot(e.socket, 'web')
      const svc = (await request(e.socket, 'GET', '/services/web')).json() as Svc
      const state = svc.UpdateStatus?.State
      return run.size === replicas && (state === undefined || state === 'completed') ? run : undefined
    }, 60_000, 100)
    // (the tasks shut down by the update end after their grace period)
    const tasks = await until('every other task ended', async () => {
      const all = await tasksOf(e.socket, 'web')
      return all.every((x) => (x.Status.State === 'running' && x.DesiredState === 'running') || ['shutdown', 'failed', 'complete', 'rejected'].includes(x.Status.State)) ? all : undefined
    }, 30_000, 100)
    const running = tasks.filter((x) => x.Status.State === 'running')
    assert.equal(running.length, replicas, JSON.stringify(tasks.map((x) => [x.Slot, x.Status.State, x.DesiredState])))
    for (const x of running) {
      const c = (await request(e.socket, 'GET', `/containers/${x.Status.ContainerStatus?.ContainerID ?? ''}/json`)).json() as { Config: { Env: string[] } }
      assert.ok(c.Config.Env.includes(`ROUND=${env}`), `task ${x.ID} runs ROUND=${env}`)
    }
    const taskIds = new Set(tasks.map((x) => x.ID))
    const containers = (await request(e.socket, 'GET', '/containers/json?all=1&filters=' + encodeURIComponent(JSON.stringify({ label: ['com.docker.swarm.task.id'] })))).json() as Array<{ Id: string, State: string, Labels: Record<string, string> }>
    for (const c of containers) {
      assert.ok(taskIds.has(c.Labels['com.docker.swarm.task.id'] as string), `container ${c.Id.slice(0, 12)} (${c.State}) has no task`)
      assert.notEqual(c.State, 'created', `container ${c.Id.slice(0, 12)} left created`)
    }
  }
  await converged(2, 'a')

  /** Closes the engine `ms` after `ready` holds, then checks that nothing of it runs for a while after. */
  const closeDuring = async (what: string, change: (svc: Svc) => Record<string, unknown>, ready: () => Promise<boolean>, ms: number): Promise<void> => {
    const svc = (await request(e.socket, 'GET', '/services/web')).json() as Svc
    const r = await request(e.socket, 'POST', `/services/web/update?version=${svc.Version.Index}`, { body: change(svc) })
    assert.equal(r.status, 200, r.text)
    await until(`${what}: the moment to close`, ready, 20_000, 5)
    await delay(ms)
    const closing = Date.now()
    await e.close()
    const closed = Date.now()
    const filesThen = tree(dir, calls)
    const callsThen = runtimeCalls().length
    // longer than a stop's grace period: a stop the close did not end would kill after it
    await delay(3500)
    const late = { calls: runtimeCalls().slice(callsThen), files: changes(filesThen, tree(dir, calls)), logged: records.filter((x) => x.at >= closing).map((x) => x.line) }
    e = await start()
    assert.deepEqual(late.calls, [], `${what}: runtime commands after close()`)
    assert.deepEqual(late.files, [], `${what}: files after close()`)
    assert.deepEqual(late.logged, [], `${what}: warnings or errors during or after close() (it took ${closed - closing} ms)`)
  }

  await t.test('closed during a scale-up (tasks being created and started)', async () => {
    await closeDuring('scale 2 → 6', (svc) => ({ ...svc.Spec, Mode: { Replicated: { Replicas: 6 } } }),
      async () => (await tasksOf(e.socket, 'web')).some((x) => (x.Slot ?? 0) > 2), 150)
    await converged(6, 'a')
  })

  await t.test('closed during a start-first update (new tasks starting beside the old ones)', async () => {
    await closeDuring('start-first update', () => spec(6, 'b', 'start-first'),
      async () => (await tasksOf(e.socket, 'web')).filter((x) => x.DesiredState === 'running').length > 6, 150)
    await converged(6, 'b')
  })

  await t.test('closed during a stop-first update (tasks stopping with their grace period)', async () => {
    await closeDuring('stop-first update', () => spec(4, 'c', 'stop-first'),
      async () => (await tasksOf(e.socket, 'web')).some((x) => x.DesiredState === 'shutdown' && x.Status.State === 'running'), 300)
    await converged(4, 'c')
    assert.equal((await request(e.socket, 'DELETE', '/services/web')).status, 200)
    assert.equal((await request(e.socket, 'POST', '/swarm/leave?force=1')).status, 200)
  })
})
