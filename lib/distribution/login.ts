// POST /auth (docker login): credentials are checked against the registry itself. A Bearer registry's token server
// is asked for a token (with `offline_token=true&client_id=docker`, so it may hand back a refresh token, returned
// as IdentityToken); a Basic registry must accept GET /v2/ with them; a registry that asks for nothing accepts them.
import { internal, unauthorized } from '../errors.js'
import { logger } from '../log.js'
import { type AuthConfig, basicAuthHeader } from './auth-config.js'
import { parseChallenges } from './challenge.js'
import type { Distribution } from './distribution.js'
import { domainOfServerAddress, endpointsFor, type Endpoint } from './endpoint.js'
import { discard, TransportError, type HttpResponse } from './http-client.js'
import { credentialsRefused, registryError } from './registry-error.js'
import { fetchToken } from './token.js'

const log = logger('engine:distribution')

export interface LoginResult { identityToken: string }

export async function login (d: Distribution, auth: AuthConfig, signal?: AbortSignal): Promise<LoginResult> {
  const domain = domainOfServerAddress(auth.serverAddress)
  const cached = d.endpointCache.get(domain)
  let lastErr: unknown
  for (const ep of cached !== undefined ? [cached] : endpointsFor(domain, d.insecureRegistries)) {
    const url = new URL('/v2/', ep.base)
    let res: HttpResponse
    try {
      res = await d.http.request(url, { tlsVerify: ep.tlsVerify, ...(signal !== undefined ? { signal } : {}) })
    } catch (err) {
      if (!(err instanceof TransportError)) throw err
      log('login ping %s failed: %s', url.href, err.message)
      lastErr = err
      continue
    }
    d.endpointCache.set(domain, ep)
    return await answer(d, ep, url, res, auth, signal)
  }
  throw lastErr ?? internal(`no endpoint for ${domain}`)
}

async function answer (d: Distribution, ep: Endpoint, url: URL, res: HttpResponse, auth: AuthConfig, signal: AbortSignal | undefined): Promise<LoginResult> {
  if (res.status === 200) { discard(res); return { identityToken: '' } }
  if (res.status !== 401) throw await registryError(res)
  const challenges = parseChallenges(res.headers['www-authenticate'])
  discard(res)
  const bearer = challenges.find((c) => c.scheme === 'bearer')
  if (bearer !== undefined) {
    const token = await fetchToken(d.http, {
      challenge: bearer,
      scopes: [],
      auth,
      offline: true,
      requestUrl: url,
      requestMethod: 'GET',
      tlsVerify: ep.tlsVerify,
      ...(signal !== undefined ? { signal } : {})
    })
    return { identityToken: token.refreshToken ?? '' }
  }
  if (challenges.some((c) => c.scheme === 'basic')) {
    if (auth.username === undefined || auth.password === undefined) throw unauthorized(`Get "${url.href}": no basic auth credentials`)
    const again = await d.http.request(url, { headers: { Authorization: basicAuthHeader(auth.username, auth.password) }, tlsVerify: ep.tlsVerify, ...(signal !== undefined ? { signal } : {}) })
    if (again.status === 200) { discard(again); return { identityToken: '' } }
    const err = await registryError(again)
    if (again.status === 401) throw credentialsRefused(url, err)
    throw err
  }
  throw unauthorized(`Get "${url.href}": the registry asks for authentication it does not describe`)
}
