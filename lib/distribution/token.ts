// Docker token auth, client side: a Bearer challenge's realm is asked for a token for the wanted scopes, with Basic
// credentials (GET, `account=` added), anonymously (GET), or with an identity token (OAuth2 refresh grant, POST form).
// A registry token from the client skips all of this. Answers carry `token` and/or `access_token`, maybe a
// `refresh_token` (when `offline_token=true` was asked for), and `expires_in` (default 60 s).
import { EngineError, internal, unauthorized } from '../errors.js'
import { type AuthConfig, basicAuthHeader } from './auth-config.js'
import type { Challenge } from './challenge.js'
import { goMethod, readBody, type HttpClient } from './http-client.js'
import { parseErrorBody, describeEntry } from './registry-error.js'
import { parseJson } from '../util/json-depth.js'

export interface Token {
  token: string
  refreshToken?: string
  /** ms since epoch */
  expiresAt: number
}

export interface TokenRequest {
  challenge: Challenge
  scopes: string[]
  auth: AuthConfig
  /** Ask for a refresh token (docker login). */
  offline?: boolean
  /** The registry request that needed the token, for error texts (`Get "https://…/v2/": unauthorized: …`). */
  requestUrl: URL
  requestMethod: string
  signal?: AbortSignal
  tlsVerify?: boolean
}

const TOKEN_LIMIT = 1024 * 1024

function realmOf (req: TokenRequest): URL {
  const realm = req.challenge.params.realm
  if (realm === undefined || realm === '') throw internal(`${goMethod(req.requestMethod)} "${req.requestUrl.href}": bearer challenge without a realm`)
  try {
    return new URL(realm)
  } catch {
    throw internal(`${goMethod(req.requestMethod)} "${req.requestUrl.href}": invalid token realm ${JSON.stringify(realm)}`)
  }
}

export async function fetchToken (http: HttpClient, req: TokenRequest): Promise<Token> {
  const realm = realmOf(req)
  const service = req.challenge.params.service
  const { auth } = req
  let res
  if (auth.identityToken !== undefined) {
    const form = new URLSearchParams()
    form.set('grant_type', 'refresh_token')
    form.set('refresh_token', auth.identityToken)
    if (service !== undefined) form.set('service', service)
    if (req.scopes.length > 0) form.set('scope', req.scopes.join(' '))
    form.set('client_id', 'docker')
    if (req.offline === true) form.set('access_type', 'offline')
    res = await http.request(realm, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded; charset=utf-8' },
      body: Buffer.from(form.toString()),
      ...(req.signal !== undefined ? { signal: req.signal } : {}),
      ...(req.tlsVerify !== undefined ? { tlsVerify: req.tlsVerify } : {})
    })
  } else {
    const url = new URL(realm)
    if (service !== undefined) url.searchParams.set('service', service)
    for (const s of req.scopes) url.searchParams.append('scope', s)
    const headers: Record<string, string> = {}
    if (auth.username !== undefined && auth.password !== undefined) {
      url.searchParams.set('account', auth.username)
      headers.Authorization = basicAuthHeader(auth.username, auth.password)
    }
    if (req.offline === true) {
      url.searchParams.set('offline_token', 'true')
      url.searchParams.set('client_id', 'docker')
    }
    res = await http.request(url, {
      headers,
      ...(req.signal !== undefined ? { signal: req.signal } : {}),
      ...(req.tlsVerify !== undefined ? { tlsVerify: req.tlsVerify } : {})
    })
  }
  const body = await readBody(res, TOKEN_LIMIT)
  if (res.status !== 200) {
    const { errors, text } = parseErrorBody(body)
    const why = errors[0] !== undefined ? describeEntry(errors[0]) : `unauthorized: ${text !== '' && text.length < 300 ? text : 'authentication required'}`
    const msg = `${goMethod(req.requestMethod)} "${req.requestUrl.href}": ${why}`
    if (res.status === 401 || res.status === 403) throw unauthorized(msg)
    throw new EngineError('internal', `${msg} (token server ${realm.origin} answered ${res.status})`)
  }
  let doc: Record<string, unknown>
  try {
    doc = parseJson(body) as Record<string, unknown>
  } catch {
    throw internal(`token server ${realm.origin} answered with invalid JSON`)
  }
  const token = typeof doc.access_token === 'string' && doc.access_token !== '' ? doc.access_token : doc.token
  if (typeof token !== 'string' || token === '') throw internal(`token server ${realm.origin} answered without a token`)
  const expiresIn = typeof doc.expires_in === 'number' && doc.expires_in > 0 ? doc.expires_in : 60
  const issued = typeof doc.issued_at === 'string' ? Date.parse(doc.issued_at) : NaN
  const from = Number.isNaN(issued) || issued > Date.now() ? Date.now() : issued
  const out: Token = { token, expiresAt: from + expiresIn * 1000 }
  if (typeof doc.refresh_token === 'string' && doc.refresh_token !== '') out.refreshToken = doc.refresh_token
  return out
}
