// Image routes: create (import with fromSrc, pull with fromImage), list, inspect, history, tag, remove. Push,
// save/load and commit register their own handlers in the same table shape.
import type { Route } from '../../http/router.js'
import type { ApiContext, ApiHandler } from '../../http/api-context.js'
import type { ImageService } from '../../image/image-service.js'
import { sendJson, sendEmpty, writeRecord } from '../../http/reply.js'
import { boolValue, parseFilters } from '../../http/query.js'
import { invalidArgument, notImplemented, errorMessage, unavailable } from '../../errors.js'
import { toImageInspect, toImageSummary } from '../image-wire.js'
import { parseReference, familiarString, withDefaultTag, familiarName } from '../../image/reference.js'
import { chainIds } from '../../image/layer-store.js'
import type { ImageRecord } from '../../image/types.js'
import { compileGlob, type Glob } from '../../util/glob.js'
import type { Distribution } from '../../distribution/distribution.js'
import { decodeRegistryAuth } from '../../distribution/auth-config.js'
import { withProgress } from './image-distribution.js'

export interface ImageRouteBackend {
  images: ImageService
  containerCount (imageId: string): number
  /** Layers and blobs work in flight holds (pulls): the collector leaves them. */
  busy?: () => ReadonlySet<string> | null
  /** The registry client (loaded on first use), for POST /images/create?fromImage=…. */
  distribution (): Promise<Distribution>
}

const IMAGE_FILTERS = new Set(['dangling', 'label', 'before', 'since', 'reference', 'until'])

/** reference.FamiliarMatch: the glob against the tag, then against the repository alone. */
function matchReference (img: ImageRecord, patterns: Glob[]): boolean {
  return patterns.some((g) => img.repoTags.some((t) => g.match(t) || g.match(t.slice(0, t.lastIndexOf(':')))))
}

/** Docker Hub's search (index.docker.io/v1/search); offline, a clear 503 instead of a hang. */
async function searchIndex (term: string, limit: number, signal: AbortSignal): Promise<unknown[]> {
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
    name: r.name, description: r.description ?? '', star_count: r.star_count ?? 0, is_official: r.is_official === true, is_automated: r.is_automated === true
  }))
}

export function imageRoutes (b: ImageRouteBackend): Array<Route<ApiHandler>> {
  const svc = b.images

  async function postImagesCreate (ctx: ApiContext): Promise<void> {
    const q = ctx.query
    const fromSrc = q.get('fromSrc')
    const fromImage = q.get('fromImage')
    if (fromSrc !== null && fromSrc !== '') {
      if (fromSrc !== '-') throw notImplemented('importing from a URL is not supported; send the tar as the request body with fromSrc=-')
      const repo = q.get('repo') ?? ''
      if (repo !== '') parseReference(repo)
      ctx.res.writeHead(200, { 'Content-Type': 'application/json' })
      ctx.res.flushHeaders()
      try {
        const img = await svc.importTar(ctx.req, {
          repo,
          tag: q.get('tag') ?? '',
          message: q.get('message') ?? '',
          changes: q.getAll('changes'),
          platform: q.get('platform') ?? ''
        })
        writeRecord(ctx.res, { status: img.id })
      } catch (err) {
        const message = errorMessage(err)
        writeRecord(ctx.res, { errorDetail: { message }, error: message })
      }
      ctx.res.end()
      return
    }
    if (fromImage !== null && fromImage !== '') {
      const [d, { pullImage }] = await Promise.all([b.distribution(), import('../../distribution/puller.js')])
      await withProgress(ctx, d, async (out) => {
        await pullImage(d, {
          fromImage,
          tag: q.get('tag') ?? '',
          platform: q.get('platform') ?? '',
          auth: decodeRegistryAuth(ctx.req.headers['x-registry-auth']),
          signal: ctx.signal
        }, out)
      })
      return
    }
    throw invalidArgument('either fromSrc or fromImage must be set')
  }

  async function getImagesJson (ctx: ApiContext): Promise<void> {
    const q = ctx.query
    const filters = parseFilters(q.get('filters'), IMAGE_FILTERS)
    let list = svc.store.all()
    const all = boolValue(q, 'all')
    if (!all) list = list.filter((img) => img.repoTags.length > 0 || img.repoDigests.length > 0 || !svc.store.all().some((o) => o.parent === img.id))
    const dangling = filters.get('dangling')
    if (dangling !== undefined && dangling.length > 0) {
      const want = dangling[0] === 'true' || dangling[0] === '1'
      list = list.filter((img) => (img.repoTags.length === 0) === want)
    }
    const labels = filters.get('label')
    if (labels !== undefined) {
      list = list.filter((img) => labels.every((l) => {
        const i = l.indexOf('=')
        const lbl = img.config.config?.Labels ?? {}
        return i === -1 ? lbl[l] !== undefined : lbl[l.slice(0, i)] === l.slice(i + 1)
      }))
    }
    const refs = filters.get('reference')
    if (refs !== undefined && refs.length > 0) {
      const globs = refs.map(compileGlob)
      list = list.filter((img) => matchReference(img, globs))
    }
    const cutoff = (key: string): ImageRecord | undefined => {
      const v = filters.get(key)?.[0]
      return v === undefined ? undefined : svc.store.lookup(v).img
    }
    const before = cutoff('before')
    if (before !== undefined) list = list.filter((img) => (img.config.created ?? '') < (before.config.created ?? ''))
    const since = cutoff('since')
    if (since !== undefined) list = list.filter((img) => (img.config.created ?? '') > (since.config.created ?? ''))
    list.sort((a, c2) => (c2.config.created ?? '').localeCompare(a.config.created ?? ''))
    sendJson(ctx.res, 200, list.map((img) => toImageSummary(img, ctx.version, b.containerCount(img.id))))
  }

  async function getImageJson (ctx: ApiContext): Promise<void> {
    const img = await svc.resolveImage(ctx.params.name as string)
    const top = chainIds(img.config.rootfs.diff_ids).pop()
    const layerDirs = await svc.layerPaths(img)
    sendJson(ctx.res, 200, toImageInspect(img, ctx.version, {
      Name: 'overlay2',
      Data: top === undefined ? null : { LowerDir: layerDirs.slice(0, -1).reverse().join(':'), UpperDir: layerDirs[layerDirs.length - 1] ?? '', MergedDir: '', WorkDir: '' }
    }))
  }

  async function getImageHistory (ctx: ApiContext): Promise<void> {
    const img = await svc.resolveImage(ctx.params.name as string)
    // history entries that are not empty_layer consume the image's layers in order; their sizes are the layers'
    const chains = chainIds(img.config.rootfs.diff_ids)
    const entries: Array<Record<string, unknown>> = []
    let li = 0
    for (const h of img.config.history ?? []) {
      let size = 0
      if (h.empty_layer !== true && li < chains.length) { size = await svc.layerSize(chains[li] as string, img.config.rootfs.diff_ids[li] as string); li++ }
      entries.push({ Id: '<missing>', Created: h.created !== undefined ? Math.floor(Date.parse(h.created) / 1000) : 0, CreatedBy: h.created_by ?? '', Tags: null, Size: size, Comment: h.comment ?? '' })
    }
    const out = entries.reverse()
    // as dockerd: IDs (and tags) along the parent chain, one image per entry from the top (a build's steps)
    let cur: ImageRecord | undefined = img
    for (const e of out) {
      if (cur === undefined) break
      e.Id = cur.id
      e.Tags = cur.repoTags.length > 0 ? cur.repoTags : null
      cur = cur.parent !== '' ? svc.store.byId(cur.parent) : undefined
    }
    sendJson(ctx.res, 200, out)
  }

  async function postImageTag (ctx: ApiContext): Promise<void> {
    const img = await svc.resolveImage(ctx.params.name as string)
    const repo = ctx.query.get('repo') ?? ''
    const tag = ctx.query.get('tag') ?? ''
    if (repo === '') throw invalidArgument('repository name must be specified')
    const r = parseReference(repo)
    if (familiarName(r) === 'sha256') throw invalidArgument('refusing to create an ambiguous tag using digest algorithm as name')
    if (r.digest !== undefined) throw invalidArgument('refusing to create a tag with a digest reference')
    if (tag !== '' && r.tag !== undefined) throw invalidArgument('invalid reference format')
    const ref = familiarString(withDefaultTag({ ...r, ...(tag !== '' ? { tag } : {}) }))
    await svc.tagRef(img, ref)
    sendEmpty(ctx.res, 201)
  }

  async function postImagesPrune (ctx: ApiContext): Promise<void> {
    const filters = parseFilters(ctx.query.get('filters'), new Set(['dangling', 'until', 'label', 'label!']))
    const dangling = filters.get('dangling')?.[0]
    const onlyDangling = dangling === undefined || !['false', '0'].includes(dangling.toLowerCase())
    const until = filters.get('until')?.[0]
    const cutoff = until === undefined ? undefined : (/^\d+(\.\d+)?$/.test(until) ? Number(until) * 1000 : Date.parse(until))
    const deleted: Array<Record<string, string>> = []
    const freedBefore = svc.freed
    for (const img of [...svc.store.all()]) {
      if (svc.store.byId(img.id) === undefined) continue
      if (b.containerCount(img.id) > 0) continue
      if (onlyDangling && img.repoTags.length > 0) continue
      if (cutoff !== undefined && Date.parse(img.config.created ?? '') > cutoff) continue
      if (svc.store.all().some((o) => o.parent === img.id)) continue
      const labels = img.config.config?.Labels ?? {}
      const want = filters.get('label') ?? []
      const notWant = filters.get('label!') ?? []
      const has = (l: string): boolean => { const i = l.indexOf('='); return i === -1 ? labels[l] !== undefined : labels[l.slice(0, i)] === l.slice(i + 1) }
      if (!want.every(has) || notWant.some(has)) continue
      try {
        const records = await svc.remove(img.id, true, false)
        for (const r of records) deleted.push(r as Record<string, string>)
      } catch { /* in use meanwhile: keep it */ }
    }
    // what removals of earlier images, interrupted imports and failed pulls left behind goes too
    const busy = b.busy?.() ?? new Set<string>()
    if (busy !== null) await svc.collectGarbage(busy)
    // the bytes that really left the disk (layers shared with a remaining image stay, and are not counted)
    sendJson(ctx.res, 200, { ImagesDeleted: deleted.length === 0 ? null : deleted, SpaceReclaimed: svc.freed - freedBefore })
  }

  async function getImagesSearch (ctx: ApiContext): Promise<void> {
    const term = ctx.query.get('term') ?? ''
    if (term === '') throw invalidArgument('term is required')
    const limit = Math.min(Math.max(Number(ctx.query.get('limit') ?? '25') || 25, 1), 100)
    sendJson(ctx.res, 200, await searchIndex(term, limit, ctx.signal))
  }

  async function deleteImage (ctx: ApiContext): Promise<void> {
    const records = await svc.remove(ctx.params.name as string, boolValue(ctx.query, 'force'), boolValue(ctx.query, 'noprune'))
    sendJson(ctx.res, 200, records)
  }

  return [
    { method: 'POST', path: '/images/create', handler: postImagesCreate },
    { method: 'GET', path: '/images/json', handler: getImagesJson },
    { method: 'POST', path: '/images/prune', handler: postImagesPrune },
    { method: 'GET', path: '/images/search', handler: getImagesSearch },
    { method: 'GET', path: '/images/{name:.*}/json', handler: getImageJson },
    { method: 'GET', path: '/images/{name:.*}/history', handler: getImageHistory },
    { method: 'POST', path: '/images/{name:.*}/tag', handler: postImageTag },
    { method: 'DELETE', path: '/images/{name:.*}', handler: deleteImage }
  ]
}
