// The daemon's heap settled once its work stops. V8's memory reducer (the collections that compact the old space and
// shrink the new one when a program goes idle) runs once early in a process's life and afterwards only when the
// committed heap grew by 10 MB since its last run, so after a burst of requests that did not grow it that far the
// daemon kept a fragmented old space for good (tools/bench/README.md, "Memory": 3-5 MiB of a daemon's RSS after the
// lightness workload). The command (never lib/: an embedding program owns its process) asks for one full, compacting
// collection when a period in which the daemon worked is followed by one in which it did not: one getrusage(2) per
// period, no work per request (a 'gc' PerformanceObserver re-arming a timer cost a quarter of a `_ping`'s CPU), and
// one collection per burst of work (its own CPU is not counted as work). Compacting only then: V8's
// --compact-on-every-full-gc for all its collections cost ~15% more CPU per `_ping`.
import { setFlagsFromString } from 'node:v8'

/** What `collectWhenIdle` returns: `close()` stops watching. */
export interface IdleCollector { close: () => void }

export interface IdleOptions {
  /** How often the process's CPU time is read (ms). */
  periodMs?: number
  /** CPU time (ms) in one period that counts as work. */
  busyMs?: number
}

/**
 * V8's full collection (`gc`, from `node --expose-gc`) that also moves the objects of sparsely used old-space pages
 * together, so that those pages go back to the system (V8 reads the flag at each collection).
 */
export function compactingGc (gc: () => void): () => void {
  return () => {
    setFlagsFromString('--compact-on-every-full-gc')
    try {
      gc()
    } finally {
      setFlagsFromString('--no-compact-on-every-full-gc')
    }
  }
}

/** Process CPU time so far, in ms. */
function cpuMs (): number {
  const u = process.cpuUsage()
  return (u.user + u.system) / 1000
}

/**
 * One collection (`gc`, e.g. compactingGc's) after each burst of work: at the first period of `periodMs`
 * with less than `busyMs` of CPU that follows one with more.
 */
export function collectWhenIdle (gc: () => void, o: IdleOptions = {}): IdleCollector {
  const periodMs = o.periodMs ?? 5000
  const busyMs = o.busyMs ?? 10
  let last = cpuMs()
  let worked = false
  const timer = setInterval(() => {
    const now = cpuMs()
    const used = now - last
    last = now
    if (used >= busyMs) { worked = true; return }
    if (!worked) return
    worked = false
    gc()
    last = cpuMs()
  }, periodMs)
  timer.unref()
  return { close: () => { clearInterval(timer) } }
}
