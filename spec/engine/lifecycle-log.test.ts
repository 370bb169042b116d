// The operator's log at info level tells a container's life as it happens: the kernel's OOM kill and the exit it
// causes, and each restart its restart policy makes (then that the policy's restarts are used up). Provoked for real:
// a container with a small --memory that allocates more, an on-failure:2 container that exits 1.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { enableLogs, routeLogs } from '../../lib/log.js'
import { startEngine, request, importBusybox, createContainer, containerSkipReason } from '../helpers/engine.js'
import { until } from '../helpers/poll.js'

const skip = containerSkipReason()

/** A memory cgroup controller the engine limits containers with (v1's memory hierarchy or v2's controller). */
function memoryControllerSkip (): string | null {
  const v2 = ((): string => { try { return readFileSync('/sys/fs/cgroup/cgroup.controllers', 'utf8') } catch { return '' } })()
  if (/\bmemory\b/.test(v2)) return null
  try { readFileSync('/sys/fs/cgroup/memory/memory.limit_in_bytes'); return null } catch { return 'no memory cgroup controller on this host' }
}

// this test file owns its process: the operator's records (info and up) go to this list instead of stderr
const records: string[] = []
enableLogs('berth:*:info,berth:*:warn,berth:*:error')
routeLogs((namespace, message) => { records.push(`${namespace} ${message}`) })

async function logged (re: RegExp, ms = 30_000): Promise<string> {
  return await until(`a log record matching ${String(re)}`, async () => records.find((r) => re.test(r)), ms)
}

test('the operator\'s log tells OOM kills and restarts by policy', { skip: skip ?? false }, async (t) => {
  const { socket } = await startEngine(t)
  await importBusybox(socket)

  await t.test('a container the kernel OOM-kills: the kill, then the exit with 137', { skip: memoryControllerSkip() ?? false }, async () => {
    const id = await createContainer(socket, { Image: 'busybox', Cmd: ['sh', '-c', 'tail /dev/zero'], HostConfig: { Memory: 8 << 20, MemorySwap: 8 << 20 } }, 'hog')
    assert.equal((await request(socket, 'POST', `/containers/${id}/start`)).status, 204)
    assert.equal(((await request(socket, 'POST', `/containers/${id}/wait`)).json() as { StatusCode: number }).StatusCode, 137)
    const short = id.slice(0, 12)
    const oom = await logged(new RegExp(`^berth:engine:info container ${short} \\(hog\\): a process was killed by the kernel's OOM killer \\(memory limit reached\\)$`))
    const died = await logged(new RegExp(`^berth:engine:info container ${short} \\(hog\\) exited with code 137$`))
    assert.ok(records.indexOf(oom) < records.indexOf(died), 'the kill is told before the exit')
    assert.equal(((await request(socket, 'GET', `/containers/${id}/json`)).json() as { State: { OOMKilled: boolean } }).State.OOMKilled, true)
  })

  await t.test('an on-failure:2 container that exits 1: two restarts told with their delay, then that the policy gave up', async () => {
    const id = await createContainer(socket, { Image: 'busybox', Cmd: ['sh', '-c', 'exit 1'], HostConfig: { RestartPolicy: { Name: 'on-failure', MaximumRetryCount: 2 } } }, 'flaky')
    const short = id.slice(0, 12)
    assert.equal((await request(socket, 'POST', `/containers/${id}/start`)).status, 204)
    const gaveUp = await logged(new RegExp(`^berth:engine:containers:info container ${short} \\(flaky\\) exited with code 1: not restarted, the 2 restarts of its on-failure policy are used up$`))
    const mine = records.filter((r) => r.includes(`container ${short} (flaky)`))
    // three starts and three exits (the engine's event records), two restarts in order, and the policy's end last
    assert.equal(mine.filter((r) => /^berth:engine:info container [0-9a-f]{12} \(flaky\) started \(image busybox\)$/.test(r)).length, 3, mine.join('\n'))
    assert.equal(mine.filter((r) => /^berth:engine:info container [0-9a-f]{12} \(flaky\) exited with code 1$/.test(r)).length, 3, mine.join('\n'))
    const restarts = mine.filter((r) => r.startsWith('berth:engine:containers:info') && r.includes('restarting'))
    assert.deepEqual(restarts.map((r) => r.replace(/^.*\(flaky\) /, '')), [
      'exited with code 1: restarting by its on-failure policy in 100 ms (restart 1)',
      'exited with code 1: restarting by its on-failure policy in 200 ms (restart 2)'
    ])
    assert.ok(mine.indexOf(gaveUp) > mine.indexOf(restarts[1] as string), mine.join('\n'))
    const inspect = (await request(socket, 'GET', `/containers/${id}/json`)).json() as { RestartCount: number, State: { Status: string } }
    assert.equal(inspect.RestartCount, 2)
    assert.equal(inspect.State.Status, 'exited')
  })
})
