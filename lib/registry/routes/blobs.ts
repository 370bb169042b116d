// Blobs: GET/HEAD /v2/<name>/blobs/<digest> (Range → 206) and DELETE (unlinks the blob from the repository; the
// bytes go with the next garbage collection).
import type { Route } from '../../http/router.js'
import { repoInPath } from '../access.js'
import { registryError } from '../codes.js'
import type { RegistryContext, RegistryRoute } from '../context.js'
import { onSurface } from '../context.js'
import { checkDigest } from '../names.js'
import type { ByteRange } from '../storage/driver.js'
import { reply } from './reply.js'

/** One `bytes=` range of a blob; null to serve it whole; throws 416 when it cannot be satisfied. */
export function parseRange (header: string | undefined, size: number): ByteRange | null {
  if (header === undefined) return null
  const m = /^bytes=(\d*)-(\d*)$/.exec(header.trim())
  if (m === null || (m[1] === '' && m[2] === '')) return null // unknown unit or several ranges: whole blob (RFC 9110 §14.2)
  let start: number
  let end: number
  if (m[1] === '') {
    const suffix = Number(m[2])
    start = Math.max(0, size - suffix)
    end = size - 1
    if (suffix === 0) start = size
  } else {
    start = Number(m[1])
    end = m[2] === '' ? size - 1 : Math.min(Number(m[2]), size - 1)
  }
  if (start >= size || end < start) {
    throw registryError('BLOB_UNKNOWN', { kind: 'range', message: 'requested range not satisfiable', detail: { range: header, size } })
  }
  return { start, end }
}

async function getBlob (ctx: RegistryContext): Promise<void> {
  const rn = repoInPath(ctx, 'pull')
  const digest = checkDigest(ctx.params.digest as string)
  const { store } = ctx.core
  const repo = store.get(rn.name)
  const head = ctx.req.method === 'HEAD'
  // a push checks the blobs it may skip with HEAD (docker push, skopeo): from then on it counts on this one, so a
  // garbage collection before its manifest arrives must spare it as one freshly uploaded (and none may run between
  // the answer and the mark)
  const size = repo === undefined
    ? null
    : head
      ? await store.gcLock.shared(async () => {
        const n = await store.linkedBlobSize(repo, digest)
        if (n !== null) await store.driver.touchBlob(digest)
        return n
      })
      : await store.linkedBlobSize(repo, digest)
  if (size === null) throw registryError('BLOB_UNKNOWN', { detail: digest })
  const { res } = ctx
  res.setHeader('Docker-Content-Digest', digest)
  res.setHeader('ETag', `"${digest}"`)
  res.setHeader('Cache-Control', 'max-age=31536000')
  res.setHeader('Accept-Ranges', 'bytes')
  let range: ByteRange | null
  try {
    range = parseRange(ctx.req.headers.range, size)
  } catch (err) {
    res.setHeader('Content-Range', `bytes */${size}`)
    throw err
  }
  res.setHeader('Content-Type', 'application/octet-stream')
  if (range !== null) {
    res.setHeader('Content-Range', `bytes ${range.start}-${range.end}/${size}`)
    res.setHeader('Content-Length', range.end - range.start + 1)
    res.statusCode = 206
  } else {
    res.setHeader('Content-Length', size)
    res.statusCode = 200
  }
  if (head || size === 0) { res.end(); return }
  await store.driver.sendBlob(digest, range ?? { start: 0, end: size - 1 }, res)
}

async function deleteBlob (ctx: RegistryContext): Promise<void> {
  const rn = repoInPath(ctx, 'delete')
  const digest = checkDigest(ctx.params.digest as string)
  const { store } = ctx.core
  const repo = store.get(rn.name)
  if (repo === undefined || !repo.blobs.has(digest)) throw registryError('BLOB_UNKNOWN', { detail: digest })
  await store.unlinkBlob(repo, digest)
  reply(ctx.res, 202, { 'Docker-Content-Digest': digest })
}

const route = onSurface('distribution')

export const BLOB_ROUTES: ReadonlyArray<Route<RegistryRoute>> = [
  { method: 'GET', path: '/v2/{name:.*}/blobs/{digest}', handler: route(getBlob) },
  { method: 'DELETE', path: '/v2/{name:.*}/blobs/{digest}', handler: route(deleteBlob) }
]
