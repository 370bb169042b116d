// POST /commit: a container's changes and config become a new image (over the CommitBackend declared here).
import type { Route } from '../../http/router.js'
import type { ApiContext, ApiHandler } from '../../http/api-context.js'
import { sendJson } from '../../http/reply.js'
import { readJson } from '../../http/body.js'
import { boolOrDefault } from '../../http/query.js'
import { invalidArgument } from '../../errors.js'
import type { CommitOptions } from '../../containers/commit.js'
import type { ImageRecord } from '../../image/types.js'
import { checkGoType, CONFIG_TYPE } from '../../containers/create-types.js'

/** What the commit route needs (ContainerCommit implements it). */
export interface CommitBackend { commit (o: CommitOptions): Promise<ImageRecord> }

export function commitRoutes (b: CommitBackend): Array<Route<ApiHandler>> {
  async function postCommit (ctx: ApiContext): Promise<void> {
    const q = ctx.query
    const body = await readJson(ctx.req)
    if (body !== undefined && (body === null || typeof body !== 'object' || Array.isArray(body))) throw invalidArgument('invalid JSON: expected a container config object')
    // dockerd decodes the body as a container.Config: a value of the wrong JSON kind is its decoder's 400
    checkGoType(body, CONFIG_TYPE)
    const container = q.get('container') ?? ''
    if (container === '') throw invalidArgument('container is required')
    const img = await b.commit({
      container,
      repo: q.get('repo') ?? '',
      tag: q.get('tag') ?? '',
      comment: q.get('comment') ?? '',
      author: q.get('author') ?? '',
      pause: boolOrDefault(q, 'pause', true),
      changes: q.getAll('changes'),
      config: body as Record<string, unknown> | undefined
    })
    sendJson(ctx.res, 201, { Id: img.id })
  }
  return [{ method: 'POST', path: '/commit', handler: postCommit }]
}
