// POST /images/{name}/push?tag=…: dockerd's push, record for record. The local tags are found and the registry
// reached and authenticated before anything is written (an auth failure is a real 401, so the CLI can ask for
// credentials and retry). Then: `The push refers to repository [host/path]`, per layer (top first) `Preparing`,
// `Waiting`, and `Layer already exists` (the registry has a blob this layer is known as), `Mounted from <repo>`
// (a cross-repository mount from where it was pulled or pushed before), or `Pushing` → `Pushed` (gzip-compressed
// from the stored tar, in PATCH chunks; small blobs in one PUT); the config; the manifest; then
// `<tag>: digest: … size: …` and the aux record {Tag, Digest, Size}.
import { createHash } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import { pipeline } from 'node:stream/promises'
import { AdaptiveGzip } from '../stream/adaptive-gzip.js'
import { EngineError, invalidArgument, notFound } from '../errors.js'
import { familiarName, familiarString, parseReference, type Reference } from '../image/reference.js'
import type { ImageRecord } from '../image/types.js'
import { levelLogger, logger } from '../log.js'
import { hasCredentials, type AuthConfig } from './auth-config.js'
import type { BlobSource } from './blob-sources.js'
import type { Distribution } from './distribution.js'
import { TransportError } from './http-client.js'
import { dockerLayerType, layerCompression, MEDIA_DOCKER_CONFIG, MEDIA_DOCKER_LAYER_GZIP, MEDIA_DOCKER_MANIFEST } from '../image/media-types.js'
import { humanSize, progressCounter, type ProgressStream } from './progress.js'
import type { RegistryClient } from './registry-client.js'
import { isRegistryError } from './registry-error.js'

const log = logger('engine:distribution')
const ops = levelLogger('engine:distribution')

export interface PushRequest {
  name: string
  tag: string
  auth: AuthConfig
  signal: AbortSignal
}

interface PushDescriptor { mediaType: string, size: number, digest: string }

/** Repositories to ask pull access on for cross-repository mounts. */
const MAX_MOUNT_SOURCES = 8

function shortId (digest: string): string {
  return digest.slice('sha256:'.length, 'sha256:'.length + 12)
}

function canceled (signal: AbortSignal): EngineError {
  const r = signal.reason as unknown
  return r instanceof EngineError ? r : new EngineError('canceled', 'operation canceled', { cause: r })
}

function isRetryable (err: unknown): boolean {
  if (err instanceof TransportError) return err.retryable
  return isRegistryError(err) && (err.httpStatus >= 500 || err.httpStatus === 429)
}

/** The local images to push: one tag, or every tag of the repository. */
function localTags (d: Distribution, ref: Reference, tag: string | undefined): Array<{ tag: string, img: ImageRecord }> {
  const name = familiarName(ref)
  const out: Array<{ tag: string, img: ImageRecord }> = []
  for (const img of d.images.store.all()) {
    for (const t of img.repoTags) {
      let p: Reference
      try { p = parseReference(t) } catch { continue }
      if (familiarName(p) === name && p.tag !== undefined && (tag === undefined || p.tag === tag)) out.push({ tag: p.tag, img })
    }
  }
  out.sort((a, b) => a.tag.localeCompare(b.tag))
  if (out.length === 0) {
    if (tag !== undefined) throw notFound(`tag does not exist: ${name}:${tag}`)
    throw notFound(`An image does not exist locally with the tag: ${name}`)
  }
  return out
}

export async function pushImage (d: Distribution, req: PushRequest, out: ProgressStream): Promise<void> {
  const r = parseReference(req.name)
  if (r.digest !== undefined) throw invalidArgument('cannot push a digest reference')
  let tag = r.tag
  if (req.tag !== '') {
    parseReference(`${r.domain}/${r.path}:${req.tag}`)
    tag = req.tag
  }
  const ref: Reference = { domain: r.domain, path: r.path }
  const items = localTags(d, ref, tag)
  const repoKey = `${ref.domain}/${ref.path}`

  // where else on this registry the layers are known to be, for mounts (the token needs pull on those)
  const mountFrom = new Set<string>()
  for (const { img } of items) {
    for (const diffId of img.config.rootfs.diff_ids) {
      for (const s of await d.blobSources.get(diffId)) {
        for (const repo of s.repos) {
          if (repo !== repoKey && repo.startsWith(`${ref.domain}/`) && mountFrom.size < MAX_MOUNT_SOURCES) mountFrom.add(repo.slice(ref.domain.length + 1))
        }
      }
    }
  }
  const client = d.client(ref.domain, ref.path, req.auth, ['pull', 'push'], req.signal, [...mountFrom].map((p) => `repository:${p}:pull`))
  await client.connect()
  await checkPushAccess(client, req.auth)
  out.message(`The push refers to repository [${repoKey}]`)
  for (const item of items) await pushTag(d, client, ref, item.tag, item.img, out, req.signal)
}

/**
 * Opens (and abandons) an upload session: the smallest request that needs push access, so that a registry refusing
 * it is answered with a real 401 before the stream starts (the CLI then asks for credentials and tries again).
 */
async function checkPushAccess (client: RegistryClient, auth: AuthConfig): Promise<void> {
  let started
  try {
    started = await client.startUpload()
  } catch (err) {
    if (isRegistryError(err) && (err.httpStatus === 401 || (err.httpStatus === 403 && !hasCredentials(auth)))) {
      throw new EngineError('unauthorized', err.message, { cause: err, ...(err.code !== undefined ? { code: err.code } : {}) })
    }
    throw err
  }
  if (!started.mounted) await client.cancelUpload(started.location)
}

async function pushTag (d: Distribution, client: RegistryClient, ref: Reference, tag: string, img: ImageRecord, out: ProgressStream, signal: AbortSignal): Promise<void> {
  const repoKey = `${ref.domain}/${ref.path}`
  const diffIds = img.config.rootfs.diff_ids
  for (let i = diffIds.length - 1; i >= 0; i--) out.update(shortId(diffIds[i] as string), 'Preparing')
  const ac = new AbortController()
  const stop = (): void => { ac.abort(signal.reason) }
  signal.addEventListener('abort', stop, { once: true })
  let layers: PushDescriptor[]
  try {
    // top layer first, as dockerd lists and schedules them
    const order = diffIds.map((_d, i) => diffIds.length - 1 - i)
    const results = order.map(async (i) => {
      const diffId = diffIds[i] as string
      let release = d.uploadSlots.tryAcquire()
      if (release === null) {
        out.update(shortId(diffId), 'Waiting')
        release = await d.uploadSlots.acquire(ac.signal)
      }
      try {
        return { i, desc: await pushLayer(d, client, repoKey, diffId, out, ac.signal) }
      } finally {
        release()
      }
    })
    for (const p of results) p.catch(() => { ac.abort(new EngineError('canceled', 'another layer failed')) })
    const settled = await Promise.allSettled(results)
    const failed = settled.find((s) => s.status === 'rejected')
    if (failed !== undefined) {
      // the first real failure explains it; cancellations of the other layers follow from it
      const real = settled.find((s) => s.status === 'rejected' && !(s.reason instanceof EngineError && s.reason.kind === 'canceled'))
      throw ((real ?? failed) as PromiseRejectedResult).reason
    }
    layers = []
    for (const s of settled) if (s.status === 'fulfilled') layers[s.value.i] = s.value.desc
  } finally {
    signal.removeEventListener('abort', stop)
  }

  const config = await d.images.content.read(img.id)
  if (await client.headBlob(img.id) === null) await uploadBuffer(d, client, config, img.id, signal)
  const manifest = Buffer.from(JSON.stringify({
    schemaVersion: 2,
    mediaType: MEDIA_DOCKER_MANIFEST,
    config: { mediaType: MEDIA_DOCKER_CONFIG, size: config.length, digest: img.id },
    layers
  }, null, 3))
  const digest = await client.putManifest(tag, MEDIA_DOCKER_MANIFEST, manifest)
  out.message(`${tag}: digest: ${digest} size: ${manifest.length}`)
  out.aux({ Tag: tag, Digest: digest, Size: manifest.length })
  await d.images.store.addDigest(img, `${familiarName(ref)}@${digest}`)
  const name = familiarString({ ...ref, tag })
  ops.info('pushed %s (%s) to %s: %d layers, %s compressed', name, digest, client.base.origin, layers.length, humanSize(layers.reduce((a, l) => a + l.size, 0) + config.length))
  d.events.emit('image', 'push', name, { name })
}

function descriptorOf (s: BlobSource): PushDescriptor {
  return { mediaType: dockerLayerType(layerCompression(s.mediaType) ?? 'gzip'), size: s.size, digest: s.digest }
}

async function pushLayer (d: Distribution, client: RegistryClient, repoKey: string, diffId: string, out: ProgressStream, signal: AbortSignal): Promise<PushDescriptor> {
  const id = shortId(diffId)
  const sources = (await d.blobSources.get(diffId)).filter((s) => layerCompression(s.mediaType) !== 'zstd').reverse()
  // 1. the target repository may have it already
  for (const s of sources) {
    if (signal.aborted) throw canceled(signal)
    if (await client.headBlob(s.digest) !== null) {
      out.update(id, 'Layer already exists')
      await d.blobSources.add(diffId, s, repoKey)
      return descriptorOf(s)
    }
  }
  // 2. another repository of the same registry may lend it
  const prefix = `${client.domain}/`
  for (const s of sources) {
    for (const repo of [...s.repos].reverse()) {
      if (repo === repoKey || !repo.startsWith(prefix)) continue
      const from = repo.slice(prefix.length)
      let started
      try {
        started = await client.startUpload({ digest: s.digest, from })
      } catch (err) {
        log('mount of %s from %s failed: %s', s.digest, from, (err as Error).message)
        continue
      }
      if (started.mounted) {
        out.update(id, `Mounted from ${from}`)
        await d.blobSources.add(diffId, s, repoKey)
        return descriptorOf(s)
      }
      await client.cancelUpload(started.location)
    }
  }
  // 3. upload it
  const desc = await withRetries(d, signal, (seconds) => { out.update(id, `Retrying in ${seconds} second${seconds === 1 ? '' : 's'}`) },
    async () => await uploadLayer(d, client, diffId, (current, total) => { out.progress(id, 'Pushing', current, total) }, signal))
  out.update(id, 'Pushed')
  await d.blobSources.add(diffId, desc, repoKey)
  return desc
}

async function withRetries<T> (d: Distribution, signal: AbortSignal, onRetry: (seconds: number) => void, work: () => Promise<T>): Promise<T> {
  for (let failures = 0; ; failures++) {
    try {
      return await work()
    } catch (err) {
      if (signal.aborted) throw canceled(signal)
      if (!isRetryable(err) || failures >= d.retry.attempts) throw err
      const delay = d.retry.delayMs(failures + 1)
      log('upload failed (%s); retry %d in %d ms', (err as Error).message, failures + 1, delay)
      onRetry(Math.max(1, Math.ceil(delay / 1000)))
      try { await sleep(delay, undefined, { signal }) } catch { throw canceled(signal) }
    }
  }
}

/** A small blob in one request: POST for a session, then PUT with the body and its digest (monolithic). */
async function uploadBuffer (d: Distribution, client: RegistryClient, data: Buffer, digest: string, signal: AbortSignal): Promise<void> {
  await withRetries(d, signal, () => {}, async () => {
    const started = await client.startUpload()
    if (started.mounted) return
    await client.finishUpload(started.location, digest, data, signal)
  })
}

/**
 * Compresses the stored tar and uploads it: in PATCH chunks of `uploadChunkSize` (Content-Range), or, when the
 * whole compressed layer fits under `monolithicLimit`, in the final PUT.
 */
async function uploadLayer (d: Distribution, client: RegistryClient, diffId: string, progress: (current: number, total: number) => void, signal: AbortSignal): Promise<PushDescriptor> {
  const total = await d.images.content.size(diffId)
  const started = await client.startUpload()
  if (started.mounted) throw new EngineError('internal', 'registry mounted a blob that was not asked for')
  let location = started.location
  const chunkSize = Math.max(d.uploadChunkSize, started.minChunk)
  const hash = createHash('sha256')
  let sent = 0
  const counter = progressCounter(total, progress)
  // incompressible stretches go out as stored blocks instead of costing full deflate for nothing
  const gzip = new AdaptiveGzip(d.pushCompressionLevel)
  const piped = pipeline(d.images.content.stream(diffId), counter, gzip, { signal })
  piped.catch(() => { /* surfaces through the iteration below */ })
  let pending: Buffer[] = []
  let pendingSize = 0
  let compressed = 0
  let ok = false
  try {
    for await (const piece of gzip as AsyncIterable<Buffer>) {
      hash.update(piece)
      compressed += piece.length
      pending.push(piece)
      pendingSize += piece.length
      if (pendingSize >= chunkSize) {
        const chunk = Buffer.concat(pending, pendingSize)
        pending = []
        pendingSize = 0
        location = await client.uploadChunk(location, chunk, sent, signal)
        sent += chunk.length
      }
    }
    await piped
    const digest = `sha256:${hash.digest('hex')}`
    const rest = pendingSize > 0 ? Buffer.concat(pending, pendingSize) : undefined
    if (rest !== undefined && sent === 0 && rest.length <= d.monolithicLimit) {
      await client.finishUpload(location, digest, rest, signal)
    } else {
      if (rest !== undefined) location = await client.uploadChunk(location, rest, sent, signal)
      await client.finishUpload(location, digest, undefined, signal)
    }
    ok = true
    return { mediaType: MEDIA_DOCKER_LAYER_GZIP, size: compressed, digest }
  } finally {
    if (!ok) {
      gzip.destroy()
      await client.cancelUpload(location)
    }
  }
}
