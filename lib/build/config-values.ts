// Values of the config-only instructions (pure): EXPOSE's port keys, HEALTHCHECK's config and its history text.
import { constants as osConstants } from 'node:os'
import { invalidArgument } from '../errors.js'
import type { DockerfileNode } from './dockerfile-parser.js'
import { flagValue } from './stages.js'
import { goQuoteList, parseGoDuration, goDuration } from './step-config.js'

/** Proxy variables dockerd never reports as unused build args. */
export const BUILTIN_ARGS = new Set(['HTTP_PROXY', 'http_proxy', 'HTTPS_PROXY', 'https_proxy', 'FTP_PROXY', 'ftp_proxy', 'NO_PROXY', 'no_proxy', 'ALL_PROXY', 'all_proxy'])

/** `80`, `80/udp`, `8000-8002` → ExposedPorts keys. */
export function exposedKeys (p: string, n: DockerfileNode): string[] {
  const proto = /\/([^/]*)$/.exec(p)?.[1]
  if (proto !== undefined && !/^(tcp|udp|sctp)$/i.test(proto)) throw invalidArgument(`Invalid proto: ${proto}`)
  const m = /^(?:[^:]*:)?(\d+)(?:-(\d+))?(?:\/(tcp|udp|sctp))?$/i.exec(p)
  if (m === null) throw invalidArgument(`dockerfile parse error on line ${n.startLine}: invalid containerPort: ${p}`)
  const start = Number(m[1])
  const end = m[2] !== undefined ? Number(m[2]) : start
  const key = (m[3] ?? 'tcp').toLowerCase()
  if (end < start || end > 65535) throw invalidArgument(`invalid port range: ${p}`)
  const out: string[] = []
  for (let x = start; x <= end; x++) out.push(`${x}/${key}`)
  return out
}

/** STOPSIGNAL's value as dockerd checks it (moby/sys/signal.ParseSignal): a non-zero number, or a name with or without SIG. */
export function checkStopSignal (sig: string): void {
  if (/^[+-]?\d+$/.test(sig)) {
    if (Number(sig) === 0) throw invalidArgument(`Invalid signal: ${sig}`)
    return
  }
  const name = sig.toUpperCase().replace(/^SIG/, '')
  const rt = /^RTM(IN|AX)(?:([+-])(\d+))?$/.exec(name)
  if (rt !== null) {
    const off = rt[3] === undefined ? 0 : Number(rt[3])
    if (rt[3] === undefined || (rt[1] === 'IN' && rt[2] === '+' && off >= 1 && off <= 15) || (rt[1] === 'AX' && rt[2] === '-' && off >= 1 && off <= 14)) return
  } else if (name === 'CLD' || (osConstants.signals as Record<string, number>)[`SIG${name}`] !== undefined) return
  throw invalidArgument(`Invalid signal: ${sig}`)
}

export interface HealthConfig { Test: string[], Interval?: number, Timeout?: number, StartPeriod?: number, StartInterval?: number, Retries?: number }

/** HEALTHCHECK's config from its arguments and flags. */
export function healthConfig (n: DockerfileNode): HealthConfig {
  if (n.args[0] === 'NONE') return { Test: ['NONE'] }
  const test = n.json ? ['CMD', ...n.args.slice(1)] : ['CMD-SHELL', n.args[1] as string]
  const hc: HealthConfig = { Test: test }
  const dur = (flag: string, key: 'Interval' | 'Timeout' | 'StartPeriod' | 'StartInterval'): void => {
    const v = flagValue(n, flag)
    if (v === undefined) return
    let ns: number
    try { ns = parseGoDuration(v) } catch (err) { throw invalidArgument((err as Error).message) }
    if (ns !== 0 && ns < 1e6) throw invalidArgument(`Interval "${flag}" cannot be less than 1ms`)
    hc[key] = ns
  }
  dur('interval', 'Interval'); dur('timeout', 'Timeout'); dur('start-period', 'StartPeriod'); dur('start-interval', 'StartInterval')
  const r = flagValue(n, 'retries')
  if (r !== undefined) {
    if (!/^\d+$/.test(r)) throw invalidArgument(`strconv.ParseInt: parsing "${r}": invalid syntax`)
    if (Number(r) < 0) throw invalidArgument('--retries cannot be negative')
    hc.Retries = Number(r)
  }
  return hc
}

/** Go's `%q` of *HealthConfig as dockerd's history shows it. */
export function healthComment (h: HealthConfig): string {
  if (h.Test[0] === 'NONE') return '&{["NONE"] "0s" "0s" "0s" "0s" \'\\x00\'}'
  const retries = h.Retries ?? 0
  const r = retries < 16 ? `'\\x0${retries.toString(16)}'` : retries < 256 ? `'\\x${retries.toString(16)}'` : `'${String.fromCharCode(retries)}'`
  return `&{${goQuoteList(h.Test)} "${goDuration(h.Interval ?? 0)}" "${goDuration(h.Timeout ?? 0)}" "${goDuration(h.StartPeriod ?? 0)}" "${goDuration(h.StartInterval ?? 0)}" ${r}}`
}
