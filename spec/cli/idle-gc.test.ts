// The daemon command's collection after a burst of work (lib/cli/idle-gc.ts): one once a period with work is followed
// by one without, none while the work goes on, none again while idle (its own collection's CPU is not work), one
// after the next burst.
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { getHeapSpaceStatistics, setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { collectWhenIdle, compactingGc } from '../../lib/cli/idle-gc.js'

const sleep = async (ms: number): Promise<void> => { await new Promise((resolve) => setTimeout(resolve, ms)) }

/** `ms` of CPU in slices that let the timers run. */
async function work (ms: number): Promise<void> {
  const end = Date.now() + ms
  while (Date.now() < end) {
    const slice = Date.now() + 20
    while (Date.now() < slice) { /* busy */ }
    await sleep(1)
  }
}

/** A collection that itself costs CPU, as V8's does. */
function costly (calls: { n: number }): () => void {
  return () => { calls.n++; const end = Date.now() + 30; while (Date.now() < end) { /* busy */ } }
}

describe('collectWhenIdle', () => {
  it('collects once after a burst, not during it, and not again while idle', async () => {
    const calls = { n: 0 }
    // the threshold is a twentieth of a period: a burst below takes ~95% of each, while what the process does on its own
    // as a test file starts (V8's compile and sweeper threads count in process.cpuUsage) stays under it; at 5 ms the
    // start of a loaded suite once counted as a burst
    await sleep(300)
    // (a period of 400 ms: the work must get 5% of a core to count, which a loaded machine still gives a busy loop;
    // at 200 ms a run beside another whole suite once took a period of the burst for an idle one)
    const idle = collectWhenIdle(costly(calls), { periodMs: 400, busyMs: 20 })
    try {
      await sleep(1000)
      assert.equal(calls.n, 0, 'nothing before any work')
      await work(2000)
      assert.equal(calls.n, 0, 'none while the work goes on')
      await sleep(2000)
      assert.equal(calls.n, 1, 'one once the burst is over')
      await sleep(2000)
      assert.equal(calls.n, 1, 'its own CPU is not work: no more while idle')
      await work(1000)
      await sleep(2000)
      assert.equal(calls.n, 2, 'the next burst gets one again')
    } finally {
      idle.close()
    }
  })

  it('compactingGc gives back the old space a burst left sparsely used', () => {
    setFlagsFromString('--expose-gc')
    const v8gc = runInNewContext('gc') as () => void
    const old = (): { size: number, used: number } => {
      const s = getHeapSpaceStatistics().find((x) => x.space_name === 'old_space')
      return { size: s?.space_size ?? 0, used: s?.space_used_size ?? 0 }
    }
    // many long-lived objects, then nine in ten dropped: pages left mostly empty
    let keep: Array<{ i: number, s: string }> = []
    for (let i = 0; i < 300_000; i++) keep.push({ i, s: `x${i}` })
    v8gc()
    keep = keep.filter((_, i) => i % 10 === 0)
    v8gc()
    const plain = old()
    compactingGc(v8gc)()
    const compacted = old()
    assert.equal(keep.length, 30_000)
    assert.ok(plain.size - plain.used > 8 * 1024 * 1024, `a plain full collection leaves the pages (${plain.size} for ${plain.used} used)`)
    assert.ok(compacted.size - compacted.used < 4 * 1024 * 1024, `the compacting one gives them back (${compacted.size} for ${compacted.used} used)`)
  })

  it('close() stops it', async () => {
    const calls = { n: 0 }
    const idle = collectWhenIdle(costly(calls), { periodMs: 100, busyMs: 5 })
    await work(300)
    idle.close()
    await sleep(400)
    assert.equal(calls.n, 0)
  })
})
