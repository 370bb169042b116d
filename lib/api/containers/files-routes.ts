// Container file routes (archive HEAD/GET/PUT, export, changes) and process routes (top, stats).
import { pipeline } from 'node:stream/promises'
import type { Readable } from 'node:stream'
import type { Route } from '../../http/router.js'
import type { ApiContext, ApiHandler } from '../../http/api-context.js'
import type { PathStat } from '../../containers/container-files.js'
import type { TopResult } from '../../containers/container-stats.js'
import { toChangesWire } from './wire.js'
import type { Change } from '../../image/diff.js'
import { sendJson, sendEmpty } from '../../http/reply.js'
import { boolValue, boolOrDefault } from '../../http/query.js'
import { invalidArgument } from '../../errors.js'
import { readableBody } from '../../http/body.js'

/** What the file routes need; ContainerFiles implements it. */
export interface ContainerFilesBackend {
  statPath (ref: string, path: string): Promise<PathStat>
  archivePath (ref: string, path: string): Promise<{ stat: PathStat, tar: Readable }>
  extractToDir (ref: string, path: string, body: Readable, opts: { noOverwriteDirNonDir: boolean, copyUIDGID: boolean }): Promise<void>
  export (ref: string): Promise<Readable>
  changes (ref: string): Promise<Change[]>
}

/** What the process routes (top, stats) need; ContainerStats implements it. */
export interface ContainerStatsBackend {
  top (ref: string, psArgs: string): Promise<TopResult>
  stats (ref: string, o: { stream: boolean, oneShot: boolean, signal: AbortSignal, write: (json: Record<string, unknown>) => Promise<void> }): Promise<void>
}

export const PATH_STAT_HEADER = 'X-Docker-Container-Path-Stat'

/** The stat header: standard base64 (not URL-safe) of the JSON stat. */
export function encodePathStat (stat: PathStat): string {
  return Buffer.from(JSON.stringify(stat)).toString('base64')
}


function archivePathParam (ctx: ApiContext): string {
  const path = ctx.query.get('path') ?? ''
  if (path === '') throw invalidArgument('bad parameter: path cannot be empty')
  return path
}

export function containerFileRoutes (b: ContainerFilesBackend): Array<Route<ApiHandler>> {
  async function headContainerArchive (ctx: ApiContext): Promise<void> {
    const stat = await b.statPath(ctx.params.name as string, archivePathParam(ctx))
    ctx.res.writeHead(200, { [PATH_STAT_HEADER]: encodePathStat(stat), 'Content-Length': 0 })
    ctx.res.end()
  }

  async function getContainerArchive (ctx: ApiContext): Promise<void> {
    const { stat, tar } = await b.archivePath(ctx.params.name as string, archivePathParam(ctx))
    ctx.res.writeHead(200, { [PATH_STAT_HEADER]: encodePathStat(stat), 'Content-Type': 'application/x-tar' })
    await pipeline(tar, ctx.res)
  }

  async function putContainerArchive (ctx: ApiContext): Promise<void> {
    const path = archivePathParam(ctx)
    await b.extractToDir(ctx.params.name as string, path, readableBody(ctx.req, ctx.res), {
      noOverwriteDirNonDir: boolValue(ctx.query, 'noOverwriteDirNonDir'),
      copyUIDGID: boolValue(ctx.query, 'copyUIDGID')
    })
    sendEmpty(ctx.res, 200)
  }

  async function getContainerExport (ctx: ApiContext): Promise<void> {
    const tar = await b.export(ctx.params.name as string)
    ctx.res.writeHead(200, { 'Content-Type': 'application/x-tar' })
    await pipeline(tar, ctx.res)
  }

  async function getContainerChanges (ctx: ApiContext): Promise<void> {
    sendJson(ctx.res, 200, toChangesWire(await b.changes(ctx.params.name as string)))
  }

  return [
    { method: 'HEAD', path: '/containers/{name:.*}/archive', handler: headContainerArchive },
    { method: 'GET', path: '/containers/{name:.*}/archive', handler: getContainerArchive },
    { method: 'PUT', path: '/containers/{name:.*}/archive', handler: putContainerArchive },
    { method: 'GET', path: '/containers/{name:.*}/export', handler: getContainerExport },
    { method: 'GET', path: '/containers/{name:.*}/changes', handler: getContainerChanges }
  ]
}

export function containerStatsRoutes (procs: ContainerStatsBackend): Array<Route<ApiHandler>> {
  async function getContainerTop (ctx: ApiContext): Promise<void> {
    sendJson(ctx.res, 200, await procs.top(ctx.params.name as string, ctx.query.get('ps_args') ?? ''))
  }

  async function getContainerStats (ctx: ApiContext): Promise<void> {
    const stream = boolOrDefault(ctx.query, 'stream', true)
    const oneShot = boolValue(ctx.query, 'one-shot')
    if (oneShot && stream) throw invalidArgument('cannot have stream=true and one-shot=true')
    const res = ctx.res
    let started = false
    await procs.stats(ctx.params.name as string, {
      stream,
      oneShot,
      signal: ctx.signal,
      async write (json) {
        if (!stream) { sendJson(res, 200, json); return }
        if (!started) {
          res.writeHead(200, { 'Content-Type': 'application/json' })
          res.flushHeaders()
          started = true
        }
        if (!res.write(JSON.stringify(json) + '\n')) await new Promise((resolve) => { res.once('drain', resolve); res.once('close', resolve) })
      }
    })
    if (stream && !res.writableEnded) res.end()
  }

  return [
    { method: 'GET', path: '/containers/{name:.*}/top', handler: getContainerTop },
    { method: 'GET', path: '/containers/{name:.*}/stats', handler: getContainerStats }
  ]
}
