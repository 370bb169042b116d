// Access checks for route handlers. On the distribution surface a refusal is the 401 challenge Docker clients follow
// (scope in the detail; server.ts turns it into WWW-Authenticate) for anonymous callers and for tokens that merely
// lack a scope the user could get; an authenticated user whom the rules deny gets 403 DENIED at once (a 401 would
// make `docker push` prompt for a login). On the Hub surface it is 401 for anonymous callers and 403 for users.
// A private repository one may not read and a missing one answer alike (the authority grants nothing on either).
import { forbidden, unauthorized } from '../errors.js'
import type { Action } from './auth/scope.js'
import { registryError } from './codes.js'
import type { RegistryContext } from './context.js'
import { parseRepoName, type RepoName } from './names.js'

/** The actions a client should ask a token for when it needs `action` (push implies pull, as clients ask). */
function challengeActions (action: Action): Action[] {
  return action === 'push' ? ['pull', 'push'] : [action]
}

/** Distribution routes: under token auth every request needs a token (Docker's flow: anonymous clients get one too). */
export function requireToken (ctx: RegistryContext): void {
  if (ctx.core.authority.mode === 'token' && !ctx.identity.token) throw registryError('UNAUTHORIZED')
}

export function requireRepoAccess (ctx: RegistryContext, rn: RepoName, action: Action): void {
  const authority = ctx.core.authority
  if (ctx.route.surface === 'distribution') {
    if (authority.mode === 'none') return
    if (ctx.identity.token && authority.allows(ctx.identity, rn, action)) return
    const detail = challengeActions(action).map((a) => ({ Type: 'repository', Name: rn.raw, Action: a }))
    const user = ctx.identity.user
    if (ctx.identity.token && user !== null && !authority.allowedActions(user, rn).has(action)) {
      throw registryError('DENIED', { detail })
    }
    throw registryError('UNAUTHORIZED', { detail })
  }
  if (authority.allows(ctx.identity, rn, action)) return
  if (ctx.identity.user === null) throw unauthorized('authentication required', { detail: { detail: 'authentication required' } })
  throw forbidden(`${ctx.identity.user} may not ${action === 'pull' ? 'read' : 'write'} ${rn.name}`)
}

/** Hub writes need an authenticated user under token auth. */
export function requireUser (ctx: RegistryContext): void {
  if (ctx.core.authority.mode === 'token' && ctx.identity.user === null) throw unauthorized('authentication required')
}

/** The repository the route's {name} names, once the caller may do `action` on it (a bad name is refused first). */
export function repoInPath (ctx: RegistryContext, action: Action): RepoName {
  const rn = parseRepoName(ctx.params.name as string)
  requireRepoAccess(ctx, rn, action)
  return rn
}
