// Command-line flags as dockerd's (pflag) spells them, from one table per command: the parser, the --help text and
// the config file's keys all read the same table, so a flag cannot exist without its help line. Pure.

/** `string`: one value; `list`: repeatable; `bool`: bare (true) or `--flag=false`, as Go's boolean flags. */
export type FlagKind = 'string' | 'list' | 'bool'

export interface FlagSpec {
  /** Long name, without dashes. */
  name: string
  short?: string
  kind: FlagKind
  /** The value's name in --help (`string`, `list`, `seconds`, …). */
  value?: string
  help: string
  /** The default as --help prints it. */
  default?: string
  /** The config file's key when it is not the flag's name (dockerd's plural keys: hosts, registry-mirrors, …). */
  key?: string
  /** No config file key (--config-file, --help, --validate, --version). */
  flagOnly?: boolean
}

export type FlagValue = string | boolean | string[]

export interface ParsedFlags {
  /** Values by long name (lists in order given). */
  values: Map<string, FlagValue>
  positionals: string[]
}

/** A mistake on the command line: exit status 2, with the command's `--help` hint. */
export class UsageError extends Error {
  override readonly name = 'UsageError'
}

const TRUE = new Set(['1', 't', 'T', 'TRUE', 'true', 'True'])
const FALSE = new Set(['0', 'f', 'F', 'FALSE', 'false', 'False'])

/** Go's strconv.ParseBool. */
export function parseBool (v: string, flag: string): boolean {
  if (TRUE.has(v)) return true
  if (FALSE.has(v)) return false
  throw new UsageError(`invalid argument "${v}" for "${flag}" flag: strconv.ParseBool: parsing "${v}": invalid syntax`)
}

/** Parses argv against the table, as pflag does (`--name value`, `--name=value`, `-x value`, `-x=value`, `--`). */
export function parseFlags (table: readonly FlagSpec[], argv: readonly string[]): ParsedFlags {
  const byName = new Map(table.map((f) => [f.name, f]))
  const byShort = new Map(table.filter((f) => f.short !== undefined).map((f) => [f.short as string, f]))
  const values = new Map<string, FlagValue>()
  const positionals: string[] = []
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string
    if (arg === '--') { positionals.push(...argv.slice(i + 1)); break }
    if (!arg.startsWith('-') || arg === '-') { positionals.push(arg); continue }
    const long = arg.startsWith('--')
    const body = arg.slice(long ? 2 : 1)
    const eq = body.indexOf('=')
    const key = eq === -1 ? body : body.slice(0, eq)
    const spec = long ? byName.get(key) : byShort.get(key)
    if (spec === undefined) throw new UsageError(long ? `unknown flag: --${key}` : `unknown shorthand flag: '${key.slice(0, 1)}' in ${arg}`)
    const shown = long ? `--${key}` : `-${key}`
    let value: string | undefined = eq === -1 ? undefined : body.slice(eq + 1)
    if (spec.kind === 'bool') {
      values.set(spec.name, value === undefined ? true : parseBool(value, shown))
      continue
    }
    if (value === undefined) {
      if (i + 1 >= argv.length) throw new UsageError(`flag needs an argument: ${shown}`)
      value = argv[++i] as string
    }
    if (spec.kind === 'list') {
      const prev = values.get(spec.name)
      values.set(spec.name, [...(Array.isArray(prev) ? prev : []), value])
    } else {
      values.set(spec.name, value)
    }
  }
  return { values, positionals }
}

/** The flag lines of --help: `  -H, --host list   text (default x)`, aligned, wrapped at 120 columns. */
export function flagHelp (table: readonly FlagSpec[]): string {
  const heads = table.map((f) => `  ${f.short !== undefined ? `-${f.short}, ` : '    '}--${f.name}${f.kind === 'bool' ? '' : ` ${f.value ?? (f.kind === 'list' ? 'list' : 'string')}`}`)
  const width = Math.min(Math.max(...heads.map((h) => h.length)) + 2, 44)
  const lines: string[] = []
  table.forEach((f, i) => {
    const head = heads[i] as string
    const text = f.default !== undefined ? `${f.help} (default ${f.default})` : f.help
    const words = text.split(' ')
    let line = head.length + 1 > width ? `${head}\n${' '.repeat(width)}` : head.padEnd(width)
    let col = line.length - (line.lastIndexOf('\n') + 1)
    let first = true
    for (const w of words) {
      if (!first && col + 1 + w.length > 120) { line += `\n${' '.repeat(width)}`; col = width; first = true }
      line += first ? w : ` ${w}`
      col += (first ? 0 : 1) + w.length
      first = false
    }
    lines.push(line)
  })
  return lines.join('\n') + '\n'
}

/** The config file key of a flag (its name unless the table says otherwise). */
export function configKey (f: FlagSpec): string { return f.key ?? f.name }
