// Registry routes: push, login (POST /auth) and remote inspect (GET /distribution/{name}/json); the pull is
// POST /images/create's (routes.ts), through withProgress below. Progress streams start with their first record;
// errors before it are ordinary replies with the error's status, errors after it go in-band.
import type { Route } from '../../http/router.js'
import type { ApiContext, ApiHandler } from '../../http/api-context.js'
import { readBody, readJsonObject } from '../../http/body.js'
import { sendJson } from '../../http/reply.js'
import { decodeRegistryAuth, parseAuthConfig, type AuthConfig } from '../../distribution/auth-config.js'
import { ProgressStream } from '../../distribution/progress.js'
import type { DistributionBackend } from './backend.js'
import { parseJson } from '../../util/json-depth.js'
import { describeError } from '../../errors.js'
import { levelLogger } from '../../log.js'

const ops = levelLogger('engine')

const AUTH_BODY_LIMIT = 64 * 1024

/** X-Registry-Auth; for push without the header, dockerd reads the auth JSON from the body. */
async function pushAuth (ctx: ApiContext): Promise<AuthConfig> {
  const header = ctx.req.headers['x-registry-auth']
  if (header !== undefined) return decodeRegistryAuth(header)
  try {
    const body = await readBody(ctx.req, AUTH_BODY_LIMIT)
    return body.length > 0 ? parseAuthConfig(parseJson(body)) : {}
  } catch {
    return {}
  }
}

/**
 * Runs a job that reports through a progress stream: failures before the first record are ordinary HTTP errors,
 * later ones an in-band error record.
 */
export async function withProgress (ctx: ApiContext, job: (out: ProgressStream) => Promise<unknown>): Promise<void> {
  const out = new ProgressStream(ctx.res)
  try {
    await job(out)
  } catch (err) {
    if (!out.started) throw err
    // the status went out already: the api server will not see this failure, so it is logged here
    if (ctx.signal.aborted) ops.info('%s %s: the client went away: %s', ctx.req.method, ctx.req.url, describeError(err))
    else ops.error('%s %s failed: %s', ctx.req.method, ctx.req.url, describeError(err))
    out.error(err)
  }
  out.end()
}

export function imageDistributionRoutes (b: DistributionBackend): Array<Route<ApiHandler>> {
  async function postImagePush (ctx: ApiContext): Promise<void> {
    const auth = await pushAuth(ctx)
    await withProgress(ctx, async (out) => {
      await b.pushImage({ name: ctx.params.name as string, tag: ctx.query.get('tag') ?? '', auth, signal: ctx.signal }, out)
    })
  }

  async function postAuth (ctx: ApiContext): Promise<void> {
    const auth = parseAuthConfig(await readJsonObject(ctx.req, AUTH_BODY_LIMIT))
    const r = await b.login(auth, ctx.signal)
    sendJson(ctx.res, 200, { Status: 'Login Succeeded', IdentityToken: r.identityToken })
  }

  async function getDistributionJson (ctx: ApiContext): Promise<void> {
    const auth = decodeRegistryAuth(ctx.req.headers['x-registry-auth'])
    sendJson(ctx.res, 200, await b.inspectRemote(ctx.params.name as string, auth, ctx.signal))
  }

  return [
    { method: 'POST', path: '/images/{name:.*}/push', handler: postImagePush },
    { method: 'POST', path: '/auth', handler: postAuth },
    { method: 'GET', path: '/distribution/{name:.*}/json', handler: getDistributionJson }
  ]
}
