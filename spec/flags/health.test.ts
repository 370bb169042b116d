// Health checks with the real docker CLI: healthy → unhealthy → healthy with the events, ps and the health filter,
// the start period, NONE, dockerd's checks; and checks that go on for a container re-adopted after a daemon kill -9.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawn, type ChildProcess } from 'node:child_process'
import { join } from 'node:path'
import { once } from 'node:events'
import { existsSync } from 'node:fs'
import { startEngine, containerSkipReason, hasDockerCli, dockerCli, busyboxTar, request, ROOT, tmpDir, importBusybox, createContainer, uniqueNetworkOptions, daemonNetworkArgs, cleanupDaemon } from '../helpers/engine.js'
import { until as poll } from '../helpers/poll.js'

const skip = containerSkipReason() ?? (hasDockerCli() ? null : 'the docker CLI is not installed')

/** Bounded polling at health-check pace: 20 s at most, every 100 ms. */
const until = async <T>(what: string, fn: () => Promise<T | undefined>): Promise<T> => await poll(what, fn, 20_000, 100)

interface Health { Status: string, FailingStreak: number, Log: Array<{ ExitCode: number, Output: string }> }

test('health checks', { skip: skip ?? false }, async (t) => {
  const { socket } = await startEngine(t)
  const docker = async (...args: string[]): ReturnType<typeof dockerCli> => await dockerCli(socket, args)
  assert.equal((await docker('import', busyboxTar(), 'busybox:latest')).status, 0)
  const health = async (id: string): Promise<Health | undefined> => {
    const r = await request(socket, 'GET', `/containers/${id}/json`)
    return (r.json() as { State: { Health?: Health } }).State.Health
  }
  const status = async (id: string, want: string): Promise<Health> => await until(`${want}`, async () => { const h = await health(id); return h?.Status === want ? h : undefined })

  await t.test('healthy → unhealthy → healthy: State.Health, ps, the health filter, health_status events', async () => {
    const since = String(Math.floor(Date.now() / 1000) - 1)
    const id = (await docker('run', '-d', '--name', 'hc', '--health-cmd', 'test -f /tmp/ok && echo fine', '--health-interval', '200ms',
      '--health-retries', '2', '--health-timeout', '2s', 'busybox', 'sh', '-c', 'touch /tmp/ok; sleep 120')).stdout.trim()
    assert.match(id, /^[0-9a-f]{64}$/)
    const healthy = await status(id, 'healthy')
    assert.equal(healthy.Log[healthy.Log.length - 1]?.ExitCode, 0)
    assert.equal(healthy.Log[healthy.Log.length - 1]?.Output, 'fine\n')
    assert.match((await docker('ps', '--filter', 'name=hc')).stdout, /Up .* \(healthy\)/)
    assert.match((await docker('ps', '-q', '--no-trunc', '--filter', 'health=healthy')).stdout, new RegExp(id))
    assert.equal((await docker('exec', 'hc', 'rm', '/tmp/ok')).status, 0)
    const sick = await status(id, 'unhealthy')
    assert.ok(sick.FailingStreak >= 2)
    assert.notEqual(sick.Log[sick.Log.length - 1]?.ExitCode, 0)
    assert.match((await docker('ps', '--filter', 'name=hc')).stdout, /\(unhealthy\)/)
    assert.match((await docker('ps', '-q', '--no-trunc', '--filter', 'health=unhealthy')).stdout, new RegExp(id))
    assert.doesNotMatch((await docker('ps', '-q', '--no-trunc', '--filter', 'health=healthy')).stdout, new RegExp(id))
    assert.equal((await docker('exec', 'hc', 'touch', '/tmp/ok')).status, 0)
    const again = await status(id, 'healthy')
    assert.equal(again.FailingStreak, 0)
    assert.ok(again.Log.length <= 5, 'the last 5 results')
    const ev = await docker('events', '--since', since, '--until', String(Math.floor(Date.now() / 1000) + 1), '--filter', `container=${id}`, '--format', '{{.Action}}')
    const statuses = ev.stdout.split('\n').filter((l) => l.startsWith('health_status'))
    assert.deepEqual(statuses, ['health_status: healthy', 'health_status: unhealthy', 'health_status: healthy'])
    // each probe is an exec with its own events, as in dockerd: exec_create, exec_start (with the command), exec_die
    const probe = '/bin/sh -c test -f /tmp/ok && echo fine'
    const json = await docker('events', '--since', since, '--until', String(Math.floor(Date.now() / 1000) + 1), '--filter', `container=${id}`, '--format', '{{json .}}')
    const events = json.stdout.split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as { Action: string, Actor: { ID: string, Attributes: Record<string, string> } })
    const first = events.find((e) => e.Action === `exec_create: ${probe}`)
    assert.ok(first !== undefined, JSON.stringify(events.map((e) => e.Action)))
    const execID = first.Actor.Attributes.execID ?? ''
    assert.deepEqual(first.Actor, { ID: id, Attributes: { execID, image: 'busybox', name: 'hc' } })
    const ofProbe = events.filter((e) => e.Actor.Attributes.execID === execID).map((e) => [e.Action, e.Actor.Attributes.exitCode])
    assert.deepEqual(ofProbe, [[`exec_create: ${probe}`, undefined], [`exec_start: ${probe}`, undefined], ['exec_die', '0']])
    assert.ok(events.some((e) => e.Action === 'exec_die' && e.Actor.Attributes.exitCode === '1'), 'a failing probe\'s exec_die')
    assert.equal((await docker('rm', '-f', 'hc')).status, 0)
  })

  await t.test('(health: starting); the start period; NONE; the image\'s HEALTHCHECK; an exit stops the checks', async () => {
    const slow = (await docker('run', '-d', '--health-cmd', 'true', '--health-interval', '60s', 'busybox', 'sleep', '60')).stdout.trim()
    assert.match((await docker('ps', '--filter', `id=${slow}`)).stdout, /\(health: starting\)/)
    assert.match((await docker('ps', '-q', '--no-trunc', '--filter', 'health=starting')).stdout, new RegExp(slow))
    const grace = (await docker('run', '-d', '--health-cmd', 'false', '--health-interval', '100ms', '--health-retries', '1', '--health-start-period', '60s', '--health-start-interval', '100ms', 'busybox', 'sleep', '60')).stdout.trim()
    const h = await until('probes in the start period', async () => { const x = await health(grace); return (x?.Log.length ?? 0) >= 3 ? x : undefined })
    assert.equal(h.Status, 'starting')
    assert.equal(h.FailingStreak, 0)
    const none = (await docker('run', '-d', '--no-healthcheck', 'busybox', 'sleep', '60')).stdout.trim()
    assert.equal(await health(none), undefined)
    assert.match((await docker('ps', '-q', '--no-trunc', '--filter', 'health=none')).stdout, new RegExp(none))
    // an image with a HEALTHCHECK (committed from a container's config)
    const c = await request(socket, 'POST', '/commit?container=' + none + '&repo=hcimage&tag=1', { body: { Healthcheck: { Test: ['CMD-SHELL', 'exit 0'], Interval: 100_000_000 } } })
    assert.equal(c.status, 201, c.text)
    const fromImage = (await docker('run', '-d', 'hcimage:1', 'sleep', '60')).stdout.trim()
    await status(fromImage, 'healthy')
    // the checks end with the container
    assert.equal((await docker('stop', '-t', '0', fromImage)).status, 0)
    const after = (await health(fromImage))?.Log.length ?? 0
    await new Promise((resolve) => setTimeout(resolve, 400))
    assert.equal((await health(fromImage))?.Log.length ?? 0, after)
    await docker('rm', '-f', slow, grace, none, fromImage)
  })

  await t.test('dockerd\'s checks of a Healthcheck and of the health filter', async () => {
    const r = await request(socket, 'POST', '/containers/create', { body: { Image: 'busybox', Cmd: ['true'], Healthcheck: { Test: ['CMD', 'true'], Interval: 1000 } } })
    assert.equal(r.status, 400)
    assert.match(r.text, /Interval in Healthcheck cannot be less than 1ms/)
    const n = await request(socket, 'POST', '/containers/create', { body: { Image: 'busybox', Cmd: ['true'], Healthcheck: { Test: ['CMD', 'true'], Retries: -1 } } })
    assert.match(n.text, /Retries in Healthcheck cannot be negative/)
    const f = await docker('ps', '--filter', 'health=great')
    // dockerd 28's wording (20.10 said `Unrecognised filter value for health: great`)
    assert.match(f.stderr, /invalid filter 'health=great': invalid value for health \(great\): must be one of none, starting, healthy, unhealthy/)
  })
})

test('health checks go on for a container re-adopted after a daemon kill -9', { skip: containerSkipReason() ?? false }, async (t) => {
  const net = uniqueNetworkOptions()
  const dir = tmpDir()
  const sock = join(dir, 'b.sock')
  const start = async (): Promise<ChildProcess> => {
    const child = spawn(process.execPath, [join(ROOT, 'dist', 'lib', 'cli', 'main.js'), 'daemon', '--config-file', '/dev/null', '-H', `unix://${sock}`, '--data-root', join(dir, 'data'), '--exec-root', join(dir, 'run'), ...daemonNetworkArgs(net)], { stdio: 'ignore' })
    await until('the daemon', async () => existsSync(sock) && await request(sock, 'GET', '/_ping').then((r) => r.status === 200, () => false) ? true : undefined)
    return child
  }
  let daemon = await start()
  t.after(async () => {
    await cleanupDaemon(daemon, dir, net)
  })
  await importBusybox(sock)
  const id = await createContainer(sock, { Image: 'busybox', Cmd: ['sh', '-c', 'touch /tmp/ok; sleep 120'], Healthcheck: { Test: ['CMD', 'test', '-f', '/tmp/ok'], Interval: 150_000_000, Retries: 1 } }, 'hc')
  assert.equal((await request(sock, 'POST', `/containers/${id}/start`)).status, 204)
  const health = async (): Promise<Health | undefined> => ((await request(sock, 'GET', `/containers/${id}/json`)).json() as { State: { Health?: Health } }).State.Health
  await until('healthy', async () => (await health())?.Status === 'healthy' ? true : undefined)
  daemon.kill('SIGKILL')
  await once(daemon, 'exit')
  daemon = await start()
  const before = (await health())?.Log.length ?? 0
  // the re-adopted container's checks run again: a failing file flips it to unhealthy
  const ex = await request(sock, 'POST', `/containers/${id}/exec`, { body: { Cmd: ['rm', '/tmp/ok'] } })
  assert.equal((await request(sock, 'POST', `/exec/${(ex.json() as { Id: string }).Id}/start`, { body: { Detach: true } })).status, 200)
  const sick = await until('unhealthy after the restart', async () => { const h = await health(); return h?.Status === 'unhealthy' ? h : undefined })
  assert.ok(sick.Log.length >= Math.min(5, before), 'the log survived the restart')
  await request(sock, 'POST', `/containers/${id}/stop?t=0`)
})
