// Image manifests and indexes: parsing with validation, platform strings (`os/arch[/variant]`) and choosing the
// manifest for a platform from an index or manifest list. Pure.
import { internal, invalidArgument } from '../errors.js'
import { DIGEST_RE } from '../image/content-store.js'
import { hostArch } from '../image/image-service.js'
import {
  isImageManifestType, isIndexType, isSchema1Type, MEDIA_DOCKER_LIST, MEDIA_DOCKER_MANIFEST, MEDIA_OCI_INDEX,
  MEDIA_OCI_MANIFEST
} from './media-types.js'

export interface Descriptor {
  mediaType: string
  digest: string
  size: number
  urls?: string[]
  annotations?: Record<string, string>
}

export interface Platform {
  os: string
  architecture: string
  variant?: string
  'os.version'?: string
  'os.features'?: string[]
}

export interface PlatformDescriptor extends Descriptor { platform?: Platform }

export interface ImageManifest { kind: 'manifest', mediaType: string, config: Descriptor, layers: Descriptor[] }
export interface ImageIndex { kind: 'index', mediaType: string, manifests: PlatformDescriptor[] }
export type ParsedManifest = ImageManifest | ImageIndex

/** A malformed document from the registry is the registry's fault, not the client's. */
function bad (msg: string): Error {
  return internal(`invalid manifest: ${msg}`)
}

function descriptor (v: unknown, what: string): Descriptor {
  if (v === null || typeof v !== 'object') throw bad(`${what} is not an object`)
  const d = v as Record<string, unknown>
  if (typeof d.digest !== 'string') throw bad(`${what} has no digest`)
  if (!DIGEST_RE.test(d.digest)) {
    if (/^[a-z0-9]+:/.test(d.digest) && !d.digest.startsWith('sha256:')) throw invalidArgument(`unsupported digest algorithm: ${d.digest}`)
    throw bad(`${what} has an invalid digest ${JSON.stringify(d.digest)}`)
  }
  if (typeof d.size !== 'number' || !Number.isSafeInteger(d.size) || d.size < 0) throw bad(`${what} has an invalid size`)
  const out: Descriptor = { mediaType: typeof d.mediaType === 'string' ? d.mediaType : '', digest: d.digest, size: d.size }
  if (Array.isArray(d.urls)) out.urls = d.urls.filter((u): u is string => typeof u === 'string')
  if (d.annotations !== null && typeof d.annotations === 'object') out.annotations = d.annotations as Record<string, string>
  return out
}

/**
 * Parses manifest bytes. The media type comes from the document, else from the response's Content-Type, else from
 * its shape. Schema 1 and unknown types are refused.
 */
export function parseManifest (bytes: Buffer, contentType: string): ParsedManifest {
  let doc: Record<string, unknown>
  try {
    const v = JSON.parse(bytes.toString('utf8')) as unknown
    if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new Error('not an object')
    doc = v as Record<string, unknown>
  } catch (err) {
    throw bad(`not JSON: ${(err as Error).message}`)
  }
  const ct = (contentType.split(';')[0] ?? '').trim().toLowerCase()
  let mediaType = typeof doc.mediaType === 'string' && doc.mediaType !== '' ? doc.mediaType : ct
  if (isSchema1Type(mediaType) || doc.schemaVersion === 1) {
    throw invalidArgument('unsupported manifest format: Docker Image manifest version 2, schema 1 is no longer supported; push the image again with a current client')
  }
  if (!isIndexType(mediaType) && !isImageManifestType(mediaType)) {
    if (Array.isArray(doc.manifests)) mediaType = ct === MEDIA_DOCKER_LIST ? MEDIA_DOCKER_LIST : MEDIA_OCI_INDEX
    else if (doc.config !== undefined && Array.isArray(doc.layers)) mediaType = ct === MEDIA_DOCKER_MANIFEST ? MEDIA_DOCKER_MANIFEST : MEDIA_OCI_MANIFEST
    else throw invalidArgument(`unsupported manifest media type ${JSON.stringify(mediaType)}`)
  }
  if (doc.schemaVersion !== 2) throw bad(`schemaVersion ${JSON.stringify(doc.schemaVersion)}`)
  if (isIndexType(mediaType)) {
    if (!Array.isArray(doc.manifests)) throw bad('index without manifests')
    const manifests = doc.manifests.map((m, i) => {
      const d: PlatformDescriptor = descriptor(m, `manifests[${i}]`)
      const p = (m as Record<string, unknown>).platform
      if (p !== null && typeof p === 'object') {
        const pp = p as Record<string, unknown>
        d.platform = { os: String(pp.os ?? ''), architecture: String(pp.architecture ?? '') }
        if (typeof pp.variant === 'string' && pp.variant !== '') d.platform.variant = pp.variant
        if (typeof pp['os.version'] === 'string') d.platform['os.version'] = pp['os.version']
        if (Array.isArray(pp['os.features'])) d.platform['os.features'] = pp['os.features'].map(String)
      }
      return d
    })
    return { kind: 'index', mediaType, manifests }
  }
  if (!Array.isArray(doc.layers)) throw bad('no layers')
  return {
    kind: 'manifest',
    mediaType,
    config: descriptor(doc.config, 'config'),
    layers: doc.layers.map((l, i) => descriptor(l, `layers[${i}]`))
  }
}

const ARCH_ALIASES: Record<string, string> = {
  x86_64: 'amd64', 'x86-64': 'amd64', aarch64: 'arm64', i386: '386', i686: '386', armhf: 'arm', armel: 'arm'
}

/** The platform this engine runs containers for. */
export function hostPlatform (): Platform {
  const architecture = hostArch()
  const p: Platform = { os: 'linux', architecture }
  if (architecture === 'arm') {
    const v = (process.config.variables as unknown as Record<string, unknown>).arm_version
    p.variant = `v${typeof v === 'string' || typeof v === 'number' ? v : '7'}`
  }
  return p
}

/** `os[/arch[/variant]]` or `arch` as clients send it (containerd's platforms.Parse, simplified). */
export function parsePlatform (spec: string): Platform {
  const parts = spec.trim().toLowerCase().split('/')
  if (parts.some((p) => p === '' || !/^[a-z0-9._-]+$/.test(p)) || parts.length > 3) {
    throw invalidArgument(`"${spec}": unknown operating system or architecture: invalid argument`)
  }
  const host = hostPlatform()
  const normArch = (a: string, variant?: string): { architecture: string, variant?: string } => {
    const arch = ARCH_ALIASES[a] ?? a
    let v = variant
    if (a === 'armhf') v ??= 'v7'
    if (a === 'armel') v ??= 'v6'
    if (arch === 'arm64' && v === 'v8') v = undefined
    return v === undefined ? { architecture: arch } : { architecture: arch, variant: v }
  }
  if (parts.length === 1) {
    const one = parts[0] as string
    if (['linux', 'windows', 'darwin', 'freebsd'].includes(one)) return { os: one, architecture: host.architecture, ...(host.variant !== undefined ? { variant: host.variant } : {}) }
    return { os: host.os, ...normArch(one) }
  }
  return { os: parts[0] as string, ...normArch(parts[1] as string, parts[2]) }
}

export function formatPlatform (p: Platform): string {
  return [p.os, p.architecture, p.variant].filter((x) => x !== undefined && x !== '').join('/')
}

function variantRank (wanted: Platform, have: Platform): number {
  const hv = have.architecture === 'arm64' && have.variant === 'v8' ? undefined : have.variant
  if (wanted.variant === hv) return 0
  if (wanted.variant === undefined) return 1
  // arm: an older variant still runs on a newer CPU (v7 runs v6, v5)
  if (wanted.architecture === 'arm' && hv !== undefined && /^v\d$/.test(hv) && /^v\d$/.test(wanted.variant)) {
    const diff = Number(wanted.variant.slice(1)) - Number(hv.slice(1))
    if (diff > 0) return 1 + diff
  }
  return -1
}

/** Picks the index entry for a platform: exact variant first, then compatible ones; undefined when none fits. */
export function selectManifest (index: ImageIndex, wanted: Platform): PlatformDescriptor | undefined {
  let best: PlatformDescriptor | undefined
  let bestRank = Infinity
  for (const m of index.manifests) {
    const p = m.platform
    if (p === undefined || p.os !== wanted.os || (ARCH_ALIASES[p.architecture] ?? p.architecture) !== wanted.architecture) continue
    if (m.mediaType !== '' && !isImageManifestType(m.mediaType)) continue
    const r = variantRank(wanted, p)
    if (r >= 0 && r < bestRank) { best = m; bestRank = r }
  }
  return best
}

/** True when an image config's platform fits the wanted one (used for single-manifest pulls with `platform=`). */
export function configMatches (config: { os?: string, architecture?: string, variant?: string }, wanted: Platform): boolean {
  if ((config.os ?? 'linux') !== wanted.os) return false
  if ((ARCH_ALIASES[config.architecture ?? ''] ?? config.architecture) !== wanted.architecture) return false
  return variantRank(wanted, { os: config.os ?? 'linux', architecture: config.architecture ?? '', ...(config.variant !== undefined ? { variant: config.variant } : {}) }) >= 0
}
