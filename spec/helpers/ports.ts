// Test helpers for published ports: which processes hold a host port now (ss), and what a process is (its parent,
// user, capabilities and name, from /proc).
import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'

/** PIDs of the processes with a socket listening on (TCP) or bound to (UDP) the host port. */
export function portHolders (proto: 'tcp' | 'udp', port: number): number[] {
  const out = execFileSync('ss', [proto === 'tcp' ? '-Hltnp' : '-Hlunp', `sport = :${port}`], { encoding: 'utf8' })
  return [...new Set([...out.matchAll(/pid=(\d+)/g)].map((m) => Number(m[1])))].sort((a, b) => a - b)
}

export interface ProcInfo { pid: number, ppid: number, uid: number, capEff: bigint, noNewPrivs: boolean, name: string }

/** A process's parent, real user, effective capabilities, no_new_privs and name; null when it is gone. */
export function procInfo (pid: number): ProcInfo | null {
  let status: string
  try { status = readFileSync(`/proc/${pid}/status`, 'utf8') } catch { return null }
  const field = (name: string): string => new RegExp(`^${name}:\\s*(.*)$`, 'm').exec(status)?.[1]?.trim() ?? ''
  return {
    pid,
    ppid: Number(field('PPid')),
    uid: Number(field('Uid').split(/\s+/)[0]),
    capEff: BigInt(`0x${field('CapEff') || '0'}`),
    noNewPrivs: field('NoNewPrivs') === '1',
    name: field('Name')
  }
}
