// Volume routes: one table, handlers named method + resource, over the VolumeBackend declared beside it.
import type { Route } from '../../http/router.js'
import type { ApiContext, ApiHandler } from '../../http/api-context.js'
import type { VolumeBackend } from './backend.js'
import { sendJson, sendJsonBytes, sendEmpty } from '../../http/reply.js'
import { readJsonObject, readBody } from '../../http/body.js'
import { boolValue, parseFilters } from '../../http/query.js'
import { versionAtLeast } from '../api-version.js'
import { decodeCreateVolume, pruneFilter, toPruneReply, toVolumeWire } from './wire.js'
import { VolumeListCache } from './reply-cache.js'

const LIST_FILTERS = new Set(['dangling', 'driver', 'label', 'name'])
const PRUNE_FILTERS = new Set(['label', 'label!', 'all'])

export function volumeRoutes (b: VolumeBackend): Array<Route<ApiHandler>> {
  const listCache = new VolumeListCache()

  async function getVolumes (ctx: ApiContext): Promise<void> {
    sendJsonBytes(ctx.res, 200, listCache.list(b, parseFilters(ctx.query.get('filters'), LIST_FILTERS)))
  }

  async function getVolume (ctx: ApiContext): Promise<void> {
    const name = ctx.params.name as string
    sendJson(ctx.res, 200, toVolumeWire(b.get(name), b.mountpoint(name)))
  }

  async function postVolumesCreate (ctx: ApiContext): Promise<void> {
    const v = await b.create(decodeCreateVolume(await readJsonObject(ctx.req)))
    sendJson(ctx.res, 201, toVolumeWire(v, b.mountpoint(v.name)))
  }

  async function deleteVolume (ctx: ApiContext): Promise<void> {
    await b.remove(ctx.params.name as string, boolValue(ctx.query, 'force'))
    sendEmpty(ctx.res, 204)
  }

  async function postVolumesPrune (ctx: ApiContext): Promise<void> {
    await readBody(ctx.req, 1024 * 1024)
    const filters = parseFilters(ctx.query.get('filters'), PRUNE_FILTERS)
    sendJson(ctx.res, 200, toPruneReply(await b.prune(pruneFilter(filters, versionAtLeast(ctx.version, '1.42')))))
  }

  return [
    { method: 'GET', path: '/volumes', handler: getVolumes },
    { method: 'POST', path: '/volumes/create', handler: postVolumesCreate },
    { method: 'POST', path: '/volumes/prune', handler: postVolumesPrune },
    { method: 'GET', path: '/volumes/{name}', handler: getVolume },
    { method: 'DELETE', path: '/volumes/{name}', handler: deleteVolume }
  ]
}
