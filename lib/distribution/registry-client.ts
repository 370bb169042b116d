// One repository on one registry, for one operation: finds the endpoint (HTTPS, or plain HTTP where allowed),
// answers the /v2/ challenge (Bearer token for the operation's scopes, a client-supplied registry token, or Basic),
// renews the token when it expires or the registry asks for more scope, and speaks the OCI distribution API
// (manifests, blobs, uploads, tags). Digests of manifests are verified here; blob bodies are verified by the caller,
// who streams them.
import { createHash } from 'node:crypto'
import { EngineError, internal, invalidArgument, unauthorized } from '../errors.js'
import { logger } from '../log.js'
import { type AuthConfig, basicAuthHeader } from './auth-config.js'
import { parseChallenges, type Challenge } from './challenge.js'
import { endpointsFor, type Endpoint } from './endpoint.js'
import { discard, goMethod, readBody, TransportError, type HttpClient, type HttpResponse } from './http-client.js'
import { MANIFEST_ACCEPT } from '../image/media-types.js'
import { credentialsRefused, registryError } from './registry-error.js'
import { fetchToken, type Token } from './token.js'
import { parseJson } from '../util/json-depth.js'

const log = logger('engine:distribution')

export const MAX_MANIFEST_SIZE = 8 * 1024 * 1024

export interface RegistryClientOptions {
  http: HttpClient
  /** Endpoints that answered before, per reference domain (shared across operations). */
  endpointCache: Map<string, Endpoint>
  /** A fixed endpoint (a registry mirror), instead of the domain's (and its cache). */
  endpoint?: Endpoint
  insecureRegistries: readonly string[]
  domain: string
  /** Repository path, e.g. library/busybox. */
  path: string
  auth: AuthConfig
  /** e.g. ['pull'] or ['pull', 'push'] */
  actions: string[]
  /** More scopes to ask for (cross-repository mounts need pull on the source). */
  extraScopes?: string[]
  signal?: AbortSignal
}

type Authz =
  | { kind: 'none' }
  | { kind: 'basic', header: string }
  | { kind: 'fixed', header: string }
  | { kind: 'bearer', challenge: Challenge, token: Token }

export interface SendOptions {
  headers?: Record<string, string>
  body?: Buffer
  signal?: AbortSignal
  redirects?: number
}

export interface FetchedManifest { bytes: Buffer, contentType: string, digest: string }

function sha256 (data: Buffer): string {
  return `sha256:${createHash('sha256').update(data).digest('hex')}`
}

export class RegistryClient {
  readonly domain: string
  readonly path: string
  private readonly o: RegistryClientOptions
  private endpoint: Endpoint | null = null
  private authz: Authz = { kind: 'none' }
  private scopes: string[]

  constructor (o: RegistryClientOptions) {
    this.o = o
    this.domain = o.domain
    this.path = o.path
    this.scopes = [`repository:${o.path}:${o.actions.join(',')}`, ...(o.extraScopes ?? [])]
  }

  get base (): URL {
    if (this.endpoint === null) throw internal('registry client used before connect()')
    return this.endpoint.base
  }

  /** `https://host/v2/<path>/<rest>` */
  url (rest: string): URL {
    return new URL(`/v2/${this.path}/${rest}`, this.base)
  }

  /** Pings /v2/ and authenticates. Errors here come before any progress record, so they carry real statuses. */
  async connect (): Promise<void> {
    const cached = this.o.endpoint ?? this.o.endpointCache.get(this.domain)
    const candidates = cached !== undefined ? [cached] : endpointsFor(this.domain, this.o.insecureRegistries)
    let lastErr: unknown
    for (const ep of candidates) {
      const url = new URL('/v2/', ep.base)
      let res: HttpResponse
      try {
        res = await this.o.http.request(url, this.reqOpts({}, ep))
      } catch (err) {
        if (!(err instanceof TransportError)) throw err
        log('ping %s failed: %s', url.href, err.message)
        lastErr = err
        continue
      }
      this.endpoint = ep
      if (this.o.endpoint === undefined) this.o.endpointCache.set(this.domain, ep)
      await this.answerPing(url, res)
      return
    }
    if (cached !== undefined && this.o.endpoint === undefined) this.o.endpointCache.delete(this.domain)
    throw lastErr ?? internal(`no endpoint for ${this.domain}`)
  }

  private reqOpts (o: SendOptions, ep: Endpoint | null = this.endpoint): Parameters<HttpClient['request']>[1] {
    const signal = o.signal ?? this.o.signal
    return {
      ...(o.headers !== undefined ? { headers: o.headers } : {}),
      ...(o.body !== undefined ? { body: o.body } : {}),
      ...(signal !== undefined ? { signal } : {}),
      ...(o.redirects !== undefined ? { redirects: o.redirects } : {}),
      tlsVerify: ep?.tlsVerify ?? true
    }
  }

  private async answerPing (url: URL, res: HttpResponse): Promise<void> {
    if (res.status === 200) { discard(res); return }
    if (res.status !== 401) {
      if (res.status === 404) { discard(res); throw internal(`Get "${url.href}": the registry does not speak the v2 API (404)`) }
      throw await registryError(res)
    }
    const challenges = parseChallenges(res.headers['www-authenticate'])
    discard(res)
    await this.authorize(challenges, url, 'GET')
    if (this.authz.kind === 'basic') {
      // Basic registries check credentials on every request; check them once now, before anything streams
      const again = await this.o.http.request(url, this.reqOpts({ headers: { Authorization: this.authz.header } }))
      if (again.status === 401) throw credentialsRefused(url, await registryError(again))
      if (again.status !== 200) throw await registryError(again)
      discard(again)
    }
  }

  private async authorize (challenges: Challenge[], url: URL, method: string, signal = this.o.signal): Promise<void> {
    const bearer = challenges.find((c) => c.scheme === 'bearer')
    const basic = challenges.find((c) => c.scheme === 'basic')
    const { auth } = this.o
    if (bearer !== undefined) {
      if (auth.registryToken !== undefined) { this.authz = { kind: 'fixed', header: `Bearer ${auth.registryToken}` }; return }
      const extra = bearer.params.scope !== undefined && bearer.params.scope !== '' ? bearer.params.scope.split(' ') : []
      for (const s of extra) if (!this.scopes.includes(s)) this.scopes.push(s)
      const token = await fetchToken(this.o.http, {
        challenge: bearer,
        scopes: this.scopes,
        auth,
        requestUrl: url,
        requestMethod: method,
        ...(signal !== undefined ? { signal } : {}),
        tlsVerify: this.endpoint?.tlsVerify ?? true
      })
      this.authz = { kind: 'bearer', challenge: bearer, token }
      return
    }
    if (basic !== undefined) {
      if (auth.username === undefined || auth.password === undefined) throw unauthorized(`${goMethod(method)} "${url.href}": no basic auth credentials`)
      this.authz = { kind: 'basic', header: basicAuthHeader(auth.username, auth.password) }
      return
    }
    throw unauthorized(`${goMethod(method)} "${url.href}": the registry asks for authentication it does not describe (WWW-Authenticate: ${challenges.map((c) => c.scheme).join(', ') || 'none'})`)
  }

  private async authHeader (signal: AbortSignal | undefined): Promise<string | undefined> {
    const a = this.authz
    switch (a.kind) {
      case 'none': return undefined
      case 'basic': case 'fixed': return a.header
      case 'bearer':
        if (a.token.expiresAt - Date.now() < 5000) {
          a.token = await fetchToken(this.o.http, {
            challenge: a.challenge,
            scopes: this.scopes,
            auth: this.o.auth,
            requestUrl: new URL('/v2/', this.base),
            requestMethod: 'GET',
            ...(signal !== undefined ? { signal } : {}),
            tlsVerify: this.endpoint?.tlsVerify ?? true
          })
        }
        return `Bearer ${a.token.token}`
    }
  }

  /** One authenticated request; a 401 with a new challenge (expired token, more scope) is answered once. */
  async send (method: string, url: URL, o: SendOptions = {}): Promise<HttpResponse> {
    for (let attempt = 0; ; attempt++) {
      const headers: Record<string, string> = { ...o.headers }
      const auth = await this.authHeader(o.signal ?? this.o.signal)
      if (auth !== undefined) headers.Authorization = auth
      const res = await this.o.http.request(url, { ...this.reqOpts({ ...o, headers }), method })
      if (res.status !== 401 || attempt > 0 || this.authz.kind === 'basic' || this.authz.kind === 'fixed') return res
      const challenges = parseChallenges(res.headers['www-authenticate'])
      if (!challenges.some((c) => c.scheme === 'bearer' || c.scheme === 'basic')) return res
      discard(res)
      await this.authorize(challenges, url, method, o.signal ?? this.o.signal)
    }
  }

  /** GET a manifest by tag or digest; its digest is verified against the reference or Docker-Content-Digest. */
  async getManifest (reference: string): Promise<FetchedManifest> {
    const url = this.url(`manifests/${reference}`)
    const res = await this.send('GET', url, { headers: { Accept: MANIFEST_ACCEPT } })
    if (res.status !== 200) throw await registryError(res)
    const bytes = await readBody(res, MAX_MANIFEST_SIZE)
    const digest = sha256(bytes)
    const claimed = reference.includes(':') ? reference : String(res.headers['docker-content-digest'] ?? '')
    if (claimed.startsWith('sha256:') && claimed !== digest) {
      throw new EngineError('internal', `manifest verification failed for digest ${claimed}`)
    }
    if (reference.includes(':') && !reference.startsWith('sha256:')) throw invalidArgument(`unsupported digest algorithm: ${reference}`)
    return { bytes, contentType: String(res.headers['content-type'] ?? ''), digest }
  }

  /** GET a blob, from `offset` on when given (206 expected, 200 tolerated); throws on other statuses. */
  async blob (digest: string, offset = 0, signal?: AbortSignal): Promise<HttpResponse> {
    const headers: Record<string, string> = {}
    if (offset > 0) headers.Range = `bytes=${offset}-`
    const res = await this.send('GET', this.url(`blobs/${digest}`), { headers, ...(signal !== undefined ? { signal } : {}) })
    if (res.status === 200 || (res.status === 206 && offset > 0)) return res
    throw await registryError(res, res.status === 404 ? 'unknown blob' : undefined)
  }

  /** A small blob (a config), read whole and verified. */
  async blobBuffer (digest: string, limit: number, signal?: AbortSignal): Promise<Buffer> {
    const res = await this.blob(digest, 0, signal)
    const bytes = await readBody(res, limit)
    if (sha256(bytes) !== digest) throw new EngineError('internal', `image config verification failed for digest ${digest}`)
    return bytes
  }

  /** The blob's size when this repository has it, null when not. */
  async headBlob (digest: string): Promise<number | null> {
    const res = await this.send('HEAD', this.url(`blobs/${digest}`))
    discard(res)
    if (res.status === 200) return Number(res.headers['content-length'] ?? -1)
    if (res.status === 404) return null
    throw await registryError(res)
  }

  private location (res: HttpResponse): URL {
    const loc = res.headers.location
    if (loc === undefined || loc === '') throw internal(`${goMethod(res.method)} "${res.url.href}": the registry sent no upload Location`)
    return new URL(loc, res.url)
  }

  /** Starts an upload session; with `mount`, asks for a cross-repository mount first (201 = mounted). */
  async startUpload (mount?: { digest: string, from: string }): Promise<{ mounted: true } | { mounted: false, location: URL, minChunk: number }> {
    const url = this.url('blobs/uploads/')
    if (mount !== undefined) {
      url.searchParams.set('mount', mount.digest)
      url.searchParams.set('from', mount.from)
    }
    const res = await this.send('POST', url, { headers: { 'Content-Length': '0' } })
    discard(res)
    if (res.status === 201 && mount !== undefined) return { mounted: true }
    if (res.status !== 202) throw await registryError(res)
    const min = Number(res.headers['oci-chunk-min-length'] ?? 0)
    return { mounted: false, location: this.location(res), minChunk: Number.isSafeInteger(min) && min > 0 ? min : 0 }
  }

  /** PATCH one chunk at `start`; returns the next Location. */
  async uploadChunk (location: URL, chunk: Buffer, start: number, signal?: AbortSignal): Promise<URL> {
    const res = await this.send('PATCH', location, {
      headers: { 'Content-Type': 'application/octet-stream', 'Content-Range': `${start}-${start + chunk.length - 1}` },
      body: chunk,
      ...(signal !== undefined ? { signal } : {})
    })
    if (res.status !== 202) throw await registryError(res)
    discard(res)
    return this.location(res)
  }

  /** PUT the end of an upload (with the whole blob for a monolithic upload). */
  async finishUpload (location: URL, digest: string, body?: Buffer, signal?: AbortSignal): Promise<void> {
    const url = new URL(location)
    url.searchParams.set('digest', digest)
    const res = await this.send('PUT', url, {
      headers: { 'Content-Type': 'application/octet-stream' },
      ...(body !== undefined ? { body } : {}),
      ...(signal !== undefined ? { signal } : {})
    })
    if (res.status !== 201 && res.status !== 204) throw await registryError(res)
    discard(res)
  }

  /** Abandons an upload session (best effort). */
  async cancelUpload (location: URL): Promise<void> {
    try { discard(await this.send('DELETE', location)) } catch { /* the registry expires it */ }
  }

  async putManifest (reference: string, mediaType: string, bytes: Buffer): Promise<string> {
    const res = await this.send('PUT', this.url(`manifests/${reference}`), { headers: { 'Content-Type': mediaType }, body: bytes })
    if (res.status !== 201 && res.status !== 200) throw await registryError(res)
    discard(res)
    const digest = sha256(bytes)
    const claimed = res.headers['docker-content-digest']
    if (typeof claimed === 'string' && claimed.startsWith('sha256:') && claimed !== digest) {
      throw internal(`the registry stored the manifest as ${claimed}, expected ${digest}`)
    }
    return digest
  }

  /** All tags of the repository (following Link pagination). */
  async tags (): Promise<string[]> {
    const out: string[] = []
    let url: URL | null = this.url('tags/list')
    for (let page = 0; url !== null && page < 1000; page++) {
      const res = await this.send('GET', url)
      if (res.status !== 200) throw await registryError(res)
      const doc = parseJson((await readBody(res, MAX_MANIFEST_SIZE))) as { tags?: unknown }
      if (Array.isArray(doc.tags)) for (const t of doc.tags) if (typeof t === 'string') out.push(t)
      const link = /<([^>]+)>\s*;\s*rel="?next"?/.exec(String(res.headers.link ?? ''))
      url = link !== null ? new URL(link[1] as string, res.url) : null
    }
    return out
  }
}
