// V8's optimising compiler (TurboFan) for a daemon that has work, not for one that waits. The first function V8
// optimises pages in TurboFan's own code, 3.5-4 MiB of the node binary that stay in the process's RSS for good
// (tools/bench/README.md, "Memory"): a daemon that only started, loaded an image and waits gains nothing from it, and a
// single optimised checksum loop during an image import was enough to bring it in. The daemon command (never lib/: an
// embedding program owns its process) starts with TurboFan off and turns it on for good at the first period in which
// its main thread wanted `busyMs` (a sustained load: a `_ping` or list load reaches it in its first second, a `docker
// run` now and then does not), or once its work since the start has used `budgetMs` of CPU in all. What the main thread
// wanted is its time on a CPU plus its time waiting for one (/proc/self/schedstat): on a loaded machine a saturated
// event loop gets a fraction of a core, and its CPU time alone had kept TurboFan off through seconds of load. Until then
// code runs in V8's interpreter and baseline compiler, as any function does before it is hot: what that costs is
// bounded by the budget, once per process (a first image import used ~100 ms more CPU without TurboFan; `docker run`
// the same). One getrusage(2) per period until then, none after; no work per request.
import { readFileSync } from 'node:fs'
import { setFlagsFromString } from 'node:v8'

/**
 * What `optimiseWhenBusy` returns: `fromNow()` counts the CPU from now on (the daemon's boot is not work),
 * `close()` stops watching (TurboFan stays as it is).
 */
export interface BusyWatch { fromNow: () => void, close: () => void, readonly optimising: () => boolean }

export interface BusyOptions {
  /** How often the process's CPU time is read (ms). */
  periodMs?: number
  /** The main thread's time on a CPU and waiting for one (ms) in one period that turns the optimising compiler on. */
  busyMs?: number
  /** CPU time (ms) in all, counted from `fromNow()`, that turns it on. */
  budgetMs?: number
}

/** Process CPU time so far, in ms. */
function cpuMs (): number {
  const u = process.cpuUsage()
  return (u.user + u.system) / 1000
}

/** The main thread's time on a CPU plus waiting for one so far, in ms (the process's CPU time without schedstat). */
function demandMs (): number {
  try {
    const [run = '', wait = ''] = readFileSync('/proc/self/schedstat', 'latin1').split(' ')
    const ms = (Number(run) + Number(wait)) / 1e6
    if (Number.isFinite(ms)) return ms
  } catch { /* no schedstat */ }
  return cpuMs()
}

/**
 * Turns V8's optimising compiler off until a period of `periodMs` in which the main thread wanted `busyMs` (on a CPU
 * or waiting for one), or until the process used `budgetMs` of CPU in all.
 */
export function optimiseWhenBusy (o: BusyOptions = {}): BusyWatch {
  const periodMs = o.periodMs ?? 1000
  const busyMs = o.busyMs ?? 250
  const budgetMs = o.budgetMs ?? 1000
  let on = false
  setFlagsFromString('--no-turbofan')
  let start = cpuMs()
  let last = demandMs()
  const timer = setInterval(() => {
    const now = demandMs()
    const wanted = now - last
    last = now
    if (wanted < busyMs && cpuMs() - start < budgetMs) return
    on = true
    setFlagsFromString('--turbofan')
    clearInterval(timer)
  }, periodMs)
  timer.unref()
  return { fromNow: () => { start = cpuMs(); last = demandMs() }, close: () => { clearInterval(timer) }, optimising: () => on }
}
