// Token endpoints: Docker's token server (GET /token with optional Basic credentials, POST /token with the OAuth2
// password grant) for registry clients, and the Hub API's POST /v2/auth/token {identifier, secret} → {access_token}.
import type { Route } from '../../http/router.js'
import { readBody, readJsonObject } from '../../http/body.js'
import { invalidArgument, unauthorized } from '../../errors.js'
import { parseScopes } from '../auth/scope.js'
import type { RegistryContext, RegistryRoute } from '../context.js'
import { replyJson } from './reply.js'

const FORM_LIMIT = 64 * 1024

/** Basic credentials; null without an Authorization header or with another scheme; a malformed Basic one is 401. */
function basicCredentials (header: string | undefined): { user: string, password: string } | null {
  if (header === undefined || !/^Basic(?:\s|$)/i.test(header)) return null
  const m = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header)
  const decoded = m === null ? '' : Buffer.from(m[1] as string, 'base64').toString('utf8')
  const i = decoded.indexOf(':')
  if (i === -1) throw unauthorized('malformed Basic credentials')
  return { user: decoded.slice(0, i), password: decoded.slice(i + 1) }
}

/** The caller's address, for the failed-login throttle (Unix socket callers share one). */
function clientOf (ctx: RegistryContext): string {
  return ctx.req.socket.remoteAddress ?? 'local'
}

async function login (ctx: RegistryContext, creds: { user: string, password: string } | null): Promise<string | null> {
  if (creds === null) return null
  const u = await ctx.core.authority.authenticate(creds.user, creds.password, clientOf(ctx))
  if (u === null) throw unauthorized('incorrect username or password')
  return u.name
}

function issueRegistryToken (ctx: RegistryContext, user: string | null, scopes: string[]): void {
  const { authority } = ctx.core
  const access = authority.grant(user, parseScopes(scopes))
  const t = authority.issue(user, access)
  ctx.res.setHeader('Cache-Control', 'no-store')
  replyJson(ctx.res, 200, { token: t.token, access_token: t.token, expires_in: t.expiresIn, issued_at: t.issuedAt })
}

async function getToken (ctx: RegistryContext): Promise<void> {
  const user = await login(ctx, basicCredentials(ctx.req.headers.authorization))
  issueRegistryToken(ctx, user, ctx.query.getAll('scope'))
}

async function postToken (ctx: RegistryContext): Promise<void> {
  const form = new URLSearchParams((await readBody(ctx.req, FORM_LIMIT)).toString('utf8'))
  const grant = form.get('grant_type')
  if (grant !== 'password') throw invalidArgument(`unsupported grant_type ${JSON.stringify(grant)}: use password, or GET with Basic credentials`)
  const user = await login(ctx, { user: form.get('username') ?? '', password: form.get('password') ?? '' })
  issueRegistryToken(ctx, user, form.getAll('scope'))
}

async function postHubToken (ctx: RegistryContext): Promise<void> {
  const body = await readJsonObject(ctx.req, FORM_LIMIT)
  const { identifier, secret } = body
  if (typeof identifier !== 'string' || typeof secret !== 'string' || identifier === '' || secret === '') {
    throw invalidArgument('identifier and secret are required', { detail: { fields: { identifier: ['required'], secret: ['required'] } } })
  }
  const u = await ctx.core.authority.authenticate(identifier, secret, clientOf(ctx))
  if (u === null) throw unauthorized('Incorrect authentication credentials', { detail: { detail: 'Incorrect authentication credentials' } })
  const t = ctx.core.authority.issue(u.name, undefined)
  ctx.res.setHeader('Cache-Control', 'no-store')
  replyJson(ctx.res, 200, { access_token: t.token })
}

export const TOKEN_ROUTES: ReadonlyArray<Route<RegistryRoute>> = [
  { method: 'GET', path: '/token', handler: { surface: 'token', handle: getToken } },
  { method: 'POST', path: '/token', handler: { surface: 'token', handle: postToken } },
  { method: 'POST', path: '/v2/auth/token', handler: { surface: 'hub', handle: postHubToken } }
]
