// GET /distribution/{name}/json: what the registry holds under a reference, without pulling it — the descriptor of
// the manifest (or index) and the platforms it serves (from the index, or from the image config).
import { internal } from '../errors.js'
import { familiarName, familiarString, parseReference, withDefaultTag } from '../image/reference.js'
import type { AuthConfig } from './auth-config.js'
import type { Distribution } from './distribution.js'
import { parseManifest } from './manifest.js'
import type { Platform } from '../image/platform.js'
import { translatePullError } from './registry-error.js'
import { parseJson } from '../util/json-depth.js'

export interface DistributionInspect {
  Descriptor: { mediaType: string, digest: string, size: number }
  Platforms: Array<Record<string, unknown>>
}

function wirePlatform (p: Platform): Record<string, unknown> {
  const out: Record<string, unknown> = { architecture: p.architecture, os: p.os }
  if (p['os.version'] !== undefined) out['os.version'] = p['os.version']
  if (p['os.features'] !== undefined) out['os.features'] = p['os.features']
  if (p.variant !== undefined) out.variant = p.variant
  return out
}

export async function inspectRemote (d: Distribution, name: string, auth: AuthConfig, signal?: AbortSignal): Promise<DistributionInspect> {
  const ref = withDefaultTag(parseReference(name))
  const client = d.client(ref.domain, ref.path, auth, ['pull'], signal)
  await client.connect()
  let fetched
  try {
    fetched = await client.getManifest(ref.digest ?? ref.tag as string)
  } catch (err) {
    throw translatePullError(err, familiarName(ref), familiarString(ref))
  }
  const m = parseManifest(fetched.bytes, fetched.contentType)
  const Descriptor = { mediaType: m.mediaType, digest: fetched.digest, size: fetched.bytes.length }
  if (m.kind === 'index') {
    return { Descriptor, Platforms: m.manifests.filter((e) => e.platform !== undefined).map((e) => wirePlatform(e.platform as Platform)) }
  }
  const raw = await client.blobBuffer(m.config.digest, 16 * 1024 * 1024, signal)
  let config: { os?: string, architecture?: string, variant?: string, 'os.version'?: string }
  try {
    config = parseJson(raw) as typeof config
  } catch {
    throw internal(`invalid image config ${m.config.digest}`)
  }
  const p: Platform = { os: config.os ?? 'linux', architecture: config.architecture ?? '' }
  if (config.variant !== undefined && config.variant !== '') p.variant = config.variant
  if (config['os.version'] !== undefined) p['os.version'] = config['os.version']
  return { Descriptor, Platforms: [wirePlatform(p)] }
}
