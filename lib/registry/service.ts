// createRegistry(): the registry service — Hub API, deprecation state and OCI distribution API on one listener,
// built on the shared HTTP core (lib/http/) and the shared content-addressed store layout (storage/paths.ts).
import { randomBytes } from 'node:crypto'
import { mkdir, readFile, stat } from 'node:fs/promises'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { invalidArgument, errorMessage, notFound } from '../errors.js'
import { formatAddress, parseHost, type ListenAddress } from '../http/listen.js'
import { isLoopbackAddress } from '../http/tcp-guard.js'
import { resolveLimits, type ConnectionLimits } from '../http/limits.js'
import { levelLogger, logger } from '../log.js'
import { writeFileAtomic } from '../util/atomic.js'
import { Authority, type AuthMode } from './auth/authority.js'
import type { LoginGuardOptions } from './auth/login-guard.js'
import { readUsersFile, type UserEntry } from './auth/passwords.js'
import type { RegistryCore } from './context.js'
import { garbageCollect, type GcOptions, type GcResult } from './gc.js'
import { BASE_ROUTES } from './routes/base.js'
import { HEALTH_ROUTES } from './routes/health.js'
import { BLOB_ROUTES } from './routes/blobs.js'
import { HUB_ROUTES } from './routes/hub.js'
import { LEGACY_ROUTES } from './routes/legacy.js'
import { MANIFEST_ROUTES } from './routes/manifests.js'
import { TOKEN_ROUTES } from './routes/token.js'
import { UPLOAD_ROUTES } from './routes/uploads.js'
import { RegistryServer } from './server.js'
import type { StorageDriver } from './storage/driver.js'
import { FsDriver } from './storage/fs-driver.js'
import { builtBlobSender } from './storage/blob-sender.js'
import { RegistryStore } from './storage/registry-store.js'
import { UploadSessions } from './uploads.js'

const log = logger('registry:http')
const ops = levelLogger('registry')

/** What an operator should know about who may use the registry. */
function warnAboutAccess (mode: AuthMode, users: number, addresses: readonly ListenAddress[]): void {
  if (mode === 'none') {
    for (const a of addresses) {
      if (a.kind === 'tcp' && !isLoopbackAddress(a.host)) ops.warn('the registry is open on %s: anyone who can reach it can push, overwrite and delete images (use token auth: --auth token --users FILE)', formatAddress(a))
    }
  } else if (users === 0) {
    ops.warn('token auth with no users: nobody can log in, push or read private repositories (add lines made by `berth registry passwd NAME` to the users file)')
  }
}

export const DEFAULT_REGISTRY_LISTEN = '127.0.0.1:5000'
export const DEFAULT_SERVICE = 'berth-registry'
export const DEFAULT_MAX_MANIFEST_SIZE = 4 * 1024 * 1024
export const DEFAULT_MAX_BLOB_SIZE = 32 * 1024 * 1024 * 1024
export const DEFAULT_MAX_UPLOADS = 1024
export const DEFAULT_MAX_UPLOADS_PER_REPOSITORY = 64
export const DEFAULT_MAX_UPLOADS_PER_USER = 128

export interface RegistryOptions {
  /** Where blobs and records live (storage/paths.ts draws the tree). */
  dataRoot: string
  /** `host:port`, `:port`, `tcp://host:port`, `unix:///path`, a ListenAddress, or several (default 127.0.0.1:5000). */
  listen?: string | ListenAddress | ReadonlyArray<string | ListenAddress>
  /** 'none' (default): everyone may do everything. 'token': Docker token auth and Hub access tokens. */
  auth?: AuthMode
  /** Users: a users file path (lines `name:hash[:ns,…]`) or entries. */
  users?: string | readonly UserEntry[]
  /** Token endpoint advertised in WWW-Authenticate (default <publicUrl>/token, else the first TCP listener's /token;
   * never derived from a request's Host header). */
  realm?: string
  /** Token audience (`service` in challenges; default berth-registry). */
  service?: string
  /** Token issuer (default: the service). */
  issuer?: string
  /** HMAC key for tokens; default: read from (or created at) tokenKeyFile. */
  tokenKey?: Buffer
  /** Default <dataRoot>/auth/token.key. */
  tokenKeyFile?: string
  /** Token lifetime in seconds (default 300). */
  tokenTtl?: number
  /** Caps on password hashing and failed logins per client and per user (see auth/login-guard.ts for defaults). */
  logins?: LoginGuardOptions
  /** Base URL for absolute links (default: from the request's Host header). */
  publicUrl?: string
  /** Largest manifest accepted (default 4 MiB). */
  maxManifestSize?: number
  /** Largest blob accepted, in bytes (default 32 GiB). */
  maxBlobSize?: number
  /** Idle uploads are cancelled after this many milliseconds (default 1 hour). */
  uploadIdleTimeout?: number
  /** Upload sessions open at once: in all (default 1024), per repository (64), per user or anonymous client address (128). */
  maxUploads?: number
  maxUploadsPerRepository?: number
  maxUploadsPerUser?: number
  /** Connection caps and request timeouts (lib/http/limits.ts has the defaults). */
  connectionLimits?: ConnectionLimits
  /** Storage driver (default: the filesystem driver over dataRoot). */
  driver?: StorageDriver
  /**
   * The filesystem driver's sendfile helper for large blob bodies (storage/blob-sender.ts): default the
   * berth-blob-sender built with the package, if any; null serves every blob through the registry's own buffers.
   */
  blobSender?: string | null
}

/** Parses a listen spec: `host:port`, `:port`, `[v6]:port`, `host`, `tcp://…`, `unix:///path` or `/path`. */
export function parseListen (spec: string): ListenAddress {
  if (spec.startsWith('unix://') || spec.startsWith('/')) return parseHost(spec)
  let rest = spec.startsWith('tcp://') ? spec.slice('tcp://'.length) : spec
  if (!/:\d+$/.test(rest) || (rest.startsWith('[') && rest.endsWith(']'))) rest = `${rest}:5000`
  if (rest.startsWith(':')) rest = `127.0.0.1${rest}`
  return parseHost(`tcp://${rest}`)
}

function urlOf (a: ListenAddress): string {
  if (a.kind === 'unix') return `unix://${a.path}`
  const host = a.host === '0.0.0.0' || a.host === '' ? '127.0.0.1' : a.host === '::' ? '::1' : a.host
  return `http://${host.includes(':') ? `[${host}]` : host}:${a.port}`
}

function positive (v: number | undefined, dflt: number, what: string): number {
  if (v === undefined) return dflt
  if (!Number.isSafeInteger(v) || v < 1) throw invalidArgument(`${what} must be a positive integer`)
  return v
}

async function loadKey (file: string): Promise<Buffer> {
  try {
    const hex = (await readFile(file, 'utf8')).trim()
    if (/^[0-9a-f]{64,}$/.test(hex)) return Buffer.from(hex, 'hex')
    throw invalidArgument(`${file}: expected at least 32 bytes of hex`)
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err
  }
  await mkdir(join(file, '..'), { recursive: true, mode: 0o700 })
  const key = randomBytes(32)
  await writeFileAtomic(file, key.toString('hex') + '\n', { mode: 0o600 })
  log('created token key %s', file)
  return key
}

export class Registry {
  readonly dataRoot: string
  readonly store: RegistryStore
  readonly uploads: UploadSessions
  readonly authority: Authority
  private readonly server: RegistryServer
  private closed = false

  private constructor (dataRoot: string, store: RegistryStore, uploads: UploadSessions, authority: Authority, server: RegistryServer) {
    this.dataRoot = dataRoot
    this.store = store
    this.uploads = uploads
    this.authority = authority
    this.server = server
  }

  /** Where the registry listens (ports resolved). */
  get addresses (): ListenAddress[] { return this.server.addresses }

  /** http://host:port of the first address. */
  get url (): string {
    const a = this.server.addresses[0]
    return a === undefined ? '' : urlOf(a)
  }

  /** Opens the store, loads the index and starts listening. */
  static async open (opts: RegistryOptions): Promise<Registry> {
    if (typeof opts.dataRoot !== 'string' || opts.dataRoot === '') throw invalidArgument('dataRoot is required')
    const dataRoot = resolve(opts.dataRoot)
    const mode = opts.auth ?? 'none'
    if (mode !== 'none' && mode !== 'token') throw invalidArgument(`invalid auth mode ${String(mode)}: none or token`)
    const users = opts.users === undefined ? [] : typeof opts.users === 'string' ? await readUsersFile(opts.users) : [...opts.users]
    const store = new RegistryStore(opts.driver ?? new FsDriver(dataRoot, { blobSender: opts.blobSender === undefined ? builtBlobSender(fileURLToPath(new URL('../../../', import.meta.url))) : opts.blobSender }))
    await store.init()
    const key = opts.tokenKey ?? (mode === 'token' ? await loadKey(opts.tokenKeyFile ?? join(dataRoot, 'auth', 'token.key')) : randomBytes(32))
    const service = opts.service ?? DEFAULT_SERVICE
    const authority = new Authority({ mode, users, key, service, issuer: opts.issuer ?? service, ttl: opts.tokenTtl ?? 300, ...(opts.logins !== undefined ? { logins: opts.logins } : {}) }, store)
    const uploads = new UploadSessions(store.driver, {
      idleMs: opts.uploadIdleTimeout ?? 3600_000,
      maxSessions: positive(opts.maxUploads, DEFAULT_MAX_UPLOADS, 'maxUploads'),
      maxPerRepository: positive(opts.maxUploadsPerRepository, DEFAULT_MAX_UPLOADS_PER_REPOSITORY, 'maxUploadsPerRepository'),
      maxPerOwner: positive(opts.maxUploadsPerUser, DEFAULT_MAX_UPLOADS_PER_USER, 'maxUploadsPerUser')
    })
    const core: RegistryCore = {
      store,
      uploads,
      authority,
      settings: {
        maxManifestSize: opts.maxManifestSize ?? DEFAULT_MAX_MANIFEST_SIZE,
        maxBlobSize: positive(opts.maxBlobSize, DEFAULT_MAX_BLOB_SIZE, 'maxBlobSize'),
        realm: opts.realm,
        publicUrl: opts.publicUrl,
        bodyIdleTimeout: resolveLimits(opts.connectionLimits).bodyIdleTimeout
      }
    }
    const server = new RegistryServer(core, opts.connectionLimits)
      .addRoutes(TOKEN_ROUTES)
      .addRoutes(LEGACY_ROUTES)
      .addRoutes(HUB_ROUTES)
      .addRoutes(BASE_ROUTES)
      .addRoutes(UPLOAD_ROUTES)
      .addRoutes(BLOB_ROUTES)
      .addRoutes(MANIFEST_ROUTES)
      .addRoutes(HEALTH_ROUTES)
    const reg = new Registry(dataRoot, store, uploads, authority, server)
    const specs = opts.listen === undefined ? [DEFAULT_REGISTRY_LISTEN] : Array.isArray(opts.listen) ? opts.listen : [opts.listen]
    try {
      for (const s of specs as Array<string | ListenAddress>) await server.listen(typeof s === 'string' ? parseListen(s) : s)
    } catch (err) {
      log('listen failed: %s', errorMessage(err))
      await reg.close()
      throw err
    }
    warnAboutAccess(mode, users.length, reg.addresses)
    return reg
  }

  /** Deletes blobs that no manifest references (see gc.ts). */
  async gc (opts?: GcOptions): Promise<GcResult> {
    return await garbageCollect(this.store, opts)
  }

  /** Stops listening, ends connections, cancels uploads and flushes statistics. */
  async close (): Promise<void> {
    if (this.closed) return
    this.closed = true
    await this.server.close()
    await this.uploads.close()
    await this.store.close()
  }
}

export async function createRegistry (opts: RegistryOptions): Promise<Registry> {
  return await Registry.open(opts)
}

/** Garbage collection without a server (the `berth registry gc` command; run it while the registry is stopped or
 * rely on the grace period). */
export async function collectGarbage (dataRoot: string, opts: GcOptions = {}): Promise<GcResult> {
  // a typo must not become a new, empty registry that "collected" nothing
  const st = await stat(resolve(dataRoot)).catch(() => null)
  if (st === null) throw notFound(`data root ${resolve(dataRoot)} does not exist`)
  if (!st.isDirectory()) throw invalidArgument(`data root ${resolve(dataRoot)} is not a directory`)
  const store = new RegistryStore(new FsDriver(resolve(dataRoot), { cleanIngest: false }))
  await store.init()
  try {
    return await garbageCollect(store, opts)
  } finally {
    await store.close()
  }
}
