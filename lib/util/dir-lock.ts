// An exclusive lock on a directory (a daemon's data root or exec root), held for the life of the process and given
// back by the kernel however the process ends (kill -9 included). Node has no flock(2), so a child `flock -n`
// process takes it on `<dir>/berth.lock` and holds it while it runs `cat` on a pipe from us: when we close the pipe,
// or die, cat sees the end of its input, the child exits and the kernel drops the lock. The lock file records the
// holder's pid, for the message a second daemon prints.
import { spawn, type ChildProcess } from 'node:child_process'
import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { EngineError } from '../errors.js'

export const LOCK_FILE = 'berth.lock'
/** flock's exit status when the lock is busy (-E). */
const BUSY = 75

export interface DirLock {
  readonly path: string
  release: () => Promise<void>
}

function alive (pid: number): boolean {
  try { process.kill(pid, 0); return true } catch (err) { return (err as NodeJS.ErrnoException).code === 'EPERM' }
}

async function holder (path: string): Promise<number | null> {
  const text = await readFile(path, 'utf8').catch(() => '')
  const pid = Number.parseInt(text.trim(), 10)
  return Number.isInteger(pid) && pid > 0 ? pid : null
}

/** One attempt: the child holding the lock, or null when it is busy. */
async function tryLock (path: string): Promise<ChildProcess | null> {
  // once flock holds the lock it runs the command: it says so (flock's own --verbose output is block-buffered on a
  // pipe, so it cannot serve), then becomes cat, which holds on until its stdin (our pipe) ends
  const child = spawn('flock', ['--exclusive', '--nonblock', '--conflict-exit-code', String(BUSY), path, 'sh', '-c', 'echo locked; exec cat >/dev/null'], {
    stdio: ['pipe', 'pipe', 'pipe'],
    // its own process group: a Ctrl-C meant for the daemon must not drop the lock while the daemon shuts down
    detached: true
  })
  return await new Promise((resolve, reject) => {
    let err = ''
    let out = ''
    const onExit = (code: number | null): void => {
      if (code === BUSY) resolve(null)
      else reject(new EngineError('unavailable', `cannot lock ${path}: flock exited with ${String(code)}${err !== '' ? `: ${err.trim()}` : ''}`))
    }
    child.once('error', (e) => { reject(new EngineError('unavailable', `cannot lock ${path}: ${e.message} (is util-linux's flock installed?)`)) })
    child.once('exit', onExit)
    child.stderr?.on('data', (d: Buffer) => { err += d.toString() })
    child.stdout?.on('data', (d: Buffer) => {
      out += d.toString()
      if (out.includes('locked\n')) {
        child.off('exit', onExit)
        resolve(child)
      }
    })
  })
}

/**
 * Takes the lock on `dir` (which must exist) or throws a conflict naming the daemon that holds it. A holder that
 * has just died (its flock child still exiting) is waited for briefly.
 */
export async function lockDirectory (dir: string, what: string, o: { waitMs?: number } = {}): Promise<DirLock> {
  const path = join(dir, LOCK_FILE)
  const deadline = Date.now() + (o.waitMs ?? 3000)
  for (;;) {
    const child = await tryLock(path)
    if (child !== null) {
      await writeFile(path, `${process.pid}\n`)
      // the child and its pipes must not keep an otherwise finished process alive
      child.unref()
      ;(child.stderr as unknown as { unref?: () => void } | null)?.unref?.()
      ;(child.stdout as unknown as { unref?: () => void } | null)?.unref?.()
      ;(child.stdin as unknown as { unref?: () => void } | null)?.unref?.()
      let released = false
      return {
        path,
        release: async () => {
          if (released) return
          released = true
          const exited = new Promise<void>((resolve) => {
            if (child.exitCode !== null || child.signalCode !== null) { resolve(); return }
            child.once('exit', () => { resolve() })
          })
          child.stdin?.end()
          const timer = setTimeout(() => { child.kill('SIGKILL') }, 2000)
          await exited
          clearTimeout(timer)
        }
      }
    }
    const pid = await holder(path)
    if ((pid !== null && alive(pid) && pid !== process.pid) || Date.now() > deadline) {
      throw new EngineError('conflict', `${what} ${dir} is in use by another berth daemon${pid !== null ? ` (pid ${pid})` : ''}: stop it, or give this one its own --data-root and --exec-root`)
    }
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}
