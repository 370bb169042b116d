// Container lifecycle over the API with real runc containers: create/start/wait/logs/list/inspect/stop/kill/
// restart/pause/rename/remove, prefixes, wait conditions, log options, limits in the runtime spec.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { readFileSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { startEngine, request, importBusybox, createContainer, containerSkipReason, tmpDir } from '../helpers/engine.js'
import { demuxAll } from '../../lib/stream/stdcopy.js'

const skip = containerSkipReason()

async function run (socket: string, cmd: string[], extra: Record<string, unknown> = {}): Promise<{ id: string, code: number }> {
  const id = await createContainer(socket, { Image: 'busybox', Cmd: cmd, ...extra })
  const wait = request(socket, 'POST', `/containers/${id}/wait?condition=next-exit`)
  assert.equal((await request(socket, 'POST', `/containers/${id}/start`)).status, 204)
  const w = await wait
  return { id, code: (w.json() as { StatusCode: number }).StatusCode }
}

test('container lifecycle', { skip: skip ?? false }, async (t) => {
  const { socket } = await startEngine(t)
  await importBusybox(socket)

  await t.test('create → start → wait → logs, the seed sequence', async () => {
    const create = await request(socket, 'POST', '/v1.50/containers/create', { body: { Image: 'busybox', Cmd: ['sh', '-c', 'echo hello world; echo oops >&2'] } })
    assert.equal(create.status, 201)
    const { Id, Warnings } = create.json() as { Id: string, Warnings: unknown }
    assert.match(Id, /^[0-9a-f]{64}$/)
    assert.deepEqual(Warnings, [])
    assert.equal((await request(socket, 'POST', `/v1.50/containers/${Id.slice(0, 8)}/start`)).status, 204)
    const wait = await request(socket, 'POST', `/v1.50/containers/${Id.slice(0, 8)}/wait`)
    assert.deepEqual(wait.json(), { Error: null, StatusCode: 0 })
    const logs = await request(socket, 'GET', `/v1.50/containers/${Id}/logs?stdout=1&stderr=1`)
    assert.equal(logs.headers['content-type'], 'application/vnd.docker.multiplexed-stream')
    const { stdout, stderr, frames } = demuxAll(logs.body)
    assert.equal(stdout.toString(), 'hello world\n')
    assert.equal(stderr.toString(), 'oops\n')
    assert.ok(frames.every((f) => f.type === 1 || f.type === 2))
    const only = demuxAll((await request(socket, 'GET', `/containers/${Id}/logs?stdout=1`)).body)
    assert.equal(only.stderr.length, 0)
    const older = await request(socket, 'GET', `/v1.41/containers/${Id}/logs?stdout=1`)
    assert.equal(older.headers['content-type'], 'application/vnd.docker.raw-stream')
  })

  await t.test('exit codes, start of a missing executable', async () => {
    assert.equal((await run(socket, ['sh', '-c', 'exit 7'])).code, 7)
    const id = await createContainer(socket, { Image: 'busybox', Cmd: ['/nonexistent'] })
    const r = await request(socket, 'POST', `/containers/${id}/start`)
    assert.equal(r.status, 400)
    assert.match((r.json() as { message: string }).message, /no such file or directory/)
    const st = (await request(socket, 'GET', `/containers/${id}/json`)).json() as { State: { Status: string, ExitCode: number } }
    assert.equal(st.State.Status, 'exited')
    assert.equal(st.State.ExitCode, 127)
  })

  await t.test('wait: not-running returns at once for a created container; next-exit waits; bad condition', async () => {
    const id = await createContainer(socket, { Image: 'busybox', Cmd: ['true'] })
    assert.deepEqual((await request(socket, 'POST', `/containers/${id}/wait`)).json(), { Error: null, StatusCode: 0 })
    const bad = await request(socket, 'POST', `/containers/${id}/wait?condition=x`)
    assert.equal(bad.status, 400)
    assert.equal((bad.json() as { message: string }).message, 'invalid condition: "x"')
  })

  await t.test('wait?condition=removed answers after the auto-remove', async () => {
    const id = await createContainer(socket, { Image: 'busybox', Cmd: ['sh', '-c', 'exit 4'], HostConfig: { AutoRemove: true } })
    const wait = request(socket, 'POST', `/containers/${id}/wait?condition=removed`)
    await request(socket, 'POST', `/containers/${id}/start`)
    assert.equal(((await wait).json() as { StatusCode: number }).StatusCode, 4)
    assert.equal((await request(socket, 'GET', `/containers/${id}/json`)).status, 404)
  })

  await t.test('a wait that comes after the auto-remove answers the exit (dockerode and docker-py wait once the start is answered)', async () => {
    const id = await createContainer(socket, { Image: 'busybox', Cmd: ['sh', '-c', 'exit 3'], HostConfig: { AutoRemove: true } }, 'gone-soon')
    assert.equal((await request(socket, 'POST', `/containers/${id}/start`)).status, 204)
    for (let i = 0; i < 400 && (await request(socket, 'GET', `/containers/${id}/json`)).status !== 404; i++) await new Promise((resolve) => setTimeout(resolve, 25))
    assert.equal((await request(socket, 'GET', `/containers/${id}/json`)).status, 404)
    for (const [ref, condition] of [[id, ''], [id.slice(0, 12), 'next-exit'], ['gone-soon', 'removed']]) {
      const r = await request(socket, 'POST', `/containers/${ref}/wait${condition === '' ? '' : `?condition=${condition}`}`)
      assert.equal(r.status, 200, `${ref} ${condition}: ${r.text}`)
      assert.deepEqual(r.json(), { Error: null, StatusCode: 3 })
    }
    // only auto-removed containers: one removed by a client, or one that never was, is dockerd's 404
    const removed = await createContainer(socket, { Image: 'busybox', Cmd: ['true'] })
    assert.equal((await request(socket, 'DELETE', `/containers/${removed}`)).status, 204)
    assert.equal((await request(socket, 'POST', `/containers/${removed}/wait`)).status, 404)
    assert.equal((await request(socket, 'POST', `/containers/${'f'.repeat(64)}/wait`)).status, 404)
    // a bad condition is still refused first
    assert.equal((await request(socket, 'POST', `/containers/${id}/wait?condition=soon`)).status, 400)
  })

  await t.test('inspect shape: RFC 3339 times, Config.Tty, LogConfig, hostname = 12 hex', async () => {
    const { id } = await run(socket, ['hostname'])
    const c = (await request(socket, 'GET', `/containers/${id}/json`)).json() as Record<string, any>
    assert.equal(c.Id, id)
    assert.match(c.Created, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/)
    assert.equal(c.State.Status, 'exited')
    assert.equal(c.State.Running, false)
    assert.equal(c.Config.Tty, false)
    assert.equal(c.HostConfig.LogConfig.Type, 'json-file')
    assert.equal(c.Path, 'hostname')
    assert.deepEqual(c.Args, [])
    assert.match(c.Name, /^\/[a-z]+_[a-z]+\d*$/)
    assert.match(c.Image, /^sha256:[0-9a-f]{64}$/)
    const out = demuxAll((await request(socket, 'GET', `/containers/${id}/logs?stdout=1`)).body).stdout.toString()
    assert.equal(out, id.slice(0, 12) + '\n')
  })

  await t.test('names: conflict 409, lookup by name with and without slash, rename', async () => {
    const id = await createContainer(socket, { Image: 'busybox', Cmd: ['true'] }, 'web')
    const dup = await request(socket, 'POST', '/containers/create?name=web', { body: { Image: 'busybox', Cmd: ['true'] } })
    assert.equal(dup.status, 409)
    assert.equal((dup.json() as { message: string }).message, `Conflict. The container name "/web" is already in use by container "${id}". You have to remove (or rename) that container to be able to reuse that name.`)
    assert.equal(((await request(socket, 'GET', '/containers/web/json')).json() as { Id: string }).Id, id)
    assert.equal(((await request(socket, 'GET', '/containers/%2Fweb/json')).json() as { Id: string }).Id, id)
    assert.equal((await request(socket, 'POST', '/containers/web/rename?name=web2')).status, 204)
    assert.equal(((await request(socket, 'GET', '/containers/web2/json')).json() as { Name: string }).Name, '/web2')
    assert.equal((await request(socket, 'DELETE', '/containers/web2')).status, 204)
  })

  await t.test('ambiguous prefix is a clear 400', async () => {
    const ids: string[] = []
    for (let i = 0; i < 20; i++) ids.push(await createContainer(socket, { Image: 'busybox', Cmd: ['true'] }))
    const first = ids.map((x) => x[0] as string)
    const dupChar = first.find((ch, i) => first.indexOf(ch) !== i) as string
    const r = await request(socket, 'GET', `/containers/${dupChar}/json`)
    assert.equal(r.status, 400)
    assert.equal((r.json() as { message: string }).message, `multiple IDs found with provided prefix: ${dupChar}`)
    for (const id of ids) await request(socket, 'DELETE', `/containers/${id}`)
  })

  await t.test('list: running only by default, all=1, Status strings, filters in both shapes, integer Created', async () => {
    const id = await createContainer(socket, { Image: 'busybox', Cmd: ['sleep', '30'], Labels: { app: 'x' } }, 'sleeper')
    await request(socket, 'POST', `/containers/${id}/start`)
    const running = (await request(socket, 'GET', '/containers/json')).json() as Array<Record<string, any>>
    assert.deepEqual(running.map((c) => c.Id), [id])
    const item = running[0] as Record<string, any>
    assert.deepEqual(item.Names, ['/sleeper'])
    assert.equal(item.Image, 'busybox')
    assert.equal(typeof item.Created, 'number')
    assert.equal(item.State, 'running')
    assert.match(item.Status, /^Up (Less than a second|\d+ seconds?)$/)
    assert.equal(item.Command, 'sleep 30')
    const all = (await request(socket, 'GET', '/containers/json?all=1')).json() as Array<Record<string, any>>
    assert.ok(all.length > 1)
    assert.ok(all.some((c) => /^Exited \(\d+\) /.test(c.Status)))
    const mapForm = encodeURIComponent(JSON.stringify({ label: { 'app=x': true } }))
    const listForm = encodeURIComponent(JSON.stringify({ name: ['sleep'] }))
    assert.equal(((await request(socket, 'GET', `/containers/json?all=1&filters=${mapForm}`)).json() as unknown[]).length, 1)
    assert.equal(((await request(socket, 'GET', `/containers/json?all=1&filters=${listForm}`)).json() as unknown[]).length, 1)
    const exited = (await request(socket, 'GET', `/containers/json?filters=${encodeURIComponent('{"status":["exited"]}')}`)).json() as Array<Record<string, any>>
    assert.ok(exited.length > 0 && exited.every((c) => c.State === 'exited'))
    const limited = (await request(socket, 'GET', '/containers/json?limit=1')).json() as unknown[]
    assert.equal(limited.length, 1)
    const sized = (await request(socket, 'GET', '/containers/json?size=1')).json() as Array<Record<string, any>>
    assert.equal(typeof sized[0]?.SizeRw, 'number')

    // pause / unpause
    assert.equal((await request(socket, 'POST', `/containers/${id}/pause`)).status, 204)
    const paused = (await request(socket, 'GET', '/containers/json')).json() as Array<Record<string, any>>
    assert.match(paused[0]?.Status, /\(Paused\)$/)
    assert.equal((await request(socket, 'POST', `/containers/${id}/unpause`)).status, 204)

    // start on a running container is 304 without a body; delete without force is 409
    const again = await request(socket, 'POST', `/containers/${id}/start`)
    assert.equal(again.status, 304)
    assert.equal(again.body.length, 0)
    const del = await request(socket, 'DELETE', `/containers/${id}`)
    assert.equal(del.status, 409)

    // stop with t=0 kills at once (busybox sleep as PID 1 ignores SIGTERM)
    const stop = await request(socket, 'POST', `/containers/${id}/stop?t=0`)
    assert.equal(stop.status, 204)
    const st = (await request(socket, 'GET', `/containers/${id}/json`)).json() as Record<string, any>
    assert.equal(st.State.Status, 'exited')
    assert.equal(st.State.ExitCode, 137)
    assert.equal((await request(socket, 'POST', `/containers/${id}/stop`)).status, 304)
    const kill = await request(socket, 'POST', `/containers/${id}/kill`)
    assert.equal(kill.status, 409)
    assert.match((kill.json() as { message: string }).message, /is not running/)

    // restart works on a stopped container
    assert.equal((await request(socket, 'POST', `/containers/${id}/restart?t=0`)).status, 204)
    assert.equal(((await request(socket, 'GET', `/containers/${id}/json`)).json() as Record<string, any>).State.Status, 'running')
    assert.equal((await request(socket, 'POST', `/containers/${id}/kill?signal=SIGKILL`)).status, 204)
    assert.equal((await request(socket, 'DELETE', `/containers/${id}?force=1`)).status, 204)
  })

  await t.test('stop signal and timeout: SIGTERM honoured by a shell trap', async () => {
    const id = await createContainer(socket, { Image: 'busybox', Cmd: ['sh', '-c', 'trap "echo got TERM; exit 5" TERM; while true; do sleep 0.1; done'] })
    await request(socket, 'POST', `/containers/${id}/start`)
    await new Promise((resolve) => setTimeout(resolve, 300))
    assert.equal((await request(socket, 'POST', `/containers/${id}/stop?t=5`)).status, 204)
    const st = (await request(socket, 'GET', `/containers/${id}/json`)).json() as Record<string, any>
    assert.equal(st.State.ExitCode, 5)
    assert.equal(demuxAll((await request(socket, 'GET', `/containers/${id}/logs?stdout=1`)).body).stdout.toString(), 'got TERM\n')
  })

  await t.test('force remove of a running container', async () => {
    const id = await createContainer(socket, { Image: 'busybox', Cmd: ['sleep', '30'] })
    await request(socket, 'POST', `/containers/${id}/start`)
    assert.equal((await request(socket, 'DELETE', `/containers/${id}?force=True&v=False&link=False`)).status, 204)
    assert.equal((await request(socket, 'GET', `/containers/${id}/json`)).status, 404)
  })

  await t.test('logs: tail, timestamps, since/until, follow ends when the container stops', async () => {
    const { id } = await run(socket, ['sh', '-c', 'for i in 1 2 3 4 5; do echo line$i; done'])
    const tail = demuxAll((await request(socket, 'GET', `/containers/${id}/logs?stdout=1&tail=2`)).body).stdout.toString()
    assert.equal(tail, 'line4\nline5\n')
    assert.equal(demuxAll((await request(socket, 'GET', `/containers/${id}/logs?stdout=1&tail=all`)).body).stdout.toString().split('\n').length, 6)
    const ts = demuxAll((await request(socket, 'GET', `/containers/${id}/logs?stdout=1&timestamps=1&tail=1`)).body).stdout.toString()
    assert.match(ts, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z line5\n$/)
    const future = Math.floor(Date.now() / 1000) + 3600
    assert.equal(demuxAll((await request(socket, 'GET', `/containers/${id}/logs?stdout=1&since=${future}`)).body).stdout.length, 0)
    assert.equal(demuxAll((await request(socket, 'GET', `/containers/${id}/logs?stdout=1&until=1.5`)).body).stdout.length, 0)
    const noStream = await request(socket, 'GET', `/containers/${id}/logs`)
    assert.equal(noStream.status, 400)
    assert.equal((noStream.json() as { message: string }).message, 'Bad parameters: you must choose at least one stream')

    const fid = await createContainer(socket, { Image: 'busybox', Cmd: ['sh', '-c', 'echo a; sleep 0.3; echo b'] })
    await request(socket, 'POST', `/containers/${fid}/start`)
    const follow = await request(socket, 'GET', `/containers/${fid}/logs?stdout=1&follow=1`)
    assert.equal(demuxAll(follow.body).stdout.toString(), 'a\nb\n')
  })

  await t.test('tty containers log raw bytes', async () => {
    const { id } = await run(socket, ['sh', '-c', 'echo tty'], { Tty: true })
    const r = await request(socket, 'GET', `/containers/${id}/logs?stdout=1&stderr=1`)
    assert.equal(r.headers['content-type'], 'application/vnd.docker.raw-stream')
    assert.equal(r.text, 'tty\r\n')
  })

  await t.test('image config merge: Env, WorkingDir, Entrypoint semantics; no command → 400', async () => {
    const { id } = await run(socket, ['sh', '-c', 'echo $FOO $HOME; pwd'], { Env: ['FOO=bar'], WorkingDir: '/tmp' })
    assert.equal(demuxAll((await request(socket, 'GET', `/containers/${id}/logs?stdout=1`)).body).stdout.toString(), 'bar /root\n/tmp\n')
    const ep = await run(socket, ['x'], { Entrypoint: ['echo', 'ep'] })
    assert.equal(demuxAll((await request(socket, 'GET', `/containers/${ep.id}/logs?stdout=1`)).body).stdout.toString(), 'ep x\n')
    const strCmd = await run(socket, 'true' as unknown as string[])
    assert.equal(strCmd.code, 0)
    const none = await request(socket, 'POST', '/containers/create', { body: { Image: 'busybox' } })
    assert.equal(none.status, 400)
    assert.deepEqual(none.json(), { message: 'no command specified' })
  })

  await t.test('binds, users, namespaces and cgroup limits reach the runtime', async () => {
    const dir = tmpDir('berth-bind-')
    t.after(() => { rmSync(dir, { recursive: true, force: true }) })
    const { id, code } = await run(socket, ['sh', '-c', 'id -u >&2; echo in > /data/f'], { User: 'nobody', HostConfig: { Binds: [`${dir}:/data`] } })
    assert.equal(code, 1, 'nobody cannot write the bind mount owned by root')
    const out = demuxAll((await request(socket, 'GET', `/containers/${id}/logs?stdout=1&stderr=1`)).body)
    assert.match(out.stderr.toString(), /^65534\n.*(Permission denied|can't create)/s)
    const { id: id2 } = await run(socket, ['sh', '-c', 'echo in > /data/f; cat /sys/fs/cgroup/memory/memory.limit_in_bytes; cat /sys/fs/cgroup/pids/pids.max; cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us; ip link | grep -c "^[0-9]"'], {
      HostConfig: { Binds: [`${dir}:/data`], Memory: 64 * 1024 * 1024, PidsLimit: 50, NanoCpus: 500000000 }
    })
    assert.equal(readFileSync(join(dir, 'f'), 'utf8'), 'in\n')
    const lines = demuxAll((await request(socket, 'GET', `/containers/${id2}/logs?stdout=1`)).body).stdout.toString().trim().split('\n')
    // its own network namespace: lo and eth0 on the default bridge
    assert.deepEqual(lines, [String(64 * 1024 * 1024), '50', '50000', '2'])
  })
})
