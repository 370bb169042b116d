// V8's optimising compiler (TurboFan) for a daemon that has work, not for one that waits. The first function V8
// optimises pages in TurboFan's own code, 3.5-4 MiB of the node binary that stay in the process's RSS for good
// (tools/bench/README.md, "Memory"): a daemon that only started, loaded an image and waits gains nothing from it, and a
// single optimised checksum loop during an image import was enough to bring it in. The daemon command (never lib/: an
// embedding program owns its process) turns TurboFan off once its listeners are up and on for good once its main thread was
// saturated for two periods of 250 ms in a row (a `_ping` or list load, within its first half second; an image import
// or a `docker run` keeps the event loop well under that), or once its work since the start has used `budgetMs` of CPU
// in all. Saturated is what the main thread wanted: its time on a CPU plus its time waiting for one
// (/proc/self/schedstat), so that a loaded machine, which gives a saturated event loop a fraction of a core, does not
// hide it (counting the CPU the process got kept TurboFan off through seconds of load at a load of 8-10). Until then
// code runs in V8's interpreter and baseline compiler, as any function does before it is hot: a load's first half
// second or so, and at most `budgetMs` of other work, once per process. One read of schedstat per period until then,
// none after; no work per request. Not before the listeners: changing a V8 flag changes the hash V8 checks a code
// cache against, and every built-in module loaded after the change would be compiled from its source instead of
// Node's cache (tools/bundle-loader.cjs, settleFlags); what a start runs until it listens is not hot anyway.
import { readFileSync } from 'node:fs'
import { setFlagsFromString } from 'node:v8'

/**
 * What `optimiseWhenBusy` returns: `fromNow()` counts the CPU from now on (the daemon's boot is not work),
 * `close()` stops watching (TurboFan stays as it is).
 */
export interface BusyWatch {
  fromNow: () => void
  close: () => void
  readonly optimising: () => boolean
}

export interface BusyOptions {
  /** How often the main thread's time on a CPU and waiting for one is read (ms; 250 by default, until it is on). */
  periodMs?: number
  /** The main thread's time on a CPU and waiting for one (ms) in a period that counts as saturated. */
  busyMs?: number
  /** How many saturated periods in a row turn the optimising compiler on. */
  busyPeriods?: number
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
 * Turns V8's optimising compiler off until `busyPeriods` periods of `periodMs` in a row in each of which the main
 * thread wanted `busyMs` (on a CPU or waiting for one), or until the process used `budgetMs` of CPU in all.
 */
export function optimiseWhenBusy (o: BusyOptions = {}): BusyWatch {
  const periodMs = o.periodMs ?? 250
  const busyMs = o.busyMs ?? 0.8 * periodMs
  const busyPeriods = o.busyPeriods ?? 2
  const budgetMs = o.budgetMs ?? 1000
  let on = false
  setFlagsFromString('--no-turbofan')
  let start = cpuMs()
  let last = demandMs()
  let busyInRow = 0
  const timer = setInterval(() => {
    const now = demandMs()
    busyInRow = now - last >= busyMs ? busyInRow + 1 : 0
    last = now
    if (busyInRow < busyPeriods && cpuMs() - start < budgetMs) return
    on = true
    setFlagsFromString('--turbofan')
    clearInterval(timer)
  }, periodMs)
  timer.unref()
  return { fromNow: () => { start = cpuMs(); last = demandMs(); busyInRow = 0 }, close: () => { clearInterval(timer) }, optimising: () => on }
}
