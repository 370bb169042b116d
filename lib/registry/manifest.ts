// Manifest parsing and validation (pure): Docker schema 2, Docker manifest lists, OCI image manifests and indexes.
import { registryError } from './codes.js'
import { SHA256_RE } from './names.js'

export const MEDIA_TYPE = {
  OCI_MANIFEST: 'application/vnd.oci.image.manifest.v1+json',
  OCI_INDEX: 'application/vnd.oci.image.index.v1+json',
  DOCKER_MANIFEST: 'application/vnd.docker.distribution.manifest.v2+json',
  DOCKER_LIST: 'application/vnd.docker.distribution.manifest.list.v2+json',
  DOCKER_SCHEMA1: 'application/vnd.docker.distribution.manifest.v1+json',
  DOCKER_SCHEMA1_SIGNED: 'application/vnd.docker.distribution.manifest.v1+prettyjws',
  OCI_CONFIG: 'application/vnd.oci.image.config.v1+json',
  DOCKER_CONFIG: 'application/vnd.docker.container.image.v1+json'
} as const

const IMAGE_TYPES: ReadonlySet<string> = new Set([MEDIA_TYPE.OCI_MANIFEST, MEDIA_TYPE.DOCKER_MANIFEST])
const INDEX_TYPES: ReadonlySet<string> = new Set([MEDIA_TYPE.OCI_INDEX, MEDIA_TYPE.DOCKER_LIST])
export const IMAGE_CONFIG_TYPES: ReadonlySet<string> = new Set([MEDIA_TYPE.OCI_CONFIG, MEDIA_TYPE.DOCKER_CONFIG])
/** Content-Type values that say nothing about the manifest's kind. */
const GENERIC_TYPES: ReadonlySet<string> = new Set(['', 'application/json', 'application/octet-stream'])

export interface Platform {
  architecture: string
  os: string
  variant?: string
  'os.version'?: string
  'os.features'?: string[]
  features?: string[]
}

export interface Descriptor {
  mediaType: string
  digest: string
  size: number
  artifactType?: string
  annotations?: Record<string, string>
  platform?: Platform
  urls?: string[]
}

export interface ParsedManifest {
  kind: 'image' | 'index'
  mediaType: string
  /** Image manifests: the config. */
  config?: Descriptor
  /** Image manifests: the layers (possibly none). */
  layers: Descriptor[]
  /** Indexes: the child manifests. */
  manifests: Descriptor[]
  subject?: Descriptor
  /** `artifactType`, or for image manifests the config's media type (referrers API rule). */
  artifactType?: string
  annotations?: Record<string, string>
}

function invalid (message: string, detail: unknown = {}): Error {
  return registryError('MANIFEST_INVALID', { message: `manifest invalid: ${message}`, detail })
}

function isObject (v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
}

function stringMap (v: unknown, what: string): Record<string, string> | undefined {
  if (v === undefined) return undefined
  if (!isObject(v) || !Object.values(v).every((x) => typeof x === 'string')) throw invalid(`${what} must map strings to strings`)
  return v as Record<string, string>
}

function parseDescriptor (v: unknown, what: string): Descriptor {
  if (!isObject(v)) throw invalid(`${what} must be a descriptor object`)
  const { mediaType, digest, size } = v
  if (typeof mediaType !== 'string' || mediaType === '') throw invalid(`${what} has no mediaType`)
  if (typeof digest !== 'string' || !/^[a-z0-9]+(?:[.+_-][a-z0-9]+)*:[a-zA-Z0-9=_-]+$/.test(digest)) throw invalid(`${what} has an invalid digest`, { digest })
  if (digest.startsWith('sha256:') && !SHA256_RE.test(digest)) throw invalid(`${what} has an invalid digest`, { digest })
  if (typeof size !== 'number' || !Number.isSafeInteger(size) || size < 0) throw invalid(`${what} has an invalid size`)
  const d: Descriptor = { mediaType, digest, size }
  if (v.artifactType !== undefined) {
    if (typeof v.artifactType !== 'string') throw invalid(`${what}.artifactType must be a string`)
    d.artifactType = v.artifactType
  }
  const annotations = stringMap(v.annotations, `${what}.annotations`)
  if (annotations !== undefined) d.annotations = annotations
  if (v.platform !== undefined) {
    const p = v.platform
    if (!isObject(p) || typeof p.architecture !== 'string' || typeof p.os !== 'string') throw invalid(`${what}.platform needs architecture and os`)
    d.platform = p as unknown as Platform
  }
  if (v.urls !== undefined) {
    if (!Array.isArray(v.urls) || !v.urls.every((u) => typeof u === 'string')) throw invalid(`${what}.urls must be strings`)
    d.urls = v.urls as string[]
  }
  return d
}

/** True for digests this registry can hold (sha256); others can only be foreign references. */
export function isStorableDigest (digest: string): boolean { return SHA256_RE.test(digest) }

/** Parses and checks a manifest body; `contentType` is the request's Content-Type header. */
export function parseManifest (body: Buffer, contentType: string | undefined): ParsedManifest {
  let doc: unknown
  try {
    doc = JSON.parse(body.toString('utf8'))
  } catch (err) {
    throw invalid(`not JSON: ${(err as Error).message}`)
  }
  if (!isObject(doc)) throw invalid('not a JSON object')
  const header = (contentType ?? '').split(';')[0]?.trim().toLowerCase() ?? ''
  if (doc.schemaVersion === 1 || header === MEDIA_TYPE.DOCKER_SCHEMA1 || header === MEDIA_TYPE.DOCKER_SCHEMA1_SIGNED) {
    throw registryError('MANIFEST_INVALID', { message: 'manifest invalid: schema 1 manifests are not supported; push with schema 2 or OCI', detail: {} })
  }
  if (doc.schemaVersion !== 2) throw invalid('schemaVersion must be 2')
  const declared = doc.mediaType
  if (declared !== undefined && typeof declared !== 'string') throw invalid('mediaType must be a string')
  if (declared !== undefined && !GENERIC_TYPES.has(header) && declared !== header) {
    throw invalid(`mediaType ${declared} does not match Content-Type ${header}`)
  }
  let mediaType = declared ?? (GENERIC_TYPES.has(header) ? '' : header)
  if (mediaType === '') {
    if (Array.isArray(doc.manifests)) mediaType = MEDIA_TYPE.OCI_INDEX
    else if (doc.config !== undefined) mediaType = MEDIA_TYPE.OCI_MANIFEST
    else throw invalid('cannot tell the manifest type: no mediaType, Content-Type, config or manifests')
  }
  const annotations = stringMap(doc.annotations, 'annotations')
  if (doc.artifactType !== undefined && typeof doc.artifactType !== 'string') throw invalid('artifactType must be a string')
  const subject = doc.subject === undefined ? undefined : parseDescriptor(doc.subject, 'subject')
  let out: ParsedManifest
  if (IMAGE_TYPES.has(mediaType)) {
    if (doc.manifests !== undefined) throw invalid('an image manifest has no manifests field')
    const config = parseDescriptor(doc.config, 'config')
    if (doc.layers !== undefined && !Array.isArray(doc.layers)) throw invalid('layers must be an array')
    const layers = ((doc.layers ?? []) as unknown[]).map((l, i) => parseDescriptor(l, `layers[${i}]`))
    out = { kind: 'image', mediaType, config, layers, manifests: [] }
    const artifactType = (doc.artifactType as string | undefined) ?? config.mediaType
    out.artifactType = artifactType
  } else if (INDEX_TYPES.has(mediaType)) {
    if (!Array.isArray(doc.manifests)) throw invalid('an index needs a manifests array')
    if (doc.config !== undefined || doc.layers !== undefined) throw invalid('an index has no config or layers')
    const manifests = (doc.manifests as unknown[]).map((m, i) => parseDescriptor(m, `manifests[${i}]`))
    out = { kind: 'index', mediaType, layers: [], manifests }
    if (typeof doc.artifactType === 'string') out.artifactType = doc.artifactType
  } else {
    throw invalid(`unsupported manifest media type ${mediaType}`, { mediaType })
  }
  if (subject !== undefined) out.subject = subject
  if (annotations !== undefined) out.annotations = annotations
  return out
}
