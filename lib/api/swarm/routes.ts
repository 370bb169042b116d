// Swarm routes: /swarm, /nodes, /services, /tasks, /secrets, /configs; one table each, over the method-only backends
// declared beside them (backend.ts; lib/swarm's resources implement them). Every route answers dockerd's 503 until `docker swarm init`
// (the backends' checks throw it).
import type { Route } from '../../http/router.js'
import type { ApiContext, ApiHandler } from '../../http/api-context.js'
import { sendJson, sendEmpty } from '../../http/reply.js'
import { readJsonObject } from '../../http/body.js'
import { boolValue, intValue, parseFilters, parseTimestamp } from '../../http/query.js'
import { invalidArgument } from '../../errors.js'
import { frameHeader } from '../../stream/stdcopy.js'
import { compareVersions } from '../api-version.js'
import type { NodeBackend, SecretBackend, ServiceBackend, SwarmClusterBackend, TaskBackend, TaskLogBackend } from './backend.js'

const NODE_FILTERS = new Set(['id', 'label', 'membership', 'name', 'node.label', 'role'])
const SERVICE_FILTERS = new Set(['id', 'label', 'mode', 'name'])
const TASK_FILTERS = new Set(['id', 'label', 'name', 'node', 'service', 'desired-state', '_up-to-date'])
const SECRET_FILTERS = new Set(['id', 'label', 'name', 'names'])

function version (ctx: ApiContext): number | undefined {
  const v = ctx.query.get('version')
  if (v === null || v === '') return undefined
  if (!/^\d+$/.test(v)) throw invalidArgument(`invalid version '${v}': strconv.ParseUint: parsing ${JSON.stringify(v)}: invalid syntax`)
  return Number(v)
}

export function swarmRoutes (m: SwarmClusterBackend): Array<Route<ApiHandler>> {
  async function postSwarmInit (ctx: ApiContext): Promise<void> {
    sendJson(ctx.res, 200, await m.init(await readJsonObject(ctx.req)))
  }
  async function postSwarmJoin (ctx: ApiContext): Promise<void> {
    await readJsonObject(ctx.req)
    m.join()
  }
  async function postSwarmLeave (ctx: ApiContext): Promise<void> {
    await m.leave(boolValue(ctx.query, 'force'))
    sendEmpty(ctx.res, 200)
  }
  async function getSwarm (ctx: ApiContext): Promise<void> { sendJson(ctx.res, 200, m.inspect()) }
  async function postSwarmUpdate (ctx: ApiContext): Promise<void> {
    const q = ctx.query
    await m.update(version(ctx), { rotateWorker: boolValue(q, 'rotateWorkerToken'), rotateManager: boolValue(q, 'rotateManagerToken'), rotateUnlockKey: boolValue(q, 'rotateManagerUnlockKey') }, await readJsonObject(ctx.req))
    sendEmpty(ctx.res, 200)
  }
  async function getUnlockKey (ctx: ApiContext): Promise<void> { sendJson(ctx.res, 200, m.unlockKey()) }
  async function postUnlock (ctx: ApiContext): Promise<void> {
    const body = await readJsonObject(ctx.req)
    if (body.UnlockKey !== undefined && typeof body.UnlockKey !== 'string') throw invalidArgument(`json: cannot unmarshal ${typeof body.UnlockKey} into Go struct field UnlockRequest.UnlockKey of type string`)
    await m.unlock(typeof body.UnlockKey === 'string' ? body.UnlockKey : '')
    sendEmpty(ctx.res, 200)
  }
  return [
    { method: 'POST', path: '/swarm/init', handler: postSwarmInit },
    { method: 'POST', path: '/swarm/join', handler: postSwarmJoin },
    { method: 'POST', path: '/swarm/leave', handler: postSwarmLeave },
    { method: 'POST', path: '/swarm/update', handler: postSwarmUpdate },
    { method: 'GET', path: '/swarm/unlockkey', handler: getUnlockKey },
    { method: 'POST', path: '/swarm/unlock', handler: postUnlock },
    { method: 'GET', path: '/swarm', handler: getSwarm }
  ]
}

export function nodeRoutes (m: NodeBackend): Array<Route<ApiHandler>> {
  async function getNodes (ctx: ApiContext): Promise<void> { sendJson(ctx.res, 200, m.list(parseFilters(ctx.query.get('filters'), NODE_FILTERS))) }
  async function getNode (ctx: ApiContext): Promise<void> { sendJson(ctx.res, 200, m.inspect(ctx.params.id as string)) }
  async function postNodeUpdate (ctx: ApiContext): Promise<void> {
    await m.update(ctx.params.id as string, version(ctx), await readJsonObject(ctx.req))
    sendEmpty(ctx.res, 200)
  }
  async function deleteNode (ctx: ApiContext): Promise<void> { m.remove(ctx.params.id as string) }
  return [
    { method: 'GET', path: '/nodes', handler: getNodes },
    { method: 'GET', path: '/nodes/{id}', handler: getNode },
    { method: 'POST', path: '/nodes/{id}/update', handler: postNodeUpdate },
    { method: 'DELETE', path: '/nodes/{id}', handler: deleteNode }
  ]
}

/** Writes a log line: a stdcopy frame, or the raw bytes for TTY tasks. */
async function streamTaskLogs (ctx: ApiContext, m: TaskLogBackend, ref: string): Promise<void> {
  const q = ctx.query
  const stdout = boolValue(q, 'stdout')
  const stderr = boolValue(q, 'stderr')
  if (!stdout && !stderr) throw invalidArgument('Bad parameters: you must choose at least one stream')
  const tailRaw = q.get('tail')
  const tail = tailRaw !== null && tailRaw !== '' && tailRaw !== 'all' && Number.isFinite(Number.parseInt(tailRaw, 10)) ? Number.parseInt(tailRaw, 10) : undefined
  const since = q.get('since')
  const sinceNs = since !== null && since !== '' && since !== '0' ? parseTimestamp(since, 'since') : undefined
  // resolve before the head goes out, so an unknown service is a 404
  const tty = m.logsTty(ref)
  const multiplexed = compareVersions(ctx.version, '1.42') >= 0
  ctx.res.writeHead(200, { 'Content-Type': !tty && multiplexed ? 'application/vnd.docker.multiplexed-stream' : 'application/vnd.docker.raw-stream' })
  ctx.res.flushHeaders()
  await m.logs(ref, {
    follow: boolValue(q, 'follow'),
    stdout,
    stderr,
    timestamps: boolValue(q, 'timestamps'),
    details: boolValue(q, 'details'),
    ...(tail !== undefined ? { tail } : {}),
    ...(sinceNs !== undefined ? { sinceNs } : {}),
    signal: ctx.signal
  }, (stream, data) => {
    if (tty) ctx.res.write(data)
    else { ctx.res.write(frameHeader(stream, data.length)); ctx.res.write(data) }
  })
  ctx.res.end()
}

export function serviceRoutes (m: ServiceBackend): Array<Route<ApiHandler>> {
  async function getServices (ctx: ApiContext): Promise<void> {
    sendJson(ctx.res, 200, m.list(parseFilters(ctx.query.get('filters'), SERVICE_FILTERS), boolValue(ctx.query, 'status')))
  }
  async function postServicesCreate (ctx: ApiContext): Promise<void> {
    sendJson(ctx.res, 201, await m.create(await readJsonObject(ctx.req)))
  }
  async function getService (ctx: ApiContext): Promise<void> { sendJson(ctx.res, 200, m.inspect(ctx.params.id as string, boolValue(ctx.query, 'insertDefaults'))) }
  async function postServiceUpdate (ctx: ApiContext): Promise<void> {
    const body = await readJsonObject(ctx.req)
    const rollback = ctx.query.get('rollback') === 'previous'
    sendJson(ctx.res, 200, await m.update(ctx.params.id as string, version(ctx), body, rollback))
  }
  async function deleteService (ctx: ApiContext): Promise<void> {
    await m.remove(ctx.params.id as string)
    sendEmpty(ctx.res, 200)
  }
  async function getServiceLogs (ctx: ApiContext): Promise<void> { await streamTaskLogs(ctx, m, ctx.params.id as string) }
  return [
    { method: 'GET', path: '/services', handler: getServices },
    { method: 'POST', path: '/services/create', handler: postServicesCreate },
    { method: 'GET', path: '/services/{id}/logs', handler: getServiceLogs },
    { method: 'POST', path: '/services/{id}/update', handler: postServiceUpdate },
    { method: 'GET', path: '/services/{id}', handler: getService },
    { method: 'DELETE', path: '/services/{id}', handler: deleteService }
  ]
}

export function taskRoutes (m: TaskBackend): Array<Route<ApiHandler>> {
  async function getTasks (ctx: ApiContext): Promise<void> { sendJson(ctx.res, 200, m.list(parseFilters(ctx.query.get('filters'), TASK_FILTERS))) }
  async function getTask (ctx: ApiContext): Promise<void> { sendJson(ctx.res, 200, m.inspect(ctx.params.id as string)) }
  async function getTaskLogs (ctx: ApiContext): Promise<void> { await streamTaskLogs(ctx, m, ctx.params.id as string) }
  return [
    { method: 'GET', path: '/tasks', handler: getTasks },
    { method: 'GET', path: '/tasks/{id}/logs', handler: getTaskLogs },
    { method: 'GET', path: '/tasks/{id}', handler: getTask }
  ]
}

function secretTable (m: SecretBackend, kind: 'secret' | 'config'): Array<Route<ApiHandler>> {
  const base = kind === 'secret' ? '/secrets' : '/configs'
  async function list (ctx: ApiContext): Promise<void> { sendJson(ctx.res, 200, m.list(parseFilters(ctx.query.get('filters'), SECRET_FILTERS))) }
  async function create (ctx: ApiContext): Promise<void> { sendJson(ctx.res, 201, { ID: await m.create(await readJsonObject(ctx.req)) }) }
  async function inspect (ctx: ApiContext): Promise<void> { sendJson(ctx.res, 200, m.inspect(ctx.params.id as string)) }
  async function update (ctx: ApiContext): Promise<void> {
    await m.update(ctx.params.id as string, intValue(ctx.query, 'version'), await readJsonObject(ctx.req))
    sendEmpty(ctx.res, 200)
  }
  async function remove (ctx: ApiContext): Promise<void> {
    await m.remove(ctx.params.id as string)
    sendEmpty(ctx.res, 204)
  }
  return [
    { method: 'GET', path: base, handler: list },
    { method: 'POST', path: `${base}/create`, handler: create },
    { method: 'POST', path: `${base}/{id}/update`, handler: update },
    { method: 'GET', path: `${base}/{id}`, handler: inspect },
    { method: 'DELETE', path: `${base}/{id}`, handler: remove }
  ]
}

export function secretRoutes (m: SecretBackend): Array<Route<ApiHandler>> { return secretTable(m, 'secret') }
export function configRoutes (m: SecretBackend): Array<Route<ApiHandler>> { return secretTable(m, 'config') }
