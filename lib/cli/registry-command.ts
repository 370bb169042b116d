// `berth registry …`: run the registry, make users-file lines, collect garbage, print the deprecation table.
// The server's settings come from a JSON configuration file (keys: the flags' names), BERTH_REGISTRY_* environment
// variables that override it (as distribution's REGISTRY_* do), and flags (a flag and a file key for the same
// setting is an error, as for the daemon). Exit status: 0 done, 1 failed, 2 usage error.
import { readFile } from 'node:fs/promises'
import { setFlagsFromString } from 'node:v8'
import { errorMessage } from '../errors.js'
import { configKey, flagHelp, parseBool, parseFlags, type FlagSpec, type FlagValue } from './flags.js'
import { DaemonLog, LOG_FORMATS, LOG_LEVELS, type DaemonLogLevel, type LogFormat } from './output.js'

export const DEFAULT_REGISTRY_ROOT = '/var/lib/berth-registry'
export const DEFAULT_REGISTRY_CONFIG = '/etc/berth/registry.json'
const DEFAULT_LISTEN = '127.0.0.1:5000'

const SERVE_FLAGS: readonly FlagSpec[] = [
  { name: 'config', kind: 'string', flagOnly: true, help: 'JSON configuration file (keys: these flags\' names; BERTH_REGISTRY_<NAME> environment variables override it)', default: DEFAULT_REGISTRY_CONFIG },
  { name: 'listen', kind: 'list', help: 'Address(es) to listen on: host:port, :port, unix:///path', default: DEFAULT_LISTEN },
  { name: 'data-root', kind: 'string', help: 'Blobs and records', default: DEFAULT_REGISTRY_ROOT },
  { name: 'auth', kind: 'string', help: 'none | token', default: 'none' },
  { name: 'users', kind: 'string', help: 'Users file: one name:hash[:namespace,…] line per user (token auth; lines from `berth registry passwd`)' },
  { name: 'realm', kind: 'string', help: 'Token endpoint URL for WWW-Authenticate', default: '<public-url>/token, else the listen address\'s /token, this machine\'s name for 0.0.0.0; never the Host header' },
  { name: 'service', kind: 'string', help: 'Token service/audience name', default: 'berth-registry' },
  { name: 'token-key', kind: 'string', help: 'File with the token HMAC key in hex (made if missing)', default: '<data-root>/auth/token.key' },
  { name: 'public-url', kind: 'string', help: 'Base URL for absolute links', default: 'from the Host header' },
  { name: 'max-blob-size', kind: 'string', value: 'bytes', help: 'Largest blob accepted (suffixes k, m, g)', default: '32g' },
  { name: 'log-level', short: 'l', kind: 'string', help: 'debug|info|warn|error|fatal (info: one access log line per request)', default: 'info' },
  { name: 'log-format', kind: 'string', help: 'text|json', default: 'text' },
  { name: 'debug', short: 'D', kind: 'bool', help: 'Same as --log-level debug' },
  { name: 'help', short: 'h', kind: 'bool', flagOnly: true, help: 'Print usage' }
]

const GC_FLAGS: readonly FlagSpec[] = [
  { name: 'data-root', kind: 'string', help: 'The registry\'s data root (must exist)', default: DEFAULT_REGISTRY_ROOT },
  { name: 'dry-run', kind: 'bool', help: 'Report what would be deleted' },
  { name: 'grace', kind: 'string', value: 'seconds', help: 'Spare blobs younger than this', default: '3600' },
  { name: 'help', short: 'h', kind: 'bool', help: 'Print usage' }
]

const HELP_ONLY: readonly FlagSpec[] = [{ name: 'help', short: 'h', kind: 'bool', help: 'Print usage' }]

export const REGISTRY_USAGE = `Usage: berth registry [OPTIONS]            Run the registry (Hub API + OCI distribution API)
       berth registry passwd NAME           Print a users-file line NAME:HASH (password prompted on a terminal, else read on stdin)
       berth registry gc [OPTIONS]          Delete blobs no manifest references
       berth registry deprecations          Print the API's deprecation table (Markdown)

Health: GET / and GET /debug/health answer 200 {} (503 with the failing check when the storage is unusable).

Options:
${flagHelp(SERVE_FLAGS)}`

const PASSWD_USAGE = `Usage: berth registry passwd NAME

Prints a users-file line NAME:HASH (scrypt). On a terminal the password is asked twice, without echo; otherwise
it is read on stdin (one line). NAME: lowercase letters, digits, '.', '_', '-'.

Options:
${flagHelp(HELP_ONLY)}`

const GC_USAGE = `Usage: berth registry gc [OPTIONS]

Deletes blobs no manifest references. Run it while the registry is stopped, or rely on the grace period.

Options:
${flagHelp(GC_FLAGS)}`

const DEPRECATIONS_USAGE = `Usage: berth registry deprecations

Prints the API's deprecation table (Markdown).

Options:
${flagHelp(HELP_ONLY)}`

function usageError (cmd: string, msg: string): number {
  process.stderr.write(`${cmd}: ${msg}\nSee '${cmd} --help'.\n`)
  return 2
}

function fail (cmd: string, msg: string): number {
  process.stderr.write(`${cmd}: ${msg}\n`)
  return 1
}

async function readStdin (): Promise<string> {
  const chunks: Buffer[] = []
  for await (const c of process.stdin as AsyncIterable<Buffer>) chunks.push(c)
  return Buffer.concat(chunks).toString('utf8')
}

/** Reads one line from the terminal with echo off (raw mode); Ctrl-C or Ctrl-D abandon it. */
async function promptHidden (prompt: string): Promise<string | null> {
  const stdin = process.stdin
  // echo off before the prompt shows: what is typed (or pasted) right after it never appears
  stdin.setRawMode(true)
  process.stderr.write(prompt)
  stdin.resume()
  try {
    return await new Promise<string | null>((resolve) => {
      let value = ''
      const onData = (d: Buffer): void => {
        for (const ch of d.toString('utf8')) {
          if (ch === '\r' || ch === '\n') { stdin.off('data', onData); resolve(value); return }
          if (ch === '\u0003' || ch === '\u0004') { stdin.off('data', onData); resolve(null); return }
          if (ch === '\u007f' || ch === '\b') value = value.slice(0, -1)
          else value += ch
        }
      }
      stdin.on('data', onData)
    })
  } finally {
    stdin.setRawMode(false)
    stdin.pause()
    process.stderr.write('\n')
  }
}

async function passwd (argv: string[]): Promise<number> {
  const cmd = 'berth registry passwd'
  let parsed
  try { parsed = parseFlags(HELP_ONLY, argv) } catch (err) { return usageError(cmd, errorMessage(err)) }
  if (parsed.values.get('help') === true) { process.stdout.write(PASSWD_USAGE); return 0 }
  const [name, ...rest] = parsed.positionals
  if (name === undefined || rest.length > 0) return usageError(cmd, 'one NAME expected')
  if (!/^[a-z0-9][a-z0-9._-]*$/.test(name)) return usageError(cmd, `invalid name ${JSON.stringify(name)}: lowercase letters, digits, '.', '_', '-'`)
  let password: string
  if (process.stdin.isTTY) {
    const first = await promptHidden('Password: ')
    if (first === null) return fail(cmd, 'cancelled')
    const again = await promptHidden('Retype password: ')
    if (again === null) return fail(cmd, 'cancelled')
    if (first !== again) return fail(cmd, 'the passwords do not match')
    password = first
  } else {
    password = (await readStdin()).replace(/\r?\n$/, '')
  }
  if (password === '') return fail(cmd, 'empty password')
  const { hashPassword } = await import('../registry/auth/passwords.js')
  process.stdout.write(`${name}:${await hashPassword(password)}\n`)
  return 0
}

async function gc (argv: string[]): Promise<number> {
  const cmd = 'berth registry gc'
  let parsed
  try { parsed = parseFlags(GC_FLAGS, argv) } catch (err) { return usageError(cmd, errorMessage(err)) }
  const v = parsed.values
  if (v.get('help') === true) { process.stdout.write(GC_USAGE); return 0 }
  if (parsed.positionals.length > 0) return usageError(cmd, `accepts no arguments (got ${parsed.positionals.join(' ')})`)
  const graceText = v.get('grace') as string | undefined
  const grace = graceText === undefined ? undefined : Number(graceText)
  if (grace !== undefined && !(graceText !== '' && Number.isFinite(grace) && grace >= 0)) return usageError(cmd, `invalid --grace ${graceText ?? ''}: seconds expected`)
  const dryRun = v.get('dry-run') === true
  const { collectGarbage } = await import('../registry/service.js')
  let r
  try {
    r = await collectGarbage((v.get('data-root') as string | undefined) ?? DEFAULT_REGISTRY_ROOT, { dryRun, ...(grace !== undefined ? { gracePeriod: grace * 1000 } : {}) })
  } catch (err) {
    return fail(cmd, errorMessage(err))
  }
  for (const d of r.deleted) process.stdout.write(`${dryRun ? 'would delete' : 'deleted'} ${d}\n`)
  process.stdout.write(`${r.marked} blobs referenced, ${r.deleted.length} ${dryRun ? 'to delete' : 'deleted'} (${r.freedBytes} bytes), ${r.spared} spared by the grace period\n`)
  return 0
}

/** BERTH_REGISTRY_DATA_ROOT for data-root. */
export function envName (key: string): string { return `BERTH_REGISTRY_${key.toUpperCase().replace(/-/g, '_')}` }

/** The server's settings: the file, overridden by the environment, with the flags (conflicting with the file: error). */
async function serveSettings (flags: Map<string, FlagValue>, env: NodeJS.ProcessEnv): Promise<Map<string, FlagValue>> {
  const path = (flags.get('config') as string | undefined) ?? env.BERTH_REGISTRY_CONFIG ?? DEFAULT_REGISTRY_CONFIG
  const explicit = flags.has('config') || env.BERTH_REGISTRY_CONFIG !== undefined
  const fromFile = new Map<string, FlagValue>()
  let text: string | null = null
  try {
    text = await readFile(path, 'utf8')
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT' || explicit) throw new Error(`configuration file ${path}: ${errorMessage(err)}`)
  }
  const byKey = new Map(SERVE_FLAGS.filter((f) => f.flagOnly !== true).map((f) => [configKey(f), f]))
  if (text !== null) {
    let doc: unknown
    try { doc = JSON.parse(text) } catch (err) { throw new Error(`configuration file ${path}: ${errorMessage(err)}`) }
    if (doc === null || typeof doc !== 'object' || Array.isArray(doc)) throw new Error(`configuration file ${path}: a JSON object expected`)
    const unknown = Object.keys(doc).filter((k) => !byKey.has(k))
    if (unknown.length > 0) throw new Error(`configuration file ${path}: the following directives don't match any configuration option: ${unknown.join(', ')}`)
    for (const [k, v] of Object.entries(doc as Record<string, unknown>)) {
      const f = byKey.get(k) as FlagSpec
      const ok = f.kind === 'bool' ? typeof v === 'boolean' : f.kind === 'list' ? (Array.isArray(v) && v.every((x) => typeof x === 'string')) || typeof v === 'string' : typeof v === 'string' || (k === 'max-blob-size' && typeof v === 'number')
      if (!ok) throw new Error(`configuration file ${path}: invalid value for "${k}": ${f.kind === 'bool' ? 'true or false' : f.kind === 'list' ? 'a list of strings' : 'a string'} expected`)
      fromFile.set(k, f.kind === 'list' && typeof v === 'string' ? [v] : typeof v === 'number' ? String(v) : v as FlagValue)
    }
  }
  const both = [...flags.keys()].filter((k) => byKey.has(k) && fromFile.has(k))
  if (both.length > 0) throw new Error(`the following directives are specified both as a flag and in the configuration file ${path}: ${both.join(', ')}`)
  const merged = new Map(fromFile)
  for (const [k, f] of byKey) {
    const e = env[envName(k)]
    if (e === undefined) continue
    merged.set(k, f.kind === 'bool' ? parseBool(e, envName(k)) : f.kind === 'list' ? e.split(',').map((x) => x.trim()).filter((x) => x !== '') : e)
  }
  for (const [k, v] of flags) if (byKey.has(k)) merged.set(k, v)
  return merged
}

function parseSize (text: string): number {
  const m = /^(\d+)([kmg]?)i?b?$/i.exec(text.trim())
  return m === null ? NaN : Number(m[1]) * 1024 ** ' kmg'.indexOf((m[2] ?? '').toLowerCase() || ' ')
}

async function serve (argv: string[]): Promise<number> {
  const cmd = 'berth registry'
  let parsed
  try { parsed = parseFlags(SERVE_FLAGS, argv) } catch (err) { return usageError(cmd, errorMessage(err)) }
  if (parsed.values.get('help') === true) { process.stdout.write(REGISTRY_USAGE); return 0 }
  if (parsed.positionals.length > 0) return usageError(cmd, `unknown command ${JSON.stringify(parsed.positionals[0])} (passwd, gc, deprecations)`)
  let s: Map<string, FlagValue>
  try { s = await serveSettings(parsed.values, process.env) } catch (err) { return fail(cmd, errorMessage(err)) }
  const get = (k: string): string | undefined => s.get(k) as string | undefined
  const level = (get('log-level') ?? (s.get('debug') === true ? 'debug' : 'info')) as DaemonLogLevel
  if (!LOG_LEVELS.includes(level)) return usageError(cmd, `invalid log level: ${level}`)
  const format = (get('log-format') ?? 'text') as LogFormat
  if (!LOG_FORMATS.includes(format)) return usageError(cmd, `invalid log format: ${format}`)
  const auth = get('auth') ?? 'none'
  if (auth !== 'none' && auth !== 'token') return usageError(cmd, `invalid --auth ${auth}: none or token`)
  let maxBlobSize: number | undefined
  if (get('max-blob-size') !== undefined) {
    maxBlobSize = parseSize(get('max-blob-size') as string)
    if (!Number.isSafeInteger(maxBlobSize) || maxBlobSize < 1) return usageError(cmd, `invalid --max-blob-size ${get('max-blob-size') ?? ''}`)
  }
  const log = new DaemonLog({ level, format })
  // Every request body chunk Node's HTTP parser hands over is a fresh buffer outside V8's heap; V8 counts such memory
  // allocated since its last full collection against the old generation's limit, and frees it only at a scavenge,
  // which it forces once 32 MiB of it are young. The registry's heap is ~8 MiB, so its limit leaves ~10 MiB of slack:
  // a push paid a full mark-compact every ~10 MiB received (4-6 per 100 MiB, with their concurrent marking ~0.4 ms
  // of CPU per MiB, a seventh of a push's). A limit 5x the live heap (~40 MiB) leaves room for the 32 MiB and ends
  // them. The cost: V8 collects later under request load too (RSS right after the bench's 16-connection GET runs
  // 81-92 -> 98-112 MiB; idle and settled figures unchanged; tools/bench/README.md).
  // Process-wide, so it is set by the program, never by lib/registry.
  setFlagsFromString('--heap-growing-percent=400')
  const { createRegistry } = await import('../registry/service.js')
  const { formatAddress } = await import('../http/listen.js')
  let registry
  try {
    registry = await createRegistry({
      dataRoot: get('data-root') ?? DEFAULT_REGISTRY_ROOT,
      listen: (s.get('listen') as string[] | undefined) ?? [DEFAULT_LISTEN],
      auth,
      ...(get('users') !== undefined ? { users: get('users') as string } : {}),
      ...(get('realm') !== undefined ? { realm: get('realm') as string } : {}),
      ...(get('service') !== undefined ? { service: get('service') as string } : {}),
      ...(get('token-key') !== undefined ? { tokenKeyFile: get('token-key') as string } : {}),
      ...(get('public-url') !== undefined ? { publicUrl: get('public-url') as string } : {}),
      ...(maxBlobSize !== undefined ? { maxBlobSize } : {})
    })
  } catch (err) {
    log.fatal(`berth registry: failed to start: ${errorMessage(err)}`)
    return 1
  }
  for (const a of registry.addresses) log.info(`berth registry: listening on ${formatAddress(a)} (auth ${auth}, data root ${registry.dataRoot})`)
  await new Promise<void>((resolve) => {
    process.once('SIGTERM', resolve)
    process.once('SIGINT', resolve)
  })
  log.info('berth registry: shutting down')
  await registry.close()
  return 0
}

/** Entry point for `berth registry ARGS…`. */
export async function registryCommand (argv: string[]): Promise<number> {
  switch (argv[0]) {
    case 'passwd': return await passwd(argv.slice(1))
    case 'gc': return await gc(argv.slice(1))
    case 'deprecations': {
      if (argv.includes('--help') || argv.includes('-h')) { process.stdout.write(DEPRECATIONS_USAGE); return 0 }
      if (argv.length > 1) return usageError('berth registry deprecations', 'accepts no arguments')
      const { deprecationMarkdown } = await import('../registry/deprecation.js')
      process.stdout.write(deprecationMarkdown())
      return 0
    }
    case 'help': process.stdout.write(REGISTRY_USAGE); return 0
    default: return await serve(argv)
  }
}
