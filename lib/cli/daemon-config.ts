// The daemon's settings from its flags and its configuration file (dockerd's daemon.json rules: the keys are the
// flags' names or dockerd's plural for list flags; a key unknown to Berth is refused by name; a setting given both
// in the file and on the command line is an error), decoded and checked into one typed record. Pure but for the
// file read.
import { readFileSync } from 'node:fs'
import { DEFAULT_DATA_ROOT, DEFAULT_SOCKET } from '../engine/defaults.js'
import { DAEMON_FLAGS, DEFAULT_CONFIG_FILE } from './daemon-flags.js'
import { configKey, parseFlags, UsageError, type FlagSpec, type FlagValue } from './flags.js'
import { LOG_FORMATS, LOG_LEVELS, type DaemonLogLevel, type LogFormat } from './output.js'

/** A configuration that cannot be used (exit status 1). */
export class ConfigError extends Error {
  override readonly name = 'ConfigError'
}

export interface DaemonSettings {
  hosts: string[]
  /** Socket group: a name or gid; '' for none; undefined: `docker` when that group exists. */
  group: string | undefined
  dataRoot: string
  execRoot: string | undefined
  pidfile: string | undefined
  /**
   * The default runtime: the name containers and `info` show, its binary (a name looked up in PATH, or a path) and
   * the options it gets before each command.
   */
  runtime: { name: string, path: string, args: string[] }
  /** The configured runtimes (daemon.json's "runtimes", --add-runtime): containers name them (docker run --runtime). */
  runtimes: Record<string, { path: string, runtimeArgs: string[] }>
  registryMirrors: string[]
  insecureRegistries: string[]
  logLevel: DaemonLogLevel
  logFormat: LogFormat
  logDriver: string | undefined
  logOpts: Record<string, string>
  defaultUlimits: Array<{ name: string, soft: number, hard: number }>
  bip: string | undefined
  defaultAddressPools: Array<{ base: string, size: number }>
  bridgeName: string | undefined
  networkPrefix: string | undefined
  iptables: boolean | undefined
  icc: boolean | undefined
  userlandProxy: boolean | undefined
  initPath: string | undefined
  tls: { verify: boolean, enabled: boolean, cacert: string | undefined, cert: string | undefined, key: string | undefined }
  allowInsecureTcp: boolean
}

export interface DaemonInvocation {
  help: boolean
  validate: boolean
  purgeNetwork: boolean
  configFile: string
  /** Keys (config names) given on the command line: a reload keeps them. */
  flagKeys: Set<string>
  /** The raw flag values (for reloads, which merge the file with them again). */
  flags: Map<string, FlagValue>
  settings: DaemonSettings
}

const BY_KEY = new Map(DAEMON_FLAGS.filter((f) => f.flagOnly !== true).map((f) => [configKey(f), f]))

/**
 * The file's runtimeArgs, beside its "runtimes" in flag form (`name=path`, as --add-runtime gives them): `name=` and
 * the arguments as a JSON list. An internal key: no flag has it, so it never conflicts.
 */
const RUNTIME_ARGS_KEY = 'runtimes/runtimeArgs'
/** dockerd's stock runtime (reserved) and containerd's name for it. */
const STOCK_RUNTIMES = ['runc', 'io.containerd.runc.v2']
/** What berth-shim passes on (its --runtime-arg limit). */
const MAX_RUNTIME_ARGS = 8

function typeError (key: string, want: string): ConfigError {
  return new ConfigError(`invalid value for "${key}": ${want} expected`)
}

function isObject (v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v)
}

/** A file value in the flag's form (lists of `k=v` strings for the structured keys). */
function fromFile (key: string, f: FlagSpec, v: unknown): FlagValue {
  switch (key) {
    case 'default-address-pools':
      if (!Array.isArray(v) || !v.every((p) => isObject(p) && typeof p.base === 'string' && typeof p.size === 'number')) throw typeError(key, 'a list of {"base": "CIDR", "size": N}')
      return (v as Array<{ base: string, size: number }>).map((p) => `base=${p.base},size=${p.size}`)
    case 'runtimes':
      if (!isObject(v)) throw typeError(key, 'an object of {"name": {"path": "…", "runtimeArgs": […]}}')
      return Object.entries(v).map(([name, r]) => {
        if (!isObject(r)) throw typeError(`runtimes.${name}`, 'an object with a "path"')
        if ('runtimeType' in r) throw new ConfigError(`runtime ${name}: runtimeType (a containerd shim) is not supported by Berth: give the runtime's "path"`)
        const extra = Object.keys(r).filter((k) => k !== 'path' && k !== 'runtimeArgs')
        if (extra.length > 0) throw new ConfigError(`runtime ${name}: ${extra.join(', ')} not supported by Berth (only "path" and "runtimeArgs")`)
        if (typeof r.path !== 'string' || r.path === '') throw new ConfigError(`runtime ${name}: either a runtimeType or a path must be configured`)
        if (r.runtimeArgs !== undefined && (!Array.isArray(r.runtimeArgs) || !r.runtimeArgs.every((a) => typeof a === 'string' && a !== ''))) throw typeError(`runtimes.${name}.runtimeArgs`, 'a list of non-empty strings')
        return `${name}=${r.path}`
      })
    case 'log-opts':
      if (!isObject(v) || !Object.values(v).every((x) => typeof x === 'string')) throw typeError(key, 'an object of strings')
      return Object.entries(v).map(([k, x]) => `${k}=${x as string}`)
    case 'default-ulimits':
      if (!isObject(v)) throw typeError(key, 'an object of {"Name": …, "Soft": N, "Hard": N}')
      return Object.entries(v).map(([name, u]) => {
        if (!isObject(u) || typeof u.Soft !== 'number' || typeof u.Hard !== 'number') throw typeError(`default-ulimits.${name}`, '{"Name": …, "Soft": N, "Hard": N}')
        return `${typeof u.Name === 'string' && u.Name !== '' ? u.Name : name}=${u.Soft}:${u.Hard}`
      })
  }
  if (f.kind === 'bool') { if (typeof v !== 'boolean') throw typeError(key, 'true or false'); return v }
  if (f.kind === 'list') { if (!Array.isArray(v) || !v.every((x) => typeof x === 'string')) throw typeError(key, 'a list of strings'); return v as string[] }
  if (typeof v !== 'string') throw typeError(key, 'a string')
  return v
}

/** The file's settings in flag form, keyed by config key; refuses unknown keys by name. */
export function decodeConfigFile (text: string): Map<string, FlagValue> {
  // an empty file is no settings, as dockerd reads one (--config-file /dev/null: none at all)
  if (text.trim() === '') return new Map()
  let doc: unknown
  try {
    doc = JSON.parse(text)
  } catch (err) {
    throw new ConfigError((err as Error).message)
  }
  if (!isObject(doc)) throw new ConfigError('the configuration must be a JSON object')
  const unknown = Object.keys(doc).filter((k) => !BY_KEY.has(k))
  if (unknown.length > 0) throw new ConfigError(`the following directives don't match any configuration option: ${unknown.join(', ')}`)
  const out = new Map<string, FlagValue>()
  for (const [k, v] of Object.entries(doc)) out.set(k, fromFile(k, BY_KEY.get(k) as FlagSpec, v))
  // (checked by fromFile above)
  const runtimes = (doc.runtimes ?? {}) as Record<string, { runtimeArgs?: string[] }>
  const args = Object.entries(runtimes).filter(([, r]) => (r.runtimeArgs ?? []).length > 0).map(([name, r]) => `${name}=${JSON.stringify(r.runtimeArgs)}`)
  if (args.length > 0) out.set(RUNTIME_ARGS_KEY, args)
  return out
}

function show (v: FlagValue): string { return Array.isArray(v) ? `[${v.join(' ')}]` : String(v) }

/** dockerd's rule: a setting in both places is an error naming each value. */
function checkConflicts (flags: Map<string, FlagValue>, file: Map<string, FlagValue>): void {
  const both: string[] = []
  for (const [name, v] of flags) {
    const f = DAEMON_FLAGS.find((x) => x.name === name) as FlagSpec
    if (f.flagOnly === true) continue
    const key = configKey(f)
    const fv = file.get(key)
    if (fv !== undefined) both.push(`${key}: (from flag: ${show(v)}, from file: ${show(fv)})`)
  }
  if (both.length > 0) throw new ConfigError(`the following directives are specified both as a flag and in the configuration file: ${both.sort().join(', ')}`)
}

function str (m: Map<string, FlagValue>, key: string): string | undefined {
  const v = m.get(key)
  return typeof v === 'string' ? v : undefined
}
function bool (m: Map<string, FlagValue>, key: string): boolean | undefined {
  const v = m.get(key)
  return typeof v === 'boolean' ? v : undefined
}
function list (m: Map<string, FlagValue>, key: string): string[] {
  const v = m.get(key)
  return Array.isArray(v) ? v : []
}

function keyValue (s: string, what: string): [string, string] {
  const i = s.indexOf('=')
  if (i <= 0) throw new ConfigError(`invalid ${what} ${JSON.stringify(s)}: name=value expected`)
  return [s.slice(0, i), s.slice(i + 1)]
}

/** dockerd's registry mirror check: an http(s) URL of a host, with no path, query or credentials. */
export function validateMirror (s: string): string {
  let u: URL
  try { u = new URL(s) } catch { throw new ConfigError(`invalid mirror: "${s}" is not a valid URI`) }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new ConfigError(`invalid mirror: unsupported scheme "${u.protocol.slice(0, -1)}" in "${s}"`)
  if (u.username !== '' || u.password !== '') throw new ConfigError(`invalid mirror: username/password not allowed in URI "${s}"`)
  if ((u.pathname !== '/' && u.pathname !== '') || u.search !== '' || u.hash !== '') throw new ConfigError(`invalid mirror: path, query, or fragment at end of the URI "${s}"`)
  return `${u.protocol}//${u.host}`
}

const ULIMIT_RE = /^(-?\d+)(?::(-?\d+))?$/

/** Decodes the merged settings; every value checked here, before the daemon touches anything. */
export function decodeSettings (m: Map<string, FlagValue>, ulimitNames: ReadonlySet<string>, parsePool: (base: string) => { bits: number } | null): DaemonSettings {
  const debug = bool(m, 'debug') === true
  // as dockerd: debug wins over log-level
  const level = (debug ? 'debug' : str(m, 'log-level') ?? 'info') as DaemonLogLevel
  if (!LOG_LEVELS.includes(level)) throw new ConfigError(`invalid log level: ${level} (debug, info, warn, error or fatal)`)
  const format = (str(m, 'log-format') ?? 'text') as LogFormat
  if (!LOG_FORMATS.includes(format)) throw new ConfigError(`invalid log format: ${format} (text or json)`)
  const runtimes = decodeRuntimes(m)
  const runtime = defaultRuntime(m, runtimes)
  const pools = list(m, 'default-address-pools').map((p) => {
    const kv = Object.fromEntries(p.split(',').map((x) => x.split('=')))
    const base = typeof kv.base === 'string' ? parsePool(kv.base) : null
    const size = /^\d+$/.test(kv.size ?? '') ? Number(kv.size) : -1
    if (base === null || size < base.bits || size > 30) throw new ConfigError(`invalid default address pool: ${p} (base=CIDR,size=N with N between the base's prefix length and 30)`)
    return { base: kv.base as string, size }
  })
  const ulimits = list(m, 'default-ulimits').map((s) => {
    const [name, v] = keyValue(s, 'default ulimit')
    const u = ULIMIT_RE.exec(v)
    if (!ulimitNames.has(name)) throw new ConfigError(`invalid default ulimit ${JSON.stringify(s)}: invalid ulimit type: ${name}`)
    if (u === null) throw new ConfigError(`invalid default ulimit ${JSON.stringify(s)}: soft[:hard] numbers expected`)
    const soft = Number(u[1])
    const hard = u[2] === undefined ? soft : Number(u[2])
    if (soft > hard && hard !== -1) throw new ConfigError(`invalid default ulimit ${JSON.stringify(s)}: soft limit must be less than or equal to hard limit`)
    return { name, soft, hard }
  })
  const mirrors = list(m, 'registry-mirrors').map(validateMirror)
  const tlsverify = bool(m, 'tlsverify') === true
  return {
    hosts: list(m, 'hosts').length > 0 ? list(m, 'hosts') : [`unix://${DEFAULT_SOCKET}`],
    group: str(m, 'group'),
    dataRoot: str(m, 'data-root') ?? DEFAULT_DATA_ROOT,
    execRoot: str(m, 'exec-root'),
    pidfile: str(m, 'pidfile'),
    runtime,
    runtimes,
    registryMirrors: mirrors,
    insecureRegistries: list(m, 'insecure-registries'),
    logLevel: level,
    logFormat: format,
    logDriver: str(m, 'log-driver'),
    logOpts: Object.fromEntries(list(m, 'log-opts').map((s) => keyValue(s, 'log option'))),
    defaultUlimits: ulimits,
    bip: str(m, 'bip'),
    defaultAddressPools: pools,
    bridgeName: str(m, 'bridge-name'),
    networkPrefix: str(m, 'network-prefix'),
    iptables: bool(m, 'iptables'),
    icc: bool(m, 'icc'),
    userlandProxy: bool(m, 'userland-proxy'),
    initPath: str(m, 'init-path'),
    tls: { verify: tlsverify, enabled: tlsverify || bool(m, 'tls') === true, cacert: str(m, 'tlscacert'), cert: str(m, 'tlscert'), key: str(m, 'tlskey') },
    allowInsecureTcp: bool(m, 'allow-insecure-tcp') === true
  }
}

/** The configured runtimes, checked as dockerd's --add-runtime and setupRuntimes check them. */
function decodeRuntimes (m: Map<string, FlagValue>): DaemonSettings['runtimes'] {
  const out: DaemonSettings['runtimes'] = {}
  for (const s of list(m, 'runtimes')) {
    const i = s.indexOf('=')
    // as dockerd's RuntimeOpt: names are trimmed and lower-cased
    const name = s.slice(0, Math.max(i, 0)).trim().toLowerCase()
    const path = s.slice(i + 1).trim()
    if (i <= 0 || name === '' || path === '') throw new ConfigError(`invalid runtime argument: ${s}`)
    if (name === 'runc') throw new ConfigError("runtime name 'runc' is reserved")
    if (name.includes('/')) throw new ConfigError(`invalid runtime name ${JSON.stringify(name)}: a name, not a path`)
    if (out[name] !== undefined) throw new ConfigError(`runtime '${name}' was already defined`)
    out[name] = { path, runtimeArgs: [] }
  }
  for (const s of list(m, RUNTIME_ARGS_KEY)) {
    const i = s.indexOf('=')
    const r = out[s.slice(0, i).toLowerCase()]
    if (r !== undefined) r.runtimeArgs = JSON.parse(s.slice(i + 1)) as string[]
  }
  for (const [name, r] of Object.entries(out)) {
    if (r.runtimeArgs.length > MAX_RUNTIME_ARGS) throw new ConfigError(`runtime ${name}: at most ${MAX_RUNTIME_ARGS} runtimeArgs (${r.runtimeArgs.length} given)`)
  }
  return out
}

/**
 * The default runtime. dockerd's `default-runtime` names a configured or stock runtime; Berth's own `--runtime` may
 * also give a binary (a name in PATH or a path: its file name is then the runtime's name).
 */
function defaultRuntime (m: Map<string, FlagValue>, runtimes: DaemonSettings['runtimes']): DaemonSettings['runtime'] {
  const flag = str(m, 'runtime')
  const named = str(m, 'default-runtime')
  if (flag !== undefined && named !== undefined) throw new ConfigError('--runtime and --default-runtime name the same setting: give one')
  const given = flag ?? named ?? 'runc'
  const configured = runtimes[given]
  if (configured !== undefined) return { name: given, path: configured.path, args: configured.runtimeArgs }
  if (STOCK_RUNTIMES.includes(given)) return { name: given, path: 'runc', args: [] }
  if (flag === undefined) throw new ConfigError(`specified default runtime '${given}' does not exist`)
  const name = flag.slice(flag.lastIndexOf('/') + 1)
  const clash = runtimes[name]
  if (clash !== undefined) throw new ConfigError(`--runtime ${flag}: its name ${name} is a configured runtime (path ${clash.path}): give the name, or another binary`)
  return { name, path: flag, args: [] }
}

/** Flag values keyed by config key. */
function flagsByKey (flags: Map<string, FlagValue>): Map<string, FlagValue> {
  const out = new Map<string, FlagValue>()
  for (const [name, v] of flags) {
    const f = DAEMON_FLAGS.find((x) => x.name === name) as FlagSpec
    if (f.flagOnly !== true) out.set(configKey(f), v)
  }
  return out
}

async function readConfigFile (path: string, explicit: boolean): Promise<Map<string, FlagValue>> {
  let text: string
  try {
    // synchronous: a small file, read before anything is served (a promise's trips through the thread pool cost a
    // restart's way to /_ping more than the read)
    text = readFileSync(path, 'utf8')
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT' && !explicit) return new Map()
    throw new ConfigError(`unable to configure the daemon with file ${path}: ${(err as Error).message}`)
  }
  try {
    return decodeConfigFile(text)
  } catch (err) {
    throw new ConfigError(`unable to configure the daemon with file ${path}: ${(err as Error).message}`)
  }
}

export interface DecodeHelpers {
  ulimitNames: ReadonlySet<string>
  parsePool: (base: string) => { bits: number } | null
}

/** Parses the command line and the configuration file into settings (UsageError: exit 2; ConfigError: exit 1). */
export async function loadDaemonConfig (argv: readonly string[], h: DecodeHelpers): Promise<DaemonInvocation> {
  const { values, positionals } = parseFlags(DAEMON_FLAGS, argv)
  if (positionals.length > 0) throw new UsageError(`"berth daemon" accepts no arguments (got ${positionals.join(' ')})`)
  const help = values.get('help') === true
  const configFile = str(values, 'config-file') ?? DEFAULT_CONFIG_FILE
  const flagKeys = new Set(flagsByKey(values).keys())
  if (help) return { help, validate: false, purgeNetwork: false, configFile, flagKeys, flags: values, settings: decodeSettings(new Map(), h.ulimitNames, h.parsePool) }
  const settings = await mergedSettings(values, configFile, values.has('config-file'), h)
  return { help, validate: values.get('validate') === true, purgeNetwork: values.get('purge-network') === true, configFile, flagKeys, flags: values, settings }
}

/** The flags and the file merged and decoded (at start, and again at each reload). */
export async function mergedSettings (flags: Map<string, FlagValue>, configFile: string, explicit: boolean, h: DecodeHelpers): Promise<DaemonSettings> {
  const file = await readConfigFile(configFile, explicit)
  checkConflicts(flags, file)
  const merged = new Map([...file, ...flagsByKey(flags)])
  try {
    return decodeSettings(merged, h.ulimitNames, h.parsePool)
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err
    if (file.size > 0) throw new ConfigError(`${err.message} (flags and ${configFile})`)
    // every value came from the command line: a bad one is a usage error (exit 2), as an unknown flag is
    throw new UsageError(err.message)
  }
}

/** What a SIGHUP applies (dockerd's reloadable subset that Berth has), and what waits for the next start. */
export const RELOADABLE = ['log-level', 'registry-mirrors', 'insecure-registries', 'runtimes', 'default-runtime'] as const

export interface ReloadPlan {
  /** Reloadable settings that changed: name → [before, after] as text. */
  changed: Array<{ key: typeof RELOADABLE[number], before: string, after: string }>
  /** Other settings that differ from the running ones (they apply at the next start). */
  pending: string[]
}

function text (v: unknown): string { return Array.isArray(v) ? `[${v.join(', ')}]` : typeof v === 'string' ? v : JSON.stringify(v) ?? 'unset' }

/** Compares the running settings with newly loaded ones. Pure. */
export function planReload (running: DaemonSettings, next: DaemonSettings): ReloadPlan {
  const changed: ReloadPlan['changed'] = []
  const pick = (s: DaemonSettings, k: typeof RELOADABLE[number]): unknown => {
    switch (k) {
      case 'log-level': return s.logLevel
      case 'registry-mirrors': return s.registryMirrors
      case 'insecure-registries': return s.insecureRegistries
      case 'runtimes': return Object.entries(s.runtimes).map(([n, r]) => `${n}:${[r.path, ...r.runtimeArgs].join(' ')}`)
      case 'default-runtime': return s.runtime.name
    }
  }
  for (const k of RELOADABLE) {
    const a = text(pick(running, k))
    const b = text(pick(next, k))
    if (a !== b) changed.push({ key: k, before: a, after: b })
  }
  const skip = new Set(['logLevel', 'registryMirrors', 'insecureRegistries', 'runtimes', 'runtime'])
  const pending = Object.keys(next).filter((k) => !skip.has(k) && text((running as unknown as Record<string, unknown>)[k]) !== text((next as unknown as Record<string, unknown>)[k]))
    .map((k) => k.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`))
  return { changed, pending }
}
