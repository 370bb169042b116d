// A small HTTP client on node:http/https for registry traffic: keep-alive agents (idle sockets do not hold the
// process), redirects followed without carrying Authorization to another host, plain HTTP only where the caller's
// policy allows it, an AbortSignal that tears down request and response, an idle timeout, and network errors worded
// the way Go's client words them (the texts Docker users know).
import http, { type IncomingHttpHeaders, type IncomingMessage } from 'node:http'
import https from 'node:https'
import { EngineError, internal, tooLarge } from '../errors.js'
import { logger } from '../log.js'

const log = logger('engine:distribution:http')

export interface RequestOptions {
  method?: string
  headers?: Record<string, string>
  /** Buffered, so it can be resent after a redirect or on a stale keep-alive socket. */
  body?: Buffer
  signal?: AbortSignal
  /** How many redirects to follow (default 10); 0 returns the 3xx response itself. */
  redirects?: number
  /** Verify TLS certificates (default true). */
  tlsVerify?: boolean
  /** Idle time allowed on the socket, in milliseconds (default 60 s). */
  idleTimeoutMs?: number
}

export interface HttpResponse {
  method: string
  status: number
  headers: IncomingHttpHeaders
  /** The URL that answered, after redirects. */
  url: URL
  body: IncomingMessage
}

/** Network-level failure (no HTTP status): connection refused, reset, TLS, DNS, timeout, premature close. */
export class TransportError extends EngineError {
  readonly errno: string | undefined
  readonly retryable: boolean
  constructor (message: string, errno: string | undefined, retryable: boolean, cause: unknown) {
    super('internal', message, { cause })
    this.errno = errno
    this.retryable = retryable
  }
}

const RETRYABLE_ERRNO = new Set(['ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'ECONNABORTED', 'EAI_AGAIN', 'ERR_STREAM_PREMATURE_CLOSE', 'UND_ERR_SOCKET', 'ENETUNREACH', 'EHOSTUNREACH'])

/** Go's method spelling in error texts: `Get "https://…": …`. */
export function goMethod (method: string): string {
  return method.charAt(0) + method.slice(1).toLowerCase()
}

/** Describes a socket-level error as Go's net/http would. */
export function describeNetworkError (err: unknown, url: URL): string {
  const e = err as NodeJS.ErrnoException & { hostname?: string, address?: string, port?: number }
  switch (e.code) {
    case 'ENOTFOUND': return `dial tcp: lookup ${url.hostname}: no such host`
    case 'EAI_AGAIN': return `dial tcp: lookup ${url.hostname}: temporary failure in name resolution`
    case 'ECONNREFUSED': return `dial tcp ${e.address ?? url.hostname}:${e.port ?? url.port}: connect: connection refused`
    case 'ECONNRESET': return e.message === 'aborted' ? 'unexpected EOF' : 'read: connection reset by peer'
    case 'ETIMEDOUT': return 'net/http: timeout awaiting response'
    case 'EHOSTUNREACH': return `dial tcp ${url.host}: connect: no route to host`
    case 'ENETUNREACH': return `dial tcp ${url.host}: connect: network is unreachable`
    default:
      if (typeof e.code === 'string' && (e.code.startsWith('ERR_SSL') || e.code.includes('CERT') || e.code === 'DEPTH_ZERO_SELF_SIGNED_CERT')) {
        return `tls: ${e.message}`
      }
      return e.message ?? String(err)
  }
}

function abortReason (signal: AbortSignal): Error {
  const r = signal.reason as unknown
  if (r instanceof EngineError) return r
  return new EngineError('canceled', 'operation canceled', { cause: r })
}

export interface HttpClientOptions {
  /** May this host (`name[:port]`) be spoken to over plain HTTP? */
  allowHttp: (host: string) => boolean
  userAgent?: string
}

export class HttpClient {
  private readonly httpAgent = new http.Agent({ keepAlive: true, maxSockets: 32, timeout: 30_000 })
  private readonly httpsAgent = new https.Agent({ keepAlive: true, maxSockets: 32, timeout: 30_000 })
  private readonly insecureAgent = new https.Agent({ keepAlive: true, maxSockets: 32, timeout: 30_000, rejectUnauthorized: false })
  private readonly o: HttpClientOptions

  constructor (o: HttpClientOptions) { this.o = o }

  allowHttp (host: string): boolean { return this.o.allowHttp(host) }

  /** Sends a request; resolves with the response once its headers arrive (redirects already followed). */
  async request (url: URL, o: RequestOptions = {}): Promise<HttpResponse> {
    let current = url
    let method = (o.method ?? 'GET').toUpperCase()
    let headers = { ...o.headers }
    let body = o.body
    const maxRedirects = o.redirects ?? 10
    for (let hop = 0; ; hop++) {
      const res = await this.once(current, method, headers, body, o)
      const location = res.headers.location
      if (![301, 302, 303, 307, 308].includes(res.status) || location === undefined || hop >= maxRedirects || maxRedirects === 0) return res
      res.body.resume()
      const next = new URL(location, current)
      if (next.protocol !== 'https:' && next.protocol !== 'http:') throw internal(`${goMethod(method)} "${current.href}": redirect to unsupported URL ${next.href}`)
      if (next.host !== current.host || next.protocol !== current.protocol) {
        // credentials are for the registry, not for whoever it redirects to (a CDN, an object store)
        const { authorization: _a, Authorization: _b, ...rest } = headers as Record<string, string>
        headers = rest
      }
      if (res.status === 303 || ((res.status === 301 || res.status === 302) && method === 'POST')) {
        method = method === 'HEAD' ? 'HEAD' : 'GET'
        body = undefined
        const { 'Content-Type': _c, 'Content-Length': _d, ...rest } = headers
        headers = rest
      }
      log('%s %s → %d, following to %s', method, current.href, res.status, next.href)
      current = next
    }
  }

  private async once (url: URL, method: string, headers: Record<string, string>, body: Buffer | undefined, o: RequestOptions, retried = false): Promise<HttpResponse> {
    if (url.protocol === 'http:' && !this.o.allowHttp(url.host)) {
      throw internal(`${goMethod(method)} "${url.href}": refusing plain HTTP to ${url.host}; HTTPS is required unless the registry is on loopback or listed with --insecure-registry`)
    }
    const signal = o.signal
    if (signal?.aborted === true) throw abortReason(signal)
    const isHttps = url.protocol === 'https:'
    const agent = isHttps ? (o.tlsVerify === false ? this.insecureAgent : this.httpsAgent) : this.httpAgent
    const h: Record<string, string> = { 'User-Agent': this.o.userAgent ?? 'berth', ...headers }
    if (body !== undefined) h['Content-Length'] = String(body.length)
    else if (method === 'PUT' || method === 'POST' || method === 'PATCH') h['Content-Length'] ??= '0'
    return await new Promise<HttpResponse>((resolve, reject) => {
      const req = (isHttps ? https : http).request(url, { method, headers: h, agent })
      let settled = false
      let response: IncomingMessage | null = null
      const onAbort = (): void => {
        const err = abortReason(signal as AbortSignal)
        req.destroy(err)
        response?.destroy(err)
      }
      const cleanup = (): void => { signal?.removeEventListener('abort', onAbort) }
      signal?.addEventListener('abort', onAbort, { once: true })
      req.setTimeout(o.idleTimeoutMs ?? 60_000, () => {
        const err = Object.assign(new Error('timeout'), { code: 'ETIMEDOUT' })
        req.destroy(err)
        response?.destroy(err)
      })
      req.on('error', (err: NodeJS.ErrnoException) => {
        if (settled) return
        settled = true
        cleanup()
        if (signal?.aborted === true) { reject(abortReason(signal)); return }
        // a keep-alive socket the server closed while idle: resend once on a fresh connection
        if (!retried && req.reusedSocket && (err.code === 'ECONNRESET' || err.code === 'EPIPE')) {
          this.once(url, method, headers, body, o, true).then(resolve, reject)
          return
        }
        reject(new TransportError(`${goMethod(method)} "${url.href}": ${describeNetworkError(err, url)}`, err.code, RETRYABLE_ERRNO.has(err.code ?? ''), err))
      })
      req.on('response', (res: IncomingMessage) => {
        settled = true
        response = res
        res.once('close', cleanup)
        res.once('end', cleanup)
        resolve({ method, status: res.statusCode ?? 0, headers: res.headers, url, body: res })
      })
      req.end(body)
    })
  }

  /** Closes idle keep-alive connections. */
  close (): void {
    this.httpAgent.destroy()
    this.httpsAgent.destroy()
    this.insecureAgent.destroy()
  }
}

/** Reads a whole (small) response body, refusing more than `limit` bytes. */
export async function readBody (res: HttpResponse, limit: number): Promise<Buffer> {
  const declared = Number(res.headers['content-length'] ?? NaN)
  if (declared > limit) {
    res.body.destroy()
    throw tooLarge(`response from ${res.url.href} is too large: ${declared} bytes (limit ${limit})`)
  }
  const chunks: Buffer[] = []
  let size = 0
  try {
    for await (const c of res.body as AsyncIterable<Buffer>) {
      size += c.length
      if (size > limit) {
        res.body.destroy()
        throw tooLarge(`response from ${res.url.href} is too large (limit ${limit} bytes)`)
      }
      chunks.push(c)
    }
  } catch (err) {
    if (err instanceof EngineError) throw err
    throw new TransportError(`${goMethod(res.method)} "${res.url.href}": ${describeNetworkError(err, res.url)}`, (err as NodeJS.ErrnoException).code, true, err)
  }
  return Buffer.concat(chunks, size)
}

/** Discards a response body we do not need (the socket goes back to the pool once it is read). */
export function discard (res: HttpResponse): void {
  res.body.resume()
}
