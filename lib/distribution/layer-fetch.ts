// One layer, one pass: the blob streams from the registry (resumed with Range after resets and 5xx, with back-off)
// through a counter that hashes the compressed bytes and reports progress, a gunzip chosen by sniffing the first
// bytes, a tap that writes the uncompressed tar into the content store (hashing it: the diff ID), and on into the
// layer store's extraction. Both digests are checked in the streams' flush, before the extractor sees the end of
// the tar, so a layer that fails verification is never published: its ingest file and temp directory are removed.
import { PassThrough, Readable, Transform, type TransformCallback } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { setTimeout as sleep } from 'node:timers/promises'
import { createGunzip } from 'node:zlib'
import { EngineError, internal, invalidArgument, isEngineError } from '../errors.js'
import type { ImageService } from '../image/image-service.js'
import type { LayerMeta } from '../image/layer-store.js'
import { logger } from '../log.js'
import { describeNetworkError, TransportError } from './http-client.js'
import type { Descriptor } from '../image/manifest.js'
import { isDigestMismatch } from '../image/digest.js'
import type { RegistryClient } from './registry-client.js'
import { Coalesce } from '../stream/coalesce.js'
import { PROGRESS_INTERVAL_MS, progressCounter } from './progress.js'
import type { StreamHash } from '../util/hash-thread.js'
import { isRegistryError } from './registry-error.js'

const log = logger('engine:distribution')

export type DownloadEvent =
  | { kind: 'waiting' }
  | { kind: 'downloading', current: number, total: number }
  | { kind: 'retrying', seconds: number }
  | { kind: 'verifying' }
  | { kind: 'complete' }

export interface RetryPolicy {
  /** Attempts after the first (dockerd: 5). */
  attempts: number
  /** Wait before retry n (1-based), in ms (dockerd: 5 s × n). */
  delayMs: (n: number) => number
}

export const DEFAULT_RETRY: RetryPolicy = { attempts: 5, delayMs: (n) => n * 5000 }

/** Verified socket reads are gathered to this size before gunzip (fewer thread-pool trips, fewer, larger writes). */
const COALESCE_BYTES = 2 * 1024 * 1024

function isRetryable (err: unknown): boolean {
  if (err instanceof TransportError) return err.retryable
  if (isRegistryError(err)) return err.httpStatus >= 500 || err.httpStatus === 429
  const code = (err as NodeJS.ErrnoException | undefined)?.code
  return code === 'ECONNRESET' || code === 'ERR_STREAM_PREMATURE_CLOSE' || code === 'ETIMEDOUT' || code === 'EPIPE'
}

function canceled (signal: AbortSignal): EngineError {
  const r = signal.reason as unknown
  return r instanceof EngineError ? r : new EngineError('canceled', 'operation canceled', { cause: r })
}

/**
 * The blob's bytes from `client`, resuming where a failed attempt stopped (Range; a server that ignores Range is
 * skipped forward). Each retry is announced through `onRetry` with its delay in seconds.
 */
export async function * blobBytes (client: RegistryClient, digest: string, signal: AbortSignal, retry: RetryPolicy, onRetry: (seconds: number) => void): AsyncGenerator<Buffer> {
  let offset = 0
  let failures = 0
  for (;;) {
    let res: Awaited<ReturnType<RegistryClient['blob']>> | null = null
    try {
      res = await client.blob(digest, offset, signal)
      let skip = 0
      if (offset > 0 && res.status === 200) skip = offset
      if (res.status === 206) {
        const m = /^bytes (\d+)-/.exec(String(res.headers['content-range'] ?? ''))
        if (m === null || Number(m[1]) !== offset) throw internal(`registry answered a range request for ${digest} with the wrong range ${String(res.headers['content-range'])}`)
      }
      const declared = Number(res.headers['content-length'] ?? NaN)
      let got = 0
      try {
        for await (const chunk of res.body as AsyncIterable<Buffer>) {
          got += chunk.length
          let c = chunk
          if (skip > 0) {
            if (c.length <= skip) { skip -= c.length; continue }
            c = c.subarray(skip)
            skip = 0
          }
          offset += c.length
          failures = 0
          yield c
        }
      } catch (err) {
        if (signal.aborted) throw canceled(signal)
        throw new TransportError(`Get "${res.url.href}": ${describeNetworkError(err, res.url)}`, (err as NodeJS.ErrnoException).code ?? 'ECONNRESET', true, err)
      }
      if (!Number.isNaN(declared) && got < declared) {
        throw new TransportError(`Get "${res.url.href}": unexpected EOF`, 'ERR_STREAM_PREMATURE_CLOSE', true, undefined)
      }
      return
    } catch (err) {
      if (signal.aborted) throw canceled(signal)
      if (!isRetryable(err) || failures >= retry.attempts) throw err
      failures++
      const delay = retry.delayMs(failures)
      log('blob %s: %s; retry %d in %d ms from byte %d', digest, (err as Error).message, failures, delay, offset)
      onRetry(Math.max(1, Math.ceil(delay / 1000)))
      try { await sleep(delay, undefined, { signal }) } catch { throw canceled(signal) }
    } finally {
      if (res !== null && !res.body.complete) res.body.destroy()
    }
  }
}

/** Counts and hashes the compressed stream; checks size and digest before letting the end through. */
class VerifyBlob extends Transform {
  private readonly hash: StreamHash
  private count = 0
  private lastReport = 0
  private readonly desc: Descriptor
  private readonly report: (e: DownloadEvent) => void

  constructor (desc: Descriptor, hash: StreamHash, report: (e: DownloadEvent) => void) {
    super()
    this.desc = desc
    this.hash = hash
    this.report = report
  }

  override _transform (chunk: Buffer, _enc: BufferEncoding, cb: TransformCallback): void {
    this.count += chunk.length
    if (this.count > this.desc.size) {
      cb(invalidArgument(`filesystem layer verification failed for digest ${this.desc.digest}: the registry sent more than the ${this.desc.size} bytes the manifest declares`))
      return
    }
    const room = this.hash.update(chunk)
    const now = Date.now()
    if (this.lastReport === 0 || now - this.lastReport >= PROGRESS_INTERVAL_MS || this.count === this.desc.size) {
      this.lastReport = now
      this.report({ kind: 'downloading', current: this.count, total: this.desc.size })
    }
    // the chunk goes on at once; the next one waits while the hash thread is behind
    this.push(chunk)
    if (room === null) cb()
    else room.then(() => { cb() }, cb)
  }

  override _destroy (err: Error | null, cb: (err: Error | null) => void): void {
    this.hash.drop()
    cb(err)
  }

  override _flush (cb: TransformCallback): void {
    this.report({ kind: 'verifying' })
    if (this.count !== this.desc.size) {
      cb(invalidArgument(`filesystem layer verification failed for digest ${this.desc.digest}: got ${this.count} of ${this.desc.size} bytes`))
      return
    }
    this.hash.digest().then((hex) => {
      cb(`sha256:${hex}` === this.desc.digest ? null : invalidArgument(`filesystem layer verification failed for digest ${this.desc.digest}`))
    }, cb)
  }
}

/** Prepends a chunk already read from an iterator. */
async function * replay (head: Buffer, rest: AsyncIterator<Buffer>): AsyncGenerator<Buffer> {
  if (head.length > 0) yield head
  for (;;) {
    const n = await rest.next()
    if (n.done === true) return
    yield n.value
  }
}

/** Reads until at least `n` bytes (or the end) to sniff the compression. */
async function peek (it: AsyncIterator<Buffer>, n: number): Promise<Buffer> {
  const parts: Buffer[] = []
  let size = 0
  while (size < n) {
    const r = await it.next()
    if (r.done === true) break
    parts.push(r.value)
    size += r.value.length
  }
  return Buffer.concat(parts, size)
}

export type Compression = 'gzip' | 'zstd' | 'none'

export function sniffCompression (head: Buffer): Compression {
  if (head.length >= 2 && head[0] === 0x1f && head[1] === 0x8b) return 'gzip'
  if (head.length >= 4 && head.readUInt32LE(0) === 0xfd2fb528) return 'zstd'
  return 'none'
}

export interface LayerFetch {
  client: RegistryClient
  desc: Descriptor
  /** The diff ID the image config promises for this layer. */
  diffId: string
  chainId: string
  /** '' for the bottom layer. */
  parentChain: string
  images: ImageService
  retry: RetryPolicy
  signal: AbortSignal
  emit: (e: DownloadEvent) => void
}

/** Downloads, verifies, stores and unpacks one layer; resolves with its uncompressed size. */
export async function fetchLayer (f: LayerFetch): Promise<number> {
  const { images, desc, signal } = f
  const onRetry = (seconds: number): void => { f.emit({ kind: 'retrying', seconds }) }
  const it = blobBytes(f.client, desc.digest, signal, f.retry, onRetry)[Symbol.asyncIterator]()
  let head: Buffer
  try {
    head = await peek(it, 4)
  } catch (err) {
    await it.return?.(undefined)
    throw err
  }
  const compression = sniffCompression(head)
  if (compression === 'zstd') {
    await it.return?.(undefined)
    throw invalidArgument(`layer ${desc.digest} is zstd-compressed (${desc.mediaType}); this engine reads gzip and uncompressed layers`)
  }
  const source = Readable.from(replay(head, it), { objectMode: false })
  const writer = await images.content.writer()
  const meta: LayerMeta = { diffId: f.diffId, parent: f.parentChain, size: 0 }
  const tap = new Transform({
    // the chunk goes on to the extractor while it is being written; the next one waits for the write
    transform (chunk: Buffer, _enc, cb) { this.push(chunk); writer.write(chunk).then(() => { cb() }, cb) },
    flush (cb) {
      // the uncompressed digest is the diff ID the config promised; commit checks it before the tar's end goes on
      writer.commit({ digest: f.diffId }).then(() => { meta.size = writer.size; cb() }, (err: unknown) => {
        cb(isDigestMismatch(err)
          ? invalidArgument(`layers from manifest don't match image configuration: layer ${desc.digest} unpacks to content that is not ${f.diffId}`, { cause: err })
          : err as Error)
      })
    }
  })
  const decoded = new PassThrough()
  let extracting = false
  const unpacked = images.layers.unpack(f.chainId, meta, () => { extracting = true; return decoded })
  const streamed = pipeline(source, new VerifyBlob(desc, images.content.newHash(), f.emit), new Coalesce(COALESCE_BYTES), ...(compression === 'gzip' ? [createGunzip({ chunkSize: 1024 * 1024 })] : []), tap, decoded, { signal })
  const [s, u] = await Promise.allSettled([streamed, unpacked.then(() => { if (!extracting) decoded.resume() })])
  if (s.status === 'fulfilled' && u.status === 'fulfilled') {
    f.emit({ kind: 'complete' })
    return meta.size
  }
  if (!writer.finished) await writer.abort()
  if (signal.aborted) throw canceled(signal)
  // the error that explains it: a verification or transfer failure first, then the extractor's complaint
  const streamErr = s.status === 'rejected' ? s.reason as unknown : undefined
  const unpackErr = u.status === 'rejected' ? u.reason as unknown : undefined
  if (isEngineError(streamErr)) throw streamErr
  if (unpackErr !== undefined) throw unpackErr
  throw streamErr
}

/** Unpacks a layer whose uncompressed tar is already in the content store, reporting `Extracting` progress. */
export async function unpackStored (images: ImageService, diffId: string, chainId: string, parentChain: string, onProgress: (current: number, total: number) => void): Promise<void> {
  const total = await images.content.size(diffId)
  const counter = progressCounter(total, onProgress)
  await images.layers.unpack(chainId, { diffId, parent: parentChain, size: total }, () => {
    pipeline(images.content.stream(diffId), counter).catch((err: Error) => { counter.destroy(err) })
    return counter
  })
}
