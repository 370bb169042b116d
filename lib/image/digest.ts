// Content digests (`algorithm:encoded`, the OCI image spec's grammar): the one parser every floor uses. Pure.
import { invalidArgument, isEngineError, type EngineError } from '../errors.js'

/** A sha256 digest, the one algorithm this engine and its registry store. */
export const SHA256_DIGEST_RE = /^sha256:[0-9a-f]{64}$/
const DIGEST_GRAMMAR = /^[a-z0-9]+(?:[.+_-][a-z0-9]+)*:[a-zA-Z0-9=_-]+$/

export type DigestCheck =
  | { ok: true, digest: string }
  /** `unsupported`: well formed, but another algorithm than sha256; `invalid`: not a digest at all. */
  | { ok: false, reason: 'invalid' | 'unsupported', algorithm: string }

export function isSha256Digest (s: string): boolean {
  return SHA256_DIGEST_RE.test(s)
}

/** True for any well-formed digest, whatever its algorithm (a sha256 one must also be well formed). */
export function isWellFormedDigest (s: string): boolean {
  return DIGEST_GRAMMAR.test(s) && (!s.startsWith('sha256:') || SHA256_DIGEST_RE.test(s))
}

/** Checks a digest this engine can store: sha256 only; tells a foreign algorithm from garbage. */
export function checkSha256Digest (s: string): DigestCheck {
  if (SHA256_DIGEST_RE.test(s)) return { ok: true, digest: s }
  const algorithm = s.slice(0, Math.max(0, s.indexOf(':')))
  if (DIGEST_GRAMMAR.test(s) && algorithm !== 'sha256') return { ok: false, reason: 'unsupported', algorithm }
  return { ok: false, reason: 'invalid', algorithm }
}

/** The code of content that is not what its digest promised (the registry's word for it, OCI's DIGEST_INVALID). */
export const DIGEST_MISMATCH = 'DIGEST_INVALID'

/** Content whose digest is not the one expected: invalid-argument with the code callers match on. */
export function digestMismatch (expected: string, got: string): EngineError {
  return invalidArgument(`digest mismatch: expected ${expected}, got ${got}`, { code: DIGEST_MISMATCH })
}

export function isDigestMismatch (err: unknown): boolean {
  return isEngineError(err) && err.code === DIGEST_MISMATCH
}
