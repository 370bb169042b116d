// What an engine's start does before it reads any state: the options checked (no plain TCP off loopback), the host
// checked (start-checks.ts), the roots made, and the data root's and exec root's locks asked for. A module of its own,
// apart from the engine's: the daemon command makes the claim before it initialises the engine's modules (a start
// that fails its checks never does); an embedder's createEngine() makes the same claim itself.
import { mkdirSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { formatAddress, type ListenTarget } from '../http/listen.js'
import { isLoopbackAddress } from '../http/tcp-guard.js'
import { invalidArgument } from '../errors.js'
import { lockDirectories, type DirLock } from '../util/dir-lock.js'
import { PRIVATE_DIR } from '../util/private-modes.js'
import { runStartChecks, type StartFacts } from './start-checks.js'
import { listenTargets } from './listeners.js'
import { DEFAULT_DATA_ROOT, DEFAULT_SOCKET } from './defaults.js'
import type { EngineOptions } from './engine-options.js'

export interface StartClaim {
  dataRoot: string
  execRoot: string
  addrs: ListenTarget[]
  facts: StartFacts
  /** The roots (and their missing parents) this start made: a failed start removes them. */
  created: string[]
  /**
   * The roots' locks, or the refusal (a second daemon on the same roots): awaited before any state is read. On a
   * refusal the locks already taken are given back.
   */
  locks: Promise<DirLock[]>
}

function packageRoot (): string {
  return fileURLToPath(new URL('../../../', import.meta.url))
}

/** The monitor binaries to try: the one built at install, else the prebuilt one the package ships for this machine. */
function shimCandidates (explicit: string | undefined): string[] {
  if (explicit !== undefined) return [explicit]
  return [join(packageRoot(), 'dist', 'berth-shim'), join(packageRoot(), 'dist', 'prebuilt', `berth-shim-linux-${process.arch}`)]
}

/**
 * Checks the options and the host, makes the roots and asks for their locks; resolves once the locks are asked for
 * (their answer is `locks`). Throws, having created nothing, when a check fails.
 */
export async function claimStart (opts: EngineOptions): Promise<StartClaim> {
  const dataRoot = resolve(opts.dataRoot ?? DEFAULT_DATA_ROOT)
  const execRoot = resolve(opts.execRoot ?? join(dataRoot, 'run'))
  // the options are checked, and then the host, before anything is touched
  const addrs = listenTargets(opts.hosts ?? [`unix://${DEFAULT_SOCKET}`], opts.listenFds ?? [])
  for (const a of addrs) {
    if (a.kind === 'tcp' && opts.tls === undefined && !isLoopbackAddress(a.host) && opts.allowInsecureTcp !== true) {
      throw invalidArgument(`refusing to listen on ${formatAddress(a)} without TLS: anyone who can reach it has root on this host. Use --tlsverify with --tlscacert, --tlscert and --tlskey, listen on a loopback address, or accept the risk with --allow-insecure-tcp`)
    }
  }
  const facts = await runStartChecks({
    dataRoot,
    execRoot,
    sockets: addrs.flatMap((a) => a.kind === 'unix' ? [a.path] : []),
    runtime: opts.runtime ?? 'runc',
    shimCandidates: shimCandidates(opts.shimPath)
  })
  const created: string[] = []
  for (const root of [dataRoot, execRoot]) {
    const first = mkdirSync(root, { recursive: true, mode: PRIVATE_DIR })
    if (first !== undefined) created.push(first)
  }
  // before anything reads or repairs state: a second daemon on the same roots stops here, having touched nothing
  // (in this process through the package's flock module, else both by one child, the monitor binary the checks
  // found; on a refusal none stays taken)
  const locks = lockDirectories([
    { dir: dataRoot, what: 'data root' },
    ...(execRoot !== dataRoot ? [{ dir: execRoot, what: 'exec root' }] : [])
  ], { helper: facts.shimPath })
  // awaited later (after the engine's code is loaded): a refusal meanwhile is not an unhandled rejection
  locks.catch(() => {})
  return { dataRoot, execRoot, addrs, facts, created, locks }
}
