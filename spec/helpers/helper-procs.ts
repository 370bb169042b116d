// A helper program's processes as a spec sees them from /proc: which children of this test process run it, and how
// many connections one holds.

import { readdirSync, readFileSync, readlinkSync } from 'node:fs'

/** This process's children (of any of its threads) running `program` (its path as started). */
export function childrenRunning (program: string): number[] {
  const out: number[] = []
  for (const tid of readdirSync('/proc/self/task')) {
    let children = ''
    try { children = readFileSync(`/proc/self/task/${tid}/children`, 'utf8') } catch { continue }
    for (const c of children.split(' ').filter((x) => x.trim() !== '')) {
      try { if (readFileSync(`/proc/${c}/cmdline`, 'utf8').split('\0')[0] === program) out.push(Number(c)) } catch {}
    }
  }
  return out
}

/** The sockets a helper holds past its stdio and its Node IPC channel (fd 3): its connections. */
export function socketsOf (pid: number): number {
  let n = 0
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try { if (Number(fd) > 3 && readlinkSync(`/proc/${pid}/fd/${fd}`).startsWith('socket:')) n++ } catch {}
  }
  return n
}
