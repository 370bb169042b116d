import createDebug from 'debug'

/** A debug logger under the berth: prefix, e.g. logger('engine:http'). */
export function logger (ns: string): createDebug.Debugger {
  return createDebug(`berth:${ns}`)
}
