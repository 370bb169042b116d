// The daemon's log as an operator reads it: one record per line on stderr, in dockerd's (logrus's) text format
// (`time="…" level=info msg="…"`) or as one JSON object per line (--log-format json), filtered by --log-level. The
// library's records reach it through debug's namespaces (lib/log.ts: routeLogs), the command's own directly.
import { enableLogs, levelNamespaces, namespaceLevel, routeLogs, type LogLevel } from '../log.js'
import { isoTime } from '../util/time.js'

export type LogFormat = 'text' | 'json'
export type DaemonLogLevel = LogLevel | 'fatal'

export const LOG_LEVELS: readonly DaemonLogLevel[] = ['debug', 'info', 'warn', 'error', 'fatal']
export const LOG_FORMATS: readonly LogFormat[] = ['text', 'json']

const RANK: Record<DaemonLogLevel, number> = { debug: 0, info: 1, warn: 2, error: 3, fatal: 4 }
/** logrus's names. */
const SHOWN: Record<DaemonLogLevel, string> = { debug: 'debug', info: 'info', warn: 'warning', error: 'error', fatal: 'fatal' }
// eslint-disable-next-line no-control-regex
const ANSI = /\x1b\[[0-9;]*m/g

/** One record as a line (without the newline). Pure. */
export function formatRecord (format: LogFormat, level: DaemonLogLevel, module: string, msg: string, time: Date): string {
  const t = isoTime(time.getTime())
  if (format === 'json') {
    // keys in logrus's JSON order (sorted)
    return JSON.stringify({ level: SHOWN[level], ...(module !== '' ? { module } : {}), msg, time: t })
  }
  return `time="${t}" level=${SHOWN[level]} msg=${JSON.stringify(msg)}${module !== '' ? ` module=${module}` : ''}`
}

export class DaemonLog {
  private levelNow: DaemonLogLevel
  private readonly format: LogFormat
  private readonly write: (line: string) => void
  /** DEBUG as the user set it: namespaces of their own choice, added to the level's. */
  private readonly userDebug = process.env.DEBUG

  constructor (o: { level: DaemonLogLevel, format: LogFormat, write?: (line: string) => void }) {
    this.levelNow = o.level
    this.format = o.format
    this.write = o.write ?? ((line) => { process.stderr.write(line) })
    routeLogs((namespace, message) => {
      // debug's namespaces chose already (a DEBUG=… namespace may add debug records at --log-level info)
      const { level, module } = namespaceLevel(namespace)
      this.write(formatRecord(this.format, level, module, message.replace(ANSI, ''), new Date()) + '\n')
    })
    this.apply()
  }

  get level (): DaemonLogLevel { return this.levelNow }

  /** A new minimum level (SIGHUP's reload). */
  setLevel (level: DaemonLogLevel): void {
    this.levelNow = level
    this.apply()
  }

  private apply (): void {
    // DEBUG=… still adds namespaces of its own (a module's debug detail at --log-level info)
    const extra = this.userDebug ?? ''
    enableLogs(this.levelNow === 'debug' && extra !== '' ? extra : [levelNamespaces(this.levelNow), extra].filter((s) => s !== '').join(','))
    // debug's enable() writes DEBUG into the environment, which the daemon's children would inherit
    if (this.userDebug === undefined) delete process.env.DEBUG
    else process.env.DEBUG = this.userDebug
  }

  enabled (level: DaemonLogLevel): boolean { return RANK[level] >= RANK[this.levelNow] }

  record (level: DaemonLogLevel, module: string, msg: string): void {
    if (!this.enabled(level)) return
    this.write(formatRecord(this.format, level, module, msg, new Date()) + '\n')
  }

  debug (msg: string): void { this.record('debug', '', msg) }
  info (msg: string): void { this.record('info', '', msg) }
  warn (msg: string): void { this.record('warn', '', msg) }
  error (msg: string): void { this.record('error', '', msg) }
  /** A failure that ends the command: always written. */
  fatal (msg: string): void { this.write(formatRecord(this.format, 'fatal', '', msg, new Date()) + '\n') }
}
