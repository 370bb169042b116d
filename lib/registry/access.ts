// Access checks for route handlers. On the distribution surface a refusal is the 401 challenge Docker clients follow
// (scope in the detail; server.ts turns it into WWW-Authenticate); on the Hub surface it is 401 for anonymous callers
// and 403 for users without the right.
import { forbidden, unauthorized } from '../errors.js'
import type { Action } from './auth/scope.js'
import { registryError } from './codes.js'
import type { RegistryContext } from './context.js'
import type { RepoName } from './names.js'

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
    throw registryError('UNAUTHORIZED', {
      detail: challengeActions(action).map((a) => ({ Type: 'repository', Name: rn.raw, Action: a }))
    })
  }
  if (authority.allows(ctx.identity, rn, action)) return
  if (ctx.identity.user === null) throw unauthorized('authentication required', { detail: { detail: 'authentication required' } })
  throw forbidden(`${ctx.identity.user} may not ${action === 'pull' ? 'read' : 'write'} ${rn.name}`)
}

/** Hub writes need an authenticated user under token auth. */
export function requireUser (ctx: RegistryContext): void {
  if (ctx.core.authority.mode === 'token' && ctx.identity.user === null) throw unauthorized('authentication required')
}
