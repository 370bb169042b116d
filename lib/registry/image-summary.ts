// Builds the manifest record the store keeps (and the Hub API shows) from a parsed manifest: references checked
// against the repository, platform and layer history read from the image config.
import { registryError } from './codes.js'
import { isSha256Digest } from '../image/digest.js'
import type { Descriptor, ImageManifest, Manifest } from '../image/manifest.js'
import { isImageConfigType, isNonDistributableLayerType } from '../image/media-types.js'
import type { ImageSummary, ManifestRecord, Repository, RegistryStore } from './storage/registry-store.js'
import { parseJson } from '../util/json-depth.js'
import { isoTime } from '../util/time.js'

const MAX_CONFIG_BYTES = 8 * 1024 * 1024

interface ConfigDoc {
  architecture?: unknown
  os?: unknown
  variant?: unknown
  'os.version'?: unknown
  'os.features'?: unknown
  history?: Array<{ created_by?: unknown, empty_layer?: unknown }>
}

function str (v: unknown): string | null { return typeof v === 'string' && v !== '' ? v : null }
function strs (v: unknown): string[] { return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [] }

/** `/bin/sh -c #(nop)  CMD ["sh"]` → `CMD ["sh"]`, `/bin/sh -c apk add x` → `RUN apk add x`, as the Hub shows them. */
export function instructionOf (createdBy: string): string {
  const nop = /^\/bin\/sh -c #\(nop\)\s*/.exec(createdBy)
  if (nop !== null) return createdBy.slice(nop[0].length).trim()
  if (createdBy.startsWith('/bin/sh -c ')) return `RUN ${createdBy.slice('/bin/sh -c '.length).trim()}`
  return createdBy.trim()
}

async function summarise (store: RegistryStore, repo: Repository, parsed: ImageManifest): Promise<ImageSummary> {
  const layers = parsed.layers.map((l) => ({ digest: l.digest, size: l.size, instruction: '' }))
  const out: ImageSummary = {
    architecture: null, os: null, variant: null, osVersion: null, osFeatures: [], features: [], layers, size: layers.reduce((a, l) => a + l.size, 0)
  }
  const config = parsed.config
  if (!isImageConfigType(config.mediaType) || config.size > MAX_CONFIG_BYTES) return out
  // only through this repository's link, and never more than the cap, whatever the descriptor says
  const bytes = await store.readLinkedBlob(repo, config.digest, MAX_CONFIG_BYTES)
  if (bytes === null) return out
  let doc: ConfigDoc
  try {
    doc = parseJson(bytes) as ConfigDoc
  } catch {
    return out
  }
  if (doc === null || typeof doc !== 'object') return out
  out.architecture = str(doc.architecture)
  out.os = str(doc.os)
  out.variant = str(doc.variant)
  out.osVersion = str(doc['os.version'])
  out.osFeatures = strs(doc['os.features'])
  if (Array.isArray(doc.history)) {
    const real = doc.history.filter((h) => h !== null && typeof h === 'object' && h.empty_layer !== true)
    real.forEach((h, i) => {
      const l = layers[i]
      if (l !== undefined && typeof h.created_by === 'string') l.instruction = instructionOf(h.created_by)
    })
  }
  return out
}

const HTTP_URL = /^https?:\/\/[^/?#\s]+[^#\s]*$/i

/**
 * Checks one descriptor of an image manifest: linked in this repository with its declared size, or, for a
 * non-distributable layer with `urls` (http or https only), a foreign layer clients fetch elsewhere (returns false:
 * no reference kept). `urls` anywhere else is refused, as distribution does.
 */
async function checkReference (store: RegistryStore, repo: Repository, d: Descriptor, isLayer: boolean): Promise<boolean> {
  if (d.urls !== undefined && d.urls.length > 0) {
    if (!isLayer || !isNonDistributableLayerType(d.mediaType)) {
      throw registryError('MANIFEST_INVALID', { message: `manifest invalid: unexpected URL on ${isLayer ? 'layer' : 'config'} ${d.digest} (only non-distributable layers may have urls)`, detail: { digest: d.digest, mediaType: d.mediaType } })
    }
    const bad = d.urls.find((u) => !HTTP_URL.test(u))
    if (bad !== undefined) {
      throw registryError('MANIFEST_INVALID', { message: `manifest invalid: ${JSON.stringify(bad.slice(0, 200))} is not an http or https URL`, detail: { digest: d.digest } })
    }
    return false
  }
  const have = isSha256Digest(d.digest) ? await store.linkedBlobSize(repo, d.digest) : null
  if (have === null) throw registryError('MANIFEST_BLOB_UNKNOWN', { detail: { digest: d.digest } })
  if (have !== d.size) {
    throw registryError('MANIFEST_INVALID', { message: `manifest invalid: ${d.digest} has ${have} bytes, the manifest says ${d.size}`, detail: { digest: d.digest, size: d.size } })
  }
  return true
}

/** Checks that everything the manifest references is in the repository and builds its record. */
export async function buildManifestRecord (
  store: RegistryStore, repo: Repository, parsed: Manifest, digest: string, size: number, pusher: string | null
): Promise<ManifestRecord> {
  const references: ManifestRecord['references'] = []
  const record: ManifestRecord = {
    digest, mediaType: parsed.mediaType, size, kind: parsed.kind === 'manifest' ? 'image' : 'index', pushedAt: isoTime(), pushedBy: pusher, references
  }
  if (parsed.kind === 'manifest') {
    if (await checkReference(store, repo, parsed.config, false)) references.push({ digest: parsed.config.digest, size: parsed.config.size })
    for (const d of parsed.layers) {
      if (await checkReference(store, repo, d, true)) references.push({ digest: d.digest, size: d.size })
    }
    record.image = await summarise(store, repo, parsed)
  } else {
    record.children = []
    for (const m of parsed.manifests) {
      const child = repo.manifests.get(m.digest)
      if (child === undefined) throw registryError('MANIFEST_BLOB_UNKNOWN', { detail: { digest: m.digest } })
      references.push({ digest: m.digest, size: child.size })
      const c: NonNullable<ManifestRecord['children']>[number] = { digest: m.digest, mediaType: m.mediaType }
      if (m.platform !== undefined) {
        c.platform = { architecture: m.platform.architecture, os: m.platform.os }
        if (m.platform.variant !== undefined) c.platform.variant = m.platform.variant
      }
      record.children.push(c)
    }
  }
  if (parsed.artifactType !== undefined) record.artifactType = parsed.artifactType
  if (parsed.subject !== undefined) record.subject = parsed.subject.digest
  if (parsed.annotations !== undefined) record.annotations = parsed.annotations
  return record
}
