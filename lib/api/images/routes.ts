// Image routes: create (import with fromSrc, pull with fromImage), list, inspect, history, tag, remove. Push,
// save/load and commit register their own handlers in the same table shape.
import type { Route } from '../../http/router.js'
import type { ApiContext, ApiHandler } from '../../http/api-context.js'
import type { ImageBackend } from './backend.js'
import { sendJson, sendEmpty, writeRecord } from '../../http/reply.js'
import { boolValue, parseFilters } from '../../http/query.js'
import { versionAtLeast } from '../api-version.js'
import { readableBody } from '../../http/body.js'
import { invalidArgument, notImplemented, errorMessage } from '../../errors.js'
import { toHistoryEntry, toImageInspect, toImageSummary, toPruneReply, toSearchResult } from './wire.js'
import { parseReference } from '../../image/reference.js'
import { decodeRegistryAuth } from '../../distribution/auth-config.js'
import { withProgress } from './distribution-routes.js'

const IMAGE_FILTERS = new Set(['dangling', 'label', 'before', 'since', 'reference', 'until'])

export function imageRoutes (b: ImageBackend): Array<Route<ApiHandler>> {
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
        const id = await b.importImage(readableBody(ctx.req, ctx.res), {
          repo,
          tag: q.get('tag') ?? '',
          message: q.get('message') ?? '',
          changes: q.getAll('changes'),
          platform: q.get('platform') ?? ''
        })
        writeRecord(ctx.res, { status: id })
      } catch (err) {
        const message = errorMessage(err)
        writeRecord(ctx.res, { errorDetail: { message }, error: message })
      }
      ctx.res.end()
      return
    }
    if (fromImage !== null && fromImage !== '') {
      await withProgress(ctx, async (out) => {
        await b.pullImage({
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
    const list = b.listImages(boolValue(ctx.query, 'all'), parseFilters(ctx.query.get('filters'), IMAGE_FILTERS))
    // API 1.42's shared-size=1: what each image has in common with the others (-1: not computed)
    const shared = versionAtLeast(ctx.version, '1.42') && boolValue(ctx.query, 'shared-size') ? b.sharedSizes() : undefined
    sendJson(ctx.res, 200, list.map((img) => {
      const summary = toImageSummary(img, ctx.version, b.containerCount(img.id))
      if (shared !== undefined) summary.SharedSize = shared.get(img.id) ?? 0
      return summary
    }))
  }

  async function getImageJson (ctx: ApiContext): Promise<void> {
    const { img, layerDirs } = await b.inspectImage(ctx.params.name as string)
    sendJson(ctx.res, 200, toImageInspect(img, ctx.version, layerDirs))
  }

  async function getImageHistory (ctx: ApiContext): Promise<void> {
    sendJson(ctx.res, 200, (await b.imageHistory(ctx.params.name as string)).map(toHistoryEntry))
  }

  async function postImageTag (ctx: ApiContext): Promise<void> {
    await b.tagImage(ctx.params.name as string, ctx.query.get('repo') ?? '', ctx.query.get('tag') ?? '')
    sendEmpty(ctx.res, 201)
  }

  async function postImagesPrune (ctx: ApiContext): Promise<void> {
    sendJson(ctx.res, 200, toPruneReply(await b.pruneImages(parseFilters(ctx.query.get('filters'), new Set(['dangling', 'until', 'label', 'label!'])))))
  }

  async function getImagesSearch (ctx: ApiContext): Promise<void> {
    const term = ctx.query.get('term') ?? ''
    if (term === '') throw invalidArgument('term is required')
    const limit = Math.min(Math.max(Number(ctx.query.get('limit') ?? '25') || 25, 1), 100)
    sendJson(ctx.res, 200, (await b.searchImages(term, limit, ctx.signal)).map(toSearchResult))
  }

  async function deleteImage (ctx: ApiContext): Promise<void> {
    const records = await b.removeImage(ctx.params.name as string, boolValue(ctx.query, 'force'), boolValue(ctx.query, 'noprune'))
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
