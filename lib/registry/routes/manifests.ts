// Manifests (GET/HEAD/PUT/DELETE by tag or digest), tags/list with n/last, and the referrers API.
import type { Route } from '../../http/router.js'
import { readBody } from '../../http/body.js'
import { isEngineError } from '../../errors.js'
import { sha256Digest } from '../../image/content-store.js'
import { repoInPath } from '../access.js'
import { registryError } from '../codes.js'
import type { RegistryContext, RegistryRoute } from '../context.js'
import { onSurface } from '../context.js'
import { buildManifestRecord } from '../image-summary.js'
import { MEDIA_OCI_INDEX } from '../../image/media-types.js'
import { parseManifest } from '../manifest.js'
import { checkDigest, checkTag, parseManifestReference } from '../names.js'
import { paginate } from './base.js'
import { reply, replyJson } from './reply.js'

async function getManifest (ctx: RegistryContext): Promise<void> {
  const rn = repoInPath(ctx, 'pull')
  const ref = parseManifestReference(ctx.params.reference as string, 'lookup')
  const { store } = ctx.core
  const repo = store.require(rn.name)
  const rec = store.resolve(repo, ref)
  if (rec === undefined) throw registryError('MANIFEST_UNKNOWN', { detail: ref.tag !== undefined ? { Tag: ref.tag } : { Digest: ref.digest } })
  const body = await store.manifestBytes(rec.digest)
  const { res } = ctx
  res.writeHead(200, {
    'Content-Type': rec.mediaType,
    'Content-Length': body.length,
    'Docker-Content-Digest': rec.digest,
    ETag: `"${rec.digest}"`
  })
  if (ctx.req.method === 'HEAD') { res.end(); return }
  res.end(body)
  store.recordPull(repo, rec.digest, ref.tag)
}

async function putManifest (ctx: RegistryContext): Promise<void> {
  const rn = repoInPath(ctx, 'push')
  const ref = parseManifestReference(ctx.params.reference as string, 'store')
  const { store, settings } = ctx.core
  let body: Buffer
  try {
    body = await readBody(ctx.req, settings.maxManifestSize)
  } catch (err) {
    if (isEngineError(err) && err.kind === 'too-large') {
      throw registryError('MANIFEST_INVALID', { kind: 'too-large', message: `manifest invalid: larger than ${settings.maxManifestSize} bytes`, detail: { limit: settings.maxManifestSize } })
    }
    throw err
  }
  const parsed = parseManifest(body, ctx.req.headers['content-type'])
  const digest = sha256Digest(body)
  if (ref.digest !== undefined && ref.digest !== digest) {
    throw registryError('DIGEST_INVALID', { message: `manifest digest ${digest} does not match ${ref.digest}`, detail: { digest: ref.digest } })
  }
  const tags = ref.tag !== undefined ? [ref.tag] : ctx.query.getAll('tag').map(checkTag)
  const repo = await store.ensure(rn, ctx.identity.user)
  const record = await store.gcLock.shared(async () => {
    const rec = await buildManifestRecord(store, repo, parsed, digest, body.length, ctx.identity.user)
    await store.putManifest(repo, body, rec, tags)
    return rec
  })
  const headers: Record<string, string | string[]> = {
    Location: `/v2/${rn.raw}/manifests/${digest}`,
    'Docker-Content-Digest': digest
  }
  if (record.subject !== undefined) headers['OCI-Subject'] = record.subject
  if (ref.digest !== undefined && tags.length > 0) headers['OCI-Tag'] = tags
  reply(ctx.res, 201, headers)
}

async function deleteManifest (ctx: RegistryContext): Promise<void> {
  const rn = repoInPath(ctx, 'delete')
  const ref = parseManifestReference(ctx.params.reference as string, 'lookup')
  const { store } = ctx.core
  const repo = store.require(rn.name)
  const done = ref.tag !== undefined ? await store.deleteTag(repo, ref.tag) : await store.deleteManifest(repo, ref.digest)
  if (!done) throw registryError('MANIFEST_UNKNOWN', { detail: ref.tag !== undefined ? { Tag: ref.tag } : { Digest: ref.digest } })
  if (ref.digest !== undefined) store.forgetCached(ref.digest)
  reply(ctx.res, 202)
}

async function getTags (ctx: RegistryContext): Promise<void> {
  const rn = repoInPath(ctx, 'pull')
  const repo = ctx.core.store.require(rn.name)
  const { page, link } = paginate([...repo.tags.keys()].sort(), ctx.query, `/v2/${rn.raw}/tags/list`)
  replyJson(ctx.res, 200, { name: rn.raw, tags: page }, link === undefined ? {} : { Link: link })
}

async function getReferrers (ctx: RegistryContext): Promise<void> {
  const rn = repoInPath(ctx, 'pull')
  const digest = checkDigest(ctx.params.digest as string)
  const repo = ctx.core.store.require(rn.name)
  const artifactType = ctx.query.get('artifactType')
  const manifests = []
  for (const m of repo.manifests.values()) {
    if (m.subject !== digest) continue
    if (artifactType !== null && m.artifactType !== artifactType) continue
    const d: Record<string, unknown> = { mediaType: m.mediaType, digest: m.digest, size: m.size }
    if (m.artifactType !== undefined) d.artifactType = m.artifactType
    if (m.annotations !== undefined) d.annotations = m.annotations
    manifests.push(d)
  }
  const headers: Record<string, string> = { 'Content-Type': MEDIA_OCI_INDEX }
  if (artifactType !== null) headers['OCI-Filters-Applied'] = 'artifactType'
  const body = Buffer.from(JSON.stringify({ schemaVersion: 2, mediaType: MEDIA_OCI_INDEX, manifests }))
  ctx.res.writeHead(200, { ...headers, 'Content-Length': body.length })
  ctx.res.end(body)
}

const route = onSurface('distribution')

export const MANIFEST_ROUTES: ReadonlyArray<Route<RegistryRoute>> = [
  { method: 'GET', path: '/v2/{name:.*}/manifests/{reference}', handler: route(getManifest) },
  { method: 'PUT', path: '/v2/{name:.*}/manifests/{reference}', handler: route(putManifest) },
  { method: 'DELETE', path: '/v2/{name:.*}/manifests/{reference}', handler: route(deleteManifest) },
  { method: 'GET', path: '/v2/{name:.*}/tags/list', handler: route(getTags) },
  { method: 'GET', path: '/v2/{name:.*}/referrers/{digest}', handler: route(getReferrers) }
]
