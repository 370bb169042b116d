// Image archive routes: save (`GET /images/get`, `GET /images/{name}/get`) and load (`POST /images/load`).
import { pipeline } from 'node:stream/promises'
import type { Route } from '../../http/router.js'
import type { ApiContext, ApiHandler } from '../../http/api-context.js'
import type { ImageArchiveBackend } from './backend.js'
import { writeRecord } from '../../http/reply.js'
import { boolOrDefault } from '../../http/query.js'
import { errorMessage } from '../../errors.js'
import { readableBody } from '../../http/body.js'

export function imageArchiveRoutes (b: ImageArchiveBackend): Array<Route<ApiHandler>> {
  async function sendSave (ctx: ApiContext, names: string[]): Promise<void> {
    const tar = await b.saveImages(names)
    ctx.res.writeHead(200, { 'Content-Type': 'application/x-tar' })
    await pipeline(tar, ctx.res)
  }

  async function getImagesGet (ctx: ApiContext): Promise<void> {
    await sendSave(ctx, ctx.query.getAll('names'))
  }

  async function getImageGet (ctx: ApiContext): Promise<void> {
    await sendSave(ctx, [ctx.params.name as string])
  }

  async function postImagesLoad (ctx: ApiContext): Promise<void> {
    // dockerd's default is quiet; the CLI sends quiet=0 unless -q
    const quiet = boolOrDefault(ctx.query, 'quiet', true)
    const res = ctx.res
    res.writeHead(200, { 'Content-Type': 'application/json' })
    res.flushHeaders()
    try {
      await b.loadImages(readableBody(ctx.req, ctx.res), {
        stream: (line) => { writeRecord(res, { stream: line }) },
        progress: (record) => { writeRecord(res, record) }
      }, quiet)
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
