// Blob uploads (OCI distribution-spec end-4a/4b/5/6/11/13/14): monolithic POST ?digest, POST then PUT, streamed
// PATCH, chunked PATCH with Content-Range (416 when out of order), GET status, DELETE cancel, and cross-repository
// mount (?mount&from, or with automatic discovery when `from` is absent).
import type { IncomingMessage } from 'node:http'
import { bodyCutShort, clientDisconnected, markBodyCut } from '../../http/cut-body.js'
import type { Route } from '../../http/router.js'
import { internal, isEngineError } from '../../errors.js'
import { repoInPath } from '../access.js'
import { registryError } from '../codes.js'
import type { RegistryContext, RegistryRoute } from '../context.js'
import { onSurface } from '../context.js'
import { checkDigest, parseRepoName, type RepoName } from '../names.js'
import type { UploadWriter } from '../storage/driver.js'
import type { Repository } from '../storage/registry-store.js'
import { releaseBody } from '../storage/upload-handover.js'
import type { UploadSession } from '../uploads.js'
import { reply } from './reply.js'

/** How much of a request body may wait in memory while the previous batch is hashed and written. */
const WRITE_HIGH_WATER = 4 * 1024 * 1024
/** A batch goes to the file once it holds this much (or the body ended). */
const BATCH_BYTES = 1024 * 1024

/**
 * Streams a request body into an upload; returns the bytes written. Chunks (32–64 KiB as the socket delivers them)
 * are gathered into batches of BATCH_BYTES and each batch goes out as one write of the chunks as they came (a list
 * for writev: copying them into one buffer first was 9% of a push's CPU samples); a write per chunk or per few
 * chunks cost a thread-pool round trip each (futex wake-ups and context switches: about a fifth of a push's CPU).
 * The socket keeps reading while a batch is being written, up to WRITE_HIGH_WATER gathered, then the request is
 * paused until that write is done. The chunks are taken from 'data' events, with no Writable in between: a stream
 * stage cost a buffered-write record, a callback and a next-tick per chunk, and the JIT compiled all of it again
 * in every fresh process (about a fifth of a second push's CPU). Never writes more than `limit` bytes: a batch that
 * would go past it is refused whole, before any of it is written (the rest of the body is then dropped). A body its
 * client cut short with a FIN (lib/http/cut-body.ts) is written up to where it stopped, as the blob helper does and
 * as distribution keeps it, then rejected with that error.
 */
async function pumpInto (req: IncomingMessage, writer: UploadWriter, limit: number, tooMuch: () => Error): Promise<number> {
  return await new Promise<number>((resolve, reject) => {
    let written = 0
    let batch: Buffer[] = []
    let bytes = 0
    let writing: Promise<void> | null = null
    let ended = false
    let settled = false
    let cut: Error | null = null
    const finish = (err: Error | null): void => {
      if (settled) return
      settled = true
      req.off('data', onData)
      req.off('end', onEnd)
      req.off('error', onError)
      req.off('close', onClose)
      if (err === null && cut !== null) { reject(cut); return } // every byte that came is written
      if (err === null) { resolve(written); return }
      // the rest of the body is read and dropped (the socket stays: the error is answered, then the connection is
      // closed, as writeError asks for a request left incomplete)
      req.on('error', () => {})
      req.resume()
      // the caller drops the upload once this rejects: not while a batch is still being written
      if (writing === null) reject(err); else writing.then(() => { reject(err) }, () => { reject(err) })
    }
    /** Writes the gathered batch; when it is done, the next one (or the end). */
    const write = (): void => {
      const out = batch.length === 1 ? batch[0] as Buffer : batch
      const n = bytes
      batch = []
      bytes = 0
      writing = writer.write(out)
      writing.then(() => {
        writing = null
        written += n
        if (settled) return
        if (bytes >= BATCH_BYTES || (ended && bytes > 0)) write()
        else if (ended) finish(null)
        else if (req.isPaused()) req.resume()
      }, (err: Error) => { writing = null; finish(err) })
    }
    const onData = (chunk: Buffer): void => {
      if (written + bytes + chunk.length > limit) { finish(tooMuch()); return }
      batch.push(chunk)
      bytes += chunk.length
      if (writing !== null) { if (bytes >= WRITE_HIGH_WATER) req.pause() } else if (bytes >= BATCH_BYTES) write()
    }
    const onEnd = (): void => {
      ended = true
      if (writing !== null) return
      if (bytes > 0) write(); else finish(null)
    }
    const onError = (err: Error): void => {
      if (bodyCutShort(req)) { cut = err; onEnd() } else finish(err)
    }
    const onClose = (): void => { if (!ended) finish(Object.assign(new Error('aborted'), { code: 'ERR_STREAM_PREMATURE_CLOSE' })) }
    if (req.readableEnded) { finish(null); return } // consumed already: nothing to write
    // gone before its turn (a request queued on its session behind another): its 'close' has been and will not
    // come again, and waiting for it would hold the session for every later request
    if (req.destroyed) { onClose(); return }
    req.on('data', onData)
    req.on('end', onEnd)
    req.on('error', onError)
    req.on('close', onClose)
  })
}

/** How the helper says the client stopped mid-body: ENODATA its FIN (it can still read a reply), else it is gone
 * (ECANCELED: the connection closed under it). */
const CLIENT_GONE = new Set(['ENODATA', 'ECONNRESET', 'EPIPE', 'ECANCELED'])

/**
 * Writes a request body of `length` bytes (when declared: Content-Length) or up to `limit` into `writer`; returns
 * the bytes written. A body the driver can take from the connection itself (the filesystem driver's helper: read,
 * hashed and written off this process) goes that way, a declared one or a chunked one the server held; the
 * connection is then closed after the reply, Node's parser still waiting for the bytes the helper took. Errors as
 * pumpInto's, and the slow-body timeout's 408. A body its client cut short (a FIN) is written up to where it stopped,
 * then refused with clientDisconnected() (499, answered: the client can still read); one cut before its turn is not
 * written at all.
 */
async function bodyInto (ctx: RegistryContext, writer: UploadWriter, length: number | undefined, limit: number, tooMuch: () => Error): Promise<number> {
  // cut short before its turn (queued on its session): none of it is written, whichever way it would be read
  if (bodyCutShort(ctx.req)) throw clientDisconnected()
  if ((length === undefined || length <= limit) && writer.receiveBody !== undefined) {
    const idleMs = ctx.core.settings.bodyIdleTimeout
    const got = await writer.receiveBody(ctx.req, length, limit, idleMs)
    if (got !== null) {
      ctx.res.shouldKeepAlive = false
      if (got.error === 'ETIMEDOUT') throw registryError('UNKNOWN', { kind: 'timeout', message: `request body timed out: nothing received for ${Math.round(idleMs / 1000)} s` })
      if (got.error === 'EFBIG') throw tooMuch()
      if (got.error === 'EPROTO') throw registryError('BLOB_UPLOAD_INVALID', { message: 'malformed chunked request body', detail: {} })
      if (got.error !== undefined && !CLIENT_GONE.has(got.error)) throw internal(`writing the upload: ${got.error} after ${got.received} bytes`)
      if (got.error === 'ENODATA') {
        // the client ended its body early with a FIN: it can still read the answer (as when Node's parser meets it)
        markBodyCut(ctx.req)
        throw clientDisconnected()
      }
      if (got.error !== undefined) {
        // the client went away: nobody to answer
        ctx.req.socket.destroy()
        throw Object.assign(new Error(`request body: ${got.error} after ${got.received} bytes`), { code: 'ERR_STREAM_PREMATURE_CLOSE' })
      }
      return got.received
    }
  }
  releaseBody(ctx.req) // a chunked body the server held for the helper: Node reads it
  return await pumpInto(ctx.req, writer, limit, tooMuch)
}

function declaredLength (req: IncomingMessage): number | undefined {
  const v = req.headers['content-length']
  return v === undefined ? undefined : Number(v)
}

/** `Range: 0-<last byte>` as distribution reports upload progress (`0-0` for an empty upload). */
function progress (size: number): string {
  return `0-${Math.max(0, size - 1)}`
}

function uploadHeaders (rn: RepoName, s: UploadSession): Record<string, string> {
  return {
    Location: `/v2/${rn.raw}/blobs/uploads/${s.id}`,
    Range: progress(s.writer.size),
    'Docker-Upload-UUID': s.id
  }
}

/** Commits a writer against the client's digest; a mismatch is DIGEST_INVALID and publishes nothing. */
async function commitAs (writer: UploadWriter, digest: string): Promise<void> {
  try {
    await writer.commit({ digest })
  } catch (err) {
    if (isEngineError(err) && err.kind === 'invalid-argument') {
      throw registryError('DIGEST_INVALID', { detail: { digest }, cause: err })
    }
    throw err
  }
}

/**
 * Commits an upload and links it into the repository with no garbage collection in between: a collection that
 * found the digest unreferenced (an older copy of the same blob) would otherwise delete the blob just committed and
 * leave the repository linking nothing, after a 201.
 */
async function committed (ctx: RegistryContext, writer: UploadWriter, digest: string, repo: Repository): Promise<void> {
  const { store } = ctx.core
  await store.gcLock.shared(async () => {
    await commitAs(writer, digest)
    await store.linkBlob(repo, digest)
  })
}

function blobTooLarge (max: number): Error {
  return registryError('SIZE_INVALID', { kind: 'too-large', message: `blob larger than this registry's maximum of ${max} bytes`, detail: { limit: max } })
}

/**
 * Writes one request body into a session, honouring Content-Range (chunked uploads), Content-Length and the
 * registry's maximum blob size: nothing past the range's end or the maximum is ever written.
 */
async function appendBody (ctx: RegistryContext, rn: RepoName, s: UploadSession): Promise<void> {
  const { req, res } = ctx
  const max = ctx.core.settings.maxBlobSize
  const header = req.headers['content-range']
  const length = declaredLength(req)
  let expected: number | undefined
  if (header !== undefined) {
    const m = /^(?:bytes[ =])?(\d+)-(\d+)(?:\/(?:\d+|\*))?$/.exec(header.trim())
    if (m === null) throw registryError('BLOB_UPLOAD_INVALID', { message: `invalid Content-Range ${JSON.stringify(header)}`, detail: { 'Content-Range': header } })
    const start = Number(m[1])
    const end = Number(m[2])
    if (start !== s.writer.size || end < start) {
      for (const [k, v] of Object.entries(uploadHeaders(rn, s))) res.setHeader(k, v)
      throw registryError('BLOB_UPLOAD_INVALID', {
        kind: 'range',
        message: `chunk out of order: upload has ${s.writer.size} bytes, chunk starts at ${start}`,
        detail: { 'Content-Range': header, size: s.writer.size }
      })
    }
    expected = end - start + 1
    if (length !== undefined && length !== expected) {
      throw registryError('SIZE_INVALID', { detail: { 'Content-Range': header, 'Content-Length': length } })
    }
  }
  const room = max - s.writer.size
  if ((expected ?? length ?? 0) > room) throw blobTooLarge(max)
  const overRange = (): Error => registryError('SIZE_INVALID', { message: `chunk longer than its Content-Range ${header ?? ''}`, detail: { 'Content-Range': header } })
  const overLength = (): Error => registryError('SIZE_INVALID', { detail: { 'Content-Length': length } })
  const limit = Math.min(room, expected ?? Infinity, length ?? Infinity)
  const tooMuch = limit === room ? () => blobTooLarge(max) : limit === expected ? overRange : overLength
  const written = await bodyInto(ctx, s.writer, length, limit, tooMuch)
  if (expected !== undefined && written !== expected) {
    throw registryError('SIZE_INVALID', { message: `chunk had ${written} bytes, Content-Range said ${expected}`, detail: { 'Content-Range': header } })
  }
  if (length !== undefined && written !== length) {
    throw registryError('SIZE_INVALID', { detail: { 'Content-Length': length, received: written } })
  }
}

/** Links an existing blob into the repository from `from`, or from any readable repository holding it. */
async function tryMount (ctx: RegistryContext, target: RepoName, digest: string, from: string | null): Promise<boolean> {
  const { store, authority } = ctx.core
  const candidates: RepoName[] = []
  if (from !== null && from !== '') {
    let rn: RepoName
    try { rn = parseRepoName(from) } catch { return false }
    candidates.push(rn)
  } else {
    for (const name of store.linkedFrom(digest)) candidates.push(parseRepoName(name))
  }
  for (const rn of candidates) {
    if (!authority.allows(ctx.identity, rn, 'pull')) continue
    const source = store.get(rn.name)
    if (source === undefined || !source.blobs.has(digest)) continue
    const repo = await store.ensure(target, ctx.identity.user)
    // no garbage collection between the look and the link: it would delete a blob the push was just given
    const mounted = await store.gcLock.shared(async () => {
      if (!source.blobs.has(digest) || await store.driver.statBlob(digest) === null) return false
      await store.linkBlob(repo, digest)
      await store.driver.touchBlob(digest) // as a fresh upload: the push's manifest is yet to come (gc.ts)
      return true
    })
    if (mounted) return true
  }
  return false
}

async function postUpload (ctx: RegistryContext): Promise<void> {
  const rn = repoInPath(ctx, 'push')
  const { query, res } = ctx
  const { store, uploads } = ctx.core
  const mount = query.get('mount')
  if (mount !== null) {
    const digest = checkDigest(mount)
    if (await tryMount(ctx, rn, digest, query.get('from'))) {
      reply(res, 201, { Location: `/v2/${rn.raw}/blobs/${digest}`, 'Docker-Content-Digest': digest })
      return
    }
    // not mountable: a fresh session instead, as the spec allows (202)
  }
  const algorithm = query.get('digest-algorithm')
  if (algorithm !== null && algorithm !== 'sha256') {
    throw registryError('UNSUPPORTED', { message: `unsupported digest algorithm ${algorithm}`, detail: { 'digest-algorithm': algorithm } })
  }
  const digestParam = query.get('digest')
  const repo = await store.ensure(rn, ctx.identity.user)
  if (digestParam !== null && mount === null) {
    const digest = checkDigest(digestParam)
    const max = ctx.core.settings.maxBlobSize
    const length = declaredLength(ctx.req)
    if (length !== undefined && length > max) throw blobTooLarge(max)
    const writer = await store.driver.createUpload()
    try {
      const written = await bodyInto(ctx, writer, length, max, () => blobTooLarge(max))
      if (length !== undefined && written !== length) throw registryError('SIZE_INVALID', { detail: { 'Content-Length': length, received: written } })
    } catch (err) {
      await writer.abort()
      throw err
    }
    await committed(ctx, writer, digest, repo)
    reply(res, 201, { Location: `/v2/${rn.raw}/blobs/${digest}`, 'Docker-Content-Digest': digest })
    return
  }
  const s = await uploads.start(rn.name, ctx.identity.user ?? `addr:${ctx.req.socket.remoteAddress ?? ''}`)
  if (declaredLength(ctx.req) !== 0 || ctx.req.headers['transfer-encoding'] !== undefined) {
    await s.exclusive(async () => { await appendBody(ctx, rn, s) })
  }
  reply(res, 202, uploadHeaders(rn, s))
}

function sessionOf (ctx: RegistryContext, action: 'push'): { rn: RepoName, s: UploadSession } {
  const rn = repoInPath(ctx, action)
  return { rn, s: ctx.core.uploads.get(rn.name, ctx.params.uuid as string) }
}

async function patchUpload (ctx: RegistryContext): Promise<void> {
  const { rn, s } = sessionOf(ctx, 'push')
  await s.exclusive(async () => {
    ctx.core.uploads.get(rn.name, s.id)
    await appendBody(ctx, rn, s)
  })
  reply(ctx.res, 202, uploadHeaders(rn, s))
}

async function putUpload (ctx: RegistryContext): Promise<void> {
  const { rn, s } = sessionOf(ctx, 'push')
  const param = ctx.query.get('digest')
  if (param === null) throw registryError('DIGEST_INVALID', { message: 'digest parameter missing', detail: {} })
  const digest = checkDigest(param)
  const { store, uploads } = ctx.core
  const repo = await store.ensure(rn, ctx.identity.user)
  await s.exclusive(async () => {
    uploads.get(rn.name, s.id) // still open after the requests queued before this one?
    await appendBody(ctx, rn, s)
    uploads.forget(s)
    await committed(ctx, s.writer, digest, repo)
  })
  reply(ctx.res, 201, { Location: `/v2/${rn.raw}/blobs/${digest}`, 'Docker-Content-Digest': digest })
}

async function getUpload (ctx: RegistryContext): Promise<void> {
  const { rn, s } = sessionOf(ctx, 'push')
  reply(ctx.res, 204, uploadHeaders(rn, s))
}

async function deleteUpload (ctx: RegistryContext): Promise<void> {
  const { rn, s } = sessionOf(ctx, 'push')
  await s.exclusive(async () => {
    ctx.core.uploads.get(rn.name, s.id)
    await ctx.core.uploads.cancel(s)
  })
  reply(ctx.res, 204)
}

const route = onSurface('distribution')

export const UPLOAD_ROUTES: ReadonlyArray<Route<RegistryRoute>> = [
  { method: 'POST', path: '/v2/{name:.*}/blobs/uploads/', handler: route(postUpload) },
  { method: 'PATCH', path: '/v2/{name:.*}/blobs/uploads/{uuid}', handler: route(patchUpload) },
  { method: 'PUT', path: '/v2/{name:.*}/blobs/uploads/{uuid}', handler: route(putUpload) },
  { method: 'GET', path: '/v2/{name:.*}/blobs/uploads/{uuid}', handler: route(getUpload) },
  { method: 'DELETE', path: '/v2/{name:.*}/blobs/uploads/{uuid}', handler: route(deleteUpload) }
]
