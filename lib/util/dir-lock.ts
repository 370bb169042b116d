// An exclusive lock on a directory (a daemon's data root or exec root), held for the life of the process and given
// back by the kernel however the process ends (kill -9 included). Node has no flock(2), but a flock lock belongs to
// the open file description, not to the process that asked: the daemon opens `<dir>/berth.lock` (close-on-exec, so
// no container monitor or other child inherits it), hands that descriptor to a one-shot `flock -n <fd>` child, and
// keeps the lock after the child exits for as long as its own descriptor stays open. No process stays behind to hold
// it. The lock file records the holder's pid, for the message a second daemon prints. The daemon's two roots are
// locked by one child, the monitor binary's `lock` mode (lockDirectories with a helper): one spawn on a restart. When
// the package's Node-API module dist/berth-flock.node was built (flock-addon.c: flock(2) itself), no child at all:
// the spawn cost a restart ~4 ms of the main thread's CPU before /_ping (tools/bench/README.md, "round six").
import { spawn } from 'node:child_process'
import { closeSync, existsSync, ftruncateSync, openSync, readFileSync, writeSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { EngineError } from '../errors.js'

export const LOCK_FILE = 'berth.lock'
/** flock's exit status when the lock is busy (-E). */
const BUSY = 75

export interface DirLock {
  readonly path: string
  release: () => Promise<void>
}

/** flock-addon.c's exports: flock(fd, LOCK_EX | LOCK_NB) → 0, or -errno. */
export interface FlockModule {
  lock: (fd: number) => number
}

/** EWOULDBLOCK: the lock is another's. */
const EWOULDBLOCK = 11

/**
 * The package's Node-API module (dist/berth-flock.node, tools/build-flock.mjs), or null when it was not built (no C
 * compiler) or does not load here. The same path from dist/lib/util/ and from the bundle in dist/lib/cli/.
 */
export function builtFlock (): FlockModule | null {
  const path = fileURLToPath(new URL('../../berth-flock.node', import.meta.url))
  if (!existsSync(path)) return null
  try {
    const mod = { exports: {} as Partial<FlockModule> }
    process.dlopen(mod, path)
    return typeof mod.exports.lock === 'function' ? mod.exports as FlockModule : null
  } catch {
    return null
  }
}

/** One attempt through the module: the index of the first busy file (those before it taken), or -1 when all are. */
function tryLockHere (files: ReadonlyArray<{ path: string, fd: number }>, flock: FlockModule): number {
  for (const [i, f] of files.entries()) {
    const rc = flock.lock(f.fd)
    if (rc === -EWOULDBLOCK) return i
    if (rc !== 0) throw new EngineError('unavailable', `cannot lock ${f.path}: flock: errno ${-rc}`)
  }
  return -1
}

function alive (pid: number): boolean {
  try { process.kill(pid, 0); return true } catch (err) { return (err as NodeJS.ErrnoException).code === 'EPERM' }
}

function holder (path: string): number | null {
  let text = ''
  try { text = readFileSync(path, 'utf8') } catch { /* none */ }
  const pid = Number.parseInt(text.trim(), 10)
  return Number.isInteger(pid) && pid > 0 ? pid : null
}

/**
 * One attempt: flock(LOCK_EX | LOCK_NB) on the open file description of each of `files`, in order, by one child: the
 * monitor binary's `lock` mode (`helper`: lib/runtime/shim/service-modes.c) for any number of them, or util-linux's
 * `flock -n` for one. Resolves with the index of the first that is busy (those before it are taken), or -1 when all
 * are taken.
 */
async function tryLock (files: ReadonlyArray<{ path: string, fd: number }>, helper: string | undefined): Promise<number> {
  // the child gets the descriptors as its fds 3, 4, … (duplicates: the same open file descriptions)
  const fds = files.map((_, i) => String(3 + i))
  const [cmd, args] = helper !== undefined
    ? [helper, ['lock', ...fds]]
    : ['flock', ['--exclusive', '--nonblock', '--conflict-exit-code', String(BUSY), '3']]
  const what = files.map((f) => f.path).join(' and ')
  const child = spawn(cmd, args, { stdio: ['ignore', 'ignore', 'pipe', ...files.map((f) => f.fd)] })
  return await new Promise((resolve, reject) => {
    let err = ''
    child.stderr?.on('data', (d: Buffer) => { err += d.toString() })
    child.once('error', (e) => { reject(new EngineError('unavailable', `cannot lock ${what}: ${e.message}${helper === undefined ? ' (is util-linux\'s flock installed?)' : ''}`)) })
    child.once('close', (code) => {
      if (code === 0) resolve(-1)
      else if (code !== null && code >= BUSY && code < BUSY + files.length) resolve(code - BUSY)
      else reject(new EngineError('unavailable', `cannot lock ${what}: ${helper === undefined ? 'flock' : `${helper} lock`} exited with ${String(code)}${err !== '' ? `: ${err.trim()}` : ''}`))
    })
  })
}

/**
 * Takes the lock on `dir` (which must exist) or throws a conflict naming the daemon that holds it. A holder that
 * has just died (the kernel still closing its files) is waited for briefly.
 */
export async function lockDirectory (dir: string, what: string, o: { waitMs?: number, flock?: FlockModule | null } = {}): Promise<DirLock> {
  const [lock] = await lockDirectories([{ dir, what }], o)
  return lock as DirLock
}

/**
 * Takes the locks on each of `dirs` (which must exist), all or none: throws a conflict naming the daemon that holds
 * the first busy one, having given back those it took. Through `flock` (default: the package's module, builtFlock;
 * null: none) without a child; else with `helper` (the monitor binary, which has a `lock` mode), one child takes them
 * all; otherwise one `flock` child each.
 */
export async function lockDirectories (dirs: ReadonlyArray<{ dir: string, what: string }>, o: { waitMs?: number, helper?: string, flock?: FlockModule | null } = {}): Promise<DirLock[]> {
  const flock = o.flock === undefined ? builtFlock() : o.flock
  const deadline = Date.now() + (o.waitMs ?? 3000)
  // the lock files' calls are synchronous (a few µs each, at a start; as promises, trips through libuv's thread pool
  // on a restart's way to /_ping); the descriptors are close-on-exec (libuv opens so)
  const files: Array<{ path: string, fd: number }> = []
  try {
    for (const d of dirs) {
      const path = join(d.dir, LOCK_FILE)
      // read-write without truncating: the holder's pid stays readable until the lock is ours
      files.push({ path, fd: openSync(path, 'a+', 0o600) })
    }
    for (;;) {
      let busy = -1
      if (flock !== null) busy = tryLockHere(files, flock)
      else if (o.helper !== undefined) busy = await tryLock(files, o.helper)
      else {
        for (const [i, f] of files.entries()) {
          if (await tryLock([f], undefined) === 0) { busy = i; break }
        }
      }
      if (busy < 0) break
      const { path } = files[busy] as { path: string }
      const { dir, what } = dirs[busy] as { dir: string, what: string }
      const pid = holder(path)
      if ((pid !== null && alive(pid) && pid !== process.pid) || Date.now() > deadline) {
        throw new EngineError('conflict', `${what} ${dir} is in use by another berth daemon${pid !== null ? ` (pid ${pid})` : ''}: stop it, or give this one its own --data-root and --exec-root`)
      }
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
    return files.map(({ path, fd }) => {
      ftruncateSync(fd, 0)
      // opened for appending: written at the (new) end
      writeSync(fd, `${process.pid}\n`)
      let released = false
      return {
        path,
        release: async () => {
          if (released) return
          released = true
          // the last descriptor of the open file description: the kernel drops the lock
          closeSync(fd)
        }
      }
    })
  } catch (err) {
    // the locks taken go with their descriptors
    for (const f of files) closeSync(f.fd)
    throw err
  }
}
