// What the engine needs from the host, checked at start before anything is created, locked or repaired: root, the
// OCI runtime (found and run: its version), the container monitor (runs on this machine), the data root and exec
// root (writable directories on a real filesystem: the kernel's own EROFS/EACCES reported, /proc and /sys refused),
// the Unix socket paths (length, kind; a live one or a non-socket refused, never removed), the cgroup layout and
// overlayfs. Every failure is reported at once, each with what to do.
//
// Lightness: the two checks that spawn (the runtime's and the monitor's --version) run once per binary: their result
// is kept in <exec-root>/start-checks.json keyed by the binary's inode, size and mtime, so a restart only stats. The
// file checks are synchronous calls (~40 stats, accesses and reads, each a few µs): as promises each was a trip through
// libuv's thread pool and back, 3.5–7 ms of the main thread's CPU before /_ping and a wake-up each on a busy machine
// (tools/bench/README.md, "Restart, round six"). They run before the engine serves anything; an embedding program's
// event loop waits for them as it would for a module's loading.
import { execFile } from 'node:child_process'
import { accessSync, constants, readFileSync, realpathSync, statfsSync, statSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { EngineError } from '../errors.js'
import { socketPathKind } from '../http/listen.js'
import { writeFileAtomic } from '../util/atomic.js'

export interface StartCheckOptions {
  dataRoot: string
  execRoot: string
  /** Unix socket paths the engine will listen on. */
  sockets: readonly string[]
  /** The OCI runtime: a name looked up in PATH, or a path. */
  runtime: string
  /** Monitor binaries in order of preference (the first that exists must run). */
  shimCandidates: readonly string[]
}

export interface StartFacts {
  runtime: { path: string, version: string }
  /** The stock runc as exec(3p) finds it (`runc` when not found): stats, no spawn. */
  runc: string
  shimPath: string
  cgroup: 'v1' | 'v2'
  overlay: boolean
  /** Roots that do not exist yet (the engine creates them; a failed start removes them). */
  missingRoots: string[]
  /** Things that work but not as well as they could (logged at start). */
  warnings: string[]
  /** Records the spawned checks' results for the next start (once the exec root exists). */
  remember: () => Promise<void>
}

/** The error of failed start checks: every failure, one per line (the list is its detail). */
function startCheckError (failures: string[]): EngineError {
  return new EngineError('unavailable', failures.length === 1 ? failures[0] as string : `the host is not ready:\n  - ${failures.join('\n  - ')}`, { detail: failures })
}

const CACHE_FILE = 'start-checks.json'
/** statfs f_type of the kernel's own filesystems, which cannot hold state. */
const KERNEL_FS = new Map<number, string>([[0x9fa0, 'proc'], [0x62656572, 'sysfs'], [0x27e0eb, 'cgroup'], [0x63677270, 'cgroup2'],
  [0x64626720, 'debugfs'], [0x73636673, 'securityfs'], [0xcafe4a11, 'bpf'], [0x1cd1, 'devpts'], [0x74726163, 'tracefs']])

interface CheckCache { [binaryKey: string]: string }

function binaryKey (path: string): string {
  const st = statSync(path)
  return `${path}:${st.ino}:${st.size}:${Math.trunc(st.mtimeMs)}`
}

async function run (bin: string, args: string[]): Promise<string> {
  return await new Promise((resolve, reject) => {
    execFile(bin, args, { timeout: 10_000, encoding: 'utf8' }, (err, stdout, stderr) => {
      if (err !== null) reject(new Error(String(stderr).trim() !== '' ? String(stderr).trim() : err.message))
      else resolve(stdout)
    })
  })
}

function errnoText (err: unknown): string {
  const e = err as NodeJS.ErrnoException
  const what: Record<string, string> = { ENOENT: 'no such file or directory', EACCES: 'permission denied', EROFS: 'read-only file system', ENOTDIR: 'not a directory', ELOOP: 'too many levels of symbolic links' }
  return e.code !== undefined && what[e.code] !== undefined ? `${what[e.code] as string} (${e.code})` : e.message
}

/** A program as exec(3p) finds it: a path as given, else the first executable file of that name in PATH. */
export function findExecutable (name: string): string | null {
  if (name.includes('/')) return name
  const dirs = (process.env.PATH ?? '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin').split(':').concat(['/usr/sbin', '/sbin'])
  for (const d of dirs) {
    if (d === '') continue
    const p = join(d, name)
    try {
      if (statSync(p, { throwIfNoEntry: false })?.isFile() === true) { accessSync(p, constants.X_OK); return p }
    } catch { /* next */ }
  }
  return null
}

/** The runtime found and run (its version), or why not, in dockerd's words where it has them. */
async function checkRuntime (name: string, cache: CheckCache, fresh: CheckCache): Promise<{ path: string, version: string }> {
  const path = findExecutable(name)
  if (path === null) throw new Error(`OCI runtime: exec: "${name}": executable file not found in $PATH (install it: apt-get install ${name === 'crun' ? 'crun' : 'runc'}, or give its path with --runtime)`)
  let key: string
  try {
    const st = statSync(path)
    if (!st.isFile()) throw Object.assign(new Error('not a regular file'), { code: 'EISDIR' })
    accessSync(path, constants.X_OK)
    key = binaryKey(path)
  } catch (err) {
    throw new Error(`OCI runtime: exec: "${path}": ${(err as NodeJS.ErrnoException).code === 'EISDIR' ? 'not a regular file' : `stat ${path}: ${errnoText(err)}`}`)
  }
  const known = cache[key]
  if (known !== undefined) { fresh[key] = known; return { path, version: known } }
  let out: string
  try {
    out = await run(path, ['--version'])
  } catch (err) {
    throw new Error(`OCI runtime ${path} does not run: ${(err as Error).message}`)
  }
  const version = /version\s+(\S+)/.exec(out)?.[1] ?? 'unknown'
  fresh[key] = version
  return { path, version }
}

/** The first monitor binary that exists; it must run here (architecture, loader). */
async function checkShim (candidates: readonly string[], cache: CheckCache, fresh: CheckCache): Promise<string> {
  const tried: string[] = []
  for (const p of candidates) {
    let key: string
    try { key = binaryKey(p) } catch { tried.push(`${p}: missing`); continue }
    if (cache[key] !== undefined) { fresh[key] = cache[key] as string; return p }
    try {
      const out = await run(p, ['--version'])
      if (!out.startsWith('berth-shim ')) throw new Error(`unexpected --version output ${JSON.stringify(out.trim().slice(0, 80))} (a monitor older than this package: rebuild it)`)
      fresh[key] = out.trim()
      return p
    } catch (err) {
      tried.push(`${p}: ${(err as Error).message}`)
    }
  }
  throw new Error(`the container monitor (berth-shim) does not run on linux-${process.arch}: ${tried.join('; ')}. ` +
    'Build it: install a C compiler (apt-get install gcc), then `npm rebuild berth` (or `npm run build` in a checkout)')
}

/** A state directory: absent (its nearest existing parent writable) or a writable directory, on a real filesystem. */
function checkStateDir (path: string, what: string): boolean {
  const p = resolve(path)
  const kernel = (q: string): string | null => /^\/(proc|sys)(\/|$)/.exec(q)?.[1] ?? null
  const under = kernel(p)
  if (under !== null) throw new Error(`${what} ${p} is under /${under}, a kernel filesystem: it cannot hold Berth's state (use --${what.replace(' ', '-')} with a directory on a disk)`)
  let cur = p
  let st
  for (;;) {
    try {
      st = statSync(cur)
      break
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code
      if (code === 'ENOENT') { cur = dirname(cur); continue }
      if (code === 'ENOTDIR') { cur = dirname(cur); continue }
      throw new Error(`${what} ${p}: stat ${cur}: ${errnoText(err)}`)
    }
  }
  if (!st.isDirectory()) throw new Error(cur === p ? `${what} ${p} is not a directory` : `${what} ${p}: ${cur} is not a directory`)
  const real = realpathSync(cur)
  const realUnder = kernel(real)
  if (realUnder !== null) throw new Error(`${what} ${p} resolves to ${real}, under /${realUnder}: a kernel filesystem cannot hold Berth's state`)
  const fsType = KERNEL_FS.get(Number(statfsSync(real).type))
  if (fsType !== undefined) throw new Error(`${what} ${p} is on a ${fsType} filesystem: it cannot hold Berth's state`)
  try {
    accessSync(cur, constants.W_OK | constants.X_OK)
  } catch (err) {
    throw new Error(`${what} ${p} is not writable: ${cur === p ? '' : `${cur}: `}${errnoText(err)}`)
  }
  return cur === p
}

function checkCgroups (): 'v1' | 'v2' {
  const has = (p: string): boolean => { try { accessSync(p); return true } catch { return false } }
  if (has('/sys/fs/cgroup/cgroup.controllers')) return 'v2'
  if (has('/sys/fs/cgroup/memory') && has('/sys/fs/cgroup/pids')) return 'v1'
  throw new Error('no usable cgroup filesystem at /sys/fs/cgroup (neither cgroup v2 nor v1 memory and pids controllers): containers need cgroups; mount cgroup2 there (mount -t cgroup2 none /sys/fs/cgroup)')
}

/** The spawned checks' results of earlier starts ({} when none or unreadable). */
function readCheckCache (file: string): CheckCache {
  try {
    const v = JSON.parse(readFileSync(file, 'utf8')) as unknown
    return v !== null && typeof v === 'object' && !Array.isArray(v) ? v as CheckCache : {}
  } catch {
    return {}
  }
}

/** Runs every check; throws an EngineError listing all failures. Creates nothing. */
export async function runStartChecks (o: StartCheckOptions): Promise<StartFacts> {
  const failures: string[] = []
  const warnings: string[] = []
  const fail = (err: unknown): never => { throw err }
  const cacheFile = join(o.execRoot, CACHE_FILE)
  const cache = readCheckCache(cacheFile)
  const fresh: CheckCache = {}
  if (process.getuid?.() !== 0) {
    failures.push(`berth daemon needs root (running as uid ${process.getuid?.() ?? '?'}): containers need namespaces, cgroups, mounts and iptables. Run it as root (sudo, or the systemd unit in tools/systemd)`)
  }
  // the file checks' own calls are synchronous: these promises wait only for a --version probe not in the cache
  const settled = async <T>(fn: () => T | Promise<T>): Promise<T> => await fn()
  const results = await Promise.allSettled([
    checkRuntime(o.runtime, cache, fresh),
    checkShim(o.shimCandidates, cache, fresh),
    settled(() => checkStateDir(o.dataRoot, 'data root')),
    settled(() => checkStateDir(o.execRoot, 'exec root')),
    settled(() => checkCgroups()),
    settled(() => { try { return /\toverlay$/m.test(readFileSync('/proc/filesystems', 'utf8')) } catch { return false } }),
    // the path's length and kind; whether a daemon answers on it is asked when the engine listens (listenOn)
    ...o.sockets.map((s) => settled(() => socketPathKind(s)))
  ])
  // an exec root inside a data root that failed fails the same way: said once
  const execInData = resolve(o.execRoot).startsWith(resolve(o.dataRoot) + '/')
  results.forEach((r, i) => {
    if (r.status === 'rejected' && !(i === 3 && execInData && results[2]?.status === 'rejected')) failures.push((r.reason as Error).message)
  })
  if (failures.length > 0) throw startCheckError(failures)
  const value = <T>(r: PromiseSettledResult<T> | undefined): T => r?.status === 'fulfilled' ? r.value : fail(new Error('unreachable'))
  const overlay = value(results[5] as PromiseSettledResult<boolean>)
  if (!overlay) warnings.push('overlayfs is not available (modprobe overlay): image layers are copied into every container\'s root filesystem (slower starts, more disk)')
  const missingRoots = [[o.dataRoot, value(results[2] as PromiseSettledResult<boolean>)], [o.execRoot, value(results[3] as PromiseSettledResult<boolean>)]]
    .filter(([, exists]) => exists === false).map(([p]) => resolve(p as string))
  const runtime = value(results[0] as PromiseSettledResult<{ path: string, version: string }>)
  const changed = Object.keys(fresh).length !== Object.keys(cache).length || Object.entries(fresh).some(([k, v]) => cache[k] !== v)
  return {
    runtime,
    runc: o.runtime === 'runc' ? runtime.path : findExecutable('runc') ?? 'runc',
    shimPath: value(results[1] as PromiseSettledResult<string>),
    cgroup: value(results[4] as PromiseSettledResult<'v1' | 'v2'>),
    overlay,
    missingRoots,
    warnings,
    remember: async () => { if (changed) await writeFileAtomic(cacheFile, JSON.stringify(fresh) + '\n', { mode: 0o600 }) }
  }
}
