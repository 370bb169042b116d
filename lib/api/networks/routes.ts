// Network routes: one table, handlers named method + resource, over the NetworkBackend declared beside it.
import type { Route } from '../../http/router.js'
import type { ApiContext, ApiHandler } from '../../http/api-context.js'
import type { NetworkBackend } from './backend.js'
import { sendJson, sendEmpty } from '../../http/reply.js'
import { readJsonObject, readBody } from '../../http/body.js'
import { parseFilters } from '../../http/query.js'

const LIST_FILTERS = new Set(['dangling', 'driver', 'id', 'label', 'name', 'scope', 'type'])
const PRUNE_FILTERS = new Set(['label', 'label!', 'until'])

export function networkRoutes (b: NetworkBackend): Array<Route<ApiHandler>> {
  async function getNetworks (ctx: ApiContext): Promise<void> {
    sendJson(ctx.res, 200, await b.listNetworks(parseFilters(ctx.query.get('filters'), LIST_FILTERS)))
  }

  async function getNetwork (ctx: ApiContext): Promise<void> {
    sendJson(ctx.res, 200, await b.inspectNetwork(ctx.params.id as string, ctx.query.get('scope') ?? ''))
  }

  async function postNetworksCreate (ctx: ApiContext): Promise<void> {
    sendJson(ctx.res, 201, await b.createNetwork(await readJsonObject(ctx.req)))
  }

  async function deleteNetwork (ctx: ApiContext): Promise<void> {
    await b.removeNetwork(ctx.params.id as string)
    sendEmpty(ctx.res, 204)
  }

  async function postNetworkConnect (ctx: ApiContext): Promise<void> {
    await b.connectNetwork(ctx.params.id as string, await readJsonObject(ctx.req))
    sendEmpty(ctx.res, 200)
  }

  async function postNetworkDisconnect (ctx: ApiContext): Promise<void> {
    await b.disconnectNetwork(ctx.params.id as string, await readJsonObject(ctx.req))
    sendEmpty(ctx.res, 200)
  }

  async function postNetworksPrune (ctx: ApiContext): Promise<void> {
    await readBody(ctx.req, 1024 * 1024)
    sendJson(ctx.res, 200, await b.pruneNetworks(parseFilters(ctx.query.get('filters'), PRUNE_FILTERS)))
  }

  return [
    { method: 'GET', path: '/networks', handler: getNetworks },
    { method: 'POST', path: '/networks/create', handler: postNetworksCreate },
    { method: 'POST', path: '/networks/prune', handler: postNetworksPrune },
    { method: 'GET', path: '/networks/{id}', handler: getNetwork },
    { method: 'DELETE', path: '/networks/{id}', handler: deleteNetwork },
    { method: 'POST', path: '/networks/{id}/connect', handler: postNetworkConnect },
    { method: 'POST', path: '/networks/{id}/disconnect', handler: postNetworkDisconnect }
  ]
}
