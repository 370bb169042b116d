// Each runtime's OCI features document (`<binary> <runtimeArgs…> features`, runtime-spec's features.md), which dockerd
// 25 and later report in /info as Runtimes[name].status["org.opencontainers.runtime-spec.features"] (compact JSON
// text; API 1.44 on). Tools read it there (cri-dockerd, for instance, looks for the "rro" mount option). Asked at the
// first /info that lists the runtime, never on a start or run path, once per binary and options; a reload that
// changes a runtime's binary or options asks again. A runtime without a `features` command, one that fails, times
// out or prints anything but a JSON object gets no status (as in dockerd, which logs a warning); a failure is asked
// again after FAILURE_RETRY_MS, not at every /info.
import { execFile } from 'node:child_process'
import { logger } from '../log.js'
import type { RuntimeBinary } from './runtimes.js'

const log = logger('engine:runtime')

/** How long a runtime may take to print its features. */
const TIMEOUT_MS = 10_000
/** The most of its output read (runc's document is ~3 KiB). */
const MAX_OUTPUT = 256 * 1024
const FAILURE_RETRY_MS = 60_000

interface Entry { text: Promise<string | undefined>, failedAt?: number }

export class RuntimeFeatures {
  /** By binary and options; only the runtimes of the last listing are kept. */
  private readonly entries = new Map<string, Entry>()

  /** The features text of each runtime that has one, by runtime name. */
  async of (runtimes: readonly RuntimeBinary[], now = Date.now()): Promise<Map<string, string>> {
    const keys = runtimes.map((r) => JSON.stringify([r.path, ...r.args]))
    const wanted = new Set(keys)
    for (const k of this.entries.keys()) if (!wanted.has(k)) this.entries.delete(k)
    const texts = await Promise.all(runtimes.map(async (r, i) => await this.entry(keys[i] as string, r, now).text))
    const out = new Map<string, string>()
    runtimes.forEach((r, i) => { const t = texts[i]; if (t !== undefined) out.set(r.name, t) })
    return out
  }

  private entry (key: string, r: RuntimeBinary, now: number): Entry {
    const had = this.entries.get(key)
    if (had !== undefined && (had.failedAt === undefined || now - had.failedAt < FAILURE_RETRY_MS)) return had
    const e: Entry = { text: ask(r) }
    void e.text.then((t) => { if (t === undefined) e.failedAt = Date.now() })
    this.entries.set(key, e)
    return e
  }
}

function ask (r: RuntimeBinary): Promise<string | undefined> {
  return new Promise((resolve) => {
    execFile(r.path, [...r.args, 'features'], { timeout: TIMEOUT_MS, maxBuffer: MAX_OUTPUT, encoding: 'utf8' }, (err, stdout, stderr) => {
      if (err !== null) {
        log('runtime %s: %s features: %s %s', r.name, r.path, err.message, stderr.trim().slice(0, 200))
        resolve(undefined)
        return
      }
      try {
        const doc: unknown = JSON.parse(stdout)
        if (doc === null || typeof doc !== 'object' || Array.isArray(doc)) throw new Error('not a JSON object')
        resolve(JSON.stringify(doc))
      } catch (e) {
        log('runtime %s: %s features printed no JSON object: %s', r.name, r.path, (e as Error).message)
        resolve(undefined)
      }
    })
  })
}
