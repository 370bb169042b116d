// Plugin routes: Berth runs no managed plugins (volume, network, authz or log drivers are built in or refused where
// named). The list answers empty, as a dockerd with no plugin installed does; a named plugin is not found, as in
// dockerd; installing or creating one is refused with one clear message instead of the router's "page not found".
import type { Route } from '../../http/router.js'
import type { ApiContext, ApiHandler } from '../../http/api-context.js'
import { sendJson } from '../../http/reply.js'
import { parseFilters } from '../../http/query.js'
import { invalidArgument, notFound, notImplemented } from '../../errors.js'

export const PLUGINS_UNSUPPORTED = 'plugins are not supported by Berth'

const LIST_FILTERS = new Set(['capability', 'enable'])

async function getPlugins (ctx: ApiContext): Promise<void> {
  const filters = parseFilters(ctx.query.get('filters'), LIST_FILTERS)
  for (const v of filters.get('enable') ?? []) {
    if (v !== 'true' && v !== 'false') throw invalidArgument(`Invalid filter 'enable=${v}'`)
  }
  sendJson(ctx.res, 200, [])
}

async function namedPlugin (ctx: ApiContext): Promise<void> {
  throw notFound(`plugin "${ctx.params.name as string}" not found (${PLUGINS_UNSUPPORTED})`)
}

async function unsupported (): Promise<void> {
  throw notImplemented(PLUGINS_UNSUPPORTED)
}

export function pluginRoutes (): Array<Route<ApiHandler>> {
  return [
    { method: 'GET', path: '/plugins', handler: getPlugins },
    { method: 'GET', path: '/plugins/privileges', handler: unsupported },
    { method: 'POST', path: '/plugins/pull', handler: unsupported },
    { method: 'POST', path: '/plugins/create', handler: unsupported },
    { method: 'GET', path: '/plugins/{name:.*}/json', handler: namedPlugin },
    { method: 'DELETE', path: '/plugins/{name:.*}', handler: namedPlugin },
    ...['enable', 'disable', 'push', 'set', 'upgrade'].map((verb) => ({ method: 'POST', path: `/plugins/{name:.*}/${verb}`, handler: namedPlugin }))
  ]
}
