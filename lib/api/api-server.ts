// The Engine API's HTTP front: version prefix and checks, standard headers, dispatch to the route tables, and the
// one place errors become replies. Upgrade requests (attach/exec hijack) go through the same table.
import { type IncomingMessage, ServerResponse } from 'node:http'
import type { Duplex } from 'node:stream'
import type net from 'node:net'
import type tls from 'node:tls'
import type { RequestGuard } from '../http/tcp-guard.js'
import { Router, type Route } from '../http/router.js'
import { sendApiError, sendJson } from '../http/reply.js'
import { closeWhenOutputEnds } from '../http/linger.js'
import { takeOverWithoutUpgrade } from '../http/hijack.js'
import { failCutBody } from '../http/cut-body.js'
import { HttpListeners, formatAddress, replyToClientError, type ListenAddress, type ListenTarget } from '../http/listen.js'
import type { ConnectionLimits } from '../http/limits.js'
import { API_VERSION, MIN_API_VERSION, SERVER_HEADER, compareVersions } from './api-version.js'
import type { ApiContext, ApiHandler } from '../http/api-context.js'
import { levelLogger, logger } from '../log.js'
import { EngineError, describeError, isEngineError, statusOf } from '../errors.js'

const log = logger('engine:http')
const ops = levelLogger('engine')
/** The request log: one debug record per request (berth:engine:requests). */
const requests = logger('engine:requests')
const VERSION_PREFIX = /^\/v([0-9][0-9.]*)(\/.*)$/

export class ApiServer {
  readonly router = new Router<ApiHandler>()
  private readonly listeners: HttpListeners

  /** `limits`: connection caps and request timeouts (lib/http/limits.ts has the defaults). */
  constructor (limits?: ConnectionLimits) {
    this.listeners = new HttpListeners(limits === undefined ? {} : { limits })
  }

  get addresses (): ListenAddress[] { return this.listeners.addresses }

  /**
   * While the engine boots behind listeners already open: each request first awaits what `gate` returns for its path
   * (version prefix removed), or goes straight on when it returns null; a rejected wait is the request's error.
   * `hold(null)` lifts the gate.
   */
  hold (gate: ((path: string) => Promise<void> | null) | null): void { this.gate = gate }
  private gate: ((path: string) => Promise<void> | null) | null = null
  /** Directories made for Unix sockets' parents. */
  get createdDirs (): readonly string[] { return this.listeners.createdDirs }

  addRoutes (routes: ReadonlyArray<Route<ApiHandler>>): this {
    this.router.add(routes)
    return this
  }

  /**
   * Listens on one more address; each gets its own http.Server over the same routes. A TCP listener takes TLS
   * options (https) and a guard that may refuse a request before routing (Origin/Host checks).
   */
  async listen (addr: ListenTarget, o: { tls?: tls.TlsOptions, guard?: RequestGuard, group?: number } = {}): Promise<ListenAddress> {
    const guard = o.guard ?? null
    const bound = await this.listeners.listen(addr, (server) => {
      server.on('request', (req: IncomingMessage, res: ServerResponse) => { void this.dispatch(req, res, null, guard) })
      server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => { this.onUpgrade(req, socket, head, guard) })
      // attach and exec start take the connection over also without an Upgrade header, as dockerd does
      takeOverWithoutUpgrade(server, (req, body) => this.takesOver(req, body))
      server.on('clientError', serverOnClientError)
      // a TLS handshake that fails (no client certificate, wrong CA) ends there; nothing to answer
      server.on('tlsClientError', (err: Error) => { log('TLS handshake failed: %s', err.message) })
    }, o.tls, o.group !== undefined ? { group: o.group } : {})
    log('listening on %s', formatAddress(bound))
    return bound
  }

  async close (): Promise<void> { await this.listeners.close() }

  /** Whether `req` (no Upgrade header) is for a route that takes its connection over (Route.takesOver). */
  private takesOver (req: IncomingMessage, body: () => Buffer | null): boolean {
    const url = req.url ?? '/'
    const q = url.indexOf('?')
    const path = q === -1 ? url : url.slice(0, q)
    const vm = VERSION_PREFIX.exec(path)
    const takesOver = this.router.takesOverOf(req.method ?? 'GET', vm === null ? path : vm[2] as string)
    return takesOver !== undefined && takesOver(body())
  }

  private onUpgrade (req: IncomingMessage, socket: Duplex, head: Buffer, guard: RequestGuard | null): void {
    // A ServerResponse bound to the raw socket lets every non-hijack route answer normally.
    const res = new ServerResponse(req)
    res.shouldKeepAlive = false
    res.assignSocket(socket as net.Socket)
    res.on('finish', () => { socket.end() })
    socket.on('error', (err) => { log('upgraded socket error: %s', err.message) })
    closeWhenOutputEnds(socket as net.Socket)
    void this.dispatch(req, res, { socket, head }, guard)
  }

  private async dispatch (req: IncomingMessage, res: ServerResponse, upgrade: ApiContext['upgrade'], guard: RequestGuard | null): Promise<void> {
    const method = req.method ?? 'GET'
    const refused = guard?.(req) ?? null
    if (refused !== null) {
      log('%s %s refused: %s', method, req.url, refused)
      res.shouldKeepAlive = false
      sendJson(res, 403, { message: refused })
      return
    }
    const rawUrl = req.url ?? '/'
    const q = rawUrl.indexOf('?')
    let path = q === -1 ? rawUrl : rawUrl.slice(0, q)
    const query = new URLSearchParams(q === -1 ? '' : rawUrl.slice(q + 1))
    let version = API_VERSION
    let explicitVersion = false
    const vm = VERSION_PREFIX.exec(path)
    if (vm !== null) {
      version = vm[1] as string
      path = vm[2] as string
      explicitVersion = true
    }
    const wait = this.gate?.(path) ?? null
    if (wait !== null) {
      try { await wait } catch (err) { sendApiError(res, err); return }
    }
    if (method === 'OPTIONS') {
      // dockerd answers 200 to any OPTIONS (a CORS leftover); here only for a path the API has, and never with
      // CORS headers: a browser's preflight carries Origin and was refused above on TCP
      const known = ['GET', 'POST', 'PUT', 'DELETE', 'HEAD'].some((m) => this.router.match(m, path) !== null)
      if (!known) { sendJson(res, 404, { message: 'page not found' }); return }
      res.writeHead(200, { 'Content-Length': 0, Allow: ['GET', 'POST', 'PUT', 'DELETE', 'HEAD'].filter((m) => this.router.match(m, path) !== null).join(', ') })
      res.end()
      return
    }
    const match = this.router.match(method, path)
    if (match === null) {
      sendJson(res, 404, { message: 'page not found' })
      return
    }
    res.setHeader('Api-Version', API_VERSION)
    res.setHeader('Ostype', 'linux')
    res.setHeader('Server', SERVER_HEADER)
    if (explicitVersion) {
      if (compareVersions(version, API_VERSION) > 0) {
        sendJson(res, 400, { message: `client version ${version} is too new. Maximum supported API version is ${API_VERSION}` })
        return
      }
      if (compareVersions(version, MIN_API_VERSION) < 0) {
        const text = `client version ${version} is too old. Minimum supported API version is ${MIN_API_VERSION}, please upgrade your client to a newer version\n`
        res.writeHead(400, { 'Content-Type': 'text/plain; charset=utf-8', 'X-Content-Type-Options': 'nosniff', 'Content-Length': Buffer.byteLength(text) })
        res.end(text)
        return
      }
    }
    res.setHeader('Docker-Experimental', 'false')
    const ctx = new RequestContext(req, res, match.params, query, version, upgrade)
    res.once('close', () => { if (!res.writableFinished) ctx.clientGone() })
    if (requests.enabled) logRequest(req, res, method, rawUrl)
    try {
      await match.handler(ctx)
    } catch (err) {
      // a client gone mid-request surfaces as its stream's own error ('aborted', a reset) in whatever read the body:
      // that is a cancellation, not a failure of the daemon
      const status = ctx.gone && !isEngineError(err) ? statusOf(new EngineError('canceled', 'the client went away')) : statusOf(err)
      // dockerd's wording; a failed change (not a failed look-up) is worth the operator's attention too
      if (status >= 500) ops.error('Handler for %s %s returned error: %s', method, path, describeError(err))
      else if (method !== 'GET' && method !== 'HEAD' && status !== 304) ops.info('%s %s: %d %s', method, path, status, describeError(err))
      log('%s %s → %d: %O', method, rawUrl, status, err)
      if (ctx.gone) return
      sendApiError(res, err)
    }
  }
}

/**
 * One request's ApiContext. A class, not an object literal: a literal with a getter gets a hidden class of its own
 * each time it is made (kept in the old generation until a full collection: at a few thousand requests a second that
 * was a mark-compact every second and most of a _ping's CPU). The abort signal is made on first use (most handlers
 * never ask, and an AbortController costs more than the rest of a _ping); a client gone before then finds it aborted.
 */
class RequestContext implements ApiContext {
  readonly req: IncomingMessage
  readonly res: ServerResponse
  readonly params: Record<string, string>
  readonly query: URLSearchParams
  readonly version: string
  readonly upgrade: ApiContext['upgrade']
  gone = false
  private ac: AbortController | null = null

  constructor (req: IncomingMessage, res: ServerResponse, params: Record<string, string>, query: URLSearchParams, version: string, upgrade: ApiContext['upgrade']) {
    this.req = req
    this.res = res
    this.params = params
    this.query = query
    this.version = version
    this.upgrade = upgrade
  }

  get signal (): AbortSignal {
    if (this.ac === null) { this.ac = new AbortController(); if (this.gone) this.ac.abort() }
    return this.ac.signal
  }

  /** The client went away before the reply was finished. */
  clientGone (): void {
    this.gone = true
    this.ac?.abort()
  }
}

function serverOnClientError (err: NodeJS.ErrnoException, socket: Duplex): void {
  log('client error: %s', err.message)
  // a body cut by the client's FIN: the route answers (invalid JSON, or the upload's 499), as dockerd's handler does
  if (failCutBody(err, socket)) return
  replyToClientError(err, socket)
}

/** One line per request once answered: method, path, status, bytes sent, duration, client. */
function logRequest (req: IncomingMessage, res: ServerResponse, method: string, url: string): void {
  // hrtime, not performance.now(): the first use of the global `performance` loads perf_hooks (at the first request)
  const t0 = process.hrtime.bigint()
  const socket = req.socket
  const before = socket.bytesWritten
  const client = socket.remoteAddress !== undefined ? `${socket.remoteAddress.replace(/^::ffff:(?=\d+\.)/, '')}:${socket.remotePort ?? ''}` : 'unix socket'
  res.once('close', () => {
    requests('%s %s %d %d bytes %s ms client=%s agent=%s', method, url, res.statusCode, socket.bytesWritten - before,
      (Number(process.hrtime.bigint() - t0) / 1e6).toFixed(1), client, JSON.stringify(req.headers['user-agent'] ?? ''))
  })
}
