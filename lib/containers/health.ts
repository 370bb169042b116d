// Health checks: Config.Healthcheck (or the image's HEALTHCHECK) run as dockerd runs them, by exec in the container,
// with State.Health keeping the last 5 results and `health_status: …` events when the status changes. The decoding is
// pure; HealthMonitor keeps one timer per running container (also for containers re-adopted after a restart).
import { levelLogger } from '../log.js'
import { describeError } from '../errors.js'
import { formatRfc3339Nano } from '../stream/log-record.js'
import type { ContainerHandle } from './container-handle.js'
import type { HealthConfig, HealthResult, HealthState, HealthStatus } from './container.js'

const ops = levelLogger('engine:health')

export interface HealthSettings {
  /** The probe's command line (CMD args, or the shell with CMD-SHELL's string). */
  cmd: string[]
  intervalMs: number
  timeoutMs: number
  startPeriodMs: number
  startIntervalMs: number
  retries: number
}

const NS_PER_MS = 1_000_000
const DEFAULT_INTERVAL_MS = 30_000
const DEFAULT_TIMEOUT_MS = 30_000
const DEFAULT_START_INTERVAL_MS = 5_000
const DEFAULT_RETRIES = 3
const MAX_LOG_ENTRIES = 5
export const MAX_OUTPUT_LEN = 4096

/** The probe settings, or null when the container has no health check (none given, or NONE). */
export function healthSettings (h: HealthConfig | undefined, shell: string[] | undefined): HealthSettings | null {
  if (h === undefined) return null
  const test = h.test ?? []
  if (test.length === 0 || test[0] === 'NONE' || test[0] === '') return null
  let cmd: string[]
  if (test[0] === 'CMD') cmd = test.slice(1)
  else if (test[0] === 'CMD-SHELL') cmd = [...(shell !== undefined && shell.length > 0 ? shell : ['/bin/sh', '-c']), test.slice(1).join(' ')]
  else return null
  if (cmd.length === 0) return null
  const ms = (v: number | null | undefined, dflt: number): number => typeof v === 'number' && v > 0 ? Math.max(1, Math.floor(v / NS_PER_MS)) : dflt
  return {
    cmd,
    intervalMs: ms(h.interval, DEFAULT_INTERVAL_MS),
    timeoutMs: ms(h.timeout, DEFAULT_TIMEOUT_MS),
    startPeriodMs: ms(h.startPeriod, 0),
    startIntervalMs: ms(h.startInterval, DEFAULT_START_INTERVAL_MS),
    retries: typeof h.retries === 'number' && h.retries > 0 ? h.retries : DEFAULT_RETRIES
  }
}

/** Folds one probe result into the state (dockerd's handleProbeResult); returns the new status. Pure. */
export function applyProbe (state: HealthState, result: HealthResult, opts: { retries: number, inStartPeriod: boolean }): HealthState {
  const log = [...state.log, result].slice(-MAX_LOG_ENTRIES)
  if (result.exitCode === 0) return { status: 'healthy', failingStreak: 0, log }
  // failures during the start period do not count while the container has not been healthy yet
  if (opts.inStartPeriod && state.status === 'starting') return { ...state, log }
  const streak = state.failingStreak + 1
  return { status: streak >= opts.retries ? 'unhealthy' : state.status, failingStreak: streak, log }
}

export interface HealthMonitorOptions {
  probe: (c: ContainerHandle, cmd: string[], timeoutMs: number) => Promise<{ exitCode: number, output: string, timedOut: boolean }>
  /** A status change: the `health_status: <status>` event. */
  changed: (c: ContainerHandle, status: HealthStatus) => void
  save: (c: ContainerHandle) => Promise<void>
}

/** Runs the probes of running containers; one timer per container, none while a probe runs. */
export class HealthMonitor {
  private readonly o: HealthMonitorOptions
  private readonly timers = new Map<string, { timer: NodeJS.Timeout | null, startedMs: number, run: number }>()
  private runSeq = 0
  private closed = false

  constructor (o: HealthMonitorOptions) { this.o = o }

  /** Starts checking `c` (just started: status starting; `resume`: re-adopted, its state kept). */
  start (c: ContainerHandle, resume = false): void {
    this.stop(c)
    if (this.closed) return
    const settings = healthSettings(c.rec.config.healthcheck, c.rec.config.shell)
    if (settings === null) { if (!resume) delete c.rec.state.health; return }
    if (!resume || c.rec.state.health === undefined) {
      c.rec.state.health = { status: 'starting', failingStreak: 0, log: c.rec.state.health?.log ?? [] }
    }
    const startedMs = resume ? Number(BigInt(c.rec.state.startedAt) / 1_000_000n) : Date.now()
    const entry = { timer: null as NodeJS.Timeout | null, startedMs, run: ++this.runSeq }
    this.timers.set(c.id, entry)
    this.schedule(c, settings, entry)
  }

  stop (c: ContainerHandle): void {
    const e = this.timers.get(c.id)
    if (e === undefined) return
    if (e.timer !== null) clearTimeout(e.timer)
    this.timers.delete(c.id)
  }

  close (): void {
    this.closed = true
    for (const e of this.timers.values()) if (e.timer !== null) clearTimeout(e.timer)
    this.timers.clear()
  }

  private inStartPeriod (s: HealthSettings, startedMs: number): boolean {
    return s.startPeriodMs > 0 && Date.now() - startedMs < s.startPeriodMs
  }

  private schedule (c: ContainerHandle, s: HealthSettings, entry: { timer: NodeJS.Timeout | null, startedMs: number, run: number }): void {
    // during the start period, while not yet healthy, probes come every start interval
    const starting = this.inStartPeriod(s, entry.startedMs) && c.rec.state.health?.status === 'starting'
    const delay = starting ? Math.min(s.startIntervalMs, s.intervalMs) : s.intervalMs
    entry.timer = setTimeout(() => { void this.probeOnce(c, s, entry) }, delay)
    entry.timer.unref()
  }

  private current (c: ContainerHandle, run: number): boolean {
    return !this.closed && this.timers.get(c.id)?.run === run && c.rec.state.status === 'running'
  }

  private async probeOnce (c: ContainerHandle, s: HealthSettings, entry: { timer: NodeJS.Timeout | null, startedMs: number, run: number }): Promise<void> {
    entry.timer = null
    // a paused container is not probed; its checks go on once it is unpaused
    if (c.rec.state.status === 'paused' && !this.closed && this.timers.get(c.id)?.run === entry.run) { this.schedule(c, s, entry); return }
    if (!this.current(c, entry.run)) return
    const startNs = BigInt(Date.now()) * 1_000_000n
    let result: HealthResult
    try {
      const r = await this.o.probe(c, s.cmd, s.timeoutMs)
      result = {
        start: formatRfc3339Nano(startNs),
        end: formatRfc3339Nano(BigInt(Date.now()) * 1_000_000n),
        exitCode: r.timedOut ? -1 : r.exitCode,
        output: r.timedOut ? `Health check exceeded timeout (${s.timeoutMs / 1000}s)` : r.output
      }
    } catch (err) {
      // the probe could not run at all (the container is going away, the exec failed): a failed check, as dockerd's
      result = { start: formatRfc3339Nano(startNs), end: formatRfc3339Nano(BigInt(Date.now()) * 1_000_000n), exitCode: -1, output: (err as Error).message }
    }
    if (!this.current(c, entry.run)) return
    const before = c.rec.state.health ?? { status: 'starting' as const, failingStreak: 0, log: [] }
    const after = applyProbe(before, result, { retries: s.retries, inStartPeriod: this.inStartPeriod(s, entry.startedMs) })
    c.rec.state.health = after
    // the event goes out with the change, before the save, so nobody sees the new status in inspect before its event
    if (after.status !== before.status) this.o.changed(c, after.status)
    await this.o.save(c).catch((err) => { ops.warn('container %s: its health status was not written: %s', c.id.slice(0, 12), describeError(err)) })
    if (this.current(c, entry.run)) this.schedule(c, s, entry)
  }
}
