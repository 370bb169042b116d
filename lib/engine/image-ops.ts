// The image operations the API asks for (lib/api/images/backend.ts): list, inspect, history, tag, remove, prune,
// search, import, pull, push, login, save and load, over the image service, the registry client and the event bus.
import type { Readable } from 'node:stream'
import { boolFilter, type Filters } from '../http/query.js'
import type { ImageService } from '../image/image-service.js'
import type { ImageRecord } from '../image/types.js'
import type { EventBus } from '../events/event-bus.js'
import type { Distribution } from '../distribution/distribution.js'
import type { AuthConfig } from '../distribution/auth-config.js'
import type { ProgressStream } from '../distribution/progress.js'
import type { DeleteRecord } from '../image/image-service.js'
import type { PullRequest } from '../distribution/puller.js'
import type { PushRequest } from '../distribution/pusher.js'
import type { ImageArchiveBackend, ImageBackend, DistributionBackend, ImageHistoryEntry, ImageImportOptions, SearchResult } from '../api/images/backend.js'
import { chainIds } from '../image/layer-store.js'
import { sharedSizes } from '../image/shared-size.js'
import { compileGlob, type Glob } from '../util/glob.js'
import { loadImages, resolveSaveNames, saveImages, type LoadReporter } from '../image/image-archive.js'
import { parseReference, familiarString, withDefaultTag, familiarName } from '../image/reference.js'
import { invalidArgument, errorMessage, unavailable, isEngineError, describeError } from '../errors.js'
import { levelLogger } from '../log.js'

const ops = levelLogger('engine:images')

export interface ImageOpsOptions {
  images: ImageService
  events: EventBus
  containerCount (imageId: string): number
  /** The collector's sweep now (null when work in flight defers it: it runs once that work ends). */
  collect (): Promise<number | null>
  /** The registry client (loaded on first use). */
  distribution (): Promise<Distribution>
}

/** reference.FamiliarMatch: the glob against the whole reference, then against its repository alone. */
function matchReference (ref: string, repo: string, patterns: Glob[]): boolean {
  return patterns.some((g) => g.match(ref) || g.match(repo))
}

/**
 * The image as a reference filter shows it (dockerd's image list): only the tags and digests the patterns match,
 * so `docker images busybox` lists busybox's rows and not the other names of the same image; undefined when none do.
 */
function withMatchingRefs (img: ImageRecord, patterns: Glob[]): ImageRecord | undefined {
  const repoTags = img.repoTags.filter((t) => matchReference(t, t.slice(0, t.lastIndexOf(':')), patterns))
  const repoDigests = img.repoDigests.filter((d) => matchReference(d, d.slice(0, d.indexOf('@')), patterns))
  if (repoTags.length === 0 && repoDigests.length === 0) return undefined
  return { ...img, repoTags, repoDigests }
}

function hasLabel (labels: Record<string, string>, l: string): boolean {
  const i = l.indexOf('=')
  return i === -1 ? labels[l] !== undefined : labels[l.slice(0, i)] === l.slice(i + 1)
}

/** Docker Hub's search (index.docker.io/v1/search); offline, a clear 503 instead of a hang. */
async function searchIndex (term: string, limit: number, signal: AbortSignal): Promise<SearchResult[]> {
  const url = `https://index.docker.io/v1/search?q=${encodeURIComponent(term)}&n=${limit}`
  let res: Response
  try {
    res = await fetch(url, { signal: AbortSignal.any([signal, AbortSignal.timeout(10_000)]) })
  } catch (err) {
    throw unavailable(`Error response from registry: cannot reach index.docker.io to search (${errorMessage((err as Error).cause ?? err)})`)
  }
  if (!res.ok) throw unavailable(`Error response from registry: search failed with status ${res.status}`)
  const body = await res.json() as { results?: Array<Record<string, unknown>> }
  return (body.results ?? []).slice(0, limit).map((r) => ({
    name: r.name as string, description: (r.description ?? '') as string, stars: (r.star_count ?? 0) as number, official: r.is_official === true, automated: r.is_automated === true
  }))
}

export class ImageOps implements ImageBackend, ImageArchiveBackend, DistributionBackend {
  private readonly svc: ImageService
  private readonly o: ImageOpsOptions

  constructor (o: ImageOpsOptions) {
    this.svc = o.images
    this.o = o
  }

  containerCount (imageId: string): number { return this.o.containerCount(imageId) }

  sharedSizes (): Map<string, number> {
    return sharedSizes(this.svc.store.all(), (_c, img, i) => img.layerSizes?.[i] ?? 0)
  }

  listImages (all: boolean, filters: Filters): ImageRecord[] {
    const store = this.svc.store
    let list = store.all()
    if (!all) list = list.filter((img) => img.repoTags.length > 0 || img.repoDigests.length > 0 || !store.all().some((o) => o.parent === img.id))
    if (filters.has('dangling')) {
      const want = boolFilter(filters, 'dangling', false)
      list = list.filter((img) => (img.repoTags.length === 0) === want)
    }
    const labels = filters.get('label')
    if (labels !== undefined) list = list.filter((img) => labels.every((l) => hasLabel(img.config.config?.Labels ?? {}, l)))
    const refs = filters.get('reference')
    if (refs !== undefined && refs.length > 0) {
      const globs = refs.map(compileGlob)
      list = list.map((img) => withMatchingRefs(img, globs)).filter((img) => img !== undefined)
    }
    const cutoff = (key: string): ImageRecord | undefined => {
      const v = filters.get(key)?.[0]
      return v === undefined ? undefined : store.lookup(v).img
    }
    const before = cutoff('before')
    if (before !== undefined) list = list.filter((img) => (img.config.created ?? '') < (before.config.created ?? ''))
    const since = cutoff('since')
    if (since !== undefined) list = list.filter((img) => (img.config.created ?? '') > (since.config.created ?? ''))
    return list.sort((a, c2) => (c2.config.created ?? '').localeCompare(a.config.created ?? ''))
  }

  async inspectImage (ref: string): Promise<{ img: ImageRecord, layerDirs: string[] }> {
    const img = await this.svc.resolveImage(ref)
    return { img, layerDirs: await this.svc.layerPaths(img) }
  }

  async imageHistory (ref: string): Promise<ImageHistoryEntry[]> {
    const img = await this.svc.resolveImage(ref)
    // history entries that are not empty_layer consume the image's layers in order; their sizes are the layers'
    const chains = chainIds(img.config.rootfs.diff_ids)
    const entries: ImageHistoryEntry[] = []
    let li = 0
    for (const h of img.config.history ?? []) {
      let size = 0
      if (h.empty_layer !== true && li < chains.length) { size = img.layerSizes?.[li] ?? await this.svc.layerSize(chains[li] as string, img.config.rootfs.diff_ids[li] as string); li++ }
      entries.push({ id: '<missing>', created: h.created !== undefined ? Math.floor(Date.parse(h.created) / 1000) : 0, createdBy: h.created_by ?? '', tags: null, size, comment: h.comment ?? '' })
    }
    const out = entries.reverse()
    // as dockerd: IDs (and tags) along the parent chain, one image per entry from the top (a build's steps)
    let cur: ImageRecord | undefined = img
    for (const e of out) {
      if (cur === undefined) break
      e.id = cur.id
      e.tags = cur.repoTags.length > 0 ? cur.repoTags : null
      cur = cur.parent !== '' ? this.svc.store.byId(cur.parent) : undefined
    }
    return out
  }

  async tagImage (name: string, repo: string, tag: string): Promise<void> {
    const img = await this.svc.resolveImage(name)
    if (repo === '') throw invalidArgument('repository name must be specified')
    const r = parseReference(repo)
    if (familiarName(r) === 'sha256') throw invalidArgument('refusing to create an ambiguous tag using digest algorithm as name')
    if (r.digest !== undefined) throw invalidArgument('refusing to create a tag with a digest reference')
    if (tag !== '' && r.tag !== undefined) throw invalidArgument('invalid reference format')
    await this.svc.tagRef(img, familiarString(withDefaultTag({ ...r, ...(tag !== '' ? { tag } : {}) })))
  }

  async removeImage (ref: string, force: boolean, noprune: boolean): Promise<DeleteRecord[]> {
    return await this.svc.remove(ref, force, noprune)
  }

  async pruneImages (filters: Filters): Promise<{ deleted: DeleteRecord[], reclaimed: number }> {
    const svc = this.svc
    const onlyDangling = boolFilter(filters, 'dangling', true)
    const until = filters.get('until')?.[0]
    const cutoff = until === undefined ? undefined : (/^\d+(\.\d+)?$/.test(until) ? Number(until) * 1000 : Date.parse(until))
    const want = filters.get('label') ?? []
    const notWant = filters.get('label!') ?? []
    const deleted: DeleteRecord[] = []
    const freedBefore = svc.freed
    for (const img of [...svc.store.all()]) {
      if (svc.store.byId(img.id) === undefined) continue
      if (this.o.containerCount(img.id) > 0) continue
      if (onlyDangling && img.repoTags.length > 0) continue
      if (cutoff !== undefined && Date.parse(img.config.created ?? '') > cutoff) continue
      if (svc.store.all().some((o) => o.parent === img.id)) continue
      const labels = img.config.config?.Labels ?? {}
      if (!want.every((l) => hasLabel(labels, l)) || notWant.some((l) => hasLabel(labels, l))) continue
      try {
        const records = await svc.remove(img.id, true, false)
        deleted.push(...records)
      } catch (err) {
        // in use or gone meanwhile: kept (dockerd's imageDeleteFailed); anything else is worth a warning, as there
        if (!isEngineError(err) || (err.kind !== 'conflict' && err.kind !== 'not-found')) ops.warn('failed to prune image %s: %s', img.id, describeError(err))
      }
    }
    // what removals of earlier images, interrupted imports and failed pulls left behind goes too
    await this.o.collect()
    // the bytes that really left the disk (layers shared with a remaining image stay, and are not counted)
    return { deleted, reclaimed: svc.freed - freedBefore }
  }

  async searchImages (term: string, limit: number, signal: AbortSignal): Promise<SearchResult[]> {
    return await searchIndex(term, limit, signal)
  }

  async importImage (src: Readable, o: ImageImportOptions): Promise<string> {
    return (await this.svc.importTar(src, o)).id
  }

  async pullImage (o: PullRequest, out: ProgressStream): Promise<void> {
    const [d, { pullImage }] = await Promise.all([this.o.distribution(), import('../distribution/puller.js')])
    await d.track(pullImage(d, o, out))
  }

  async pushImage (o: PushRequest, out: ProgressStream): Promise<void> {
    const [d, { pushImage }] = await Promise.all([this.o.distribution(), import('../distribution/pusher.js')])
    await d.track(pushImage(d, o, out))
  }

  async login (auth: AuthConfig, signal: AbortSignal): Promise<{ identityToken: string }> {
    const [d, { login }] = await Promise.all([this.o.distribution(), import('../distribution/login.js')])
    return await d.track(login(d, auth, signal))
  }

  async inspectRemote (name: string, auth: AuthConfig, signal: AbortSignal): Promise<unknown> {
    const [d, { inspectRemote }] = await Promise.all([this.o.distribution(), import('../distribution/inspect.js')])
    return await d.track(inspectRemote(d, name, auth, signal))
  }

  async saveImages (names: string[]): Promise<Readable> {
    const items = resolveSaveNames(this.svc, names)
    const tar = await saveImages(this.svc, items)
    for (const { img } of items) this.o.events.emit('image', 'save', img.id, { name: img.id })
    return tar
  }

  async loadImages (src: Readable, report: LoadReporter, quiet: boolean): Promise<void> {
    const loaded = await loadImages(this.svc, src, report, quiet)
    for (const img of loaded) this.o.events.emit('image', 'load', img.id, { name: img.id })
  }
}
