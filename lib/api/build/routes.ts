// Build routes: POST /build (the classic builder protocol: a context tar in, dockerd's JSON progress stream out),
// POST /build/prune, POST /build/cancel. Errors before the first progress record are ordinary replies; later ones
// are an in-band `errorDetail` record (the client exits non-zero with its message).
import type { Route } from '../../http/router.js'
import type { ApiContext, ApiHandler } from '../../http/api-context.js'
import { sendJson, sendEmpty } from '../../http/reply.js'
import { boolValue, boolOrDefault, parseFilters, parseTimestamp } from '../../http/query.js'
import { readableBody } from '../../http/body.js'
import { invalidArgument, errorMessage } from '../../errors.js'
import { RunFailed } from '../../build/build-state.js'
import { toBuildPruneReply, hostConfigFromQuery } from './wire.js'
import type { BuildRequest } from '../../build/build-runner.js'
import type { BuildApiBackend } from './backend.js'
import type { PruneSpace } from '../../build/build-cache.js'
import { versionAtLeast } from '../api-version.js'
import { BuildStream } from './build-stream.js'
import { logger } from '../../log.js'
import { parseJson } from '../../util/json-depth.js'

const log = logger('engine:build')

function jsonParam<T> (q: URLSearchParams, key: string, check: (v: unknown) => boolean, what: string): T | undefined {
  const raw = q.get(key)
  if (raw === null || raw === '') return undefined
  let v: unknown
  try { v = parseJson(raw) } catch { throw invalidArgument(`invalid ${key} parameter: ${what} expected`) }
  if (!check(v)) throw invalidArgument(`invalid ${key} parameter: ${what} expected`)
  return v as T
}

const isObject = (v: unknown): boolean => v !== null && typeof v === 'object' && !Array.isArray(v)

/** X-Registry-Config: base64url JSON of registry → auth config. */
function registryConfig (header: string | string[] | undefined): Record<string, unknown> {
  const raw = Array.isArray(header) ? header[0] : header
  if (raw === undefined || raw === '') return {}
  try {
    const v = parseJson(Buffer.from(raw.replace(/-/g, '+').replace(/_/g, '/'), 'base64')) as unknown
    return isObject(v) ? v as Record<string, unknown> : {}
  } catch {
    return {}
  }
}

export function buildRoutes (b: BuildApiBackend): Array<Route<ApiHandler>> {
  async function postBuild (ctx: ApiContext): Promise<void> {
    const q = ctx.query
    if (boolValue(q, 'squash')) throw invalidArgument('squash is only supported with experimental mode')
    const version = q.get('version')
    if (version === '2') throw invalidArgument('BuildKit is not supported by this daemon: build with the classic builder (DOCKER_BUILDKIT=0)')
    const remote = q.get('remote')
    if (remote !== null && remote !== '') throw invalidArgument(`remote build contexts are not supported (remote=${remote}): send the context as the request body`)
    const isolation = q.get('isolation') ?? ''
    if (isolation !== '' && isolation !== 'default') throw invalidArgument(`Unsupported isolation: ${JSON.stringify(isolation)}`)
    const session = q.get('session')
    if (session !== null && session !== '') log('ignoring session %s: the classic builder has no session', session)
    const buildArgs = new Map<string, string | null>()
    for (const [k, v] of Object.entries(jsonParam<Record<string, unknown>>(q, 'buildargs', isObject, 'a JSON object') ?? {})) buildArgs.set(k, v === null ? null : String(v))
    const labels: Record<string, string> = {}
    for (const [k, v] of Object.entries(jsonParam<Record<string, unknown>>(q, 'labels', isObject, 'a JSON object') ?? {})) labels[k] = String(v)
    const cacheFrom = (jsonParam<unknown[]>(q, 'cachefrom', Array.isArray, 'a JSON array') ?? []).map(String)
    const platform = q.get('platform') ?? ''
    if (platform !== '' && !platform.startsWith('linux')) throw invalidArgument(`"${platform}": unsupported platform: this daemon builds linux images`)
    const dockerfile = q.get('dockerfile') ?? ''
    const quiet = boolValue(q, 'q')
    const out = new BuildStream(ctx.res, quiet)
    try {
      const req: BuildRequest = {
        buildId: q.get('buildid') ?? '',
        dockerfile: dockerfile === '' ? 'Dockerfile' : dockerfile,
        tags: q.getAll('t').filter((t) => t !== ''),
        buildArgs,
        labels,
        target: q.get('target') ?? '',
        noCache: boolValue(q, 'nocache'),
        pull: boolValue(q, 'pull'),
        remove: boolOrDefault(q, 'rm', true),
        forceRemove: boolValue(q, 'forcerm'),
        quiet,
        hostConfig: hostConfigFromQuery(q),
        platform,
        cacheFrom,
        registryConfig: registryConfig(ctx.req.headers['x-registry-config'])
      }
      // dockerd's classic builder ignores `outputs` (a BuildKit exporter); here the reply says so
      const outputs = q.get('outputs')
      if (outputs !== null && outputs !== '' && outputs !== '[]' && outputs !== 'null') out.stream('[Warning] outputs (--output) need BuildKit: the classic builder makes the image and exports nothing\n')
      const imageId = await b.build(req, readableBody(ctx.req, ctx.res), out, ctx.signal)
      if (quiet) out.result(imageId)
    } catch (err) {
      ctx.req.resume()
      out.release()
      if (!out.started) throw err
      const message = errorMessage(err)
      out.record({ errorDetail: err instanceof RunFailed ? { code: err.exitCode, message } : { message }, error: message })
    }
    out.end()
  }

  async function postBuildPrune (ctx: ApiContext): Promise<void> {
    // the classic builder's cache has no shared or private records: `all` changes nothing; other filters are refused
    const filters = parseFilters(ctx.query.get('filters'), new Set(['until', 'unused-for']))
    const bytes = (name: string): number => {
      const v = ctx.query.get(name) ?? ''
      if (v === '') return 0
      if (!/^[+-]?\d+$/.test(v)) throw invalidArgument(`${name} is in bytes and expects an integer, got ${v}: strconv.Atoi: parsing ${JSON.stringify(v)}: invalid syntax`)
      return Number(v)
    }
    // API 1.48 named the reserve reserved-space (keep-storage still read when it is not given) and added the others
    const space: PruneSpace = versionAtLeast(ctx.version, '1.48')
      ? { reservedBytes: bytes('reserved-space') || bytes('keep-storage'), maxUsedBytes: bytes('max-used-space'), minFreeBytes: bytes('min-free-space') }
      : { reservedBytes: bytes('keep-storage'), maxUsedBytes: 0, minFreeBytes: 0 }
    const until = filters.get('until')?.[0] ?? filters.get('unused-for')?.[0]
    let untilMs: number | undefined
    if (until !== undefined) {
      const dur = /^(\d+)(h|m|s)$/.exec(until)
      untilMs = dur !== null ? Date.now() - Number(dur[1]) * ({ h: 3600e3, m: 60e3, s: 1e3 }[dur[2] as 'h' | 'm' | 's']) : Number(parseTimestamp(until, 'until') / 1_000_000n)
    }
    const r = await b.prune({ ...(untilMs !== undefined ? { untilMs } : {}), space })
    sendJson(ctx.res, 200, toBuildPruneReply(r))
  }

  async function postBuildCancel (ctx: ApiContext): Promise<void> {
    const id = ctx.query.get('id') ?? ''
    if (id === '') throw invalidArgument('build ID not provided')
    b.cancel(id)
    sendEmpty(ctx.res, 200)
  }

  return [
    { method: 'POST', path: '/build', handler: postBuild },
    { method: 'POST', path: '/build/prune', handler: postBuildPrune },
    { method: 'POST', path: '/build/cancel', handler: postBuildCancel }
  ]
}
