// Registry credentials as clients send them: the X-Registry-Auth header (base64 of a JSON object) and the POST /auth
// body. Lenient where dockerd is strict: both base64 alphabets, padded or not; keys matched case-insensitively; the
// `auth` field (base64 "user:pass") used when username and password are absent. A header that does not decode is
// anonymous, never an error. Pure.
import { parseJson } from '../util/json-depth.js'


export interface AuthConfig {
  username?: string
  password?: string
  email?: string
  /** Informational: the registry the client meant the credentials for. */
  serverAddress?: string
  /** An OAuth2 refresh token (from a previous `docker login`). */
  identityToken?: string
  /** A ready bearer token, sent to the registry as is. */
  registryToken?: string
}

const BASE64 = /^[A-Za-z0-9+/_-]*={0,2}$/

/** Decodes base64 in either alphabet, with or without padding; undefined when it is not base64 at all. */
export function decodeBase64Lenient (text: string): Buffer | undefined {
  const s = text.trim()
  if (!BASE64.test(s)) return undefined
  const body = s.replace(/=+$/, '')
  if (body.length % 4 === 1) return undefined
  return Buffer.from(body.replace(/-/g, '+').replace(/_/g, '/'), 'base64')
}

/** X-Registry-Auth → credentials; anything undecodable means anonymous ({}). */
export function decodeRegistryAuth (header: string | string[] | undefined): AuthConfig {
  const raw = Array.isArray(header) ? header[0] : header
  if (raw === undefined || raw.trim() === '') return {}
  const bytes = decodeBase64Lenient(raw)
  if (bytes === undefined) return {}
  try {
    return parseAuthConfig(parseJson(bytes))
  } catch {
    return {}
  }
}

/** A decoded JSON auth object (header or POST /auth body) → credentials. Unknown keys and non-strings are ignored. */
export function parseAuthConfig (value: unknown): AuthConfig {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return {}
  const out: AuthConfig = {}
  let auth: string | undefined
  for (const [key, v] of Object.entries(value as Record<string, unknown>)) {
    if (typeof v !== 'string' || v === '') continue
    switch (key.toLowerCase()) {
      case 'username': out.username = v; break
      case 'password': out.password = v; break
      case 'auth': auth = v; break
      case 'email': out.email = v; break
      case 'serveraddress': out.serverAddress = v; break
      case 'identitytoken': out.identityToken = v; break
      case 'registrytoken': out.registryToken = v; break
    }
  }
  if (auth !== undefined && out.username === undefined && out.password === undefined) {
    const pair = decodeBase64Lenient(auth)?.toString('utf8')
    const i = pair?.indexOf(':') ?? -1
    if (pair !== undefined && i > 0) {
      out.username = pair.slice(0, i)
      out.password = pair.slice(i + 1)
    }
  }
  return out
}

/** True when the config carries something to authenticate with. */
export function hasCredentials (a: AuthConfig): boolean {
  return a.registryToken !== undefined || a.identityToken !== undefined || (a.username !== undefined && a.password !== undefined)
}

export function basicAuthHeader (username: string, password: string): string {
  return `Basic ${Buffer.from(`${username}:${password}`, 'utf8').toString('base64')}`
}
