// Compact JWTs signed with HMAC-SHA256 (RFC 7519 / 7515), node:crypto only. The registry is its own token issuer, so
// a shared secret suffices; verification checks alg, signature (constant time), issuer, audience and times.
import { createHmac, timingSafeEqual } from 'node:crypto'
import { unauthorized, type EngineError } from '../../errors.js'
import { parseJson } from '../../util/json-depth.js'

export interface JwtClaims {
  iss: string
  sub: string
  aud: string
  exp: number
  nbf: number
  iat: number
  jti: string
  access?: Array<{ type: string, name: string, actions: string[] }>
  [key: string]: unknown
}

/** The code of a bearer token the registry refuses (its challenge then says error="invalid_token"). */
export const INVALID_TOKEN = 'INVALID_TOKEN'

/** A refused token: unauthorized with the reason, coded for the challenge; its body code stays UNAUTHORIZED. */
export function invalidToken (reason: string): EngineError {
  return unauthorized(`invalid token: ${reason}`, { code: INVALID_TOKEN })
}

const HEADER = Buffer.from(JSON.stringify({ alg: 'HS256', typ: 'JWT' })).toString('base64url')
/** Clock skew allowed on exp and nbf, as distribution does. */
export const LEEWAY_SECONDS = 60

function mac (key: Buffer, data: string): Buffer {
  return createHmac('sha256', key).update(data).digest()
}

export function signJwt (claims: JwtClaims, key: Buffer): string {
  const body = `${HEADER}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}`
  return `${body}.${mac(key, body).toString('base64url')}`
}

/** Returns the claims of a valid token; throws unauthorized (with the reason) otherwise. */
export function verifyJwt (token: string, key: Buffer, expect: { iss: string, aud: string }, nowSeconds = Math.floor(Date.now() / 1000)): JwtClaims {
  const parts = token.split('.')
  if (parts.length !== 3 || parts.some((p) => !/^[A-Za-z0-9_-]*$/.test(p))) throw invalidToken('malformed')
  const [h, c, s] = parts as [string, string, string]
  let header: unknown
  let claims: JwtClaims
  try {
    header = parseJson(Buffer.from(h, 'base64url'))
    claims = parseJson(Buffer.from(c, 'base64url')) as JwtClaims
  } catch {
    throw invalidToken('malformed')
  }
  if (typeof header !== 'object' || header === null || (header as { alg?: unknown }).alg !== 'HS256') throw invalidToken('unsupported algorithm')
  const expected = mac(key, `${h}.${c}`)
  const got = Buffer.from(s, 'base64url')
  if (got.length !== expected.length || !timingSafeEqual(got, expected)) throw invalidToken('bad signature')
  if (typeof claims !== 'object' || claims === null) throw invalidToken('malformed claims')
  if (claims.iss !== expect.iss) throw invalidToken('wrong issuer')
  if (claims.aud !== expect.aud) throw invalidToken('wrong audience')
  if (typeof claims.exp !== 'number' || claims.exp + LEEWAY_SECONDS < nowSeconds) throw invalidToken('expired')
  if (typeof claims.nbf === 'number' && claims.nbf - LEEWAY_SECONDS > nowSeconds) throw invalidToken('not yet valid')
  if (typeof claims.sub !== 'string') throw invalidToken('no subject')
  return claims
}
