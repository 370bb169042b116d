// One error class for every surface of Berth, one table from kind to HTTP status.
// Errors are classified where they start (stores, runtime, parsers); routes never pick a status.

export const ERROR_KINDS = [
  'invalid-argument', 'not-found', 'conflict', 'unauthorized', 'forbidden', 'not-modified',
  'not-implemented', 'unavailable', 'canceled', 'gone', 'range', 'too-large', 'too-many-requests', 'timeout', 'internal'
] as const
export type ErrorKind = typeof ERROR_KINDS[number]

export const STATUS_BY_KIND: Readonly<Record<ErrorKind, number>> = {
  'invalid-argument': 400,
  unauthorized: 401,
  forbidden: 403,
  'not-found': 404,
  conflict: 409,
  gone: 410,
  'too-large': 413,
  range: 416,
  'too-many-requests': 429,
  timeout: 408,
  'not-modified': 304,
  'not-implemented': 501,
  unavailable: 503,
  canceled: 499,
  internal: 500
}

const BRAND = Symbol.for('berth.error')

export interface EngineErrorOptions {
  cause?: unknown
  /** A protocol-specific code, e.g. a registry error code such as BLOB_UNKNOWN. */
  code?: string
  detail?: unknown
}

export class EngineError extends Error {
  readonly kind: ErrorKind
  readonly code: string | undefined
  readonly detail: unknown
  constructor (kind: ErrorKind, message: string, opts: EngineErrorOptions = {}) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause })
    this.name = 'EngineError'
    this.kind = kind
    this.code = opts.code
    this.detail = opts.detail
    Object.defineProperty(this, BRAND, { value: true })
  }

  get status (): number { return STATUS_BY_KIND[this.kind] }
}

/** True for errors made by any copy of this package (brand check, not instanceof). */
export function isEngineError (err: unknown): err is EngineError {
  return typeof err === 'object' && err !== null && (err as Record<symbol, unknown>)[BRAND] === true
}

export function statusOf (err: unknown): number {
  return isEngineError(err) ? err.status : 500
}

export const invalidArgument = (msg: string, opts?: EngineErrorOptions): EngineError => new EngineError('invalid-argument', msg, opts)
export const notFound = (msg: string, opts?: EngineErrorOptions): EngineError => new EngineError('not-found', msg, opts)
export const conflict = (msg: string, opts?: EngineErrorOptions): EngineError => new EngineError('conflict', msg, opts)
export const notModified = (msg: string): EngineError => new EngineError('not-modified', msg)
export const unauthorized = (msg: string, opts?: EngineErrorOptions): EngineError => new EngineError('unauthorized', msg, opts)
export const forbidden = (msg: string, opts?: EngineErrorOptions): EngineError => new EngineError('forbidden', msg, opts)
export const unavailable = (msg: string, opts?: EngineErrorOptions): EngineError => new EngineError('unavailable', msg, opts)
export const notImplemented = (msg: string): EngineError => new EngineError('not-implemented', msg)
export const internal = (msg: string, opts?: EngineErrorOptions): EngineError => new EngineError('internal', msg, opts)
export const tooLarge = (msg: string, opts?: EngineErrorOptions): EngineError => new EngineError('too-large', msg, opts)

/** Node fs errno → kind, for stores that translate at their boundary. */
export function fromErrno (err: unknown, message: string): EngineError {
  const code = (err as NodeJS.ErrnoException | undefined)?.code
  switch (code) {
    case 'ENOENT': case 'ENOTDIR': return notFound(message, { cause: err })
    case 'EEXIST': case 'ENOTEMPTY': case 'EBUSY': return conflict(message, { cause: err })
    case 'EACCES': case 'EPERM': return forbidden(message, { cause: err })
    case 'EINVAL': case 'EISDIR': return invalidArgument(message, { cause: err })
    default: return internal(message, { cause: err })
  }
}

export function errorMessage (err: unknown): string {
  return err instanceof Error ? err.message : String(err)
}

/** An error's message with its causes (each once: a cause already quoted in the message is not repeated), for logs. */
export function describeError (err: unknown): string {
  let text = errorMessage(err)
  let cause = err instanceof Error ? err.cause : undefined
  for (let depth = 0; cause !== undefined && cause !== null && depth < 5; depth++) {
    const m = errorMessage(cause)
    if (m !== '' && !text.includes(m)) text += `: caused by: ${m}`
    cause = cause instanceof Error ? cause.cause : undefined
  }
  return text
}
