import { createRequire } from 'node:module'
import { format } from 'node:util'
import type CreateDebug from 'debug'

// `debug` is CommonJS. Loaded with require rather than `import`, so Node never starts its CommonJS export lexer
// (a WebAssembly module): importing it the ESM way costs about 4 MiB of resident memory for the life of the process.
const createDebug = createRequire(import.meta.url)('debug') as typeof CreateDebug

// Levels ride on debug's namespaces: `berth:<ns>` is debug-level detail, `berth:<ns>:info|warn|error` are the
// operator's records (lifecycle, warnings, failures). A library user turns them on with DEBUG=berth:*:info (or
// berth:* for everything); the `berth` command turns on what --log-level asks and formats them (lib/cli/output.ts).

/** A debug logger under the berth: prefix, e.g. logger('engine:http'). */
export function logger (ns: string): CreateDebug.Debugger {
  return createDebug(`berth:${ns}`)
}

export type LogLevel = 'debug' | 'info' | 'warn' | 'error'

/** The operator's records of one module: `info`, `warn`, `error` (printf-style, as debug's). */
export interface LevelLogger {
  info: CreateDebug.Debugger
  warn: CreateDebug.Debugger
  error: CreateDebug.Debugger
}

/** Levelled loggers for a module, e.g. levelLogger('engine') → berth:engine:info, berth:engine:warn, … */
export function levelLogger (ns: string): LevelLogger {
  return { info: createDebug(`berth:${ns}:info`), warn: createDebug(`berth:${ns}:warn`), error: createDebug(`berth:${ns}:error`) }
}

/** The namespaces a minimum level turns on (debug's enable syntax). */
export function levelNamespaces (level: LogLevel | 'fatal'): string {
  switch (level) {
    case 'debug': return 'berth:*'
    case 'info': return 'berth:*:info,berth:*:warn,berth:*:error'
    case 'warn': return 'berth:*:warn,berth:*:error'
    case 'error': return 'berth:*:error'
    case 'fatal': return ''
  }
}

/** A namespace's level and module: berth:engine:info → info, engine; berth:engine:http → debug, engine:http. */
export function namespaceLevel (namespace: string): { level: LogLevel, module: string } {
  const ns = namespace.startsWith('berth:') ? namespace.slice('berth:'.length) : namespace
  const m = /^(.*):(info|warn|error)$/.exec(ns)
  return m === null ? { level: 'debug', module: ns } : { level: m[2] as LogLevel, module: m[1] as string }
}

/** Turns on the namespaces given (debug's own syntax), as DEBUG=… would. */
export function enableLogs (namespaces: string): void {
  createDebug.enable(namespaces)
}

/**
 * Hands every enabled record (namespace, formatted message) to `write` instead of debug's own stderr lines. It
 * changes the process-wide `debug` module: for the `berth` command, which owns the process, never for the library.
 */
export function routeLogs (write: (namespace: string, message: string) => void): void {
  createDebug.inspectOpts = { ...createDebug.inspectOpts, colors: false }
  createDebug.formatArgs = function formatArgs (): void {}
  createDebug.log = function log (this: CreateDebug.Debugger, ...args: unknown[]): void {
    write(this.namespace, format(...args))
  }
}
