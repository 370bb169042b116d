// docker run/update/cp flags with the real docker CLI, checked from inside the container: -e NAME unset, cp of the
// /etc files Berth bind-mounts, live `docker update` of the cgroup, OOMKilled and the oom event (at the kill itself).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { existsSync } from 'node:fs'
import { startEngine, containerSkipReason, hasDockerCli, dockerCli, busyboxTar } from '../helpers/engine.js'

const skip = containerSkipReason() ?? (hasDockerCli() ? null : 'the docker CLI is not installed')
const V1_MEMORY = '/sys/fs/cgroup/memory/memory.limit_in_bytes'

test('run/update/cp flags', { skip: skip ?? false }, async (t) => {
  const { socket } = await startEngine(t)
  const docker = async (...args: string[]): ReturnType<typeof dockerCli> => await dockerCli(socket, args)
  assert.equal((await docker('import', busyboxTar(), 'busybox:latest')).status, 0)

  await t.test('-e NAME with NAME unset is left out; -e NAME=v and a set NAME are kept', async () => {
    delete process.env.BERTH_UNSET_VAR
    process.env.BERTH_SET_VAR = 'from-client'
    try {
      const r = await docker('run', '--rm', '-e', 'BERTH_UNSET_VAR', '-e', 'BERTH_SET_VAR', '-e', 'X=1', 'busybox', 'env')
      assert.equal(r.status, 0, r.stderr)
      assert.doesNotMatch(r.stdout, /BERTH_UNSET_VAR/)
      assert.match(r.stdout, /^BERTH_SET_VAR=from-client$/m)
      assert.match(r.stdout, /^X=1$/m)
    } finally { delete process.env.BERTH_SET_VAR }
  })

  await t.test('docker cp CONTAINER:/etc/hostname|hosts|resolv.conf - reads the container\'s own files', async () => {
    const id = (await docker('run', '-d', '--hostname', 'cpbox', '--add-host', 'peer.example:10.9.8.7', '--dns', '10.1.2.3', 'busybox', 'sleep', '60')).stdout.trim()
    for (const [file, want] of [['/etc/hostname', /cpbox/], ['/etc/hosts', /10\.9\.8\.7\s+peer\.example/], ['/etc/resolv.conf', /nameserver 10\.1\.2\.3/]] as const) {
      const r = await docker('cp', `${id}:${file}`, '-')
      assert.equal(r.status, 0, r.stderr)
      assert.match(r.stdout, want, file)
      const inside = await docker('exec', id, 'cat', file)
      assert.ok(r.stdout.includes(inside.stdout), `${file}: the tar holds what the container sees`)
    }
    assert.equal((await docker('rm', '-f', id)).status, 0)
  })

  await t.test('docker update -m/--memory-swap/--cpus/--cpu-shares/--pids-limit: the live cgroup and the record', { skip: existsSync(V1_MEMORY) ? false : 'cgroup v1 memory controller not mounted' }, async () => {
    const id = (await docker('run', '-d', '-m', '64m', 'busybox', 'sleep', '60')).stdout.trim()
    const cg = async (file: string): Promise<string> => (await docker('exec', id, 'cat', `/sys/fs/cgroup/${file}`)).stdout.trim()
    assert.equal(await cg('memory/memory.limit_in_bytes'), String(64 * 1024 * 1024))
    const u = await docker('update', '-m', '96m', '--memory-swap', '200m', '--cpus', '0.5', '--cpu-shares', '512', '--pids-limit', '77', id)
    assert.equal(u.status, 0, u.stderr)
    assert.equal(await cg('memory/memory.limit_in_bytes'), String(96 * 1024 * 1024))
    assert.equal(await cg('memory/memory.memsw.limit_in_bytes'), String(200 * 1024 * 1024))
    assert.equal(await cg('cpu/cpu.cfs_quota_us'), '50000')
    assert.equal(await cg('cpu/cpu.cfs_period_us'), '100000')
    assert.equal(await cg('cpu/cpu.shares'), '512')
    assert.equal(await cg('pids/pids.max'), '77')
    const hc = (JSON.parse((await docker('inspect', id)).stdout) as Array<{ HostConfig: Record<string, number> }>)[0]?.HostConfig
    assert.equal(hc?.Memory, 96 * 1024 * 1024)
    assert.equal(hc?.MemorySwap, 200 * 1024 * 1024)
    assert.equal(hc?.NanoCpus, 5e8)
    assert.equal(hc?.CpuShares, 512)
    assert.equal(hc?.PidsLimit, 77)
    const tooBig = await docker('update', '-m', '300m', id)
    assert.notEqual(tooBig.status, 0)
    assert.match(tooBig.stderr, /Memory limit should be smaller than already set memoryswap limit, update the memoryswap at the same time/)
    assert.equal((await docker('update', '--pids-limit', '-1', id)).status, 0)
    assert.equal(await cg('pids/pids.max'), 'max')
    // a stopped container's update is recorded and applies at the next start
    assert.equal((await docker('stop', '-t', '0', id)).status, 0)
    assert.equal((await docker('update', '--cpu-shares', '256', id)).status, 0)
    assert.equal((await docker('start', id)).status, 0)
    assert.equal(await cg('cpu/cpu.shares'), '256')
    assert.equal((await docker('rm', '-f', id)).status, 0)
  })

  await t.test('OOMKilled and the oom event when the kernel OOM-kills the container', { skip: existsSync(V1_MEMORY) ? false : 'cgroup v1 memory controller not mounted' }, async () => {
    const since = String(Math.floor(Date.now() / 1000) - 1)
    const r = await docker('run', '--name', 'hog', '-m', '8m', '--memory-swap', '8m', 'busybox', 'sh', '-c', 'tail /dev/zero')
    assert.equal(r.status, 137, r.stderr)
    const st = (JSON.parse((await docker('inspect', 'hog')).stdout) as Array<{ State: { OOMKilled: boolean, ExitCode: number } }>)[0]?.State
    assert.equal(st?.OOMKilled, true)
    assert.equal(st?.ExitCode, 137)
    const ev = await docker('events', '--since', since, '--until', String(Math.floor(Date.now() / 1000) + 1), '--filter', 'container=hog', '--format', '{{.Action}}')
    assert.match(ev.stdout, /^oom\ndie\n/m)
    // a normal exit of the same container clears it
    const ok = await docker('run', '--name', 'calm', '-m', '8m', 'busybox', 'true')
    assert.equal(ok.status, 0)
    assert.equal((JSON.parse((await docker('inspect', 'calm')).stdout) as Array<{ State: { OOMKilled: boolean } }>)[0]?.State.OOMKilled, false)
    await docker('rm', '-f', 'hog', 'calm')
  })

  await t.test('the oom event comes when the kernel kills, not at the exit: a child killed while PID 1 lives on', { skip: existsSync(V1_MEMORY) ? false : 'cgroup v1 memory controller not mounted' }, async () => {
    const since = String(Math.floor(Date.now() / 1000) - 1)
    const id = (await docker('run', '-d', '-m', '8m', '--memory-swap', '8m', 'busybox', 'sh', '-c', 'tail /dev/zero; echo child-killed; sleep 60')).stdout.trim()
    const inspect = async (): Promise<{ Status: string, OOMKilled: boolean }> => (JSON.parse((await docker('inspect', id)).stdout) as Array<{ State: { Status: string, OOMKilled: boolean } }>)[0]?.State ?? { Status: '', OOMKilled: false }
    let st = await inspect()
    for (let i = 0; i < 100 && !st.OOMKilled; i++) { await new Promise((resolve) => setTimeout(resolve, 200)); st = await inspect() }
    assert.deepEqual(st, { ...st, Status: 'running', OOMKilled: true }, 'OOMKilled while the container runs on')
    // inside: the cgroup counted one kill, and PID 1 went on
    assert.match((await docker('exec', id, 'cat', '/sys/fs/cgroup/memory/memory.oom_control')).stdout, /^oom_kill 1$/m)
    assert.match((await docker('logs', id)).stdout, /child-killed/)
    const events = async (): Promise<string[]> => (await docker('events', '--since', since, '--until', String(Math.floor(Date.now() / 1000) + 1), '--filter', `container=${id}`, '--format', '{{.Action}}')).stdout.split('\n').filter((l) => l !== '')
    const live = await events()
    assert.deepEqual(live.filter((a) => a === 'oom' || a === 'die'), ['oom'], 'the event came without an exit')
    // the exit keeps OOMKilled and does not announce the kill again
    assert.equal((await docker('stop', '-t', '0', id)).status, 0)
    assert.equal((await inspect()).OOMKilled, true)
    assert.deepEqual((await events()).filter((a) => a === 'oom' || a === 'die'), ['oom', 'die'])
    await docker('rm', '-f', id)
  })
})
