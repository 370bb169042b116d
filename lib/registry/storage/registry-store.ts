// The registry's records: repositories, their manifests, tags and blob links, kept in an in-memory index loaded at
// start and written through the driver (one atomic document per record; the tree is in paths.ts). Pull statistics
// change on every pull, so they are flushed lazily (about once a second, and on close).
// Long because the index and every operation that keeps it and the disk in step (repositories, manifests, tags, blob
// links, pull statistics) share one load and one write path; the disk layout is paths.ts, the driver driver.ts.
import { describeError } from '../../errors.js'
import { levelLogger, logger } from '../../log.js'
import { registryError } from '../codes.js'
import type { RepoName } from '../names.js'
import type { StorageDriver } from './driver.js'
import { RwLock } from '../../util/rw-lock.js'
import { layerLinkKey, manifestKey, parseKey, repositoryKey, statsKey, tagKey, REPOSITORIES_PREFIX } from './paths.js'
import { isoTime } from '../../util/time.js'

const log = logger('registry:storage')
const ops = levelLogger('registry:storage')
const STATS_FLUSH_MS = 1000
const LOAD_CONCURRENCY = 32
const MANIFEST_CACHE_BYTES = 32 * 1024 * 1024

export interface RepositoryMeta {
  id: number
  namespace: string
  repository: string
  description: string
  fullDescription: string
  isPrivate: boolean
  /** ISO 8601 times. */
  dateRegistered: string
  lastModified: string
  createdBy: string | null
}

export interface LayerSummary { digest: string, size: number, instruction: string }

/** What the Hub API shows about an image manifest, read from its config when it was pushed. */
export interface ImageSummary {
  architecture: string | null
  os: string | null
  variant: string | null
  osVersion: string | null
  osFeatures: string[]
  features: string[]
  layers: LayerSummary[]
  /** Sum of the compressed layer sizes. */
  size: number
}

export interface ManifestRecord {
  digest: string
  mediaType: string
  /** Bytes of the manifest itself. */
  size: number
  kind: 'image' | 'index'
  pushedAt: string
  pushedBy: string | null
  artifactType?: string
  subject?: string
  annotations?: Record<string, string>
  /** Blobs it references (config, layers) with their sizes; for indexes, the child manifests. */
  references: Array<{ digest: string, size: number }>
  image?: ImageSummary
  /** Indexes: children and their platforms. */
  children?: Array<{ digest: string, mediaType: string, platform?: { architecture: string, os: string, variant?: string } }>
}

export interface TagRecord {
  id: number
  name: string
  digest: string
  pushedAt: string
  pushedBy: string | null
}

interface StatsDoc {
  pullCount: number
  lastPulled: string | null
  tags: Record<string, string>
  manifests: Record<string, string>
}

export class Repository {
  readonly name: string
  meta: RepositoryMeta
  readonly tags = new Map<string, TagRecord>()
  readonly manifests = new Map<string, ManifestRecord>()
  readonly blobs = new Set<string>()
  stats: StatsDoc = { pullCount: 0, lastPulled: null, tags: {}, manifests: {} }
  /**
   * Manifest and tag changes run one at a time (each reads the index, writes its records, then updates the index):
   * a push and a delete of one manifest interleaved left a tag listed whose manifest was gone, and two writes of one
   * tag could update the index in another order than the disk.
   */
  readonly changes = new RwLock()
  constructor (name: string, meta: RepositoryMeta) { this.name = name; this.meta = meta }

  /** Time of the last push (manifest or tag), or null. */
  get lastUpdated (): string | null {
    let last: string | null = null
    for (const t of this.tags.values()) if (last === null || t.pushedAt > last) last = t.pushedAt
    for (const m of this.manifests.values()) if (last === null || m.pushedAt > last) last = m.pushedAt
    return last
  }

  /** Bytes of the distinct blobs its manifests use (manifests included). */
  get storageSize (): number {
    const seen = new Map<string, number>()
    for (const m of this.manifests.values()) {
      seen.set(m.digest, m.size)
      for (const r of m.references) seen.set(r.digest, r.size)
    }
    let total = 0
    for (const s of seen.values()) total += s
    return total
  }

  tagsFor (digest: string): TagRecord[] {
    return [...this.tags.values()].filter((t) => t.digest === digest)
  }
}

/** A byte-bounded cache of manifest bodies, oldest dropped first (Map keeps insertion order). */
class ManifestCache {
  private readonly items = new Map<string, Buffer>()
  private bytes = 0
  private readonly limit: number
  constructor (limit: number) { this.limit = limit }
  get (digest: string): Buffer | undefined {
    const v = this.items.get(digest)
    if (v !== undefined) { this.items.delete(digest); this.items.set(digest, v) }
    return v
  }

  set (digest: string, data: Buffer): void {
    if (data.length > this.limit / 8 || this.items.has(digest)) return
    this.items.set(digest, data)
    this.bytes += data.length
    for (const [k, v] of this.items) {
      if (this.bytes <= this.limit) break
      this.items.delete(k)
      this.bytes -= v.length
    }
  }

  delete (digest: string): void {
    const v = this.items.get(digest)
    if (v !== undefined) { this.items.delete(digest); this.bytes -= v.length }
  }
}

async function mapLimit<T> (items: T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0
  const worker = async (): Promise<void> => {
    while (next < items.length) await fn(items[next++] as T)
  }
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker))
}

function now (): string { return isoTime() }

export class RegistryStore {
  readonly driver: StorageDriver
  private readonly repos = new Map<string, Repository>()
  /** digest → repositories that link it (cross-repository mount, garbage collection). */
  private readonly blobLinks = new Map<string, Set<string>>()
  private readonly creating = new Map<string, Promise<Repository>>()
  private readonly cache = new ManifestCache(MANIFEST_CACHE_BYTES)
  private readonly dirtyStats = new Set<string>()
  private statsTimer: NodeJS.Timeout | null = null
  /** Once closed, a pull counted by a request still under way is not written (its data root may be gone). */
  private closed = false
  /** Manifest pushes hold it shared, garbage collection exclusively: no sweep between a push's check and its record. */
  readonly gcLock = new RwLock()
  private nextRepoId = 1
  private nextTagId = 1

  constructor (driver: StorageDriver) { this.driver = driver }

  async init (): Promise<void> {
    await this.driver.init()
    const keys = await this.driver.listDocuments(REPOSITORIES_PREFIX)
    const parsed = keys.map((k) => ({ key: k, p: parseKey(k) }))
    const byRepo = new Map<string, Repository>()
    // repository documents first: everything else hangs off them
    await mapLimit(parsed.filter((x) => x.p?.kind === 'repository'), LOAD_CONCURRENCY, async ({ key, p }) => {
      const meta = await this.readJson<RepositoryMeta>(key)
      if (meta === null || p === null) return
      byRepo.set(p.name, new Repository(p.name, meta))
    })
    await mapLimit(parsed.filter((x) => x.p !== null && x.p.kind !== 'repository'), LOAD_CONCURRENCY, async ({ key, p }) => {
      if (p === null) return
      const repo = byRepo.get(p.name)
      if (repo === undefined) { log('ignoring %s: no repository document', key); return }
      switch (p.kind) {
        case 'layer': repo.blobs.add(p.digest); break
        case 'manifest': {
          const m = await this.readJson<ManifestRecord>(key)
          if (m !== null) repo.manifests.set(m.digest, m)
          break
        }
        case 'tag': {
          const t = await this.readJson<TagRecord>(key)
          if (t !== null) repo.tags.set(t.name, t)
          break
        }
        case 'stats': {
          const s = await this.readJson<StatsDoc>(key)
          if (s !== null) repo.stats = s
          break
        }
      }
    })
    for (const repo of byRepo.values()) {
      // a crash between a manifest's record and its tag leaves at worst an untagged manifest; a tag whose manifest
      // record never made it to disk is dropped here
      for (const [name, t] of repo.tags) {
        if (!repo.manifests.has(t.digest)) { log('%s: tag %s points at a missing manifest; dropped', repo.name, name); repo.tags.delete(name) }
      }
      this.repos.set(repo.name, repo)
      this.nextRepoId = Math.max(this.nextRepoId, repo.meta.id + 1)
      for (const t of repo.tags.values()) this.nextTagId = Math.max(this.nextTagId, t.id + 1)
      for (const d of repo.blobs) this.addLink(d, repo.name)
    }
    log('loaded %d repositories', this.repos.size)
  }

  private async readJson<T> (key: string): Promise<T | null> {
    const data = await this.driver.readDocument(key)
    if (data === null) return null
    try {
      return JSON.parse(data.toString('utf8')) as T
    } catch (err) {
      ops.warn('%s is not valid JSON: read as absent: %s', key, describeError(err))
      return null
    }
  }

  private async writeJson (key: string, value: unknown): Promise<void> {
    await this.driver.writeDocument(key, JSON.stringify(value))
  }

  private addLink (digest: string, name: string): void {
    let s = this.blobLinks.get(digest)
    if (s === undefined) { s = new Set(); this.blobLinks.set(digest, s) }
    s.add(name)
  }

  // ---- repositories

  get (name: string): Repository | undefined { return this.repos.get(name) }

  /** Like get(), but throws NAME_UNKNOWN. */
  require (name: string): Repository {
    const r = this.repos.get(name)
    if (r === undefined) throw registryError('NAME_UNKNOWN', { detail: { name } })
    return r
  }

  list (): Repository[] { return [...this.repos.values()] }

  /** Creates a repository; null when it exists already (the caller picks the error or the existing one). */
  async create (rn: RepoName, fields: { description?: string, fullDescription?: string, isPrivate?: boolean }, creator: string | null): Promise<Repository | null> {
    if (this.repos.has(rn.name) || this.creating.has(rn.name)) return null
    const t = now()
    const meta: RepositoryMeta = {
      id: this.nextRepoId++,
      namespace: rn.namespace,
      repository: rn.repository,
      description: fields.description ?? '',
      fullDescription: fields.fullDescription ?? '',
      isPrivate: fields.isPrivate ?? false,
      dateRegistered: t,
      lastModified: t,
      createdBy: creator
    }
    const p = (async () => {
      await this.writeJson(repositoryKey(rn.name), meta)
      const repo = new Repository(rn.name, meta)
      this.repos.set(rn.name, repo)
      return repo
    })()
    this.creating.set(rn.name, p)
    try { return await p } finally { this.creating.delete(rn.name) }
  }

  /** The repository, created with defaults when missing (a push to a new name). */
  async ensure (rn: RepoName, creator: string | null): Promise<Repository> {
    const existing = this.repos.get(rn.name)
    if (existing !== undefined) return existing
    const pending = this.creating.get(rn.name)
    if (pending !== undefined) return await pending
    return (await this.create(rn, {}, creator)) ?? await this.ensure(rn, creator)
  }

  async updateMeta (repo: Repository, patch: Partial<Pick<RepositoryMeta, 'description' | 'fullDescription' | 'isPrivate'>>): Promise<void> {
    const meta = { ...repo.meta, ...patch, lastModified: now() }
    await this.writeJson(repositoryKey(repo.name), meta)
    repo.meta = meta
  }

  // ---- blobs and links

  async linkBlob (repo: Repository, digest: string): Promise<void> {
    if (repo.blobs.has(digest)) return
    await this.driver.writeDocument(layerLinkKey(repo.name, digest), '')
    repo.blobs.add(digest)
    this.addLink(digest, repo.name)
  }

  async unlinkBlob (repo: Repository, digest: string): Promise<void> {
    await this.driver.deleteDocument(layerLinkKey(repo.name, digest))
    repo.blobs.delete(digest)
    this.blobLinks.get(digest)?.delete(repo.name)
  }

  /** Repositories that link a blob. */
  linkedFrom (digest: string): ReadonlySet<string> {
    return this.blobLinks.get(digest) ?? new Set()
  }

  /** Size of a blob that the repository links and the driver holds, or null. */
  async linkedBlobSize (repo: Repository, digest: string): Promise<number | null> {
    if (!repo.blobs.has(digest)) return null
    const st = await this.driver.statBlob(digest)
    return st === null ? null : st.size
  }

  /**
   * A blob this repository links, read whole when it holds at most `limit` bytes; null when it is not linked here,
   * absent, or larger (the read stops at the cap whatever the stat said).
   */
  async readLinkedBlob (repo: Repository, digest: string, limit: number): Promise<Buffer | null> {
    const size = await this.linkedBlobSize(repo, digest)
    if (size === null || size > limit) return null
    if (size === 0) return Buffer.alloc(0)
    const chunks: Buffer[] = []
    let got = 0
    for await (const chunk of this.driver.blobStream(digest, { start: 0, end: limit }) as AsyncIterable<Buffer>) {
      got += chunk.length
      if (got > limit) return null
      chunks.push(chunk)
    }
    return Buffer.concat(chunks, got)
  }

  // ---- manifests and tags

  async manifestBytes (digest: string): Promise<Buffer> {
    const cached = this.cache.get(digest)
    if (cached !== undefined) return cached
    const data = await this.driver.readBlob(digest)
    this.cache.set(digest, data)
    return data
  }

  /** Stores a manifest's bytes and record, then the tag if one is given. Order matters for crash safety. */
  async putManifest (repo: Repository, body: Buffer, record: ManifestRecord, tags: string[]): Promise<void> {
    await this.driver.putBlob(body)
    this.cache.set(record.digest, body)
    await repo.changes.exclusive(async () => {
      await this.linkBlob(repo, record.digest)
      const existing = repo.manifests.get(record.digest)
      if (existing === undefined) {
        await this.writeJson(manifestKey(repo.name, record.digest), record)
        repo.manifests.set(record.digest, record)
      }
      for (const tag of tags) await this.setTag(repo, tag, record.digest, record.pushedBy)
    })
  }

  private async setTag (repo: Repository, tag: string, digest: string, pusher: string | null): Promise<TagRecord> {
    const old = repo.tags.get(tag)
    const rec: TagRecord = { id: old?.id ?? this.nextTagId++, name: tag, digest, pushedAt: now(), pushedBy: pusher }
    await this.writeJson(tagKey(repo.name, tag), rec)
    repo.tags.set(tag, rec)
    return rec
  }

  async deleteTag (repo: Repository, tag: string): Promise<boolean> {
    return await repo.changes.exclusive(async () => await this.removeTag(repo, tag))
  }

  private async removeTag (repo: Repository, tag: string): Promise<boolean> {
    if (!repo.tags.has(tag)) return false
    await this.driver.deleteDocument(tagKey(repo.name, tag))
    repo.tags.delete(tag)
    return true
  }

  /** Removes a manifest from a repository together with the tags that point at it. */
  async deleteManifest (repo: Repository, digest: string): Promise<boolean> {
    return await repo.changes.exclusive(async () => {
      if (!repo.manifests.has(digest)) return false
      for (const t of repo.tagsFor(digest)) await this.removeTag(repo, t.name)
      await this.driver.deleteDocument(manifestKey(repo.name, digest))
      repo.manifests.delete(digest)
      await this.unlinkBlob(repo, digest)
      return true
    })
  }

  /** Resolves a tag or digest to a manifest record of the repository. */
  resolve (repo: Repository, ref: { tag: string } | { digest: string }): ManifestRecord | undefined {
    const digest = 'tag' in ref ? repo.tags.get(ref.tag)?.digest : ref.digest
    return digest === undefined ? undefined : repo.manifests.get(digest)
  }

  // ---- pull statistics (lazy)

  recordPull (repo: Repository, digest: string, tag: string | undefined): void {
    const t = now()
    const s = repo.stats
    s.pullCount++
    s.lastPulled = t
    s.manifests[digest.slice(7)] = t
    if (tag !== undefined) s.tags[tag] = t
    if (this.closed) return
    this.dirtyStats.add(repo.name)
    if (this.statsTimer === null) {
      this.statsTimer = setTimeout(() => { void this.flushStats() }, STATS_FLUSH_MS)
      this.statsTimer.unref()
    }
  }

  async flushStats (): Promise<void> {
    if (this.statsTimer !== null) { clearTimeout(this.statsTimer); this.statsTimer = null }
    const names = [...this.dirtyStats]
    this.dirtyStats.clear()
    for (const name of names) {
      const repo = this.repos.get(name)
      if (repo === undefined) continue
      try {
        await this.writeJson(statsKey(name), repo.stats)
      } catch (err) {
        ops.warn('the pull and push counts of %s were not written: %s', name, describeError(err))
      }
    }
  }

  forgetCached (digest: string): void { this.cache.delete(digest) }

  async close (): Promise<void> {
    this.closed = true
    await this.flushStats()
    await this.driver.close?.()
  }
}
