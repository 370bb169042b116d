// The engine's distribution service: one per image service. It owns the HTTP client and its connection pools, the
// endpoints registries answered on, the download and upload slots (dockerd's defaults: 3 and 5), the shared layer
// downloads, the blob-source table, and counts operations in flight so callers (tests, shutdown) can wait for
// cancelled ones to finish cleaning up.
import { BoundedMap } from '../util/bounded-map.js'
import { join } from 'node:path'
import { constants as zlibConstants } from 'node:zlib'
import type { EventBus } from '../events/event-bus.js'
import type { ImageService } from '../image/image-service.js'
import { chainIds } from '../image/layer-store.js'
import type { AuthConfig } from './auth-config.js'
import { BlobSources } from './blob-sources.js'
import { isInsecureHost, type Endpoint } from './endpoint.js'
import { DEFAULT_DOMAIN } from '../image/reference.js'
import { HttpClient } from './http-client.js'
import { DEFAULT_RETRY, fetchLayer, type DownloadEvent, type LayerFetch, type RetryPolicy } from './layer-fetch.js'
import { RegistryClient } from './registry-client.js'
import { Semaphore, SharedJobs } from './shared-jobs.js'
import { describeError } from '../errors.js'
import { levelLogger } from '../log.js'

const ops = levelLogger('engine:distribution')

/** Registry hosts whose endpoint is remembered. */
const ENDPOINTS_REMEMBERED = 64

export interface DistributionOptions {
  images: ImageService
  events: EventBus
  /** The engine's data root; the blob-source table lives in <dataRoot>/distribution/. */
  dataRoot: string
  /** Registries (host, host:port or CIDR) that may be spoken to over plain HTTP, besides loopback ones. */
  insecureRegistries?: readonly string[]
  /** Mirrors of Docker Hub (http(s)://host[:port]), tried in order before it for pulls of Hub images. */
  registryMirrors?: readonly string[]
  maxConcurrentDownloads?: number
  maxConcurrentUploads?: number
}

export class Distribution {
  readonly images: ImageService
  readonly events: EventBus
  insecureRegistries: readonly string[]
  registryMirrors: readonly string[]
  readonly http: HttpClient
  /** The endpoint (scheme, TLS) that answered for each registry host lately; bounded (hosts are the client's to name). */
  readonly endpointCache = new BoundedMap<string, Endpoint>(ENDPOINTS_REMEMBERED)
  /** dockerd: max-concurrent-downloads (3), max-concurrent-uploads (5). */
  downloadSlots: Semaphore
  uploadSlots: Semaphore
  readonly blobSources: BlobSources
  /** Retries of blob transfers; tests shorten the delays. */
  retry: RetryPolicy = DEFAULT_RETRY
  /** Layer uploads go in PATCH chunks of this size (the last one may be shorter). */
  uploadChunkSize = 16 * 1024 * 1024
  /** Blobs up to this size go in one PUT (POST + PUT, the monolithic upload). */
  monolithicLimit = 1024 * 1024
  /** gzip level of pushed layers (Go's and zlib's default is 6). */
  pushCompressionLevel = zlibConstants.Z_DEFAULT_COMPRESSION
  private readonly downloads = new SharedJobs<number, DownloadEvent>()
  /** Chain IDs pulls in progress are about to use (a failed pull must not remove them from under another). */
  private readonly wanted = new Map<string, number>()
  /** Download jobs by the chain they unpack, until they settle (cancelled ones included). */
  private readonly unpacking = new Map<string, Promise<unknown>>()
  private active = 0
  private idle: Array<() => void> = []

  constructor (o: DistributionOptions) {
    this.images = o.images
    this.events = o.events
    this.insecureRegistries = o.insecureRegistries ?? []
    this.registryMirrors = o.registryMirrors ?? []
    // plain HTTP: insecure registries, and mirrors named with http:// (as dockerd takes a mirror's scheme)
    this.http = new HttpClient({ allowHttp: (host) => isInsecureHost(host, this.insecureRegistries) || this.registryMirrors.some((m) => m === `http://${host}`), userAgent: 'berth (docker-compatible)' })
    this.downloadSlots = new Semaphore(o.maxConcurrentDownloads ?? 3)
    this.uploadSlots = new Semaphore(o.maxConcurrentUploads ?? 5)
    this.blobSources = new BlobSources(join(o.dataRoot, 'distribution', 'blob-sources.json'))
  }

  /** New settings (a daemon reload): operations that start from now on use them. */
  configure (o: { insecureRegistries: readonly string[], registryMirrors: readonly string[] }): void {
    this.insecureRegistries = [...o.insecureRegistries]
    this.registryMirrors = [...o.registryMirrors]
    this.endpointCache.clear()
  }

  client (domain: string, path: string, auth: AuthConfig, actions: string[], signal?: AbortSignal, extraScopes?: string[]): RegistryClient {
    return new RegistryClient({
      http: this.http,
      endpointCache: this.endpointCache,
      insecureRegistries: this.insecureRegistries,
      domain,
      path,
      auth,
      actions,
      ...(extraScopes !== undefined ? { extraScopes } : {}),
      ...(signal !== undefined ? { signal } : {})
    })
  }

  /**
   * Clients for a pull of `path` on `domain`, in the order to try: for Docker Hub images the mirrors first (as
   * dockerd: anonymous, their own endpoint, the same repository path), then the registry itself.
   */
  pullClients (domain: string, path: string, auth: AuthConfig, signal?: AbortSignal): Array<{ client: RegistryClient, mirror: string | null }> {
    const mirrors = domain === DEFAULT_DOMAIN ? this.registryMirrors : []
    return [
      ...mirrors.map((m) => ({
        mirror: m,
        client: new RegistryClient({
          http: this.http,
          endpointCache: this.endpointCache,
          endpoint: { base: new URL(m), tlsVerify: !isInsecureHost(new URL(m).host, this.insecureRegistries) },
          insecureRegistries: this.insecureRegistries,
          domain,
          path,
          auth: {},
          actions: ['pull'],
          ...(signal !== undefined ? { signal } : {})
        })
      })),
      { mirror: null, client: this.client(domain, path, auth, ['pull'], signal) }
    ]
  }

  /** Counts an operation in flight until it settles. */
  async track<T> (work: Promise<T>): Promise<T> {
    this.active++
    try {
      return await work
    } finally {
      this.active--
      if (this.active === 0) for (const wake of this.idle.splice(0)) wake()
    }
  }

  /** Resolves once no pull, push or download is in flight (cancelled ones included, after their cleanup). */
  async settled (): Promise<void> {
    if (this.active === 0) return
    await new Promise<void>((resolve) => { this.idle.push(resolve) })
  }

  /** Downloads and unpacks a layer, sharing the transfer with concurrent pulls of the same layer. */
  async downloadLayer (f: Omit<LayerFetch, 'emit' | 'retry' | 'signal' | 'images'>, onEvent: (e: DownloadEvent) => void, signal: AbortSignal, repoKey: string): Promise<number> {
    return await this.downloads.join(`${f.desc.digest} ${f.chainId}`, async (jobSignal, emit) => {
      const job = this.track((async () => {
        let release = this.downloadSlots.tryAcquire()
        if (release === null) {
          emit({ kind: 'waiting' })
          release = await this.downloadSlots.acquire(jobSignal)
        }
        try {
          const size = await fetchLayer({ ...f, images: this.images, retry: this.retry, signal: jobSignal, emit })
          await this.blobSources.add(f.diffId, { digest: f.desc.digest, mediaType: f.desc.mediaType, size: f.desc.size }, repoKey)
          return size
        } finally {
          release()
        }
      })())
      const settled = job.then(() => {}, () => {})
      this.unpacking.set(f.chainId, settled)
      void settled.then(() => { if (this.unpacking.get(f.chainId) === settled) this.unpacking.delete(f.chainId) })
      return await job
    }, onEvent, signal)
  }

  want (chains: string[]): void {
    for (const c of chains) this.wanted.set(c, (this.wanted.get(c) ?? 0) + 1)
  }

  unwant (chains: string[]): void {
    for (const c of chains) {
      const n = (this.wanted.get(c) ?? 0) - 1
      if (n <= 0) this.wanted.delete(c)
      else this.wanted.set(c, n)
    }
  }

  /**
   * Removes unpacked layers no image uses and no pull in flight wants (after a failed pull). A cancelled download
   * may still be finishing its unpack: it is waited for first.
   */
  async releaseChains (chains: string[]): Promise<void> {
    for (const c of chains) {
      if (this.wanted.has(c)) continue
      await this.unpacking.get(c)
      if (this.wanted.has(c)) continue
      const used = this.images.store.all().some((img) => chainIds(img.config.rootfs.diff_ids).includes(c))
      if (!used) await this.images.layers.remove(c).catch((err) => { ops.warn('a failed pull leaves layer %s: %s', c, describeError(err)) })
    }
  }

  close (): void {
    this.http.close()
  }
}
