// Image archive routes: save (`GET /images/get`, `GET /images/{name}/get`) and load (`POST /images/load`).
import { pipeline } from 'node:stream/promises'
import type { Route } from '../../http/router.js'
import type { ApiContext, ApiHandler } from '../../http/api-context.js'
import type { ImageService } from '../../image/image-service.js'
import type { EventBus } from '../../events/event-bus.js'
import { loadImages, resolveSaveNames, saveImages, type SaveItem } from '../../image/image-archive.js'
import { writeRecord } from '../../http/reply.js'
import { boolOrDefault } from '../../http/query.js'
import { errorMessage } from '../../errors.js'
import { readableBody } from '../../http/body.js'

export interface ImageArchiveBackend {
  images: ImageService
  events: EventBus
}

export function imageArchiveRoutes (b: ImageArchiveBackend): Array<Route<ApiHandler>> {
  async function sendSave (ctx: ApiContext, items: SaveItem[]): Promise<void> {
    const tar = await saveImages(b.images, items)
    ctx.res.writeHead(200, { 'Content-Type': 'application/x-tar' })
    for (const { img } of items) b.events.emit('image', 'save', img.id, { name: img.id })
    await pipeline(tar, ctx.res)
  }

  async function getImagesGet (ctx: ApiContext): Promise<void> {
    await sendSave(ctx, resolveSaveNames(b.images, ctx.query.getAll('names')))
  }

  async function getImageGet (ctx: ApiContext): Promise<void> {
    await sendSave(ctx, resolveSaveNames(b.images, [ctx.params.name as string]))
  }

  async function postImagesLoad (ctx: ApiContext): Promise<void> {
    // dockerd's default is quiet; the CLI sends quiet=0 unless -q
    const quiet = boolOrDefault(ctx.query, 'quiet', true)
    const res = ctx.res
    res.writeHead(200, { 'Content-Type': 'application/json' })
    res.flushHeaders()
    try {
      const loaded = await loadImages(b.images, readableBody(ctx.req), {
        stream: (line) => { writeRecord(res, { stream: line }) },
        progress: (record) => { writeRecord(res, record) }
      }, quiet)
      for (const img of loaded) b.events.emit('image', 'load', img.id, { name: img.id })
    } catch (err) {
      if (ctx.signal.aborted) return
      const message = errorMessage(err)
      writeRecord(res, { errorDetail: { message }, error: message })
    }
    res.end()
  }

  return [
    { method: 'GET', path: '/images/get', handler: getImagesGet },
    { method: 'GET', path: '/images/{name:.*}/get', handler: getImageGet },
    { method: 'POST', path: '/images/load', handler: postImagesLoad }
  ]
}
