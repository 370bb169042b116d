// Image routes: import (create?fromSrc), list, inspect, history, tag, remove. Pull, push, save/load and commit
// register their own handlers in the same table shape.
import type { Route } from '../../http/router.js'
import type { ApiContext, ApiHandler } from '../context.js'
import type { ImageService } from '../../image/image-service.js'
import { sendJson, sendEmpty, writeRecord } from '../../http/reply.js'
import { boolValue, parseFilters } from '../../http/query.js'
import { invalidArgument, notImplemented, errorMessage } from '../../errors.js'
import { toImageInspect, toImageSummary } from '../image-wire.js'
import { parseReference, familiarString, withDefaultTag, familiarName } from '../../image/reference.js'
import { chainIds } from '../../image/layer-store.js'
import type { ImageRecord } from '../../image/types.js'

export interface ImageRouteBackend {
  images: ImageService
  containerCount (imageId: string): number
  /** POST /images/create?fromImage=…: the registry pull (streams progress itself). */
  pull (ctx: ApiContext): Promise<void>
}

const IMAGE_FILTERS = new Set(['dangling', 'label', 'before', 'since', 'reference', 'until'])

function matchReference (img: ImageRecord, patterns: string[]): boolean {
  return patterns.some((p) => {
    const re = new RegExp('^' + p.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '[^/]*').replace(/\?/g, '.') + '$')
    return img.repoTags.some((t) => {
      const i = t.lastIndexOf(':')
      const repo = t.slice(0, i)
      return re.test(t) || re.test(repo)
    })
  })
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
      await b.pull(ctx)
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
    if (refs !== undefined && refs.length > 0) list = list.filter((img) => matchReference(img, refs))
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
    const hist = [...(img.config.history ?? [])].reverse()
    const out = hist.map((h, i) => ({
      Id: i === 0 ? img.id : '<missing>',
      Created: h.created !== undefined ? Math.floor(Date.parse(h.created) / 1000) : 0,
      CreatedBy: h.created_by ?? '',
      Tags: i === 0 ? img.repoTags : null,
      Size: i === 0 ? img.size : 0,
      Comment: h.comment ?? ''
    }))
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

  async function deleteImage (ctx: ApiContext): Promise<void> {
    const records = await svc.remove(ctx.params.name as string, boolValue(ctx.query, 'force'), boolValue(ctx.query, 'noprune'))
    sendJson(ctx.res, 200, records)
  }

  return [
    { method: 'POST', path: '/images/create', handler: postImagesCreate },
    { method: 'GET', path: '/images/json', handler: getImagesJson },
    { method: 'GET', path: '/images/{name:.*}/json', handler: getImageJson },
    { method: 'GET', path: '/images/{name:.*}/history', handler: getImageHistory },
    { method: 'POST', path: '/images/{name:.*}/tag', handler: postImageTag },
    { method: 'DELETE', path: '/images/{name:.*}', handler: deleteImage }
  ]
}
