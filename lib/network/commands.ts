// The Linux tools networking drives: ip (iproute2), iptables and nsenter (util-linux). One runner. (A container's
// namespace and veths at its start are made by its monitor, without them: lib/runtime/shim/netns.c.)
import { execFile } from 'node:child_process'
import { access } from 'node:fs/promises'
import { join } from 'node:path'
import { logger } from '../log.js'

const log = logger('engine:network')

export interface RunResult { code: number, stdout: string, stderr: string }

/** Runs a tool; resolves with its exit code and output (never rejects on a non-zero exit). */
export function run (bin: string, args: string[], input?: string): Promise<RunResult> {
  return new Promise((resolve) => {
    const child = execFile(bin, args, { encoding: 'utf8', maxBuffer: 16 << 20 }, (err, stdout, stderr) => {
      const code = err === null ? 0 : typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : 127
      if (code !== 0) log('%s %s → %d %s', bin, args.join(' '), code, stderr.trim())
      resolve({ code, stdout, stderr })
    })
    if (input !== undefined) {
      // a tool that exits before reading its input (nsenter into a namespace that is gone) closes the pipe: its exit
      // code tells what happened, the write's EPIPE is no news
      child.stdin?.on('error', (err) => { log('%s: its input was not all taken: %s', bin, err.message) })
      child.stdin?.end(input)
    }
  })
}

/** Runs a tool; throws with its stderr on a non-zero exit. */
export async function must (bin: string, args: string[], input?: string): Promise<string> {
  const r = await run(bin, args, input)
  if (r.code !== 0) throw new Error(`${bin} ${args.slice(0, 4).join(' ')}: ${r.stderr.trim() || `exit ${r.code}`}`)
  return r.stdout
}

/** The path of a tool on PATH (or the sbin directories), or null. */
export async function findTool (name: string): Promise<string | null> {
  const dirs = (process.env.PATH ?? '').split(':').concat(['/usr/local/sbin', '/usr/sbin', '/sbin', '/usr/bin', '/bin'])
  for (const d of dirs) {
    if (d === '') continue
    try { await access(join(d, name)); return join(d, name) } catch { /* next */ }
  }
  return null
}

export interface Tools { ip: string, nsenter: string, iptables: string | null }

/** The tools, or the name of the first one missing. */
export async function findTools (): Promise<Tools | string> {
  const ip = await findTool('ip')
  if (ip === null) return 'ip (iproute2)'
  const nsenter = await findTool('nsenter')
  if (nsenter === null) return 'nsenter (util-linux)'
  return { ip, nsenter, iptables: await findTool('iptables') }
}
