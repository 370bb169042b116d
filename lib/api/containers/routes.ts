// Container routes: one table, handlers named method + resource, over the ContainerBackend declared beside it.
import type { Route } from '../../http/router.js'
import type { ApiContext, ApiHandler } from '../../http/api-context.js'
import type { ContainerBackend } from './backend.js'
import { sendJson, sendJsonBytes, sendEmpty } from '../../http/reply.js'
import { readJson, readJsonObject, readBody } from '../../http/body.js'
import { boolValue, intValue, parseFilters, parseTimestamp, tailValue } from '../../http/query.js'
import { hijack, RAW_STREAM, MULTIPLEXED_STREAM } from '../../http/hijack.js'
import { invalidArgument, notImplemented } from '../../errors.js'
import { versionAtLeast } from '../api-version.js'
import { decodeUpdateBody } from '../../containers/update-request.js'
import { decodeCreateRequest } from '../../containers/create-request.js'
import { parseDetachKeys } from '../../stream/detach-keys.js'
import { parsePlatform } from '../../image/platform.js'
import { toContainerInspect, toContainerSummary, toWaitReply } from './wire.js'
import { ContainerListReply } from './list-reply.js'
import type { WaitCondition } from '../../containers/container-service.js'

export const LIST_FILTERS = new Set(['ancestor', 'before', 'expose', 'exited', 'health', 'id', 'isolation', 'is-task', 'label', 'name', 'network', 'publish', 'since', 'status', 'volume'])

function streamContentType (ctx: ApiContext, tty: boolean): string {
  return !tty && versionAtLeast(ctx.version, '1.42') ? MULTIPLEXED_STREAM : RAW_STREAM
}

/** Whether a create body's HostConfig.Mounts names a volume Subpath (API 1.45). */
function hasSubpath (body: Record<string, unknown>): boolean {
  const mounts = (body.HostConfig as { Mounts?: unknown } | undefined)?.Mounts
  return Array.isArray(mounts) && mounts.some((m) => {
    const sub = (m as { VolumeOptions?: { Subpath?: unknown } } | null)?.VolumeOptions?.Subpath
    return typeof sub === 'string' && sub !== ''
  })
}

export function containerRoutes (b: ContainerBackend): Array<Route<ApiHandler>> {
  const listReply = new ContainerListReply()

  async function postContainersCreate (ctx: ApiContext): Promise<void> {
    const body = await readJsonObject(ctx.req)
    if (!versionAtLeast(ctx.version, '1.45') && hasSubpath(body)) throw invalidArgument('VolumeOptions.Subpath needs API v1.45 or newer')
    const req = decodeCreateRequest(body)
    // dockerd reads platform= from API 1.41 on, and ignores it before
    const platform = ctx.query.get('platform') ?? ''
    if (platform !== '' && versionAtLeast(ctx.version, '1.41')) req.platform = parsePlatform(platform)
    const r = await b.create(req, ctx.query.get('name'))
    sendJson(ctx.res, 201, { Id: r.id, Warnings: r.warnings })
  }

  async function getContainersJson (ctx: ApiContext): Promise<void> {
    const q = ctx.query
    const filters = parseFilters(q.get('filters'), LIST_FILTERS)
    const list = b.listContainers({ all: boolValue(q, 'all'), limit: intValue(q, 'limit') ?? -1, filters })
    if (!boolValue(q, 'size')) { sendJsonBytes(ctx.res, 200, listReply.bytes(list, Date.now())); return }
    const out: Array<Record<string, unknown>> = []
    for (const c of list) out.push(toContainerSummary(c, { size: true, sizes: await b.containerSizes(c) }))
    sendJsonBytes(ctx.res, 200, Buffer.from(JSON.stringify(out) + '\n'))
  }

  async function getContainerJson (ctx: ApiContext): Promise<void> {
    const c = b.get(ctx.params.name as string)
    const size = boolValue(ctx.query, 'size')
    sendJson(ctx.res, 200, toContainerInspect(c, ctx.version, size ? await b.containerSizes(c) : undefined))
  }

  async function postContainerStart (ctx: ApiContext): Promise<void> {
    await readBody(ctx.req, 1024 * 1024)
    await b.start(ctx.params.name as string)
    sendEmpty(ctx.res, 204)
  }

  function stopArgs (ctx: ApiContext): [number | undefined, string | undefined] {
    const t = intValue(ctx.query, 't')
    const sig = versionAtLeast(ctx.version, '1.42') ? ctx.query.get('signal') ?? undefined : undefined
    return [t, sig === '' ? undefined : sig]
  }

  async function postContainerStop (ctx: ApiContext): Promise<void> {
    const [t, sig] = stopArgs(ctx)
    await b.stop(ctx.params.name as string, t, sig)
    sendEmpty(ctx.res, 204)
  }

  async function postContainerRestart (ctx: ApiContext): Promise<void> {
    const [t, sig] = stopArgs(ctx)
    await b.restart(ctx.params.name as string, t, sig)
    sendEmpty(ctx.res, 204)
  }

  async function postContainerKill (ctx: ApiContext): Promise<void> {
    await b.kill(ctx.params.name as string, ctx.query.get('signal') ?? undefined)
    sendEmpty(ctx.res, 204)
  }

  async function postContainerPause (ctx: ApiContext): Promise<void> {
    await b.pause(ctx.params.name as string)
    sendEmpty(ctx.res, 204)
  }

  async function postContainerUnpause (ctx: ApiContext): Promise<void> {
    await b.unpause(ctx.params.name as string)
    sendEmpty(ctx.res, 204)
  }

  async function postContainerRename (ctx: ApiContext): Promise<void> {
    await b.rename(ctx.params.name as string, ctx.query.get('name') ?? '')
    sendEmpty(ctx.res, 204)
  }

  async function deleteContainer (ctx: ApiContext): Promise<void> {
    // `docker rm --link /web/db`: the name is the link's, parent/alias
    if (boolValue(ctx.query, 'link')) await b.removeLink(ctx.params.name as string)
    else await b.remove(ctx.params.name as string, boolValue(ctx.query, 'force'), boolValue(ctx.query, 'v'))
    sendEmpty(ctx.res, 204)
  }

  async function postContainerWait (ctx: ApiContext): Promise<void> {
    const raw = versionAtLeast(ctx.version, '1.30') ? ctx.query.get('condition') ?? '' : ''
    const condition = (raw === '' ? 'not-running' : raw) as WaitCondition
    if (!['not-running', 'next-exit', 'removed'].includes(condition)) throw invalidArgument(`invalid condition: "${raw}"`)
    const ref = ctx.params.name as string
    let c
    try {
      c = b.get(ref)
    } catch (err) {
      // auto-removed before this wait came (a client that waits only once its start is answered): its exit
      const gone = b.exitOfAutoRemoved(ref, condition)
      if (gone === undefined) throw err
      sendJson(ctx.res, 200, toWaitReply(gone))
      return
    }
    const result = b.waitFor(c, condition, ctx.signal)
    // headers go out now: the CLI calls wait before start and blocks until it sees them
    ctx.res.writeHead(200, { 'Content-Type': 'application/json' })
    ctx.res.flushHeaders()
    let r
    try { r = await result } catch { return }
    ctx.res.end(JSON.stringify(toWaitReply(r)) + '\n')
  }

  async function getContainerLogs (ctx: ApiContext): Promise<void> {
    const q = ctx.query
    const stdout = boolValue(q, 'stdout')
    const stderr = boolValue(q, 'stderr')
    if (!stdout && !stderr) throw invalidArgument('Bad parameters: you must choose at least one stream')
    const c = b.get(ctx.params.name as string)
    const tail = tailValue(q)
    const since = q.get('since')
    const until = q.get('until')
    const sinceNs = since !== null && since !== '' && since !== '0' ? parseTimestamp(since, 'since') : undefined
    const untilNs = until !== null && until !== '' && until !== '0' ? parseTimestamp(until, 'until') : undefined
    const follow = boolValue(q, 'follow')
    if (c.rec.log.driver === 'none') throw notImplemented('configured logging driver does not support reading')
    ctx.res.writeHead(200, { 'Content-Type': streamContentType(ctx, c.rec.config.tty) })
    ctx.res.flushHeaders()
    await b.logs(c, {
      stdout,
      stderr,
      timestamps: boolValue(q, 'timestamps'),
      details: boolValue(q, 'details'),
      follow,
      ...(sinceNs !== undefined ? { sinceNs } : {}),
      ...(untilNs !== undefined ? { untilNs } : {}),
      ...(tail !== undefined ? { tail } : {})
    }, ctx.res, ctx.signal)
    ctx.res.end()
  }

  async function postContainerAttach (ctx: ApiContext): Promise<void> {
    const q = ctx.query
    const keys = q.get('detachKeys') ?? ''
    const detachKeys = keys === '' ? Buffer.alloc(0) : parseDetachKeys(keys)
    if (detachKeys === null) throw invalidArgument(`Invalid detach keys (${keys}) provided`)
    const c = b.get(ctx.params.name as string)
    const tty = c.rec.config.tty
    const h = hijack(ctx, streamContentType(ctx, tty))
    // dockerode (hijack:true) sends its options as a JSON body after the headers; it is not stdin
    const declared = Number(ctx.req.headers['content-length'] ?? 0)
    await b.attach(c, {
      out: h.out,
      input: h.input,
      stdout: boolValue(q, 'stdout'),
      stderr: boolValue(q, 'stderr'),
      stdin: boolValue(q, 'stdin'),
      logs: boolValue(q, 'logs'),
      stream: boolValue(q, 'stream'),
      signal: ctx.signal,
      skipInput: h.takenOver && Number.isFinite(declared) ? declared : 0,
      detachKeys
    })
  }

  async function postContainerResize (ctx: ApiContext): Promise<void> {
    const c = b.get(ctx.params.name as string)
    const h = intValue(ctx.query, 'h') ?? 0
    const w = intValue(ctx.query, 'w') ?? 0
    b.resize(c, h, w)
    ctx.res.writeHead(200, { 'Content-Type': 'text/plain; charset=utf-8', 'Content-Length': 0 })
    ctx.res.end()
  }

  async function postContainersPrune (ctx: ApiContext): Promise<void> {
    const filters = parseFilters(ctx.query.get('filters'), new Set(['until', 'label', 'label!']))
    const r = await b.pruneContainers(filters)
    sendJson(ctx.res, 200, { ContainersDeleted: r.deleted, SpaceReclaimed: r.reclaimed })
  }

  async function postContainerUpdate (ctx: ApiContext): Promise<void> {
    const c = b.get(ctx.params.name as string)
    const body = (await readJson(ctx.req)) as Record<string, unknown> | undefined
    const warnings = await b.update(c.id, decodeUpdateBody(body ?? {}))
    sendJson(ctx.res, 200, { Warnings: warnings })
  }

  return [
    { method: 'POST', path: '/containers/create', handler: postContainersCreate },
    { method: 'GET', path: '/containers/json', handler: getContainersJson },
    { method: 'POST', path: '/containers/prune', handler: postContainersPrune },
    { method: 'GET', path: '/containers/{name:.*}/json', handler: getContainerJson },
    { method: 'GET', path: '/containers/{name:.*}/logs', handler: getContainerLogs },
    { method: 'POST', path: '/containers/{name:.*}/start', handler: postContainerStart },
    { method: 'POST', path: '/containers/{name:.*}/stop', handler: postContainerStop },
    { method: 'POST', path: '/containers/{name:.*}/restart', handler: postContainerRestart },
    { method: 'POST', path: '/containers/{name:.*}/kill', handler: postContainerKill },
    { method: 'POST', path: '/containers/{name:.*}/pause', handler: postContainerPause },
    { method: 'POST', path: '/containers/{name:.*}/unpause', handler: postContainerUnpause },
    { method: 'POST', path: '/containers/{name:.*}/rename', handler: postContainerRename },
    { method: 'POST', path: '/containers/{name:.*}/wait', handler: postContainerWait },
    // dockerd takes the connection over whether or not the client asked to upgrade
    { method: 'POST', path: '/containers/{name:.*}/attach', handler: postContainerAttach, takesOver: () => true },
    { method: 'POST', path: '/containers/{name:.*}/resize', handler: postContainerResize },
    { method: 'POST', path: '/containers/{name:.*}/update', handler: postContainerUpdate },
    { method: 'DELETE', path: '/containers/{name:.*}', handler: deleteContainer }
  ]
}
