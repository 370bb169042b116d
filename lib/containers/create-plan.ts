// What a create makes of its typed request before anything is written (pure but for the host's facts it is given):
// the Config merged with the image's and checked, the log driver with the daemon's default, the run options decoded,
// the limits checked against this host, what Berth does not apply said out loud; and the request networking gets.
import type { ImageRunConfig } from '../image/types.js'
import type { HostFacts } from '../runtime/host-facts.js'
import type { SandboxRequest } from '../network/sandbox-config.js'
import { canonicalMac } from '../network/endpoint-request.js'
import type { ContainerConfig, ContainerRecord, RunOptions } from './container.js'
import { checkContainerConfig, mergeImageDefaults } from './container-config.js'
import type { CreateRequest, NetworkRequest } from './create-request.js'
import { checkWorkingDir } from './create-config.js'
import type { DecodedSettings } from './container-settings.js'
import { decodeLogConfig, withDaemonLogConfig } from './log-config.js'
import { decodeRunOptions } from './run-options.js'
import { checkResources } from './resource-checks.js'
import { checkHostConfigSupport } from './host-config-support.js'
import { invalidArgument, notFound } from '../errors.js'
import { formatPlatform, hostPlatform, imagePlatform, platformRank, type Platform } from '../image/platform.js'

export interface CreateDefaults {
  host: HostFacts
  /** The runtimes a container may name (HostConfig.Runtime), and the one it gets when it names none. */
  runtimes: { has: (name: string) => boolean, readonly defaultName: string }
  /** The daemon's log-driver and log-opts: a create that names no driver gets them (dockerd's merge). */
  defaultLogConfig?: { type: string, config: Record<string, string> }
  /** The daemon's default-ulimits: added to a container's own where it sets none of that name. */
  defaultUlimits?: ReadonlyArray<{ name: string, soft: number, hard: number }>
}

export interface CreatePlan {
  config: ContainerConfig
  settings: DecodedSettings
  run: RunOptions
  /** The create reply's Warnings so far (run options, limits, log options, what is not applied). */
  warnings: string[]
}

/** Plans a create from its request (which it adjusts: pass a copy) and the image's run config, in dockerd's order. */
export function planCreate (r: CreateRequest, image: ImageRunConfig | undefined, d: CreateDefaults): CreatePlan {
  const s = r.settings
  // a typed request's (a body's was checked as it was decoded), before the image's defaults: dockerd's verifyContainerSettings
  checkWorkingDir(r.config.workingDir)
  // no driver named: json-file, or the daemon's (whose options then fill in those not given)
  const lc = d.defaultLogConfig !== undefined
    ? withDaemonLogConfig({ Type: r.logConfig.type, Config: r.logConfig.config }, d.defaultLogConfig)
    : { Type: r.logConfig.type === '' ? 'json-file' : r.logConfig.type, Config: r.logConfig.config }
  const config = mergeImageDefaults(r.config, image)
  checkContainerConfig(config)
  if (r.macAddress !== '') config.macAddress = canonicalMac(r.macAddress)
  // dockerd's adaptContainerSettings: as much swap again as memory unless asked otherwise (a decoded body has it)
  if (s.resources.memory > 0 && s.resources.memorySwap === 0) s.resources.memorySwap = 2 * s.resources.memory
  const run = decodeRunOptions({ namespaces: s.namespaces, process: s.process, devices: s.devices, networkMode: s.networkMode, resources: s.resources }, d.host)
  for (const u of d.defaultUlimits ?? []) {
    const type = `RLIMIT_${u.name.toUpperCase()}`
    if (!run.options.ulimits.some((x) => x.type === type)) run.options.ulimits.push({ type, soft: u.soft, hard: u.hard })
  }
  // (checked: what this host cannot apply is discarded from them)
  const limits = { resources: s.resources, blkio: s.blkio }
  run.warnings.push(...checkResources(limits, d.host, false))
  const unsupported = checkHostConfigSupport({
    namespaces: s.namespaces,
    devices: s.devices,
    mountRequests: s.mountRequests,
    unapplied: s.unapplied,
    ...(s.cgroupParent !== undefined ? { cgroupParent: s.cgroupParent } : {})
  }, (name) => d.runtimes.has(name))
  // as dockerd: the container keeps the runtime that was the default at its create
  if (s.namespaces.runtime === '') s.namespaces.runtime = d.runtimes.defaultName
  const log = decodeLogConfig(lc)
  return {
    config,
    settings: { ...s, log: { driver: log.driver, options: { ...lc.Config }, maxSize: log.maxSize, maxFiles: log.maxFiles }, ...limits },
    run: run.options,
    warnings: [...run.warnings, ...log.warnings, ...unsupported]
  }
}

/**
 * The image's platform against the one a create asks for: not found when it does not run there (dockerd's GetImage
 * with a platform, so that a client pulls the image for it); with none asked for, a warning when it is not the
 * host's (dockerd's containerCreate).
 */
export function checkImagePlatform (ref: string, image: { os?: string, architecture?: string, variant?: string }, wanted: Platform | undefined): string[] {
  const have = imagePlatform(image)
  if (wanted !== undefined) {
    if (platformRank(wanted, have) >= 0) return []
    throw notFound(`image with reference ${ref} was found but its platform (${formatPlatform(have)}) does not match the specified platform (${formatPlatform(wanted)})`)
  }
  const host = hostPlatform()
  if (platformRank(host, have) >= 0) return []
  return [`The requested image's platform (${formatPlatform(have)}) does not match the detected host platform (${formatPlatform(host)}) and no specific platform was requested`]
}

/**
 * What networking records of a new container: its mode (none when networking is disabled), the endpoints asked for
 * with the --link targets on the first one, and Config.MacAddress on the NetworkMode's endpoint unless that endpoint
 * names its own (dockerd's).
 */
export function sandboxRequest (rec: ContainerRecord, req: NetworkRequest): SandboxRequest {
  const endpoints = req.endpoints
  let mode = rec.networkMode
  if (rec.config.networkDisabled === true) mode = 'none'
  if (req.links.length > 0) {
    const key = Object.keys(endpoints)[0] ?? mode
    const ep = endpoints[key] ?? { aliases: [], ipv4: '', links: [] }
    ep.links = [...ep.links, ...req.links]
    endpoints[key] = ep
  }
  const mac = rec.config.macAddress ?? ''
  if (mac !== '' && mode.startsWith('container:')) throw invalidArgument('conflicting options: mac-address and the network mode')
  if (mac !== '') {
    const key = mode === 'bridge' || mode === 'default' || mode === '' ? Object.keys(endpoints).find((k) => k === 'bridge' || k === 'default') ?? 'bridge' : mode
    const ep = endpoints[key] ?? { aliases: [], ipv4: '', links: [] }
    if ((ep.mac ?? '') === '') ep.mac = mac
    endpoints[key] = ep
  }
  return { id: rec.id, name: rec.name.slice(1), mode, endpoints, portBindings: req.portBindings, exposed: rec.config.exposedPorts ?? [], publishAll: req.publishAll }
}
