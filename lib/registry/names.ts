// Repository names, tags and digests as the distribution spec defines them; every value taken from a URL passes here
// before it reaches storage. Pure.
import { checkSha256Digest } from '../image/digest.js'
import { registryError } from './codes.js'

const COMPONENT = /^[a-z0-9]+(?:(?:[._]|__|[-]+)[a-z0-9]+)*$/
export const TAG_RE = /^[\w][\w.-]{0,127}$/
/** The Hub's pattern for repository names in a create request (2..255 characters). */
export const HUB_NAME_RE = /^[a-z0-9]+(?:[._-][a-z0-9]+)*$/
export const MAX_NAME_LENGTH = 255
/** The namespace that single-component names live in, as on Docker Hub (`busybox` ≡ `library/busybox`). */
export const DEFAULT_NAMESPACE = 'library'

/** First path components that the Hub API's own routes use; no repository may live there. */
export const RESERVED_NAMESPACES: ReadonlySet<string> = new Set([
  'namespaces', 'repositories', 'auth', 'users', 'orgs', 'access-tokens', 'deprecations', 'token'
])

export interface RepoName {
  /** The name as the client spelled it (for Location headers and challenges). */
  raw: string
  /** Canonical `namespace/repository[/…]`. */
  name: string
  namespace: string
  /** Everything after the namespace (may hold further '/'). */
  repository: string
}

export function isValidComponent (s: string): boolean {
  return s.length <= MAX_NAME_LENGTH && COMPONENT.test(s)
}

/** Validates an OCI repository name; single-component names go to the default namespace. Throws NAME_INVALID. */
export function parseRepoName (raw: string): RepoName {
  const parts = raw.split('/')
  if (raw.length > MAX_NAME_LENGTH || !parts.every((p) => COMPONENT.test(p))) {
    throw registryError('NAME_INVALID', { detail: { name: raw } })
  }
  if (parts.length === 1) parts.unshift(DEFAULT_NAMESPACE)
  const namespace = parts[0] as string
  if (RESERVED_NAMESPACES.has(namespace)) {
    throw registryError('NAME_INVALID', { message: `invalid repository name: namespace ${namespace} is reserved`, detail: { name: raw } })
  }
  const name = parts.join('/')
  if (name.length > MAX_NAME_LENGTH) throw registryError('NAME_INVALID', { detail: { name: raw } })
  return { raw, name, namespace, repository: parts.slice(1).join('/') }
}

/** Throws DIGEST_INVALID unless the value is a sha256 digest (the one algorithm this registry stores). */
export function checkDigest (digest: string): string {
  const check = checkSha256Digest(digest)
  if (!check.ok) {
    const message = check.reason === 'unsupported' ? `unsupported digest algorithm ${check.algorithm}` : 'invalid digest'
    throw registryError('DIGEST_INVALID', { message, detail: { digest } })
  }
  return digest
}

export type ManifestReference = { tag: string, digest?: undefined } | { digest: string, tag?: undefined }

/**
 * A manifest reference is a digest when it holds ':' (tags cannot), else a tag. A PUT names what it stores, so an
 * invalid tag there is TAG_INVALID (400); a GET, HEAD or DELETE by something that cannot be a tag names no manifest,
 * which distribution answers 404 (its routes only match valid references): MANIFEST_UNKNOWN here.
 */
export function parseManifestReference (ref: string, use: 'store' | 'lookup'): ManifestReference {
  if (ref.includes(':')) return { digest: checkDigest(ref) }
  if (!TAG_RE.test(ref)) {
    if (use === 'lookup') throw registryError('MANIFEST_UNKNOWN', { detail: { Tag: ref } })
    throw registryError('TAG_INVALID', { message: 'invalid tag', detail: { tag: ref } })
  }
  return { tag: ref }
}

export function checkTag (tag: string): string {
  if (!TAG_RE.test(tag)) throw registryError('TAG_INVALID', { message: 'invalid tag', detail: { tag } })
  return tag
}
