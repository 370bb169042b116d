// Network routes: one table, handlers named method + resource, over the NetworkBackend declared beside it.
import type { Route } from '../../http/router.js'
import type { ApiContext, ApiHandler } from '../../http/api-context.js'
import type { NetworkBackend } from './backend.js'
import { sendJson, sendEmpty } from '../../http/reply.js'
import { readJsonObject, readBody } from '../../http/body.js'
import { parseFilters } from '../../http/query.js'
import { notFound } from '../../errors.js'
import { decodeConnect, decodeCreateNetwork, decodeDisconnect, listFilter, pruneFilter, scopeOf, toCreateResponse, toNetworkWire, toPruneResponse } from './wire.js'

const LIST_FILTERS = new Set(['dangling', 'driver', 'id', 'label', 'name', 'scope', 'type'])
const PRUNE_FILTERS = new Set(['label', 'label!', 'until'])

export function networkRoutes (b: NetworkBackend): Array<Route<ApiHandler>> {
  async function getNetworks (ctx: ApiContext): Promise<void> {
    const keep = listFilter(parseFilters(ctx.query.get('filters'), LIST_FILTERS), (id) => b.activeEndpoints(id))
    const out: unknown[] = []
    for (const n of b.all()) if (keep(n)) out.push(toNetworkWire(n, b.endpointsOf(n.id)))
    sendJson(ctx.res, 200, out)
  }

  /** `scope` (local, swarm, global), when given, must be the network's, as dockerd filters by it. */
  async function getNetwork (ctx: ApiContext): Promise<void> {
    const ref = ctx.params.id as string
    const scope = ctx.query.get('scope') ?? ''
    const n = b.get(ref)
    if (scope !== '' && scopeOf(n) !== scope) throw notFound(`network ${ref} not found`)
    sendJson(ctx.res, 200, toNetworkWire(n, b.endpointsOf(n.id)))
  }

  async function postNetworksCreate (ctx: ApiContext): Promise<void> {
    const r = await b.create(decodeCreateNetwork(await readJsonObject(ctx.req)))
    sendJson(ctx.res, 201, toCreateResponse(r.id, r.warning))
  }

  async function deleteNetwork (ctx: ApiContext): Promise<void> {
    await b.remove(ctx.params.id as string)
    sendEmpty(ctx.res, 204)
  }

  async function postNetworkConnect (ctx: ApiContext): Promise<void> {
    const c = decodeConnect(await readJsonObject(ctx.req))
    await b.connect(ctx.params.id as string, c.container, c.endpoint)
    sendEmpty(ctx.res, 200)
  }

  async function postNetworkDisconnect (ctx: ApiContext): Promise<void> {
    const d = decodeDisconnect(await readJsonObject(ctx.req))
    await b.disconnect(ctx.params.id as string, d.container, d.force)
    sendEmpty(ctx.res, 200)
  }

  async function postNetworksPrune (ctx: ApiContext): Promise<void> {
    await readBody(ctx.req, 1024 * 1024)
    sendJson(ctx.res, 200, toPruneResponse(await b.prune(pruneFilter(parseFilters(ctx.query.get('filters'), PRUNE_FILTERS)))))
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
