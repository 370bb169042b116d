// Helpers shared by the instruction dispatchers: the next image's config blob, history strings as dockerd writes
// them, canonical JSON for cache comparison, Go's %q rendering of string lists.
import type { ImageConfigBlob, ImageRunConfig } from '../image/types.js'
import { invalidArgument } from '../errors.js'
import { isoTime } from '../util/time.js'

export const DEFAULT_SHELL = ['/bin/sh', '-c'] as const
export const DEFAULT_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'
export const BUILDER_VERSION = '28.0.0'

/** A deep copy of a run config (the builder mutates its own). */
export function cloneConfig (c: ImageRunConfig | undefined): ImageRunConfig {
  return c === undefined ? {} : JSON.parse(JSON.stringify(c)) as ImageRunConfig
}

export function shellOf (c: ImageRunConfig): string[] {
  return c.Shell !== undefined && c.Shell !== null && c.Shell.length > 0 ? [...c.Shell] : [...DEFAULT_SHELL]
}

/** Go's `%q` of a []string: `["a" "b"]`. */
export function goQuoteList (list: readonly string[]): string {
  return '[' + list.map((s) => JSON.stringify(s)).join(' ') + ']'
}

/** JSON with object keys sorted at every level: equal configs give equal strings. */
export function canonicalJson (v: unknown): string {
  if (Array.isArray(v)) return '[' + v.map(canonicalJson).join(',') + ']'
  if (v !== null && typeof v === 'object') {
    const o = v as Record<string, unknown>
    return '{' + Object.keys(o).filter((k) => o[k] !== undefined).sort().map((k) => JSON.stringify(k) + ':' + canonicalJson(o[k])).join(',') + '}'
  }
  return JSON.stringify(v) ?? 'null'
}

export interface NextImage {
  base: ImageConfigBlob | undefined
  runConfig: ImageRunConfig
  containerConfig: ImageRunConfig
  createdBy: string
  emptyLayer: boolean
  author: string
  arch: string
}

/** Largest image config a step may make (each step's config holds every earlier step's history). */
export const MAX_IMAGE_CONFIG = 1024 * 1024

/**
 * The config blob of a step's image; diff_ids are the parent's (the backend appends a new layer's). A config past
 * MAX_IMAGE_CONFIG is refused before anything is stored.
 */
export function nextImageConfig (n: NextImage): ImageConfigBlob {
  const blob = imageConfig(n)
  const size = Buffer.byteLength(JSON.stringify(blob))
  if (size > MAX_IMAGE_CONFIG) throw invalidArgument(`the image config of this step would be ${size} bytes, more than the limit of ${MAX_IMAGE_CONFIG} bytes (1 MiB): shorten the values of ARG, ENV, LABEL or the command`)
  return blob
}

function imageConfig (n: NextImage): ImageConfigBlob {
  const created = isoTime()
  const base = n.base
  return {
    architecture: base?.architecture ?? n.arch,
    os: base?.os ?? 'linux',
    ...(base?.variant !== undefined ? { variant: base.variant } : {}),
    created,
    ...(n.author !== '' ? { author: n.author } : {}),
    docker_version: BUILDER_VERSION,
    config: cloneConfig(n.runConfig),
    container_config: n.containerConfig,
    rootfs: { type: 'layers', diff_ids: [...(base?.rootfs.diff_ids ?? [])] },
    history: [...(base?.history ?? []), {
      created,
      ...(n.author !== '' ? { author: n.author } : {}),
      created_by: n.createdBy,
      ...(n.emptyLayer ? { empty_layer: true } : {})
    }]
  }
}

/** Sets or replaces `key` in a `K=V` list. */
export function setEnv (env: string[], key: string, value: string): void {
  const i = env.findIndex((e) => e === key || e.startsWith(key + '='))
  if (i === -1) env.push(`${key}=${value}`); else env[i] = `${key}=${value}`
}

/** Go time.Duration's String() for whole-nanosecond values we parse (`1m30s`, `500ms`, `0s`). */
export function goDuration (ns: number): string {
  if (ns === 0) return '0s'
  if (ns < 1e9) {
    if (ns % 1e6 === 0) return `${ns / 1e6}ms`
    if (ns % 1e3 === 0) return `${ns / 1e3}µs`
    return `${ns}ns`
  }
  let s = ns / 1e9
  let out = ''
  const h = Math.floor(s / 3600); s -= h * 3600
  const m = Math.floor(s / 60); s -= m * 60
  if (h > 0) out += `${h}h`
  if (h > 0 || m > 0) out += `${m}m`
  out += `${Number(s.toFixed(9))}s`
  return out
}

/** Parses Go duration text (`30s`, `1m30s`, `500ms`) to nanoseconds, or throws. */
export function parseGoDuration (text: string): number {
  const units: Record<string, number> = { ns: 1, us: 1e3, µs: 1e3, ms: 1e6, s: 1e9, m: 60e9, h: 3600e9 }
  if (text === '0') return 0
  const re = /(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)/gy
  let total = 0
  let pos = 0
  let m: RegExpExecArray | null
  while ((m = re.exec(text)) !== null) { total += Number(m[1]) * (units[m[2] as string] as number); pos = re.lastIndex }
  if (pos !== text.length || text === '') throw new Error(`time: invalid duration "${text}"`)
  return Math.round(total)
}
