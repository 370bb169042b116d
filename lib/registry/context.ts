// What a registry route handler gets, and what the route table holds.
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Authority, Identity } from './auth/authority.js'
import type { RouteState } from './deprecation.js'
import type { RegistryStore } from './storage/registry-store.js'
import type { UploadSessions } from './uploads.js'

/** Which error shape a route answers with: distribution `{"errors":[…]}`, Hub `{message,detail,errinfo}`, token server `{details}`. */
export type Surface = 'distribution' | 'hub' | 'token'

export interface RegistrySettings {
  /** Largest manifest accepted (bytes). */
  maxManifestSize: number
  /** Largest blob accepted (bytes); uploads stop before writing past it. */
  maxBlobSize: number
  /** Token endpoint advertised in WWW-Authenticate; default <publicUrl>/token, else the first TCP listener's. */
  realm: string | undefined
  /** Base URL for absolute links (Hub pagination, Link headers); default from the Host header. */
  publicUrl: string | undefined
  /** Milliseconds a request body may send nothing (the listeners' bodyIdleTimeout), for bodies read off the loop. */
  bodyIdleTimeout: number
}

/** The narrow backend the routes need. */
export interface RegistryCore {
  store: RegistryStore
  uploads: UploadSessions
  authority: Authority
  settings: RegistrySettings
}

export interface RegistryContext {
  req: IncomingMessage
  res: ServerResponse
  /** Path parameters, %-decoded (the dispatcher refuses '%' in paths, so they are as sent). */
  params: Record<string, string>
  query: URLSearchParams
  path: string
  /** scheme://host[:port] of this registry as the client reached it, for absolute URLs. */
  base: string
  identity: Identity
  core: RegistryCore
  signal: AbortSignal
  route: RegistryRoute
}

export type RegistryHandler = (ctx: RegistryContext) => Promise<void>

export interface RegistryRoute {
  surface: Surface
  handle: RegistryHandler
  /** Deprecation or removal states of this route, one per method ('*' for all). */
  states?: readonly RouteState[]
}

/** A route table entry's handler for one surface (the surface picks the error shape). */
export function onSurface (surface: Surface): (handle: RegistryHandler) => RegistryRoute {
  return (handle) => ({ surface, handle })
}
