// Processes of an engine and what they weigh, read from /proc: the daemon, every process it spawned (its children and
// theirs), and the detached ones that name the engine on their command line (monitors, forwarders, shims); never a
// container's own processes (they run in another PID namespace).
import { readFileSync, readdirSync, readlinkSync } from 'node:fs'

interface ProcInfo { pid: number, ppid: number, cmdline: string, pidns: string }

function readProc (pid: number): ProcInfo | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1])
    const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ')
    const pidns = readlinkSync(`/proc/${pid}/ns/pid`)
    return { pid, ppid, cmdline, pidns }
  } catch { return null }
}

/** The daemon `root` and its processes: descendants, and processes whose command line contains one of `markers`. */
export function engineProcesses (root: number, markers: string[]): Array<{ pid: number, cmdline: string }> {
  const own = readlinkSync('/proc/self/ns/pid')
  const all = readdirSync('/proc').filter((d) => /^\d+$/.test(d)).map((d) => readProc(Number(d))).filter((p): p is ProcInfo => p !== null && p.pidns === own && p.cmdline !== '')
  const byPid = new Map(all.map((p) => [p.pid, p]))
  const inTree = (p: ProcInfo): boolean => {
    for (let q: ProcInfo | undefined = p, n = 0; q !== undefined && n < 64; q = byPid.get(q.ppid), n++) if (q.pid === root) return true
    return false
  }
  return all.filter((p) => p.pid !== process.pid && (inTree(p) || markers.some((m) => p.cmdline.includes(m)))).map((p) => ({ pid: p.pid, cmdline: p.cmdline }))
}

export function rssKiB (pid: number): number {
  try { return Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) } catch { return 0 }
}

export function pssKiB (pids: number[]): number {
  let total = 0
  for (const p of pids) {
    try { total += Number(/^Pss:\s+(\d+)/m.exec(readFileSync(`/proc/${p}/smaps_rollup`, 'utf8'))?.[1] ?? 0) } catch { /* gone */ }
  }
  return total
}

/** CPU time (user + system, own only) of the processes, in ms. */
export function cpuMs (pids: number[]): number {
  let ticks = 0
  for (const p of pids) {
    try {
      const stat = readFileSync(`/proc/${p}/stat`, 'utf8')
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
      ticks += Number(f[11]) + Number(f[12])
    } catch { /* gone */ }
  }
  return ticks * 10 // USER_HZ is 100 on Linux
}
