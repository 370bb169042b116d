// Registry error answers ({"errors":[{code,message,detail}]}) as one error class carrying the registry's status and
// codes, worded like the distribution client words them (`manifest unknown: manifest unknown`), plus the pull-side
// translation dockerd applies (translatePullError: DENIED, MANIFEST_UNKNOWN and NAME_UNKNOWN become not-found).
import { STATUS_CODES } from 'node:http'
import { EngineError, type ErrorKind } from '../errors.js'
import { parseChallenges } from './challenge.js'
import { readBody, type HttpResponse } from './http-client.js'
import { parseJson } from '../util/json-depth.js'

export interface RegistryErrorEntry { code: string, message: string, detail?: unknown }

export class RegistryError extends EngineError {
  /** The registry's HTTP status. */
  readonly httpStatus: number
  readonly errors: RegistryErrorEntry[]
  constructor (kind: ErrorKind, message: string, httpStatus: number, errors: RegistryErrorEntry[]) {
    super(kind, message, errors[0] !== undefined ? { code: errors[0].code } : {})
    this.httpStatus = httpStatus
    this.errors = errors
  }

  has (code: string): boolean { return this.errors.some((e) => e.code === code) }
}

export function isRegistryError (err: unknown): err is RegistryError {
  return err instanceof RegistryError
}

/** errcode.Error.Error(): `manifest unknown: manifest unknown`. */
export function describeEntry (e: RegistryErrorEntry): string {
  const code = e.code.toLowerCase().replace(/_/g, ' ')
  return e.message !== '' ? `${code}: ${e.message}` : code
}

function kindOfStatus (status: number): ErrorKind {
  if (status === 401) return 'unauthorized'
  if (status === 403) return 'forbidden'
  if (status === 404) return 'not-found'
  if (status === 416) return 'range'
  if (status === 429 || status === 503) return 'unavailable'
  if (status >= 400 && status < 500) return 'invalid-argument'
  return 'internal'
}

/** Parses `{"errors":[…]}` leniently (Hub's token server answers `{"details": "…"}`). */
export function parseErrorBody (body: Buffer): { errors: RegistryErrorEntry[], text: string } {
  const text = body.toString('utf8').trim()
  try {
    const v = parseJson(text) as Record<string, unknown>
    const errors: RegistryErrorEntry[] = []
    if (Array.isArray(v.errors)) {
      for (const e of v.errors as Array<Record<string, unknown>>) {
        if (e === null || typeof e !== 'object') continue
        errors.push({ code: String(e.code ?? 'UNKNOWN'), message: typeof e.message === 'string' ? e.message : '', detail: e.detail })
      }
    }
    const plain = [v.details, v.detail, v.message, v.error].find((x) => typeof x === 'string' && x !== '') as string | undefined
    return { errors, text: plain ?? text }
  } catch {
    return { errors: [], text }
  }
}

/**
 * A Bearer challenge on a 4xx answer says more than its body (RFC 6750 §3.1, as the distribution client reads it):
 * `insufficient_scope` means DENIED — what an anonymous or unprivileged token gets for a repository it may not
 * see, or that does not exist — and `invalid_token` means UNAUTHORIZED.
 */
function challengeError (res: HttpResponse): RegistryErrorEntry | undefined {
  if (res.status < 400 || res.status >= 500) return undefined
  for (const c of parseChallenges(res.headers['www-authenticate'])) {
    if (c.scheme !== 'bearer') continue
    const description = c.params.error_description
    if (c.params.error === 'insufficient_scope') return { code: 'DENIED', message: description ?? 'requested access to the resource is denied' }
    if (c.params.error === 'invalid_token') return { code: 'UNAUTHORIZED', message: description ?? 'authentication required' }
  }
  return undefined
}

/** Reads an error response into a RegistryError. `fallback` words a 404 without a JSON body (e.g. `unknown blob`). */
export async function registryError (res: HttpResponse, fallback?: string): Promise<RegistryError> {
  let body: Buffer = Buffer.alloc(0)
  try { body = await readBody(res, 64 * 1024) } catch { /* the status is enough */ }
  const parsed = parseErrorBody(body)
  const fromChallenge = challengeError(res)
  const errors = fromChallenge !== undefined ? [fromChallenge, ...parsed.errors] : parsed.errors
  const text = parsed.text
  let message: string
  if (errors[0] !== undefined) message = describeEntry(errors[0])
  else if (fallback !== undefined) message = fallback
  else if (res.status === 401) message = `unauthorized: ${text !== '' && text.length < 200 ? text : 'authentication required'}`
  else message = `received unexpected HTTP status: ${res.status} ${STATUS_CODES[res.status] ?? ''}`.trim()
  return new RegistryError(kindOfStatus(res.status), message, res.status, errors)
}

/**
 * A 401 to the credentials a ping or a login just sent, as docker words it: `Get "<url>": unauthorized: <reason>`
 * (the reason already says `unauthorized` when the registry's code or our 401 text did).
 */
export function credentialsRefused (url: URL, err: RegistryError): EngineError {
  const first = err.errors[0]
  const saysUnauthorized = first === undefined ? err.httpStatus === 401 : first.code.toUpperCase() === 'UNAUTHORIZED'
  return new EngineError('unauthorized', `Get "${url.href}": ${saysUnauthorized ? err.message : `unauthorized: ${err.message}`}`)
}

/** The pull-side wording of registry errors (moby distribution/errors.go). */
export function translatePullError (err: unknown, familiarName: string, familiarRef: string): unknown {
  if (!isRegistryError(err)) return err
  const first = err.errors[0]
  const cause = first !== undefined ? describeEntry(first) : err.message
  switch (first?.code) {
    case 'DENIED':
      return new EngineError('not-found', `pull access denied for ${familiarName}, repository does not exist or may require 'docker login': ${cause}`, { cause: err, code: 'DENIED' })
    case 'MANIFEST_UNKNOWN':
      return new EngineError('not-found', `manifest for ${familiarRef} not found: ${cause}`, { cause: err, code: 'MANIFEST_UNKNOWN' })
    case 'NAME_UNKNOWN':
      return new EngineError('not-found', `repository ${familiarName} not found: ${cause}`, { cause: err, code: 'NAME_UNKNOWN' })
  }
  if (err.httpStatus === 404) return new EngineError('not-found', `manifest for ${familiarRef} not found: ${cause}`, { cause: err })
  return err
}
