// The registry's HTTP front: one table for the Hub API, the deprecation states and the OCI distribution API on the
// same listener. It finds the route, resolves the caller's identity, adds the standard and deprecation headers, and
// is the one place errors become replies (per surface: distribution, Hub or token server).
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Duplex } from 'node:stream'
import { hostname } from 'node:os'
import { Router, type Route } from '../http/router.js'
import { HttpListeners, formatAddress, replyToClientError, type ListenAddress } from '../http/listen.js'
import type { ConnectionLimits } from '../http/limits.js'
import { failCutBody } from '../http/cut-body.js'
import { closeAfterReply } from '../http/linger.js'
import { sendJson } from '../http/reply.js'
import { invalidArgument, isEngineError, notFound, statusOf, errorMessage, type EngineError } from '../errors.js'
import { levelLogger, logger } from '../log.js'
import { ANONYMOUS } from './auth/authority.js'
import { INVALID_TOKEN } from './auth/jwt.js'
import { registryError, registryErrorBody } from './codes.js'
import type { RegistryContext, RegistryCore, RegistryRoute, Surface } from './context.js'
import { setStateHeaders } from './state-headers.js'
import { HELPER_BYTES } from './storage/blob-sender.js'
import { holdChunkedBody, releaseBody } from './storage/upload-handover.js'

const log = logger('registry:http')
/** The access log: one info record per request (berth:registry:access:info). */
const access = levelLogger('registry:access')
const HOST_RE = /^[A-Za-z0-9.-]+(?::\d{1,5})?$|^\[[0-9A-Fa-f:.]+\](?::\d{1,5})?$/
const HUB_PREFIX = /^\/(?:v1\/|v2\/(?:namespaces|repositories|auth|users|deprecations)(?:\/|$))/

export const API_VERSION_HEADER = 'Docker-Distribution-API-Version'

/** The surface of a path before routing, for errors raised before a route is known. */
function surfaceOf (path: string): Surface {
  if (path === '/token') return 'token'
  return HUB_PREFIX.test(path) ? 'hub' : 'distribution'
}

export class RegistryServer {
  readonly router = new Router<RegistryRoute>()
  private readonly core: RegistryCore
  private readonly listeners: HttpListeners

  /** `limits`: connection caps and request timeouts (lib/http/limits.ts has the defaults). */
  constructor (core: RegistryCore, limits?: ConnectionLimits) {
    this.core = core
    this.listeners = new HttpListeners({
      ...(limits !== undefined ? { limits } : {}),
      timeoutReply: (res, message) => {
        res.setHeader('Connection', 'close')
        sendJson(res, 408, { errors: [{ code: 'UNKNOWN', message, detail: {} }] })
      }
    })
  }

  get addresses (): ListenAddress[] { return this.listeners.addresses }

  addRoutes (routes: ReadonlyArray<Route<RegistryRoute>>): this {
    this.router.add(routes)
    return this
  }

  async listen (addr: ListenAddress): Promise<ListenAddress> {
    const bound = await this.listeners.listen(addr, (server) => {
      server.on('request', (req: IncomingMessage, res: ServerResponse) => { void this.dispatch(req, res) })
      server.on('clientError', serverOnClientError)
    })
    log('listening on %s', formatAddress(bound))
    return bound
  }

  async close (): Promise<void> { await this.listeners.close() }


  /** scheme://host of the request, from the publicUrl setting, else the Host header, else the bound address. */
  private baseOf (req: IncomingMessage): string {
    const configured = this.core.settings.publicUrl
    if (configured !== undefined) return configured.replace(/\/+$/, '')
    const host = req.headers.host
    if (host !== undefined && HOST_RE.test(host)) return `http://${host}`
    const a = this.addresses.find((x) => x.kind === 'tcp')
    if (a !== undefined && a.kind === 'tcp') return `http://${a.host.includes(':') ? `[${a.host}]` : a.host}:${a.port}`
    return 'http://localhost'
  }

  /**
   * The token endpoint WWW-Authenticate names: --realm, else <public URL>/token, else this registry's first TCP
   * listener (this machine's name for a wildcard address). Never the request's Host header: a client that sends
   * `Host: evil.example` must not be told to take its credentials there.
   */
  private realm (): string {
    const s = this.core.settings
    if (s.realm !== undefined) return s.realm
    if (s.publicUrl !== undefined) return `${s.publicUrl.replace(/\/+$/, '')}/token`
    const a = this.addresses.find((x) => x.kind === 'tcp')
    if (a === undefined || a.kind !== 'tcp') return 'http://localhost/token'
    const host = a.host === '0.0.0.0' || a.host === '::' || a.host === '' ? hostname() : a.host.includes(':') ? `[${a.host}]` : a.host
    return `http://${host}:${a.port}/token`
  }

  private async dispatch (req: IncomingMessage, res: ServerResponse): Promise<void> {
    const method = req.method ?? 'GET'
    const rawUrl = req.url ?? '/'
    const q = rawUrl.indexOf('?')
    const path = q === -1 ? rawUrl : rawUrl.slice(0, q)
    const query = new URLSearchParams(q === -1 ? '' : rawUrl.slice(q + 1))
    const surface = surfaceOf(path)
    // a chunked upload body the storage may take from the connection: held now, while Node's parser is in the read
    // that ended its head (storage/upload-handover.ts); the upload route hands it over or releases it
    if (method !== 'GET' && method !== 'HEAD' && this.core.store.driver.receivesBodies === true && path.includes('/blobs/uploads/') &&
      req.headers['transfer-encoding']?.toLowerCase() === 'chunked') holdChunkedBody(req, this.core.settings.bodyIdleTimeout)
    if (surface === 'distribution') res.setHeader(API_VERSION_HEADER, 'registry/2.0')
    if (access.info.enabled) logAccess(req, res, method, rawUrl)
    // No valid name, tag, digest or upload id needs %-encoding: refusing '%' keeps `%2F` and `%2E%2E` from ever
    // turning into path separators or dot segments after decoding.
    if (path.includes('%')) {
      const err = surface === 'distribution'
        ? registryError('NAME_INVALID', { message: 'invalid repository name: percent-encoded characters are not allowed in paths', detail: { path } })
        : invalidArgument('percent-encoded characters are not allowed in paths')
      writeError(res, surface, err, this.core, this.realm(), false)
      return
    }
    let match = this.router.match(method, path)
    if (match === null && path.endsWith('/') && path.length > 1) match = this.router.match(method, path.slice(0, -1))
    if (match === null) {
      const err = surface === 'distribution'
        ? registryError('UNSUPPORTED', { kind: 'not-found', message: 'page not found', detail: { method, path } })
        : notFound('404: Page Not Found')
      writeError(res, surface, err, this.core, this.realm(), false)
      return
    }
    const route = match.handler
    const ac = new AbortController()
    res.once('close', () => { if (!res.writableFinished) ac.abort() })
    const ctx: RegistryContext = {
      req, res, params: match.params, query, path, base: this.baseOf(req), identity: ANONYMOUS, core: this.core, signal: ac.signal, route
    }
    if (route.states !== undefined) setStateHeaders(ctx)
    try {
      ctx.identity = this.core.authority.identify(req.headers.authorization)
      await route.handle(ctx)
    } catch (err) {
      const status = statusOf(err)
      if (status >= 500) log('%s %s: %O', method, rawUrl, err)
      else log('%s %s → %d %s', method, rawUrl, status, errorMessage(err))
      if (ac.signal.aborted) return
      writeError(res, route.surface, err, this.core, this.realm(), ctx.identity.token)
    } finally {
      releaseBody(req) // a held body the route did not read: Node reads (and drops) it as for any unread body
    }
  }
}

function quote (s: string): string { return `"${s.replace(/["\\]/g, '\\$&')}"` }

interface ScopeDetail { Type: string, Name: string, Action: string }

function isScopeDetail (d: unknown): d is ScopeDetail[] {
  return Array.isArray(d) && d.length > 0 && d.every((x) => typeof x === 'object' && x !== null && typeof (x as ScopeDetail).Name === 'string')
}

/** `WWW-Authenticate: Bearer realm,service[,scope][,error]` as Docker's token spec has it. */
export function challenge (core: RegistryCore, realm: string, err: EngineError, tokenPresented: boolean): string {
  let v = `Bearer realm=${quote(realm)},service=${quote(core.authority.service)}`
  if (isScopeDetail(err.detail)) {
    const byName = new Map<string, string[]>()
    for (const d of err.detail) {
      const key = `${d.Type}:${d.Name}`
      const acts = byName.get(key) ?? []
      if (!acts.includes(d.Action)) acts.push(d.Action)
      byName.set(key, acts)
    }
    v += `,scope=${quote([...byName].map(([k, a]) => `${k}:${a.join(',')}`).join(' '))}`
    if (tokenPresented) v += ',error="insufficient_scope"'
  } else if (err.code === INVALID_TOKEN) {
    v += ',error="invalid_token"'
  }
  return v
}

/** The one place registry errors become replies. */
export function writeError (res: ServerResponse, surface: Surface, err: unknown, core: RegistryCore, realm: string, tokenPresented: boolean): void {
  if (res.headersSent) {
    res.destroy(err instanceof Error ? err : undefined)
    return
  }
  const status = statusOf(err)
  if (status === 429 && isEngineError(err)) {
    const after = (err.detail as { retryAfter?: unknown } | undefined)?.retryAfter
    res.setHeader('Retry-After', String(typeof after === 'number' && after > 0 ? Math.ceil(after) : 1))
  }
  if (status === 401 && isEngineError(err) && core.authority.mode === 'token') {
    res.setHeader('WWW-Authenticate', challenge(core, realm, err, tokenPresented))
  }
  let body: unknown
  if (surface === 'distribution') {
    body = registryErrorBody(err)
  } else if (surface === 'token') {
    body = { details: isEngineError(err) ? err.message : 'internal error' }
  } else {
    body = hubErrorBody(err)
  }
  // a failed upload may leave request bytes unread; do not reuse the connection for them, nor reset it under a
  // client still sending them before it read this reply
  if (!res.req.complete) closeAfterReply(res)
  sendJson(res, status, body)
}

/** Hub error shape `{message, detail, errinfo}`; query validation errors add the ValueError fields `{fields, text}`. */
export function hubErrorBody (err: unknown): Record<string, unknown> {
  if (!isEngineError(err)) return { message: 'internal error', detail: 'internal error', errinfo: {} }
  const detail = err.detail
  const out: Record<string, unknown> = { message: err.message, errinfo: {} }
  if (typeof detail === 'object' && detail !== null && !Array.isArray(detail)) {
    const d = detail as Record<string, unknown>
    if (d.fields !== undefined) { out.fields = d.fields; out.text = err.message }
    out.errinfo = d.errinfo ?? d
    out.detail = typeof d.detail === 'string' ? d.detail : err.message
  } else {
    out.detail = typeof detail === 'string' ? detail : err.message
  }
  return out
}

function serverOnClientError (err: NodeJS.ErrnoException & { rawPacket?: Buffer }, socket: Duplex): void {
  // a FIN in the middle of a request body: the route answers (distribution's 499 UNKNOWN "client disconnected")
  if (failCutBody(err, socket)) { log('request body cut short by the client'); return }
  // a TLS handshake on this plain HTTP listener is a client probing for HTTPS first (the docker CLI and Berth's
  // engine do so with insecure registries): expected, not worth more than a debug line
  if (err.rawPacket?.[0] === 0x16) log('TLS handshake on a plain HTTP listener (a client probing for HTTPS): closed')
  else log('client error: %s', err.message)
  replyToClientError(err, socket)
}

/** One access line per request once answered: client, request line, status, bytes, duration, user, agent. */
function logAccess (req: IncomingMessage, res: ServerResponse, method: string, url: string): void {
  const t0 = performance.now()
  const socket = req.socket
  const before = socket.bytesWritten
  res.once('close', () => {
    const client = (socket.remoteAddress ?? 'unix').replace(/^::ffff:(?=\d+\.)/, '')
    const bytes = socket.bytesWritten - before + ((res as ServerResponse & { [HELPER_BYTES]?: number })[HELPER_BYTES] ?? 0)
    access.info('%s "%s %s HTTP/%s" %d %d %sms %s', client, method, url, req.httpVersion, res.statusCode, bytes,
      (performance.now() - t0).toFixed(1), JSON.stringify(req.headers['user-agent'] ?? ''))
  })
}
