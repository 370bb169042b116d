// Routes whose state comes from the deprecation table (deprecation.ts): the deprecated legacy repository routes,
// served by the current handlers with Deprecation/Link headers, the removed v1 routes (410 Gone, any method), and
// GET /v2/deprecations, the log itself. The table decides which routes exist here; this file only names handlers.
import type { Route } from '../../http/router.js'
import { EngineError } from '../../errors.js'
import type { RegistryContext, RegistryHandler, RegistryRoute } from '../context.js'
import { DEPRECATED_ROUTES, DEPRECATIONS_PATH, REMOVED_ROUTES, deprecationDocument, deprecationMarkdown, logEntry, successorsOf, type RouteState } from '../deprecation.js'
import { checkNamespace, createRepository, getRepository, listRepositories } from './hub.js'
import { replyJson } from './reply.js'

/** Handlers of the deprecated routes, by `METHOD path` as the table spells them. */
const DEPRECATED_HANDLERS: Readonly<Record<string, RegistryHandler>> = {
  'POST /v2/repositories': async (ctx) => { await createRepository(ctx, undefined) },
  'POST /v2/repositories/{namespace}': async (ctx) => { await createRepository(ctx, checkNamespace(ctx.params.namespace)) },
  'GET /v2/repositories/{namespace}/{repository}': getRepository,
  'HEAD /v2/repositories/{namespace}/{repository}': getRepository,
  'GET /v2/repositories/{namespace}': listRepositories
}

const ANY_METHOD = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']

/** 410 Gone with the successor from the migration table (the body shape is this project's choice: Hub's `error`). */
async function gone (ctx: RegistryContext): Promise<void> {
  const st = (ctx.route.states as readonly RouteState[])[0] as RouteState
  const entry = logEntry(st.log)
  const successors = successorsOf(st, ctx.params).map((p) => p.includes('{') ? p : `${ctx.base}${p}`)
  const first = successors[0]
  throw new EngineError('gone', `${entry.feature} was removed on ${entry.date}: ${ctx.req.method ?? 'GET'} ${ctx.path} is gone`, {
    detail: {
      detail: first !== undefined
        ? `Use ${first} instead`
        : 'This route has no replacement in API v2: use the docker CLI, or the registry API (/v2/<name>/manifests/<reference>)',
      errinfo: {
        state: 'removed',
        feature: entry.feature,
        removed: entry.date,
        route: st.path,
        successor: first ?? null,
        successors,
        deprecations: `${ctx.base}${DEPRECATIONS_PATH}#${entry.id}`
      }
    }
  })
}

async function getDeprecations (ctx: RegistryContext): Promise<void> {
  if (ctx.query.get('format') === 'markdown') {
    const body = Buffer.from(deprecationMarkdown())
    ctx.res.writeHead(200, { 'Content-Type': 'text/markdown; charset=utf-8', 'Content-Length': body.length })
    ctx.res.end(body)
    return
  }
  replyJson(ctx.res, 200, deprecationDocument())
}

function deprecatedRoutes (): Array<Route<RegistryRoute>> {
  const out: Array<Route<RegistryRoute>> = []
  for (const st of DEPRECATED_ROUTES) {
    const handle = DEPRECATED_HANDLERS[`${st.method} ${st.path}`]
    if (handle === undefined) throw new Error(`no handler for deprecated route ${st.method} ${st.path}`)
    // the router serves HEAD from GET routes: one route carries both states
    const method = st.method === 'HEAD' && DEPRECATED_ROUTES.some((o) => o.method === 'GET' && o.path === st.path) ? null : st.method
    if (method === null) continue
    const states = DEPRECATED_ROUTES.filter((o) => o.path === st.path && (o.method === st.method || (st.method === 'GET' && o.method === 'HEAD')))
    out.push({ method, path: st.path, handler: { surface: 'hub', handle, states } })
  }
  return out
}

function removedRoutes (): Array<Route<RegistryRoute>> {
  return REMOVED_ROUTES.flatMap((st) => ANY_METHOD.map((method) => ({
    method, path: st.path, handler: { surface: 'hub' as const, handle: gone, states: [st] }
  })))
}

export const LEGACY_ROUTES: ReadonlyArray<Route<RegistryRoute>> = [
  { method: 'GET', path: DEPRECATIONS_PATH, handler: { surface: 'hub', handle: getDeprecations } },
  ...deprecatedRoutes(),
  ...removedRoutes()
]
