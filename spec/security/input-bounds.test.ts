// Issue 21.8: a JSON body nested 100,000 deep answered 500 "Maximum call stack size exceeded" (/swarm/update,
// /commit): every JSON the engine reads from a request is refused past 512 levels with a 400. Negative numeric
// HostConfig fields are refused as dockerd (28, the engine Berth answers as) refuses them, in its words (ShmSize,
// CpuShares, restart policies; the rest of the family as before), or treated as dockerd treats them (PidsLimit and
// MemorySwap below zero: no limit).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { existsSync, readFileSync } from 'node:fs'
import { startEngine, request, importBusybox, createContainer, containerSkipReason } from '../helpers/engine.js'

const skip = containerSkipReason()

test('input bounds of the Engine API (21.8)', { skip: skip ?? false }, async (t) => {
  const { socket } = await startEngine(t)
  await importBusybox(socket)
  const victim = await createContainer(socket, { Image: 'busybox', Cmd: ['true'] }, 'victim')
  assert.equal((await request(socket, 'POST', '/swarm/init', { body: { ListenAddr: '127.0.0.1:0', AdvertiseAddr: '127.0.0.1' } })).status, 200)

  await t.test('a body nested 100,000 deep is a 400 on every JSON route, and the daemon goes on', async () => {
    const version = ((await request(socket, 'GET', '/swarm')).json() as { Version: { Index: number } }).Version.Index
    const deepObjects = Buffer.from('{"a":'.repeat(100_000) + '1' + '}'.repeat(100_000))
    const deepArrays = Buffer.from('['.repeat(100_000) + ']'.repeat(100_000))
    for (const path of [`/swarm/update?version=${version}`, `/commit?container=${victim}`, '/containers/create', '/services/create', '/networks/create', '/volumes/create', `/containers/${victim}/update`, `/containers/${victim}/exec`]) {
      for (const body of [deepObjects, deepArrays]) {
        const r = await request(socket, 'POST', path, { raw: body, headers: { 'Content-Type': 'application/json' } })
        assert.equal(r.status, 400, `${path}: ${r.status} ${r.text.slice(0, 200)}`)
        assert.match((r.json() as { message: string }).message, /^invalid JSON: exceeded max depth/)
      }
    }
    // JSON in a query parameter and in a header (filters, the registry credentials) is bounded the same way
    const filters = encodeURIComponent('{"label":' + '['.repeat(20_000) + ']'.repeat(20_000) + '}')
    const f = await request(socket, 'GET', `/containers/json?filters=${filters}`)
    assert.equal(f.status, 400, f.text.slice(0, 200))
    const changes = encodeURIComponent('CMD ' + '['.repeat(20_000) + ']'.repeat(20_000))
    const c = await request(socket, 'POST', `/commit?container=${victim}&changes=${changes}`)
    assert.ok(c.status < 500, `${c.status} ${c.text.slice(0, 200)}`)
    assert.equal((await request(socket, 'GET', '/_ping')).status, 200)
    // a document as deep as real ones get is fine
    const spec = (await request(socket, 'GET', '/swarm')).json() as { Version: { Index: number }, Spec: Record<string, unknown> }
    assert.equal((await request(socket, 'POST', `/swarm/update?version=${spec.Version.Index}`, { body: spec.Spec })).status, 200)
  })

  await t.test('numeric HostConfig fields: what dockerd refuses is refused in its words', async () => {
    const refused: Array<[Record<string, unknown>, string | RegExp]> = [
      [{ HostConfig: { ShmSize: -1 } }, 'SHM size can not be less than 0'],
      [{ HostConfig: { CpuShares: -1 } }, 'invalid CPU shares (-1): value must be a positive integer'],
      [{ HostConfig: { Memory: -1 } }, 'Minimum memory limit allowed is 6MB'],
      [{ HostConfig: { NanoCpus: -1 } }, /^Range of CPUs is from 0\.01 to \d+\.00/],
      [{ HostConfig: { CpuPeriod: -1 } }, 'CPU cfs period can not be less than 1ms (i.e. 1000) or larger than 1s (i.e. 1000000)'],
      [{ HostConfig: { CpuQuota: 500 } }, 'CPU cfs quota can not be less than 1ms (i.e. 1000)'],
      [{ HostConfig: { OomScoreAdj: -1001 } }, 'Invalid value -1001, range for oom score adj is [-1000, 1000]'],
      [{ HostConfig: { MemorySwappiness: -2 } }, 'Invalid value: -2, valid memory swappiness range is 0-100'],
      [{ HostConfig: { RestartPolicy: { Name: 'on-failure', MaximumRetryCount: -1 } } }, 'invalid restart policy: maximum retry count cannot be negative'],
      [{ HostConfig: { RestartPolicy: { Name: 'always', MaximumRetryCount: 2 } } }, "invalid restart policy: maximum retry count can only be used with 'on-failure'"],
      [{ HostConfig: { RestartPolicy: { Name: 'no', MaximumRetryCount: -2 } } }, "invalid restart policy: maximum retry count can only be used with 'on-failure' and cannot be negative"],
      [{ Healthcheck: { Test: ['CMD', 'true'], Retries: -1 } }, 'Retries in Healthcheck cannot be negative'],
      [{ Healthcheck: { Test: ['CMD', 'true'], Interval: -1 } }, 'Interval in Healthcheck cannot be less than 1ms']
    ]
    const before = ((await request(socket, 'GET', '/containers/json?all=1')).json() as unknown[]).length
    for (const [body, message] of refused) {
      const r = await request(socket, 'POST', '/containers/create', { body: { Image: 'busybox', Cmd: ['true'], ...body } })
      assert.equal(r.status, 400, `${JSON.stringify(body)}: ${r.status} ${r.text}`)
      const m = (r.json() as { message: string }).message
      if (typeof message === 'string') assert.equal(m, message, JSON.stringify(body))
      else assert.match(m, message, JSON.stringify(body))
    }
    assert.equal(((await request(socket, 'GET', '/containers/json?all=1')).json() as unknown[]).length, before)
    // the same checks on update
    for (const [body, message] of [[{ CpuShares: -1 }, 'invalid CPU shares (-1): value must be a positive integer'], [{ RestartPolicy: { Name: 'on-failure', MaximumRetryCount: -1 } }, 'invalid restart policy: maximum retry count cannot be negative'], [{ RestartPolicy: { Name: 'always', MaximumRetryCount: 3 } }, "invalid restart policy: maximum retry count can only be used with 'on-failure'"]] as const) {
      const r = await request(socket, 'POST', `/containers/${victim}/update`, { body })
      assert.equal(r.status, 400, `${JSON.stringify(body)}: ${r.status} ${r.text}`)
      assert.equal((r.json() as { message: string }).message, message)
    }
  })

  await t.test('what dockerd accepts below zero works as in dockerd: PidsLimit and MemorySwap are no limit', async () => {
    const id = await createContainer(socket, { Image: 'busybox', Cmd: ['sleep', '30'], HostConfig: { PidsLimit: -2, Memory: 16 * 1024 * 1024, MemorySwap: -3 } })
    const started = await request(socket, 'POST', `/containers/${id}/start`)
    assert.equal(started.status, 204, started.text)
    const hc = ((await request(socket, 'GET', `/containers/${id}/json`)).json() as { HostConfig: { PidsLimit: number | null, MemorySwap: number } }).HostConfig
    assert.equal(hc.PidsLimit, null)
    assert.equal(hc.MemorySwap, -3)
    const pid = ((await request(socket, 'GET', `/containers/${id}/json`)).json() as { State: { Pid: number } }).State.Pid
    // the kernel's view: no pids limit, no swap limit
    const lines = readFileSync(`/proc/${pid}/cgroup`, 'utf8').trim().split('\n').map((l) => l.split(':'))
    const v1 = (ctl: string): string | undefined => lines.find((l) => (l[1] ?? '').split(',').includes(ctl))?.[2]
    const v2 = lines.find((l) => l[0] === '0' && l[1] === '')?.[2]
    const pidsPath = v1('pids')
    if (pidsPath !== undefined) {
      assert.equal(readFileSync(`/sys/fs/cgroup/pids${pidsPath}/pids.max`, 'utf8').trim(), 'max')
      const memsw = `/sys/fs/cgroup/memory${v1('memory') ?? ''}/memory.memsw.limit_in_bytes`
      if (existsSync(memsw)) assert.ok(BigInt(readFileSync(memsw, 'utf8').trim()) > 1n << 60n, 'swap unlimited')
    } else if (v2 !== undefined) {
      assert.equal(readFileSync(`/sys/fs/cgroup${v2}/pids.max`, 'utf8').trim(), 'max')
      if (existsSync(`/sys/fs/cgroup${v2}/memory.swap.max`)) assert.equal(readFileSync(`/sys/fs/cgroup${v2}/memory.swap.max`, 'utf8').trim(), 'max')
    }
    assert.equal((await request(socket, 'DELETE', `/containers/${id}?force=1`)).status, 204)
  })
})
