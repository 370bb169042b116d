// The OCI runtime CLI (runc, or crun with the same verbs), called with its own --root so state never collides, and
// with the options its configuration gives it before every command (daemon.json's runtimeArgs).
import { execFile } from 'node:child_process'
import { internal, notFound, conflict } from '../errors.js'
import { logger } from '../log.js'

const log = logger('engine:runtime')

export interface RuncOptions {
  binary: string
  root: string
  /** Options given before every command (daemon.json's runtimeArgs: --systemd-cgroup, --debug, …). */
  args?: readonly string[]
}

export class Runc {
  readonly binary: string
  readonly root: string
  readonly args: readonly string[]
  constructor (opts: RuncOptions) {
    this.binary = opts.binary
    this.root = opts.root
    this.args = opts.args ?? []
  }

  async run (args: string[], timeoutMs = 30_000): Promise<string> {
    const full = [...this.args, '--root', this.root, ...args]
    log('%s %s', this.binary, full.join(' '))
    return await new Promise((resolve, reject) => {
      execFile(this.binary, full, { timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024 }, (err, stdout, stderr) => {
        if (err !== null) {
          const text = String(stderr).trim() || err.message
          if (/does not exist|not exist|no such container/i.test(text)) reject(notFound(text, { cause: err }))
          else if (/not running|container not running|is not running|stopped/i.test(text)) reject(conflict(text, { cause: err }))
          // its cgroup went with its last process: a container that exited while the command ran
          else if (/\/sys\/fs\/cgroup\/\S*: no such file or directory/i.test(text)) reject(conflict(text, { cause: err }))
          else reject(internal(`${this.binary} ${args[0] ?? ''}: ${text}`, { cause: err }))
          return
        }
        resolve(String(stdout))
      })
    })
  }

  async start (id: string): Promise<void> { await this.run(['start', id]) }
  async kill (id: string, signal: string | number, all = false): Promise<void> {
    await this.run(all ? ['kill', '--all', id, String(signal)] : ['kill', id, String(signal)])
  }

  async pause (id: string): Promise<void> { await this.run(['pause', id]) }
  async resume (id: string): Promise<void> { await this.run(['resume', id]) }
  async delete (id: string): Promise<void> { await this.run(['delete', '--force', id]) }
  async ps (id: string): Promise<number[]> {
    const out = await this.run(['ps', '--format', 'json', id])
    const pids = JSON.parse(out.trim() === '' ? '[]' : out) as number[] | null
    return pids ?? []
  }

  async state (id: string): Promise<{ status: string, pid: number } | null> {
    try {
      const out = await this.run(['state', id])
      const s = JSON.parse(out) as { status: string, pid: number }
      return { status: s.status, pid: s.pid }
    } catch { return null }
  }

  async version (): Promise<string> {
    try {
      const out = await new Promise<string>((resolve, reject) => {
        execFile(this.binary, ['--version'], { timeout: 5000 }, (err, stdout) => { if (err !== null) reject(err); else resolve(String(stdout)) })
      })
      const m = /version\s+(\S+)/.exec(out)
      return m?.[1] ?? 'unknown'
    } catch { return 'unknown' }
  }
}
