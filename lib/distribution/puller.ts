// POST /images/create?fromImage=…: dockerd's pull, record for record. The reference is checked, the registry
// reached and the manifest fetched before anything is written, so those failures get real statuses (400, 401, 404).
// Then: `Pulling from`, per layer `Already exists` or `Pulling fs layer` → `Waiting` → `Downloading` → `Verifying
// Checksum` → `Download complete` → `Extracting` → `Pull complete` (in layer order), `Digest:`, `Status:`. The image
// is stored, tagged and given its RepoDigest before the last record goes out.
import { EngineError, forbidden, internal, invalidArgument } from '../errors.js'
import { isSha256Digest } from '../image/digest.js'
import { chainIds } from '../image/layer-store.js'
import { familiarName, familiarString, parseReference, type Reference } from '../image/reference.js'
import type { ImageConfigBlob, ImageRecord } from '../image/types.js'
import type { AuthConfig } from './auth-config.js'
import type { Distribution } from './distribution.js'
import type { DownloadEvent } from './layer-fetch.js'
import { unpackStored } from './layer-fetch.js'
import { parseManifest } from './manifest.js'
import { selectManifest, type ImageManifest } from '../image/manifest.js'
import { configMatches, formatPlatform, hostPlatform, parsePlatform, type Platform } from '../image/platform.js'
import { humanSize, type ProgressStream } from './progress.js'
import type { FetchedManifest, RegistryClient } from './registry-client.js'
import { translatePullError } from './registry-error.js'
import { parseJson } from '../util/json-depth.js'
import { levelLogger } from '../log.js'

const ops = levelLogger('engine:distribution')

export interface PullRequest {
  fromImage: string
  tag: string
  platform: string
  auth: AuthConfig
  signal: AbortSignal
}

const MAX_CONFIG_SIZE = 16 * 1024 * 1024
const DIGEST_LIKE = /^[a-z0-9]+(?:[.+_-][a-z0-9]+)*:[a-zA-Z0-9=_-]{32,}$/

/** fromImage + tag as dockerd combines them: a trailing `:` dropped, `tag` may be a digest and replaces a tag. */
export function pullReference (fromImage: string, tag: string): Reference {
  const image = fromImage.replace(/:$/, '')
  const r = parseReference(image)
  if (tag === '') return r
  if (DIGEST_LIKE.test(tag)) return parseReference(`${r.domain}/${r.path}@${tag}`)
  return parseReference(`${r.domain}/${r.path}:${tag}${r.digest !== undefined ? `@${r.digest}` : ''}`)
}

function shortId (digest: string): string {
  return digest.slice('sha256:'.length, 'sha256:'.length + 12)
}

function renderEvent (out: ProgressStream, id: string, e: DownloadEvent): void {
  switch (e.kind) {
    case 'waiting': out.update(id, 'Waiting'); break
    case 'downloading': out.progress(id, 'Downloading', e.current, e.total); break
    case 'retrying': out.update(id, `Retrying in ${e.seconds} second${e.seconds === 1 ? '' : 's'}`); break
    case 'verifying': out.update(id, 'Verifying Checksum'); break
    case 'complete': out.update(id, 'Download complete'); break
  }
}

function parseConfig (bytes: Buffer, manifest: ImageManifest): ImageConfigBlob {
  let config: ImageConfigBlob
  try {
    config = parseJson(bytes) as ImageConfigBlob
  } catch (err) {
    throw internal(`invalid image config ${manifest.config.digest}: ${(err as Error).message}`)
  }
  const ids = config?.rootfs?.diff_ids
  if (!Array.isArray(ids) || ids.some((d) => typeof d !== 'string' || !isSha256Digest(d))) {
    throw internal(`invalid image config ${manifest.config.digest}: rootfs.diff_ids must list sha256 digests`)
  }
  if (ids.length !== manifest.layers.length) throw internal("layers from manifest don't match image configuration")
  return config
}

export async function pullImage (d: Distribution, req: PullRequest, out: ProgressStream): Promise<void> {
  const ref = pullReference(req.fromImage, req.tag)
  if (familiarName(ref) === 'scratch') throw forbidden("'scratch' is a reserved name")
  const wanted = req.platform !== '' ? parsePlatform(req.platform) : null
  const candidates = d.pullClients(ref.domain, ref.path, req.auth, req.signal)
  for (let i = 0; i < candidates.length; i++) {
    const { client, mirror } = candidates[i] as { client: RegistryClient, mirror: string | null }
    // a mirror that fails before anything is pulled from it (unreachable, no such image) hands over to the next
    // source, as dockerd falls back from mirrors to Docker Hub
    let tags: string[] | null = null
    let top: FetchedManifest | undefined
    try {
      await client.connect()
      if (ref.tag === undefined && ref.digest === undefined) tags = await listTags(client, ref)
      else top = await fetchManifest(client, ref, ref.digest ?? ref.tag as string)
    } catch (err) {
      if (mirror === null || req.signal.aborted) throw err
      ops.warn('pull %s: mirror %s failed (%s); trying the next source', familiarString(ref), mirror, (err as Error).message)
      continue
    }
    if (mirror !== null) ops.info('pull %s: from mirror %s', familiarString(ref), mirror)
    if (tags !== null) {
      // no tag: every tag of the repository (docker pull -a)
      let updated = false
      for (const tag of tags) {
        if (await pullTag(d, client, { ...ref, tag }, wanted, out, req.signal)) updated = true
      }
      out.message(`Status: ${updated ? 'Downloaded newer image for' : 'Image is up to date for'} ${familiarName(ref)}`)
      return
    }
    const updated = await pullTag(d, client, ref, wanted, out, req.signal, top)
    out.message(`Status: ${updated ? 'Downloaded newer image for' : 'Image is up to date for'} ${familiarString(ref)}`)
    return
  }
}

async function listTags (client: RegistryClient, ref: Reference): Promise<string[]> {
  let tags: string[]
  try {
    tags = await client.tags()
  } catch (err) {
    throw translatePullError(err, familiarName(ref), familiarName(ref))
  }
  if (tags.length === 0) throw new EngineError('not-found', `no tags available for ${familiarName(ref)}`)
  return tags
}

async function fetchManifest (client: RegistryClient, ref: Reference, reference: string): Promise<FetchedManifest> {
  try {
    return await client.getManifest(reference)
  } catch (err) {
    throw translatePullError(err, familiarName(ref), familiarString(ref))
  }
}

/** Pulls one tag or digest; returns whether the reference changed (a new image, or a tag or digest newly set). */
async function pullTag (d: Distribution, client: RegistryClient, ref: Reference, wanted: Platform | null, out: ProgressStream, signal: AbortSignal, fetched?: FetchedManifest): Promise<boolean> {
  const tagOrDigest = ref.digest ?? ref.tag as string
  const top = fetched ?? await fetchManifest(client, ref, tagOrDigest)
  const parsedTop = parseManifest(top.bytes, top.contentType)
  out.message(`Pulling from ${ref.path}`, tagOrDigest)
  let manifest: ImageManifest
  if (parsedTop.kind === 'index') {
    const want = wanted ?? hostPlatform()
    const entry = selectManifest(parsedTop, want)
    if (entry === undefined) throw new EngineError('not-found', `no matching manifest for ${formatPlatform(want)} in the manifest list entries`)
    const m = parseManifest((await fetchManifest(client, ref, entry.digest)).bytes, entry.mediaType)
    if (m.kind !== 'manifest') throw internal(`manifest ${entry.digest} in the index of ${familiarString(ref)} is itself an index`)
    manifest = m
  } else {
    manifest = parsedTop
  }

  const stats = { downloaded: 0 }
  let img = d.images.store.byId(manifest.config.digest)
  const known = img !== undefined
  if (img === undefined) img = await pullLayers(d, client, ref, manifest, parsedTop.kind === 'manifest' ? wanted : null, out, signal, stats)

  let updated = false
  if (ref.tag !== undefined) {
    const tagRef = familiarString({ domain: ref.domain, path: ref.path, tag: ref.tag })
    if (!img.repoTags.includes(tagRef)) {
      await d.images.tagRef(img, tagRef)
      updated = true
    }
  }
  const digestRef = `${familiarName(ref)}@${top.digest}`
  if (!img.repoDigests.includes(digestRef)) {
    await d.images.store.addDigest(img, digestRef)
    if (ref.tag === undefined) updated = true
  }
  out.message(`Digest: ${top.digest}`)
  const name = familiarString(ref)
  const total = manifest.layers.reduce((a, l) => a + l.size, 0)
  ops.info('pulled %s (%s) from %s: %d layers, %s compressed, %s downloaded%s', name, top.digest, client.base.origin, manifest.layers.length,
    humanSize(total), humanSize(stats.downloaded), known ? ', image already here' : '')
  d.events.emit('image', 'pull', name, { name })
  return updated
}

async function pullLayers (d: Distribution, client: RegistryClient, ref: Reference, manifest: ImageManifest, wanted: Platform | null, out: ProgressStream, signal: AbortSignal, stats: { downloaded: number }): Promise<ImageRecord> {
  // inside the collector's gate: the layers found here stay until the image that uses them is registered
  return await d.images.gate.within(async () => await pullLayersWithin(d, client, ref, manifest, wanted, out, signal, stats))
}

async function pullLayersWithin (d: Distribution, client: RegistryClient, ref: Reference, manifest: ImageManifest, wanted: Platform | null, out: ProgressStream, signal: AbortSignal, stats: { downloaded: number }): Promise<ImageRecord> {
  const configBytes = await client.blobBuffer(manifest.config.digest, MAX_CONFIG_SIZE, signal)
  const config = parseConfig(configBytes, manifest)
  if (wanted !== null && !configMatches(config, wanted)) {
    const actual = formatPlatform({ os: config.os ?? 'linux', architecture: config.architecture ?? 'unknown', ...(config.variant !== undefined ? { variant: config.variant } : {}) })
    throw new EngineError('not-found', `image with reference ${familiarString(ref)} was found but does not match the specified platform: wanted ${formatPlatform(wanted)}, actual: ${actual}`)
  }
  const diffIds = config.rootfs.diff_ids
  const chains = chainIds(diffIds)
  const { layers, content } = d.images
  const repoKey = `${ref.domain}/${ref.path}`
  type State = 'exists' | 'stored' | 'download'
  const states: State[] = []
  // claimed before looking, so a failing pull elsewhere does not remove a layer this one counts on
  d.want(chains)
  for (let i = 0; i < manifest.layers.length; i++) {
    const id = shortId((manifest.layers[i] as { digest: string }).digest)
    if (await layers.has(chains[i] as string)) {
      states.push('exists')
      out.update(id, 'Already exists')
    } else {
      states.push(await content.has(diffIds[i] as string) ? 'stored' : 'download')
      out.update(id, 'Pulling fs layer')
    }
  }
  const mine = chains.filter((_c, i) => states[i] !== 'exists')
  const ac = new AbortController()
  const stop = (): void => { ac.abort(signal.reason) }
  signal.addEventListener('abort', stop, { once: true })
  const downloads = manifest.layers.map((desc, i) => {
    if (states[i] !== 'download') return null
    const id = shortId(desc.digest)
    const p = d.downloadLayer({
      client,
      desc,
      diffId: diffIds[i] as string,
      chainId: chains[i] as string,
      parentChain: i === 0 ? '' : chains[i - 1] as string
    }, (e) => { renderEvent(out, id, e) }, ac.signal, repoKey)
    p.catch(() => { /* awaited below, in layer order */ })
    return p
  })
  let ok = false
  try {
    for (let i = 0; i < manifest.layers.length; i++) {
      const desc = manifest.layers[i] as { digest: string, size: number }
      const id = shortId(desc.digest)
      if (states[i] === 'download') {
        await downloads[i]
        stats.downloaded += desc.size
        // the tar was unpacked as it arrived; the layer is registered now, in order, as dockerd reports it
        out.progress(id, 'Extracting', desc.size, desc.size)
        out.update(id, 'Pull complete')
      } else if (states[i] === 'stored') {
        await unpackStored(d.images, diffIds[i] as string, chains[i] as string, i === 0 ? '' : chains[i - 1] as string, (c, t) => { out.progress(id, 'Extracting', c, t) })
        out.update(id, 'Pull complete')
      }
    }
    await content.put(configBytes, manifest.config.digest)
    const img = await d.images.store.add(manifest.config.digest, config, '', await d.images.layerSizesOf(config))
    ok = true
    return img
  } finally {
    signal.removeEventListener('abort', stop)
    if (!ok) {
      ac.abort(signal.aborted ? signal.reason : invalidArgument('pull failed'))
      await Promise.allSettled(downloads)
    }
    d.unwant(chains)
    if (!ok) await d.releaseChains(mine)
  }
}
