// The Engine API's HTTP front: version prefix and checks, standard headers, dispatch to the route tables, and the
// one place errors become replies. Upgrade requests (attach/exec hijack) go through the same table.
import { type IncomingMessage, ServerResponse } from 'node:http'
import type { Duplex } from 'node:stream'
import type net from 'node:net'
import { Router, type Route } from '../http/router.js'
import { sendApiError, sendJson } from '../http/reply.js'
import { HttpListeners, replyToClientError, type ListenAddress } from '../http/listen.js'
import type { ConnectionLimits } from '../http/limits.js'
import { API_VERSION, MIN_API_VERSION, SERVER_HEADER, compareVersions } from './api-version.js'
import type { ApiContext, ApiHandler } from '../http/api-context.js'
import { logger } from '../log.js'
import { statusOf } from '../errors.js'

const log = logger('engine:http')
const VERSION_PREFIX = /^\/v([0-9][0-9.]*)(\/.*)$/

export class ApiServer {
  readonly router = new Router<ApiHandler>()
  private readonly listeners: HttpListeners

  /** `limits`: connection caps and request timeouts (lib/http/limits.ts has the defaults). */
  constructor (limits?: ConnectionLimits) {
    this.listeners = new HttpListeners(limits === undefined ? {} : { limits })
  }

  get addresses (): ListenAddress[] { return this.listeners.addresses }

  addRoutes (routes: ReadonlyArray<Route<ApiHandler>>): this {
    this.router.add(routes)
    return this
  }

  /** Listens on one more address; each gets its own http.Server over the same routes. */
  async listen (addr: ListenAddress): Promise<ListenAddress> {
    const bound = await this.listeners.listen(addr, (server) => {
      server.on('request', (req: IncomingMessage, res: ServerResponse) => { void this.dispatch(req, res, null) })
      server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => { this.onUpgrade(req, socket, head) })
      server.on('clientError', serverOnClientError)
    })
    log('listening on %o', bound)
    return bound
  }

  async close (): Promise<void> { await this.listeners.close() }

  private onUpgrade (req: IncomingMessage, socket: Duplex, head: Buffer): void {
    // A ServerResponse bound to the raw socket lets every non-hijack route answer normally.
    const res = new ServerResponse(req)
    res.shouldKeepAlive = false
    res.assignSocket(socket as net.Socket)
    res.on('finish', () => { socket.end() })
    socket.on('error', (err) => { log('upgraded socket error: %s', err.message) })
    void this.dispatch(req, res, { socket, head })
  }

  private async dispatch (req: IncomingMessage, res: ServerResponse, upgrade: ApiContext['upgrade']): Promise<void> {
    const method = req.method ?? 'GET'
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
    if (method === 'OPTIONS') {
      res.writeHead(200, { 'Content-Length': 0 })
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
    const ac = new AbortController()
    res.once('close', () => { if (!res.writableFinished) ac.abort() })
    const ctx: ApiContext = { req, res, params: match.params, query, version, upgrade, signal: ac.signal }
    if (log.enabled) {
      const t0 = performance.now()
      res.once('finish', () => { log('%s %s → %d (%d ms)', method, rawUrl, res.statusCode, Math.round(performance.now() - t0)) })
    }
    try {
      await match.handler(ctx)
    } catch (err) {
      const status = statusOf(err)
      if (status >= 500) log('%s %s: %O', method, rawUrl, err)
      else log('%s %s → %d %s', method, rawUrl, status, (err as Error).message)
      if (ac.signal.aborted) return
      sendApiError(res, err)
    }
  }
}

function serverOnClientError (err: NodeJS.ErrnoException, socket: Duplex): void {
  log('client error: %s', err.message)
  replyToClientError(err, socket)
}
