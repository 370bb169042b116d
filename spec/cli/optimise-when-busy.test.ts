// The daemon command's optimising compiler on demand (lib/cli/optimise-when-busy.ts): with TurboFan off a hot function
// stays unoptimised while the process does little, and once a period with sustained CPU has passed, TurboFan is on
// and the same function is optimised. Run in a child process: V8's flags and %GetOptimizationStatus are per process.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'

test('TurboFan stays off until a period of sustained CPU, then optimises hot functions', () => {
  const mod = fileURLToPath(new URL('../../lib/cli/optimise-when-busy.js', import.meta.url))
  const script = `
    const { optimiseWhenBusy } = await import(${JSON.stringify(mod)})
    const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))
    // V8's status bits: 16 optimised, 64 by TurboFan
    const optimised = (f) => (%GetOptimizationStatus(f) & 16) !== 0
    function hot (n) { let s = 0; for (let i = 0; i < n; i++) s += (i * 7) % 13; return s }
    const cpu = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1000 }
    const watch = optimiseWhenBusy({ periodMs: 300, busyMs: 50, budgetMs: 60_000 })
    await sleep(400)
    watch.fromNow()
    // hot, but far below 50 ms of CPU in a period: V8 would optimise it at once with TurboFan on
    for (let round = 0; round < 5; round++) { for (let i = 0; i < 200; i++) hot(2000); await sleep(100) }
    const before = { optimised: optimised(hot), on: watch.optimising() }
    // a sustained load, counted in CPU time (a loaded machine gives the process less of the wall clock), in slices
    // that let the timers run, until the watch has seen it (bounded)
    const start = Date.now()
    while (!watch.optimising() && Date.now() - start < 20_000) { const s = cpu() + 20; while (cpu() < s) hot(100); await sleep(1) }
    const on = watch.optimising()
    // V8 optimises on a background thread: calls until it is done (bounded)
    for (let k = 0; k < 100 && !optimised(hot); k++) { for (let i = 0; i < 2000; i++) hot(2000); await sleep(50) }
    watch.close()
    // the budget: small bursts that add up to it turn it on as well
    const budgeted = optimiseWhenBusy({ periodMs: 100, busyMs: 1e9, budgetMs: 150 })
    budgeted.fromNow()
    const first = budgeted.optimising()
    for (let k = 0; k < 400 && !budgeted.optimising(); k++) { const s = cpu() + 5; while (cpu() < s) hot(100); await sleep(20) }
    budgeted.close()
    process.stdout.write(JSON.stringify({ before, on, after: optimised(hot), budget: [first, budgeted.optimising()] }))`
  const r = spawnSync(process.execPath, ['--allow-natives-syntax', '--input-type=module', '-e', script], { encoding: 'utf8', timeout: 30_000 })
  assert.equal(r.status, 0, r.stderr)
  const out = JSON.parse(r.stdout) as { before: { optimised: boolean, on: boolean }, on: boolean, after: boolean, budget: boolean[] }
  assert.deepEqual(out.before, { optimised: false, on: false }, 'no TurboFan while the process does little')
  assert.equal(out.on, true, 'turned on by the sustained load')
  assert.equal(out.after, true, 'and hot functions are optimised again')
  assert.deepEqual(out.budget, [false, true], 'bursts below the rate that add up to the budget')
})
