// The container's Config (camelCase, ContainerConfig): decoded from a create body's normalised Config, merged with
// the image's defaults as dockerd merges them, and checked as dockerd checks it at create (a command to run, the
// health check's durations). Pure.
import { invalidArgument } from '../errors.js'
import type { ContainerConfig, HealthConfig } from './container.js'
import type { CreateConfig } from './create-config.js'
import type { ImageRunConfig } from '../image/types.js'

/** Config.Healthcheck's fields: wire name, record name. */
export const HEALTH_FIELDS = [['Test', 'test'], ['Interval', 'interval'], ['Timeout', 'timeout'], ['StartPeriod', 'startPeriod'],
  ['StartInterval', 'startInterval'], ['Retries', 'retries']] as const

/** A Healthcheck as the create body (or the image) gave it, decoded (checked by checkContainerConfig). */
export function healthConfigOf (w: unknown): HealthConfig {
  const src = (w ?? {}) as Record<string, unknown>
  const out: Record<string, unknown> = {}
  for (const [wire, field] of HEALTH_FIELDS) {
    const v = src[wire]
    if (v !== undefined) out[field] = field === 'test' && Array.isArray(v) ? v.map(String) : v
  }
  return out as HealthConfig
}

/** The record's Config from a create body's normalised Config (before the image's defaults: mergeImageDefaults). */
export function configOf (w: CreateConfig): ContainerConfig {
  const c: ContainerConfig = {
    hostname: w.Hostname,
    domainname: w.Domainname,
    user: w.User,
    attachStdin: w.AttachStdin,
    attachStdout: w.AttachStdout,
    attachStderr: w.AttachStderr,
    tty: w.Tty,
    openStdin: w.OpenStdin,
    stdinOnce: w.StdinOnce,
    env: w.Env,
    cmd: w.Cmd,
    image: w.Image,
    volumes: w.Volumes === null || w.Volumes === undefined ? null : Object.keys(w.Volumes),
    workingDir: w.WorkingDir,
    entrypoint: w.Entrypoint,
    onBuild: w.OnBuild,
    labels: w.Labels
  }
  if (w.ExposedPorts !== undefined && w.ExposedPorts !== null) c.exposedPorts = Object.keys(w.ExposedPorts)
  if (w.Healthcheck !== undefined) c.healthcheck = healthConfigOf(w.Healthcheck)
  if (w.ArgsEscaped !== undefined) c.argsEscaped = w.ArgsEscaped
  if (w.NetworkDisabled !== undefined) c.networkDisabled = w.NetworkDisabled
  if (w.StopSignal !== undefined) c.stopSignal = w.StopSignal
  if (w.StopTimeout !== undefined) c.stopTimeout = w.StopTimeout
  if (w.Shell !== undefined) c.shell = w.Shell
  return c
}

function envKey (e: string): string {
  const i = e.indexOf('=')
  return i === -1 ? e : e.slice(0, i)
}

/** The keys of two maps joined as `{ ...first, ...second }` orders them (first's, then second's new ones). */
function joinedKeys (first: readonly string[], second: readonly string[]): string[] {
  return Object.keys({ ...Object.fromEntries(first.map((k) => [k, true])), ...Object.fromEntries(second.map((k) => [k, true])) })
}

const HEALTH_DURATIONS = ['interval', 'timeout', 'startPeriod', 'startInterval', 'retries'] as const

/** dockerd's merge(userConf, imageConf): what the create left unset comes from the image. Returns a new Config. */
export function mergeImageDefaults (config: ContainerConfig, image: ImageRunConfig | undefined): ContainerConfig {
  const c: ContainerConfig = { ...config }
  if (image === undefined) return c
  if (c.user === '' && image.User !== undefined) c.user = image.User
  if (image.ExposedPorts !== undefined && image.ExposedPorts !== null) c.exposedPorts = joinedKeys(Object.keys(image.ExposedPorts), c.exposedPorts ?? [])
  if (image.Env !== undefined && image.Env !== null && image.Env.length > 0) {
    const userKeys = new Set(c.env.map(envKey))
    c.env = [...image.Env.filter((e) => !userKeys.has(envKey(e))), ...c.env]
  }
  if (image.Labels !== undefined && image.Labels !== null) c.labels = { ...image.Labels, ...c.labels }
  if (c.entrypoint === null || c.entrypoint.length === 0) {
    if (c.cmd === null || c.cmd.length === 0) {
      c.cmd = image.Cmd ?? null
      if (image.ArgsEscaped === true) c.argsEscaped = true
    }
    if (c.entrypoint === null) c.entrypoint = image.Entrypoint ?? null
  }
  if (c.entrypoint !== null && c.entrypoint.length === 1 && c.entrypoint[0] === '') c.entrypoint = null
  if (c.workingDir === '' && image.WorkingDir !== undefined) c.workingDir = image.WorkingDir
  if (image.Volumes !== undefined && image.Volumes !== null) c.volumes = joinedKeys(Object.keys(image.Volumes), c.volumes ?? [])
  if (c.stopSignal === undefined && image.StopSignal !== undefined && image.StopSignal !== '') c.stopSignal = image.StopSignal
  if (image.Healthcheck !== undefined && image.Healthcheck !== null) {
    const img = healthConfigOf(image.Healthcheck)
    if (c.healthcheck === undefined) c.healthcheck = img
    else {
      // dockerd's merge: what the user's Healthcheck leaves unset comes from the image's
      const u: HealthConfig = { ...c.healthcheck }
      if (!Array.isArray(u.test) || u.test.length === 0) u.test = img.test
      for (const f of HEALTH_DURATIONS) if (u[f] === undefined || u[f] === null || u[f] === 0) { if (img[f] !== undefined) u[f] = img[f] }
      c.healthcheck = u
    }
  }
  if (c.onBuild === null && image.OnBuild !== undefined) c.onBuild = image.OnBuild ?? null
  if (c.shell === undefined && image.Shell !== undefined && image.Shell !== null) c.shell = image.Shell
  return c
}

const NS_PER_MS = 1_000_000

function duration (v: unknown, field: string): number {
  if (v === undefined || v === null) return 0
  if (typeof v !== 'number' || !Number.isFinite(v)) throw invalidArgument(`json: cannot unmarshal ${typeof v} into Go struct field HealthConfig.Healthcheck.${field} of type time.Duration`)
  return v
}

const WIRE_NAME: Readonly<Record<string, string>> = Object.fromEntries(HEALTH_FIELDS.map(([wire, field]) => [field, wire]))

/**
 * dockerd's create checks of a merged Config: every Env entry has a name (opts.ValidateEnv: `=x` or `` is refused),
 * a command to run, and the health check (durations ≥ 1ms or 0).
 */
export function checkContainerConfig (c: ContainerConfig): void {
  for (const e of c.env) if (e.split('=', 1)[0] === '') throw invalidArgument(`invalid environment variable: ${e}`)
  if ((c.entrypoint ?? []).length + (c.cmd ?? []).length === 0) throw invalidArgument('no command specified')
  const h = c.healthcheck
  if (h === undefined) return
  for (const f of ['interval', 'timeout', 'startPeriod', 'startInterval'] as const) {
    const name = WIRE_NAME[f] as string
    const d = duration(h[f], name)
    if (d !== 0 && d < NS_PER_MS) throw invalidArgument(`${name} in Healthcheck cannot be less than 1ms`)
  }
  if (typeof h.retries === 'number' && h.retries < 0) throw invalidArgument('Retries in Healthcheck cannot be negative')
  if (h.test !== undefined && h.test !== null && !Array.isArray(h.test)) {
    throw invalidArgument('json: cannot unmarshal into Go struct field HealthConfig.Healthcheck.Test of type []string')
  }
}
