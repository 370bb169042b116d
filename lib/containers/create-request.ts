// A container create as the engine takes it (ContainerService.create): the create body decoded once, here, into typed
// parts — the Config as asked (the image's defaults are merged at create), the HostConfig's families, the mounts asked
// for, and networking's typed request (endpoints, links, published ports: networking never sees the body). The
// create's checks against the host, the image and the other containers stay at create. lib/swarm and lib/build may
// start from newCreateRequest(image) and set typed fields instead of writing a body; the mounts and the published
// ports are set with setMounts and setPortBindings, which keep what the record shows and what create acts on in step.
import { decodeCreateBody } from './create-config.js'
import { configOf } from './container-config.js'
import { withCreateDefaults } from './create-defaults.js'
import { mountInputsOf, mountRequestWire, requestedSettingsOf, type MountRequestInputs, type RequestedSettings } from './container-settings.js'
import type { ContainerConfig, MountRequest } from './container.js'
import { checkPortBindings, decodeEndpoint, decodePortBindings, type PortBindings } from '../network/endpoint-request.js'
import type { EndpointRequest } from '../network/model.js'
import type { Platform } from '../image/platform.js'

/** What networking gets of a create: typed, never the body. */
export interface NetworkRequest {
  /** NetworkingConfig.EndpointsConfig, decoded, by network name or ID. */
  endpoints: Record<string, EndpointRequest>
  /** HostConfig.Links (--link target[:alias]). */
  links: string[]
  /** HostConfig.PortBindings, decoded (keyed port/proto). */
  portBindings: PortBindings
  /** HostConfig.PublishAllPorts (-P). */
  publishAll: boolean
}

export interface CreateRequest {
  /** Config as asked, before the image's defaults; config.image names the image ('' for none: refused at create). */
  config: ContainerConfig
  /** Config.MacAddress as given ('' for none): the address of the NetworkMode's endpoint (checked at create). */
  macAddress: string
  /** HostConfig's typed families, but the log driver. */
  settings: RequestedSettings
  /** HostConfig.LogConfig as given (type '' when it names none: json-file, or the daemon's default driver). */
  logConfig: { type: string, config: Record<string, string> }
  /** The mounts asked for (Binds, Mounts as given, VolumesFrom, VolumeDriver, Tmpfs targets). */
  mounts: MountRequestInputs
  network: NetworkRequest
  /**
   * The platform the image must be for (`platform=` of the create, API 1.41+); absent for none, when an image of
   * another platform than the host's is created with a warning.
   */
  platform?: Platform
}

function strings (v: unknown): string[] { return Array.isArray(v) ? v.map(String) : [] }

/** POST /containers/create's body (with its Go type checks and dockerd's wording) as a typed request. */
export function decodeCreateRequest (body: Record<string, unknown>): CreateRequest {
  const { config, hostConfig: hc, rawLogConfig } = decodeCreateBody(body)
  const nc = (body.NetworkingConfig ?? {}) as { EndpointsConfig?: Record<string, unknown> }
  const endpoints: Record<string, EndpointRequest> = {}
  for (const [name, ep] of Object.entries(nc.EndpointsConfig ?? {})) endpoints[name] = decodeEndpoint(ep)
  const pb = hc.PortBindings
  const lc = (rawLogConfig ?? {}) as { Type?: unknown, Config?: unknown }
  return {
    config: configOf(config),
    macAddress: typeof body.MacAddress === 'string' ? body.MacAddress : '',
    settings: withCreateDefaults(requestedSettingsOf(hc)),
    logConfig: {
      type: typeof lc.Type === 'string' ? lc.Type : '',
      config: lc.Config !== null && typeof lc.Config === 'object' ? { ...lc.Config as Record<string, string> } : {}
    },
    mounts: mountInputsOf(hc),
    network: {
      endpoints,
      links: strings(hc.Links),
      portBindings: decodePortBindings(pb !== null && typeof pb === 'object' ? pb as Record<string, unknown> : {}),
      publishAll: hc.PublishAllPorts === true
    }
  }
}

/** A request naming only its image, with dockerd's defaults for everything else: set typed fields from there. */
export function newCreateRequest (image: string): CreateRequest {
  return decodeCreateRequest({ Image: image })
}

/**
 * What a typed request mounts: `source:target[:mode]` binds and HostConfig.Mounts entries (typed), set in step in the
 * record's requests (inspect's Binds and Mounts) and in the inputs create resolves (lib/volumes parses the entries in
 * the API's shape, as a body gives them). Binds becomes the list given ([] as a body's `"Binds": []`); a request
 * that never calls it keeps dockerd's defaults (Binds null, no Mounts).
 */
export function setMounts (r: CreateRequest, binds: readonly string[], mounts: readonly MountRequest[]): void {
  const requests = { ...r.settings.mountRequests, binds: [...binds] }
  delete requests.mounts
  if (mounts.length > 0) requests.mounts = structuredClone([...mounts])
  r.settings.mountRequests = requests
  r.mounts.binds = [...binds]
  r.mounts.mounts = mounts.map(mountRequestWire)
}

/**
 * The ports a typed request publishes (keyed `port/proto`), checked as a body's are, set in step in the record's
 * requests (inspect's PortBindings, as asked) and in networking's request (checked, canonical).
 */
export function setPortBindings (r: CreateRequest, bindings: Readonly<PortBindings>): void {
  r.network.portBindings = checkPortBindings(bindings)
  r.settings.portRequests = { ...r.settings.portRequests, portBindings: structuredClone({ ...bindings }) }
}
