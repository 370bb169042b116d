// Image manifests and indexes (Docker schema 2, Docker manifest lists, OCI manifests and indexes): the one codec
// behind both the registry (what it accepts on push) and the distribution client (what it accepts from a registry),
// and choosing an index's entry for a platform. Pure; failures are ManifestErrors that each side words its own way.
import { checkSha256Digest, isWellFormedDigest } from './digest.js'
import {
  isImageManifestType, isIndexType, isSchema1Type, MEDIA_DOCKER_LIST, MEDIA_DOCKER_MANIFEST, MEDIA_OCI_INDEX,
  MEDIA_OCI_MANIFEST
} from './media-types.js'
import { platformRank, type Platform } from './platform.js'
import { parseJson } from '../util/json-depth.js'

export type { Platform } from './platform.js'

export interface Descriptor {
  mediaType: string
  digest: string
  size: number
  artifactType?: string
  annotations?: Record<string, string>
  platform?: Platform
  urls?: string[]
}

interface ManifestCommon {
  mediaType: string
  subject?: Descriptor
  /** `artifactType`, or for image manifests the config's media type (the referrers API's rule). */
  artifactType?: string
  annotations?: Record<string, string>
}
export interface ImageManifest extends ManifestCommon { kind: 'manifest', config: Descriptor, layers: Descriptor[] }
export interface ImageIndex extends ManifestCommon { kind: 'index', manifests: Descriptor[] }
export type Manifest = ImageManifest | ImageIndex

/**
 * Why a document was refused: `invalid` (malformed), `schema1` (the retired Docker format), `unsupported-type` (a
 * media type that is no manifest this engine reads; detail.mediaType), `unsupported-digest` (a digest algorithm
 * other than sha256, lenient decoding only; detail.digest).
 */
export type ManifestFault = 'invalid' | 'schema1' | 'unsupported-type' | 'unsupported-digest'

export class ManifestError extends Error {
  readonly fault: ManifestFault
  readonly detail: Record<string, unknown>

  constructor (fault: ManifestFault, message: string, detail: Record<string, unknown> = {}) {
    super(message)
    this.fault = fault
    this.detail = detail
    this.name = 'ManifestError'
  }
}

export function isManifestError (err: unknown): err is ManifestError {
  return err instanceof ManifestError
}

/**
 * `strict`: a registry checking a push (every field typed, the media type agreeing with Content-Type, any digest
 * algorithm in references). Lenient: a client reading what some registry serves (sha256 digests only, the shape
 * decides unknown media types, stray fields ignored).
 */
export interface DecodeOptions { strict: boolean }

/** Content-Type values that say nothing about the manifest's kind. */
const GENERIC_TYPES: ReadonlySet<string> = new Set(['', 'application/json', 'application/octet-stream'])

function invalid (message: string, detail: Record<string, unknown> = {}): ManifestError {
  return new ManifestError('invalid', message, detail)
}

function isObject (v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
}

function stringMap (v: unknown, what: string, strict: boolean): Record<string, string> | undefined {
  if (v === undefined || v === null) return undefined
  if (!isObject(v) || !Object.values(v).every((x) => typeof x === 'string')) {
    if (strict) throw invalid(`${what} must map strings to strings`)
    return isObject(v) ? v as Record<string, string> : undefined
  }
  return v as Record<string, string>
}

function lenientPlatform (p: Record<string, unknown>): Platform {
  const out: Platform = { os: String(p.os ?? ''), architecture: String(p.architecture ?? '') }
  if (typeof p.variant === 'string' && p.variant !== '') out.variant = p.variant
  if (typeof p['os.version'] === 'string') out['os.version'] = p['os.version']
  if (Array.isArray(p['os.features'])) out['os.features'] = p['os.features'].map(String)
  return out
}

function descriptor (v: unknown, what: string, strict: boolean): Descriptor {
  if (!isObject(v)) throw invalid(`${what} must be a descriptor object`)
  const { mediaType, digest, size } = v
  if (strict && (typeof mediaType !== 'string' || mediaType === '')) throw invalid(`${what} has no mediaType`)
  if (typeof digest !== 'string') throw invalid(`${what} has an invalid digest`, { digest })
  if (strict) {
    if (!isWellFormedDigest(digest)) throw invalid(`${what} has an invalid digest`, { digest })
  } else {
    const check = checkSha256Digest(digest)
    if (!check.ok && check.reason === 'unsupported') throw new ManifestError('unsupported-digest', `unsupported digest algorithm: ${digest}`, { digest })
    if (!check.ok) throw invalid(`${what} has an invalid digest`, { digest })
  }
  if (typeof size !== 'number' || !Number.isSafeInteger(size) || size < 0) throw invalid(`${what} has an invalid size`)
  const d: Descriptor = { mediaType: typeof mediaType === 'string' ? mediaType : '', digest, size }
  if (typeof v.artifactType === 'string') d.artifactType = v.artifactType
  else if (strict && v.artifactType !== undefined) throw invalid(`${what}.artifactType must be a string`)
  const annotations = stringMap(v.annotations, `${what}.annotations`, strict)
  if (annotations !== undefined) d.annotations = annotations
  const p = v.platform
  if (strict && p !== undefined) {
    if (!isObject(p) || typeof p.architecture !== 'string' || typeof p.os !== 'string') throw invalid(`${what}.platform needs architecture and os`)
    d.platform = p as unknown as Platform
  } else if (!strict && isObject(p)) {
    d.platform = lenientPlatform(p)
  }
  if (Array.isArray(v.urls) && (!strict || v.urls.every((u) => typeof u === 'string'))) {
    d.urls = v.urls.filter((u): u is string => typeof u === 'string')
  } else if (strict && v.urls !== undefined) {
    throw invalid(`${what}.urls must be strings`)
  }
  return d
}

/** The kind a document's shape says it is, when its media type does not. */
function typeFromShape (doc: Record<string, unknown>, header: string): string {
  if (Array.isArray(doc.manifests)) return header === MEDIA_DOCKER_LIST ? MEDIA_DOCKER_LIST : MEDIA_OCI_INDEX
  if (doc.config !== undefined) return header === MEDIA_DOCKER_MANIFEST ? MEDIA_DOCKER_MANIFEST : MEDIA_OCI_MANIFEST
  return ''
}

/**
 * Decodes manifest bytes. The media type comes from the document, else from `contentType` (the HTTP header),
 * else from the document's shape. Schema 1 and other types are refused.
 */
export function decodeManifest (bytes: Buffer, contentType: string | undefined, opts: DecodeOptions): Manifest {
  const { strict } = opts
  let doc: unknown
  try {
    doc = parseJson(bytes)
  } catch (err) {
    throw invalid(`not JSON: ${(err as Error).message}`)
  }
  if (!isObject(doc)) throw invalid('not a JSON object')
  const header = (contentType ?? '').split(';')[0]?.trim().toLowerCase() ?? ''
  let declared: string | undefined
  if (typeof doc.mediaType === 'string' && (strict || doc.mediaType !== '')) declared = doc.mediaType
  else if (strict && doc.mediaType !== undefined) throw invalid('mediaType must be a string')
  if (doc.schemaVersion === 1 || isSchema1Type(header) || isSchema1Type(declared ?? '')) {
    throw new ManifestError('schema1', 'schema 1 manifests are not supported')
  }
  if (doc.schemaVersion !== 2) throw invalid('schemaVersion must be 2')
  if (strict && declared !== undefined && !GENERIC_TYPES.has(header) && declared !== header) {
    throw invalid(`mediaType ${declared} does not match Content-Type ${header}`)
  }
  const named = declared ?? (GENERIC_TYPES.has(header) ? '' : header)
  let mediaType = named
  if (mediaType === '' || (!strict && !isIndexType(mediaType) && !isImageManifestType(mediaType))) mediaType = typeFromShape(doc, header)
  if (mediaType === '') {
    if (strict || named === '') throw invalid('cannot tell the manifest type: no mediaType, Content-Type, config or manifests')
    throw new ManifestError('unsupported-type', `unsupported manifest media type ${named}`, { mediaType: named })
  }
  const annotations = stringMap(doc.annotations, 'annotations', strict)
  if (strict && doc.artifactType !== undefined && typeof doc.artifactType !== 'string') throw invalid('artifactType must be a string')
  const artifactType = typeof doc.artifactType === 'string' ? doc.artifactType : undefined
  const subject = strict && doc.subject !== undefined ? descriptor(doc.subject, 'subject', strict) : undefined
  let out: Manifest
  if (isImageManifestType(mediaType)) {
    if (strict && doc.manifests !== undefined) throw invalid('an image manifest has no manifests field')
    const config = descriptor(doc.config, 'config', strict)
    if (doc.layers !== undefined && !Array.isArray(doc.layers)) throw invalid('layers must be an array')
    if (!strict && doc.layers === undefined) throw invalid('no layers')
    const layers = ((doc.layers ?? []) as unknown[]).map((l, i) => descriptor(l, `layers[${i}]`, strict))
    out = { kind: 'manifest', mediaType, config, layers, artifactType: artifactType ?? config.mediaType }
  } else if (isIndexType(mediaType)) {
    if (!Array.isArray(doc.manifests)) throw invalid('an index needs a manifests array')
    if (strict && (doc.config !== undefined || doc.layers !== undefined)) throw invalid('an index has no config or layers')
    const manifests = (doc.manifests as unknown[]).map((m, i) => descriptor(m, `manifests[${i}]`, strict))
    out = { kind: 'index', mediaType, manifests }
    if (artifactType !== undefined) out.artifactType = artifactType
  } else {
    throw new ManifestError('unsupported-type', `unsupported manifest media type ${mediaType}`, { mediaType })
  }
  if (subject !== undefined) out.subject = subject
  if (annotations !== undefined) out.annotations = annotations
  return out
}

/** Picks the index entry for a platform: exact variant first, then compatible ones; undefined when none fits. */
export function selectManifest (index: ImageIndex, wanted: Platform): Descriptor | undefined {
  let best: Descriptor | undefined
  let bestRank = Infinity
  for (const m of index.manifests) {
    if (m.platform === undefined) continue
    if (m.mediaType !== '' && !isImageManifestType(m.mediaType)) continue
    const r = platformRank(wanted, m.platform)
    if (r >= 0 && r < bestRank) { best = m; bestRank = r }
  }
  return best
}
