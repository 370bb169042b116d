// Registry fixtures for pull/push tests: Debian's docker-registry (distribution 2.8.2) on a free loopback port with
// filesystem storage in a temp dir, a Docker token server built from node:crypto (ES256 JWTs whose x5c is a
// self-signed certificate made with openssl, which the registry trusts), a programmable HTTP proxy in front of a
// registry (to require Basic auth, tamper with or truncate bodies, pause transfers, redirect blobs), a tiny tar
// writer, and raw-HTTP image seeding (blobs and manifests uploaded without Berth).
import http, { type IncomingMessage, type ServerResponse } from 'node:http'
import net from 'node:net'
import { spawn, spawnSync, execFileSync, type ChildProcess } from 'node:child_process'
import { createHash, randomBytes, sign, X509Certificate } from 'node:crypto'
import { readFileSync, rmSync, writeFileSync } from 'node:fs'
import { once } from 'node:events'
import { join } from 'node:path'
import { gzipSync } from 'node:zlib'
import { tmpDir as engineTmpDir } from '../helpers/engine.js'

export interface TestContextLike { after: (fn: () => Promise<void> | void) => void }

export const REGISTRY_BIN = '/usr/bin/docker-registry'

export function registrySkipReason (): string | null {
  if (spawnSync(REGISTRY_BIN, ['--version']).status !== 0) return 'docker-registry is not installed (apt-get install docker-registry)'
  if (spawnSync('openssl', ['version']).status !== 0) return 'openssl is not installed'
  return null
}

export function tmpDir (prefix = 'berth-dist-'): string { return engineTmpDir(prefix) }

export async function freePort (): Promise<number> {
  const s = net.createServer()
  s.listen(0, '127.0.0.1')
  await once(s, 'listening')
  const port = (s.address() as net.AddressInfo).port
  await new Promise<void>((resolve) => { s.close(() => { resolve() }) })
  return port
}

export async function listen (server: http.Server): Promise<number> {
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  return (server.address() as net.AddressInfo).port
}

async function closeServer (server: http.Server): Promise<void> {
  server.closeAllConnections()
  await new Promise<void>((resolve) => { server.close(() => { resolve() }) })
}

// ---- token server ---------------------------------------------------------------------------------------------------

export interface TokenRequestLog { method: string, url: string, authorization: string | undefined, form?: Record<string, string> }

export interface TokenServer {
  realm: string
  service: string
  issuer: string
  certPath: string
  log: TokenRequestLog[]
  /** Issues a token directly (for seeding, or as a client-side registry token). */
  issue: (user: string | null, scopes: string[]) => string
}

export interface TokenServerOptions {
  users?: Record<string, string>
  /** Actions granted on a repository; default: users get everything asked, anonymous pulls of public/* only. */
  grant?: (user: string | null, repo: string, actions: string[]) => string[]
}

function b64url (data: Buffer | string): string {
  return Buffer.from(data).toString('base64url')
}

export async function startTokenServer (t: TestContextLike, o: TokenServerOptions = {}): Promise<TokenServer> {
  const dir = tmpDir('berth-tok-')
  t.after(() => { rmSync(dir, { recursive: true, force: true }) })
  const keyPath = join(dir, 'key.pem')
  const certPath = join(dir, 'cert.pem')
  execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
    '-keyout', keyPath, '-out', certPath, '-days', '2', '-subj', '/CN=berth-test-token'], { stdio: 'ignore' })
  const key = readFileSync(keyPath, 'utf8')
  const x5c = new X509Certificate(readFileSync(certPath)).raw.toString('base64')
  const users = o.users ?? { alice: 'secret' }
  const grant = o.grant ?? ((user, repo, actions) => user !== null ? actions : repo.startsWith('public/') ? actions.filter((a) => a === 'pull') : [])
  const service = 'berth-test-registry'
  const issuer = 'berth-test-issuer'
  const refreshTokens = new Map<string, string>()
  const log: TokenRequestLog[] = []

  const issue = (user: string | null, scopes: string[]): string => {
    const access: Array<{ type: string, name: string, actions: string[] }> = []
    for (const s of scopes) {
      const first = s.indexOf(':')
      const last = s.lastIndexOf(':')
      if (first === -1 || last === first) continue
      const type = s.slice(0, first)
      const name = s.slice(first + 1, last)
      const actions = s.slice(last + 1).split(',')
      if (type !== 'repository') continue
      const granted = grant(user, name, actions)
      if (granted.length > 0) access.push({ type, name, actions: granted })
    }
    const now = Math.floor(Date.now() / 1000)
    const header = { typ: 'JWT', alg: 'ES256', x5c: [x5c] }
    const claims = { iss: issuer, sub: user ?? '', aud: service, exp: now + 300, nbf: now - 10, iat: now, jti: randomBytes(8).toString('hex'), access }
    const input = `${b64url(JSON.stringify(header))}.${b64url(JSON.stringify(claims))}`
    const sig = sign('sha256', Buffer.from(input), { key, dsaEncoding: 'ieee-p1363' })
    return `${input}.${b64url(sig)}`
  }

  const reply = (res: ServerResponse, status: number, body: unknown): void => {
    const b = Buffer.from(JSON.stringify(body))
    res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': b.length })
    res.end(b)
  }

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://x')
      const entry: TokenRequestLog = { method: req.method ?? '', url: req.url ?? '', authorization: req.headers.authorization }
      log.push(entry)
      if (url.pathname !== '/token') { reply(res, 404, { errors: [{ code: 'NOT_FOUND', message: 'not found' }] }); return }
      let user: string | null = null
      let scopes = url.searchParams.getAll('scope')
      let offline = url.searchParams.get('offline_token') === 'true'
      if (req.method === 'POST') {
        const form = Object.fromEntries(new URLSearchParams(Buffer.concat(chunks).toString('utf8')))
        entry.form = form
        if (form.grant_type !== 'refresh_token' || refreshTokens.get(form.refresh_token ?? '') === undefined) {
          reply(res, 401, { errors: [{ code: 'UNAUTHORIZED', message: 'invalid refresh token' }] })
          return
        }
        user = refreshTokens.get(form.refresh_token as string) as string
        scopes = (form.scope ?? '').split(' ').filter((s) => s !== '')
        offline = form.access_type === 'offline'
      } else {
        const m = /^Basic (.+)$/.exec(req.headers.authorization ?? '')
        if (m !== null) {
          const [u, p] = Buffer.from(m[1] as string, 'base64').toString('utf8').split(/:(.*)/s) as [string, string]
          if (users[u] === undefined || users[u] !== p) { reply(res, 401, { details: 'incorrect username or password' }); return }
          user = u
        }
      }
      const token = issue(user, scopes)
      const body: Record<string, unknown> = { token, access_token: token, expires_in: 300, issued_at: new Date().toISOString() }
      if (offline && user !== null) {
        const rt = randomBytes(16).toString('hex')
        refreshTokens.set(rt, user)
        body.refresh_token = rt
      }
      reply(res, 200, body)
    })
  })
  const port = await listen(server)
  t.after(async () => { await closeServer(server) })
  return { realm: `http://127.0.0.1:${port}/token`, service, issuer, certPath, log, issue }
}

// ---- docker-registry ------------------------------------------------------------------------------------------------

export interface DistributionRegistry {
  /** host:port, as it appears in image references. */
  host: string
  url: string
  dir: string
  proc: ChildProcess
}

export async function startDistribution (t: TestContextLike, o: { token?: TokenServer } = {}): Promise<DistributionRegistry> {
  const dir = tmpDir('berth-reg-')
  const port = await freePort()
  const lines = [
    'version: 0.1',
    'log:',
    '  level: info',
    '  accesslog:',
    '    disabled: true',
    'storage:',
    '  filesystem:',
    `    rootdirectory: ${join(dir, 'data')}`,
    '  delete:',
    '    enabled: true',
    'http:',
    `  addr: 127.0.0.1:${port}`
  ]
  if (o.token !== undefined) {
    lines.push('auth:', '  token:', `    realm: ${o.token.realm}`, `    service: ${o.token.service}`, `    issuer: ${o.token.issuer}`, `    rootcertbundle: ${o.token.certPath}`)
  }
  writeFileSync(join(dir, 'config.yml'), lines.join('\n') + '\n')
  const proc = spawn(REGISTRY_BIN, ['serve', join(dir, 'config.yml')], { stdio: ['ignore', 'ignore', 'pipe'] })
  let stderr = ''
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => { reject(new Error(`docker-registry did not start: ${stderr}`)) }, 20_000)
    proc.stderr?.on('data', (d: Buffer) => {
      stderr += d.toString('utf8')
      if (stderr.includes('listening on')) { clearTimeout(timer); resolve() }
    })
    proc.once('exit', (code) => { clearTimeout(timer); reject(new Error(`docker-registry exited ${code}: ${stderr}`)) })
  })
  proc.stderr?.resume()
  // if this test process dies without running t.after, do not leave the registry behind
  const killOnExit = (): void => { proc.kill('SIGKILL') }
  process.once('exit', killOnExit)
  t.after(async () => {
    process.removeListener('exit', killOnExit)
    if (proc.exitCode === null) {
      proc.kill('SIGTERM')
      await once(proc, 'exit')
    }
    rmSync(dir, { recursive: true, force: true })
  })
  return { host: `127.0.0.1:${port}`, url: `http://127.0.0.1:${port}`, dir, proc }
}

// ---- proxy ----------------------------------------------------------------------------------------------------------

export interface Upstream { status: number, headers: http.IncomingHttpHeaders, body: Buffer }

/** Returns true when it answered the request itself. */
export type ProxyHook = (req: IncomingMessage, res: ServerResponse, body: Buffer) => boolean | Promise<boolean>

export interface Proxy {
  host: string
  url: string
  hooks: ProxyHook[]
  requests: Array<{ method: string, url: string, headers: http.IncomingHttpHeaders }>
  /** Sends a request upstream and buffers the answer (for hooks that rewrite it). */
  fetch: (req: IncomingMessage, body: Buffer, path?: string) => Promise<Upstream>
}

export async function startProxy (t: TestContextLike, upstream: string): Promise<Proxy> {
  const up = new URL(upstream)
  const hooks: ProxyHook[] = []
  const requests: Proxy['requests'] = []
  const forwardHeaders = (req: IncomingMessage, bodyLength: number): http.OutgoingHttpHeaders => {
    const h: http.OutgoingHttpHeaders = { ...req.headers, host: up.host }
    delete h['transfer-encoding']
    h['content-length'] = String(bodyLength)
    return h
  }
  const fetch = async (req: IncomingMessage, body: Buffer, path = req.url ?? '/'): Promise<Upstream> => await new Promise((resolve, reject) => {
    const r = http.request({ host: up.hostname, port: up.port, method: req.method, path, headers: forwardHeaders(req, body.length), agent: false }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (c: Buffer) => chunks.push(c))
      res.on('end', () => { resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }) })
      res.on('error', reject)
    })
    r.on('error', reject)
    r.end(body)
  })
  const rewriteLocation = (headers: http.IncomingHttpHeaders, self: string): http.IncomingHttpHeaders => {
    const loc = headers.location
    if (typeof loc === 'string' && loc.startsWith(upstream)) return { ...headers, location: self + loc.slice(upstream.length) }
    return headers
  }
  let selfUrl = ''
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const body = Buffer.concat(chunks)
      requests.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers })
      void (async () => {
        for (const h of hooks) if (await h(req, res, body)) return
        const r = http.request({ host: up.hostname, port: up.port, method: req.method, path: req.url, headers: forwardHeaders(req, body.length), agent: false }, (ures) => {
          res.writeHead(ures.statusCode ?? 502, rewriteLocation(ures.headers, selfUrl))
          ures.pipe(res)
        })
        r.on('error', () => { res.destroy() })
        r.end(body)
      })().catch(() => { res.destroy() })
    })
  })
  const port = await listen(server)
  selfUrl = `http://127.0.0.1:${port}`
  t.after(async () => { await closeServer(server) })
  return { host: `127.0.0.1:${port}`, url: selfUrl, hooks, requests, fetch }
}

// ---- tar and image seeding ------------------------------------------------------------------------------------------

export { makeTar, type TarEntry } from '../helpers/tar.js'

export function sha256 (data: Buffer): string {
  return `sha256:${createHash('sha256').update(data).digest('hex')}`
}

export interface RawRequestOptions { headers?: Record<string, string>, body?: Buffer }

export async function rawRequest (url: string, method: string, o: RawRequestOptions = {}): Promise<Upstream> {
  const u = new URL(url)
  return await new Promise((resolve, reject) => {
    const headers: Record<string, string> = { ...o.headers }
    if (o.body !== undefined) headers['Content-Length'] = String(o.body.length)
    const r = http.request({ host: u.hostname, port: u.port, method, path: u.pathname + u.search, headers, agent: false }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (c: Buffer) => chunks.push(c))
      res.on('end', () => { resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }) })
      res.on('error', reject)
    })
    r.on('error', reject)
    r.end(o.body)
  })
}

export async function uploadBlob (base: string, repo: string, data: Buffer, auth?: string): Promise<string> {
  const digest = sha256(data)
  const headers: Record<string, string> = auth !== undefined ? { Authorization: auth } : {}
  const start = await rawRequest(`${base}/v2/${repo}/blobs/uploads/`, 'POST', { headers })
  if (start.status !== 202) throw new Error(`upload start ${start.status} ${start.body.toString()}`)
  const loc = new URL(String(start.headers.location), base)
  loc.searchParams.set('digest', digest)
  const put = await rawRequest(loc.href, 'PUT', { headers: { ...headers, 'Content-Type': 'application/octet-stream' }, body: data })
  if (put.status !== 201) throw new Error(`upload put ${put.status} ${put.body.toString()}`)
  return digest
}

export async function putManifest (base: string, repo: string, reference: string, mediaType: string, bytes: Buffer, auth?: string): Promise<string> {
  const res = await rawRequest(`${base}/v2/${repo}/manifests/${reference}`, 'PUT', { headers: { 'Content-Type': mediaType, ...(auth !== undefined ? { Authorization: auth } : {}) }, body: bytes })
  if (res.status !== 201) throw new Error(`manifest put ${res.status} ${res.body.toString()}`)
  return sha256(bytes)
}

export interface SeededImage {
  manifestDigest: string
  manifest: Buffer
  configDigest: string
  config: Buffer
  layerDigests: string[]
  diffIds: string[]
  layerBlobs: Buffer[]
}

export interface SeedOptions {
  /** Uncompressed layer tars, bottom first. */
  layers: Buffer[]
  tag?: string
  architecture?: string
  os?: string
  variant?: string
  /** Upload layers uncompressed (media type …tar) instead of gzip. */
  uncompressed?: boolean
  oci?: boolean
  /** Authorization header value for the uploads. */
  auth?: string
  cmd?: string[]
  /** Diff IDs to claim in the config (default: the real ones). */
  diffIds?: string[]
}

/** Uploads an image with raw HTTP; tags it when `tag` is given (otherwise only the digest refers to it). */
export async function seedImage (base: string, repo: string, o: SeedOptions): Promise<SeededImage> {
  const blobs = o.layers.map((l) => o.uncompressed === true ? l : gzipSync(l))
  const diffIds = o.diffIds ?? o.layers.map(sha256)
  const config = Buffer.from(JSON.stringify({
    architecture: o.architecture ?? (process.arch === 'x64' ? 'amd64' : process.arch),
    os: o.os ?? 'linux',
    ...(o.variant !== undefined ? { variant: o.variant } : {}),
    created: '2024-01-01T00:00:00Z',
    config: { Cmd: o.cmd ?? ['sh'], Env: ['PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'] },
    rootfs: { type: 'layers', diff_ids: diffIds },
    history: o.layers.map(() => ({ created: '2024-01-01T00:00:00Z', created_by: 'seed' }))
  }))
  const layerDigests: string[] = []
  for (const b of blobs) layerDigests.push(await uploadBlob(base, repo, b, o.auth))
  const configDigest = await uploadBlob(base, repo, config, o.auth)
  const oci = o.oci === true
  const layerType = oci
    ? (o.uncompressed === true ? 'application/vnd.oci.image.layer.v1.tar' : 'application/vnd.oci.image.layer.v1.tar+gzip')
    : (o.uncompressed === true ? 'application/vnd.docker.image.rootfs.diff.tar' : 'application/vnd.docker.image.rootfs.diff.tar.gzip')
  const mediaType = oci ? 'application/vnd.oci.image.manifest.v1+json' : 'application/vnd.docker.distribution.manifest.v2+json'
  const manifest = Buffer.from(JSON.stringify({
    schemaVersion: 2,
    mediaType,
    config: { mediaType: oci ? 'application/vnd.oci.image.config.v1+json' : 'application/vnd.docker.container.image.v1+json', size: config.length, digest: configDigest },
    layers: blobs.map((b, i) => ({ mediaType: layerType, size: b.length, digest: layerDigests[i] }))
  }, null, 3))
  const manifestDigest = await putManifest(base, repo, o.tag ?? sha256(manifest), mediaType, manifest, o.auth)
  return { manifestDigest, manifest, configDigest, config, layerDigests, diffIds, layerBlobs: blobs }
}

/** Uploads an OCI index over already seeded manifests. */
export async function seedIndex (base: string, repo: string, tag: string, entries: Array<{ image: SeededImage, platform: { os: string, architecture: string, variant?: string } }>, auth?: string): Promise<{ digest: string, bytes: Buffer }> {
  const bytes = Buffer.from(JSON.stringify({
    schemaVersion: 2,
    mediaType: 'application/vnd.oci.image.index.v1+json',
    manifests: entries.map((e) => ({
      mediaType: JSON.parse(e.image.manifest.toString()).mediaType as string,
      size: e.image.manifest.length,
      digest: e.image.manifestDigest,
      platform: e.platform
    }))
  }))
  const digest = await putManifest(base, repo, tag, 'application/vnd.oci.image.index.v1+json', bytes, auth)
  return { digest, bytes }
}

// ---- progress streams -----------------------------------------------------------------------------------------------

export interface Rec { status?: string, id?: string, progressDetail?: { current?: number, total?: number }, progress?: string, errorDetail?: { message: string }, error?: string, aux?: Record<string, unknown> }

export function records (text: string): Rec[] {
  return text.split('\r\n').filter((l) => l !== '').map((l) => JSON.parse(l) as Rec)
}

/** The statuses a layer went through, in order, with consecutive repeats collapsed. */
export function layerStatuses (recs: Rec[], id: string): string[] {
  const out: string[] = []
  for (const r of recs) if (r.id === id && r.status !== undefined && out[out.length - 1] !== r.status) out.push(r.status)
  return out
}

export function registryAuthHeader (value: unknown, alphabet: 'url' | 'std' = 'url', padded = true): string {
  let s = Buffer.from(JSON.stringify(value)).toString('base64')
  if (alphabet === 'url') s = s.replace(/\+/g, '-').replace(/\//g, '_')
  if (!padded) s = s.replace(/=+$/, '')
  return s
}

// ---- a streamed request to the engine -------------------------------------------------------------------------------

export interface LiveStream {
  recs: Rec[]
  status: Promise<number>
  /** Resolves with every record once the reply ends. */
  done: Promise<Rec[]>
  /** Resolves when a record matching `pred` has arrived. */
  waitFor: (pred: (r: Rec) => boolean) => Promise<Rec>
  /** Cuts the connection, as a client that goes away. */
  destroy: () => void
}

export function liveStream (socket: string, method: string, path: string, headers: Record<string, string> = {}): LiveStream {
  const recs: Rec[] = []
  const waiters: Array<{ pred: (r: Rec) => boolean, resolve: (r: Rec) => void }> = []
  let resolveStatus: (n: number) => void = () => {}
  const status = new Promise<number>((resolve) => { resolveStatus = resolve })
  let req: http.ClientRequest | null = null
  const done = new Promise<Rec[]>((resolve, reject) => {
    req = http.request({ socketPath: socket, method, path, headers }, (res) => {
      resolveStatus(res.statusCode ?? 0)
      let buf = ''
      res.setEncoding('utf8')
      res.on('data', (d: string) => {
        buf += d
        let i
        while ((i = buf.indexOf('\r\n')) !== -1) {
          const line = buf.slice(0, i)
          buf = buf.slice(i + 2)
          if (line === '') continue
          let r: Rec
          try { r = JSON.parse(line) as Rec } catch { r = { status: line } }
          recs.push(r)
          for (const w of [...waiters]) if (w.pred(r)) { waiters.splice(waiters.indexOf(w), 1); w.resolve(r) }
        }
      })
      res.on('end', () => { resolve(recs) })
      res.on('error', reject)
      res.on('aborted', () => { reject(new Error('aborted')) })
    })
    req.on('error', reject)
    req.end()
  })
  done.catch(() => {})
  return {
    recs,
    status,
    done,
    waitFor: async (pred) => {
      const found = recs.find(pred)
      if (found !== undefined) return found
      return await new Promise<Rec>((resolve) => { waiters.push({ pred, resolve }) })
    },
    destroy: () => { (req as http.ClientRequest | null)?.destroy() }
  }
}

/** A promise with its resolver, for gates in hooks. */
export function gate<T = void> (): { promise: Promise<T>, open: (v: T) => void } {
  let open: (v: T) => void = () => {}
  const promise = new Promise<T>((resolve) => { open = resolve })
  return { promise, open }
}
