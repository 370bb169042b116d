// TEMPORARY (not committed): step timings for the run path (absolute ms)
import { appendFileSync } from 'node:fs'
export function T (id: string, label: string): void {
  if (process.env.BERTH_TRACE === undefined) return
  appendFileSync(process.env.BERTH_TRACE, `T ${(performance.timeOrigin + performance.now()).toFixed(2)} ${label}\n`)
}
