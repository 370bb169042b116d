// HostConfig.LogConfig: the drivers Berth has (json-file, local: the monitor's log file with optional rotation;
// none: no log kept) and their options, checked with dockerd's wording (pure).
import { invalidArgument } from '../errors.js'
import { ATTRIBUTE_OPTIONS, checkLogAttributeOptions } from './log-attrs.js'

export interface LogSettings {
  driver: 'json-file' | 'local' | 'none'
  /** bytes; 0: no rotation */
  maxSize: number
  /** files kept, the live one included (≥ 1) */
  maxFiles: number
  warnings: string[]
}

const OPTIONS: Record<LogSettings['driver'], readonly string[]> = {
  'json-file': ['max-size', 'max-file', ...ATTRIBUTE_OPTIONS, 'compress'],
  local: ['max-size', 'max-file', ...ATTRIBUTE_OPTIONS, 'compress'],
  none: []
}
/** Options every driver takes (the daemon's log buffering). */
const COMMON = ['mode', 'max-buffer-size']

/** Go's units.RAMInBytes: a number with an optional k/m/g/t/p (binary) suffix and an optional b. */
export function parseRamSize (s: string): number | null {
  const m = /^(\d+(?:\.\d+)?)\s*([kmgtp]?)(i?b)?$/i.exec(s.trim())
  if (m === null) return null
  const mult = { '': 1, k: 1024, m: 1024 ** 2, g: 1024 ** 3, t: 1024 ** 4, p: 1024 ** 5 }[(m[2] ?? '').toLowerCase()] ?? 1
  return Math.floor(Number(m[1]) * mult)
}

/** Checks a LogConfig; the monitor's rotation settings and the create reply's Warnings. */
export function decodeLogConfig (lc: { Type?: string, Config?: Record<string, string> } | undefined): LogSettings {
  const type = lc?.Type === undefined || lc.Type === '' ? 'json-file' : lc.Type
  if (type !== 'json-file' && type !== 'local' && type !== 'none') throw invalidArgument(`logger: no log driver named '${type}' is registered`)
  const cfg = lc?.Config ?? {}
  const warnings: string[] = []
  for (const k of Object.keys(cfg)) {
    if (!OPTIONS[type].includes(k) && !COMMON.includes(k)) throw invalidArgument(`unknown log opt '${k}' for ${type} log driver`)
  }
  if (cfg.mode !== undefined && cfg.mode !== '' && cfg.mode !== 'blocking' && cfg.mode !== 'non-blocking') throw invalidArgument(`logger: logging mode not supported: ${cfg.mode}`)
  if (type === 'none') return { driver: 'none', maxSize: 0, maxFiles: 1, warnings }
  // the messages' attributes (docker logs --details), checked now rather than at each read
  checkLogAttributeOptions(cfg)
  let maxSize = type === 'local' ? 20 * 1024 * 1024 : 0
  let maxFiles = type === 'local' ? 5 : 1
  if (cfg['max-size'] !== undefined && cfg['max-size'] !== '' && cfg['max-size'] !== '-1') {
    const n = parseRamSize(cfg['max-size'])
    if (n === null) throw invalidArgument(`invalid size: '${cfg['max-size']}'`)
    maxSize = n
  }
  if (cfg['max-file'] !== undefined && cfg['max-file'] !== '') {
    if (!/^-?\d+$/.test(cfg['max-file'])) throw invalidArgument(`strconv.Atoi: parsing "${cfg['max-file']}": invalid syntax`)
    maxFiles = Number(cfg['max-file'])
    if (maxFiles < 1) throw invalidArgument('max-file cannot be less than 1')
  }
  // json-file: max-file without max-size is accepted, as dockerd accepts it; the log then never rotates
  const unapplied = Object.keys(cfg).filter((k) => ['compress', 'max-buffer-size'].includes(k) || (k === 'mode' && cfg.mode === 'non-blocking'))
  if (unapplied.length > 0) warnings.push(`log options not applied by Berth's ${type} driver: ${unapplied.sort().join(', ')}`)
  return { driver: type, maxSize, maxFiles: Math.min(maxFiles, 100), warnings }
}

/** What the monitor is given: none keeps only a small scratch file that attached clients read (truncated at 1 MiB). */
export function monitorRotation (s: Pick<LogSettings, 'driver' | 'maxSize' | 'maxFiles'>): { maxSize: number, maxFiles: number } {
  return s.driver === 'none' ? { maxSize: 1024 * 1024, maxFiles: 1 } : { maxSize: s.maxSize, maxFiles: s.maxFiles }
}

/**
 * dockerd's merge of a create's LogConfig with the daemon's: no Type takes the daemon's driver; the daemon's options
 * fill in those a container of the daemon's driver does not set.
 */
export function withDaemonLogConfig (lc: unknown, daemon: { type: string, config: Record<string, string> }): { Type: string, Config: Record<string, string> } {
  const given = (lc !== null && typeof lc === 'object' ? lc : {}) as { Type?: unknown, Config?: unknown }
  const type = typeof given.Type === 'string' && given.Type !== '' ? given.Type : daemon.type
  const own = given.Config !== null && typeof given.Config === 'object' ? given.Config as Record<string, string> : {}
  return { Type: type, Config: type === daemon.type ? { ...daemon.config, ...own } : { ...own } }
}
