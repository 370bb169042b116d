// An exclusive lock on a directory (a daemon's data root or exec root), held for the life of the process and given
// back by the kernel however the process ends (kill -9 included). Node has no flock(2), but a flock lock belongs to
// the open file description, not to the process that asked: the daemon opens `<dir>/berth.lock` (close-on-exec, so
// no container monitor or other child inherits it), hands that descriptor to a one-shot `flock -n <fd>` child, and
// keeps the lock after the child exits for as long as its own descriptor stays open. No process stays behind to hold
// it. The lock file records the holder's pid, for the message a second daemon prints.
import { spawn } from 'node:child_process'
import { open, readFile, type FileHandle } from 'node:fs/promises'
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

/** One attempt: flock(LOCK_EX | LOCK_NB) on the open file description of `fh`; false when it is busy. */
async function tryLock (path: string, fh: FileHandle): Promise<boolean> {
  // the child gets the descriptor as its fd 3 (a duplicate: the same open file description)
  const child = spawn('flock', ['--exclusive', '--nonblock', '--conflict-exit-code', String(BUSY), '3'], { stdio: ['ignore', 'ignore', 'pipe', fh.fd] })
  return await new Promise((resolve, reject) => {
    let err = ''
    child.stderr?.on('data', (d: Buffer) => { err += d.toString() })
    child.once('error', (e) => { reject(new EngineError('unavailable', `cannot lock ${path}: ${e.message} (is util-linux's flock installed?)`)) })
    child.once('close', (code) => {
      if (code === 0) resolve(true)
      else if (code === BUSY) resolve(false)
      else reject(new EngineError('unavailable', `cannot lock ${path}: flock exited with ${String(code)}${err !== '' ? `: ${err.trim()}` : ''}`))
    })
  })
}

/**
 * Takes the lock on `dir` (which must exist) or throws a conflict naming the daemon that holds it. A holder that
 * has just died (the kernel still closing its files) is waited for briefly.
 */
export async function lockDirectory (dir: string, what: string, o: { waitMs?: number } = {}): Promise<DirLock> {
  const path = join(dir, LOCK_FILE)
  const deadline = Date.now() + (o.waitMs ?? 3000)
  // read-write without truncating: the holder's pid stays readable until the lock is ours
  const fh = await open(path, 'a+', 0o600)
  try {
    for (;;) {
      if (await tryLock(path, fh)) {
        await fh.truncate(0)
        await fh.write(`${process.pid}\n`)
        let released = false
        return {
          path,
          release: async () => {
            if (released) return
            released = true
            // the last descriptor of the open file description: the kernel drops the lock
            await fh.close()
          }
        }
      }
      const pid = await holder(path)
      if ((pid !== null && alive(pid) && pid !== process.pid) || Date.now() > deadline) {
        throw new EngineError('conflict', `${what} ${dir} is in use by another berth daemon${pid !== null ? ` (pid ${pid})` : ''}: stop it, or give this one its own --data-root and --exec-root`)
      }
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
  } catch (err) {
    await fh.close()
    throw err
  }
}
