// Registry error codes (OCI distribution-spec §Error Codes plus distribution's TAG_INVALID and UNKNOWN): each code's
// default kind (→ status through errors.ts's one table) and message, as distribution 2.8 words them.
import { EngineError, isEngineError, type ErrorKind } from '../errors.js'

export const REGISTRY_CODES = {
  BLOB_UNKNOWN: { kind: 'not-found', message: 'blob unknown to registry' },
  BLOB_UPLOAD_INVALID: { kind: 'invalid-argument', message: 'blob upload invalid' },
  BLOB_UPLOAD_UNKNOWN: { kind: 'not-found', message: 'blob upload unknown to registry' },
  DIGEST_INVALID: { kind: 'invalid-argument', message: 'provided digest did not match uploaded content' },
  MANIFEST_BLOB_UNKNOWN: { kind: 'invalid-argument', message: 'manifest references a manifest or blob unknown to registry' },
  MANIFEST_INVALID: { kind: 'invalid-argument', message: 'manifest invalid' },
  MANIFEST_UNKNOWN: { kind: 'not-found', message: 'manifest unknown' },
  NAME_INVALID: { kind: 'invalid-argument', message: 'invalid repository name' },
  NAME_UNKNOWN: { kind: 'not-found', message: 'repository name not known to registry' },
  SIZE_INVALID: { kind: 'invalid-argument', message: 'provided length did not match content length' },
  TAG_INVALID: { kind: 'invalid-argument', message: 'manifest tag did not match URI' },
  UNAUTHORIZED: { kind: 'unauthorized', message: 'authentication required' },
  DENIED: { kind: 'forbidden', message: 'requested access to the resource is denied' },
  PAGINATION_NUMBER_INVALID: { kind: 'invalid-argument', message: 'invalid number of results requested' },
  TOOMANYREQUESTS: { kind: 'too-many-requests', message: 'too many requests' },
  UNSUPPORTED: { kind: 'invalid-argument', message: 'The operation is unsupported.' },
  UNKNOWN: { kind: 'internal', message: 'unknown error' }
} as const satisfies Record<string, { kind: ErrorKind, message: string }>

export type RegistryCode = keyof typeof REGISTRY_CODES

export interface RegistryErrorOptions {
  detail?: unknown
  /** Overrides the code's message. */
  message?: string
  /** Overrides the code's kind, e.g. 'range' (416) for an out-of-order chunk, 'too-large' (413). */
  kind?: ErrorKind
  cause?: unknown
}

export function registryError (code: RegistryCode, opts: RegistryErrorOptions = {}): EngineError {
  const d = REGISTRY_CODES[code]
  return new EngineError(opts.kind ?? d.kind, opts.message ?? d.message, { code, detail: opts.detail ?? {}, cause: opts.cause })
}

/** Codes for errors that reached the writer without one (a bare kind from a shared helper). */
const CODE_BY_KIND: Partial<Record<ErrorKind, RegistryCode>> = {
  unauthorized: 'UNAUTHORIZED',
  forbidden: 'DENIED',
  'too-large': 'SIZE_INVALID',
  range: 'BLOB_UPLOAD_INVALID'
}

/** The distribution error body: {"errors":[{code,message,detail}]}. */
export function registryErrorBody (err: unknown): { errors: Array<{ code: string, message: string, detail: unknown }> } {
  if (isEngineError(err)) {
    // a request its client gave up in the middle (a body cut short): distribution's ErrorCodeUnknown with the reason
    if (err.kind === 'canceled' && (err.code === undefined || !Object.hasOwn(REGISTRY_CODES, err.code))) {
      return { errors: [{ code: 'UNKNOWN', message: REGISTRY_CODES.UNKNOWN.message, detail: err.message }] }
    }
    // our own codes that are not registry codes (INVALID_TOKEN) go out as their kind's
    const code = (err.code !== undefined && Object.hasOwn(REGISTRY_CODES, err.code) ? err.code : undefined) ?? CODE_BY_KIND[err.kind] ?? (err.kind === 'internal' ? 'UNKNOWN' : 'UNSUPPORTED')
    return { errors: [{ code, message: err.message, detail: err.detail ?? {} }] }
  }
  return { errors: [{ code: 'UNKNOWN', message: 'unknown error', detail: {} }] }
}
