// The kernel's OOM kills in running containers' memory cgroups, reported as they happen (dockerd's `oom` event comes
// when the OOM killer fires, not only when the container exits): one shared timer reads each watched cgroup's OOM
// counter ("oom_kill N" in cgroup v1 memory.oom_control, v2 memory.events), a few bytes a read.
import { readFile } from 'node:fs/promises'

/** The "oom_kill N" count of an OOM counter file's text; undefined when it has none. */
export function parseOomKills (text: string): number | undefined {
  const m = /^oom_kill (\d+)$/m.exec(text)
  return m === null ? undefined : Number(m[1])
}

interface Watched { file: string, seen: number, reported: number, onKill: () => void }

/** At most this many events for one read, however far the counter jumped. */
const MAX_KILLS_PER_READ = 16

export class OomWatch {
  private readonly watched = new Map<string, Watched>()
  private readonly intervalMs: number
  private timer: NodeJS.Timeout | null = null
  private busy = false

  constructor (intervalMs = 250) { this.intervalMs = intervalMs }

  /**
   * Watches the counter `file` of container `id` (again: no change) and calls `onKill` once for each new kill.
   * `seen`: kills already known (a container re-adopted after a restart); a new cgroup starts at 0.
   */
  watch (id: string, file: string, onKill: () => void, seen = 0): void {
    if (this.watched.has(id)) return
    this.watched.set(id, { file, seen, reported: 0, onKill })
    if (this.timer === null) {
      this.timer = setInterval(() => { void this.tick() }, this.intervalMs)
      this.timer.unref()
    }
  }

  /** The kills counted in `file` now (0 when it cannot be read). */
  static async count (file: string): Promise<number> {
    return parseOomKills(await readFile(file, 'utf8').catch(() => '')) ?? 0
  }

  /** Stops watching `id`; returns how many kills were reported while it was watched. */
  unwatch (id: string): number {
    const w = this.watched.get(id)
    this.watched.delete(id)
    if (this.watched.size === 0 && this.timer !== null) { clearInterval(this.timer); this.timer = null }
    return w?.reported ?? 0
  }

  private async tick (): Promise<void> {
    if (this.busy) return
    this.busy = true
    try {
      for (const [id, w] of [...this.watched]) {
        const n = parseOomKills(await readFile(w.file, 'utf8').catch(() => ''))
        // a cgroup gone (the container exiting) or replaced: nothing to report from it
        if (n === undefined || this.watched.get(id) !== w || n <= w.seen) continue
        const fresh = Math.min(n - w.seen, MAX_KILLS_PER_READ)
        w.seen = n
        for (let i = 0; i < fresh; i++) { w.reported++; w.onKill() }
      }
    } finally { this.busy = false }
  }

  close (): void {
    if (this.timer !== null) clearInterval(this.timer)
    this.timer = null
    this.watched.clear()
  }
}
