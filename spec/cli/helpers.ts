// Helpers for the `berth` command's tests: run it to completion, or start a daemon and read its log lines.
import { spawn, spawnSync, type ChildProcess, type SpawnOptions } from 'node:child_process'
import { once } from 'node:events'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { ROOT, request } from '../helpers/engine.js'

export const MAIN = join(ROOT, 'dist', 'lib', 'cli', 'main.js')

export interface Ran { status: number | null, stdout: string, stderr: string }

/** Runs `berth ARGS` to its end (never against a server in this process: spawnSync blocks it). */
export function berth (args: string[], o: { input?: string, env?: NodeJS.ProcessEnv, cwd?: string } = {}): Ran {
  const r = spawnSync(process.execPath, [MAIN, ...args], { input: o.input ?? '', encoding: 'utf8', env: o.env ?? process.env, timeout: 60_000, ...(o.cwd !== undefined ? { cwd: o.cwd } : {}) })
  return { status: r.status, stdout: r.stdout, stderr: r.stderr }
}

/** A daemon (or registry) process whose stderr is collected. */
export interface Proc {
  child: ChildProcess
  stderr: () => string
  /** Resolves with the stderr text once `re` matches it (rejects if the process exits first or after `ms`). */
  waitFor: (re: RegExp, ms?: number) => Promise<string>
  /** Resolves with the exit status (killed with SIGKILL after `ms`). */
  exited: (ms?: number) => Promise<number | null>
}

export function startProc (cmd: string, args: string[], o: SpawnOptions = {}): Proc {
  const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'], ...o })
  let err = ''
  const waiters = new Set<() => void>()
  child.stderr?.on('data', (d: Buffer) => { err += d.toString(); for (const w of [...waiters]) w() })
  const done = once(child, 'exit').then(([code]) => code as number | null)
  return {
    child,
    stderr: () => err,
    waitFor: async (re, ms = 60_000) => await new Promise<string>((resolve, reject) => {
      const check = (): void => { if (re.test(err)) { cleanup(); resolve(err) } }
      const timer = setTimeout(() => { cleanup(); reject(new Error(`no ${String(re)} within ${ms} ms: ${err}`)) }, ms)
      const onExit = (): void => { setTimeout(() => { if (waiters.has(check)) { cleanup(); reject(new Error(`exited before ${String(re)}: ${err}`)) } }, 50) }
      function cleanup (): void { clearTimeout(timer); waiters.delete(check); child.off('exit', onExit) }
      waiters.add(check)
      child.once('exit', onExit)
      check()
    }),
    exited: async (ms = 60_000) => {
      const timer = setTimeout(() => { child.kill('SIGKILL') }, ms)
      const code = await done
      clearTimeout(timer)
      return code
    }
  }
}

/** `berth daemon ARGS` as a child process. */
export function startDaemon (args: string[], o: SpawnOptions = {}): Proc {
  return startProc(process.execPath, [MAIN, 'daemon', ...args], o)
}

/** Waits until the daemon answers /_ping on `sock`. */
export async function pingable (sock: string, p: Proc, ms = 120_000): Promise<void> {
  const deadline = Date.now() + ms
  while (Date.now() < deadline) {
    if (existsSync(sock) && await request(sock, 'GET', '/_ping').then((r) => r.status === 200, () => false)) return
    if (p.child.exitCode !== null) throw new Error(`daemon exited: ${p.stderr()}`)
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
  throw new Error(`daemon did not answer within ${ms} ms: ${p.stderr()}`)
}

/** The JSON records of a --log-format json stderr (every line must parse). */
export function jsonRecords (text: string): Array<{ level: string, msg: string, time: string, module?: string }> {
  return text.split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as { level: string, msg: string, time: string, module?: string })
}
