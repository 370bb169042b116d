// The daemon's own V8 code cache: run as the `berth` program (dist/lib/cli/berth.cjs, tools/bundle-loader.cjs), a
// daemon whose start found no cache of its own it could use has V8 make one when its listeners are up: every function
// that start compiled before /_ping could answer (the command's flags and configuration, the claim and its checks, the
// engine's modules, the listeners), which the next start of a daemon on this exec root hands to V8 instead of
// compiling them again (tools/bench/README.md, "Restart, round four"). Not later: the boot and the recovery run after
// /_ping answers, and a cache is deserialised whole before anything runs (one taken a second after the start, with
// the recovery's functions, cost a restarted daemon 0.8-1.9 MiB of RSS for 2-6 ms at /_ping). The program owns the
// file (where it is, its checks, its writing); this module only says when.
import type { DaemonLog } from './output.js'

/** What the program hands the bundle (tools/bundle-loader.cjs `program`). */
export interface BerthProgram {
  /** Which cache this start's compile used: 'daemon', 'build' or 'none'. */
  readonly codeCache: string
  /** Writes the daemon's cache into `execRoot` when that is where the next start reads it; says what it did. */
  saveCodeCache: (execRoot: string) => string
}

declare global {
  interface ImportMeta {
    /** Set in tools/bundle.mjs's bundle (the program's hooks); undefined when lib/ runs as modules. */
    berthProgram?: BerthProgram
  }
}

/** The program's hooks when the daemon runs as the bundled program. */
export function berthProgram (): BerthProgram | undefined {
  return import.meta.berthProgram
}

/**
 * What the engine calls once its listeners are up (EngineOptions.onListening): the daemon's cache made then, of
 * everything this start compiled before /_ping could answer (what the next start needs before it answers; the boot
 * and the recovery come after), unless this start used one. Once per process, synchronous (~5 ms, on a start that
 * writes). Undefined when the daemon does not run as the program.
 */
export function codeCacheAtListen (program: BerthProgram | undefined, execRoot: string, log: DaemonLog): (() => void) | undefined {
  if (program === undefined || program.codeCache === 'daemon') return undefined
  let done = false
  return () => {
    if (done) return
    done = true
    try {
      // V8 stamps the data with its flags as they are now: as when the program compiled the bundle (the daemon
      // command changes none before this call: optimise-when-busy.ts starts after it)
      log.debug(`code cache ${program.saveCodeCache(execRoot)}`)
    } catch (err) {
      log.warn(`code cache not written: ${(err as Error).message}`)
    }
  }
}
