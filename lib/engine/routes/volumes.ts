// Volume routes: one table, handlers named method + resource, over the VolumeBackend.
import type { Route } from '../../http/router.js'
import type { ApiContext, ApiHandler } from '../../http/api-context.js'
import type { VolumeBackend } from '../backend.js'
import { sendJson, sendJsonBytes, sendEmpty } from '../../http/reply.js'
import { readJsonObject, readBody } from '../../http/body.js'
import { boolValue, parseFilters } from '../../http/query.js'
import { versionAtLeast } from '../../api/api-version.js'

const LIST_FILTERS = new Set(['dangling', 'driver', 'label', 'name'])
const PRUNE_FILTERS = new Set(['label', 'label!', 'all'])

export function volumeRoutes (b: VolumeBackend): Array<Route<ApiHandler>> {
  async function getVolumes (ctx: ApiContext): Promise<void> {
    sendJsonBytes(ctx.res, 200, await b.listVolumes(parseFilters(ctx.query.get('filters'), LIST_FILTERS)))
  }

  async function getVolume (ctx: ApiContext): Promise<void> {
    sendJson(ctx.res, 200, await b.inspectVolume(ctx.params.name as string))
  }

  async function postVolumesCreate (ctx: ApiContext): Promise<void> {
    sendJson(ctx.res, 201, await b.createVolume(await readJsonObject(ctx.req)))
  }

  async function deleteVolume (ctx: ApiContext): Promise<void> {
    await b.removeVolume(ctx.params.name as string, boolValue(ctx.query, 'force'))
    sendEmpty(ctx.res, 204)
  }

  async function postVolumesPrune (ctx: ApiContext): Promise<void> {
    await readBody(ctx.req, 1024 * 1024)
    const filters = parseFilters(ctx.query.get('filters'), PRUNE_FILTERS)
    sendJson(ctx.res, 200, await b.pruneVolumes(filters, versionAtLeast(ctx.version, '1.42')))
  }

  return [
    { method: 'GET', path: '/volumes', handler: getVolumes },
    { method: 'POST', path: '/volumes/create', handler: postVolumesCreate },
    { method: 'POST', path: '/volumes/prune', handler: postVolumesPrune },
    { method: 'GET', path: '/volumes/{name}', handler: getVolume },
    { method: 'DELETE', path: '/volumes/{name}', handler: deleteVolume }
  ]
}
