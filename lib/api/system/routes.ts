// System routes: /_ping (a table of its own), /version, /info, /events, /system/df.
import type { Route } from '../../http/router.js'
import type { ApiContext, ApiHandler } from '../../http/api-context.js'
import type { PingBackend, SystemBackend } from './backend.js'
import { sendJson, sendJsonText } from '../../http/reply.js'
import { toInfo, toVersion } from './wire.js'
import { parseFilters, parseTimestamp } from '../../http/query.js'
import { invalidArgument } from '../../errors.js'
import { writeEventStream } from './event-stream.js'

const PING_HEADERS = {
  'Cache-Control': 'no-cache, no-store, must-revalidate',
  Pragma: 'no-cache',
  'Builder-Version': '1'
} as const

const EVENT_FILTERS = new Set(['container', 'daemon', 'event', 'image', 'label', 'network', 'node', 'plugin', 'scope', 'service', 'type', 'volume', 'config', 'secret'])

/**
 * /_ping, a table of its own: the engine serves it from the moment its listeners are up, before the other routes
 * exist (its one fact, the Swarm header, is known first).
 */
export function pingRoutes (backend: PingBackend): Array<Route<ApiHandler>> {
  async function getPing (ctx: ApiContext): Promise<void> {
    const { res, req } = ctx
    for (const [k, v] of Object.entries(PING_HEADERS)) res.setHeader(k, v)
    res.setHeader('Swarm', backend.swarmState())
    if (req.method === 'HEAD') {
      res.writeHead(200, { 'Content-Type': 'text/plain; charset=utf-8', 'Content-Length': 0 })
      res.end()
      return
    }
    res.writeHead(200, { 'Content-Type': 'text/plain; charset=utf-8', 'Content-Length': 2 })
    res.end('OK')
  }
  return [{ method: 'GET', path: '/_ping', handler: getPing }]
}

export function systemRoutes (backend: SystemBackend): Array<Route<ApiHandler>> {
  async function getVersion (ctx: ApiContext): Promise<void> {
    sendJson(ctx.res, 200, toVersion(backend.versionInfo()))
  }

  async function getInfo (ctx: ApiContext): Promise<void> {
    sendJson(ctx.res, 200, toInfo(await backend.systemInfo(), new Date(), ctx.version))
  }

  async function getEvents (ctx: ApiContext): Promise<void> {
    const { query, res } = ctx
    const filters = parseFilters(query.get('filters'), EVENT_FILTERS)
    const since = query.get('since')
    const until = query.get('until')
    const sinceNs = since !== null && since !== '' ? parseTimestamp(since, 'since') : undefined
    const untilNs = until !== null && until !== '' ? parseTimestamp(until, 'until') : undefined
    await writeEventStream(res, backend.subscribeEvents(filters, sinceNs), untilNs, ctx.signal)
  }

  async function getSystemDf (ctx: ApiContext): Promise<void> {
    const types = ctx.query.getAll('type')
    for (const t of types) if (!['container', 'image', 'volume', 'build-cache'].includes(t)) throw invalidArgument(`unknown type: ${t}`)
    sendJsonText(ctx.res, 200, await backend.diskUsage(ctx.version, types))
  }

  return [
    { method: 'GET', path: '/system/df', handler: getSystemDf },
    { method: 'GET', path: '/version', handler: getVersion },
    { method: 'GET', path: '/info', handler: getInfo },
    { method: 'GET', path: '/events', handler: getEvents }
  ]
}
