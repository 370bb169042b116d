// GET / and GET /debug/health: the registry is up and its storage answers. distribution answers / with 200 and
// serves /debug/health ({} when every check passes, 503 with {"check": "error"} otherwise) on its debug listener;
// Berth serves both on the API listener, without authentication (a load balancer's probe has none).
import type { Route } from '../../http/router.js'
import { errorMessage } from '../../errors.js'
import type { RegistryContext, RegistryRoute } from '../context.js'
import { onSurface } from '../context.js'
import { replyJson } from './reply.js'

const PROBE_DIGEST = `sha256:${'0'.repeat(64)}`

async function getHealth (ctx: RegistryContext): Promise<void> {
  const failures: Record<string, string> = {}
  try {
    await ctx.core.store.driver.statBlob(PROBE_DIGEST)
  } catch (err) {
    failures.storagedriver = errorMessage(err)
  }
  replyJson(ctx.res, Object.keys(failures).length === 0 ? 200 : 503, failures, { 'Cache-Control': 'no-cache' })
}

const route = onSurface('distribution')

export const HEALTH_ROUTES: ReadonlyArray<Route<RegistryRoute>> = [
  { method: 'GET', path: '/', handler: route(getHealth) },
  { method: 'HEAD', path: '/', handler: route(getHealth) },
  { method: 'GET', path: '/debug/health', handler: route(getHealth) }
]
