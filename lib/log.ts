import { createRequire } from 'node:module'
import type CreateDebug from 'debug'

// `debug` is CommonJS. Loaded with require rather than `import`, so Node never starts its CommonJS export lexer
// (a WebAssembly module): importing it the ESM way costs about 4 MiB of resident memory for the life of the process.
const createDebug = createRequire(import.meta.url)('debug') as typeof CreateDebug

/** A debug logger under the berth: prefix, e.g. logger('engine:http'). */
export function logger (ns: string): CreateDebug.Debugger {
  return createDebug(`berth:${ns}`)
}

/** Turns on the namespaces given (debug's own syntax), as DEBUG=… would. */
export function enableLogs (namespaces: string): void {
  createDebug.enable(namespaces)
}
