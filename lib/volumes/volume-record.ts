// A volume as the store keeps it, and the checks a create request goes through (dockerd's local driver rules).
import { invalidArgument, notFound, EngineError } from '../errors.js'
import { isoSeconds } from '../util/time.js'

export interface VolumeRecord {
  name: string
  driver: 'local'
  labels: Record<string, string>
  /** The local driver's options (type, device, o), or null when none were given. */
  options: Record<string, string> | null
  /** RFC 3339, seconds, UTC. */
  createdAt: string
  /** Created without a name (anonymous volumes: `rm -v`, and prune without all=true, remove them). */
  anonymous: boolean
}

/** dockerd marks anonymous volumes with this label (API ≥ 1.42 prune keys on it). */
export const ANONYMOUS_LABEL = 'com.docker.volume.anonymous'

const NAME = /^[a-zA-Z0-9][a-zA-Z0-9_.-]+$/
const LOCAL_OPTIONS = new Set(['type', 'device', 'o', 'size'])

export function validateVolumeName (name: string): void {
  if (name.length === 1) throw invalidArgument(`create ${name}: volume name is too short, names should be at least two alphanumeric characters`)
  if (!NAME.test(name)) {
    throw invalidArgument(`create ${name}: "${name}" includes invalid characters for a local volume name, only "[a-zA-Z0-9][a-zA-Z0-9_.-]" are allowed. If you intended to pass a host directory, use absolute path`)
  }
}

export function checkDriver (name: string, driver: string): void {
  if (driver !== '' && driver !== 'local') throw notFound(`create ${name}: error looking up volume plugin ${driver}: plugin "${driver}" not found`)
}

/** The local driver's option checks (unknown keys, type without device and the reverse, quota). */
export function validateLocalOptions (name: string, opts: Record<string, string> | null): void {
  if (opts === null) return
  for (const k of Object.keys(opts)) if (!LOCAL_OPTIONS.has(k)) throw invalidArgument(`create ${name}: invalid option: "${k}"`)
  if (opts.size !== undefined) throw invalidArgument(`create ${name}: quota size requested but no quota support`)
  const has = (k: string): boolean => opts[k] !== undefined && opts[k] !== ''
  if ((has('type') || has('o')) && !has('device')) throw invalidArgument(`create ${name}: missing required option: "device"`)
  if (has('device') && !has('type') && !(opts.o ?? '').split(',').includes('bind')) throw invalidArgument(`create ${name}: missing required option: "type"`)
}

export function noSuchVolume (op: string, name: string): EngineError {
  return notFound(`${op} ${name}: no such volume`)
}

export function nowRfc3339 (): string {
  return isoSeconds()
}

/** Whether the volume has local driver options that mount something over its directory. */
export function isMountedKind (v: VolumeRecord): boolean {
  return v.options !== null && (v.options.device ?? '') !== ''
}
