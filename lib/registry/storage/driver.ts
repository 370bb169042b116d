// The storage driver: the only thing the registry knows about where bytes live. Two kinds of data:
//   - content-addressed blobs (layers, configs, manifests), written through uploads that hash while they are written
//     and become visible only when committed;
//   - small metadata documents under '/'-separated keys (paths.ts builds every key), each written atomically.
// The filesystem driver (fs-driver.ts) keeps blobs in the engine's ContentStore layout; memory-driver.ts is the
// reference for new drivers (an object store needs only these methods) and backs the driver test suite.
import type { IncomingMessage } from 'node:http'
import type { Readable, Writable } from 'node:stream'

export interface BlobStat {
  size: number
  /** Milliseconds since the epoch of the commit, or of a push's last use (touchBlob); garbage collection spares recent blobs. */
  modified: number
}

export interface ByteRange {
  /** First byte, inclusive. */
  start: number
  /** Last byte, inclusive. */
  end: number
}

/** An upload in progress: hashed while written, invisible until commit. */
export interface UploadWriter {
  /** Bytes written so far. */
  readonly size: number
  /** Appends bytes; a list of chunks is written as it is (never concatenated first). */
  write (data: Buffer | readonly Buffer[]): Promise<void>
  /**
   * Publishes the blob under the digest of what was written and returns that digest. With `digest` given, a
   * mismatch throws invalid-argument and publishes nothing. The writer is finished either way.
   */
  commit (expected?: { digest?: string }): Promise<string>
  /** Drops everything written. */
  abort (): Promise<void>
  /**
   * Optional: appends the rest of `req`'s body (not yet complete) taken straight from its connection by something
   * other than this process (the filesystem driver's helper): `length` bytes when the body has a Content-Length, else
   * a chunked body of at most `limit` bytes. Null when it cannot take this body (nothing was read then: the caller
   * reads it). Else the bytes appended, with `error` (an errno name) when it stopped early: ENODATA the body ended
   * early, ETIMEDOUT nothing came for `idleMs`, EFBIG more than `limit` (nothing past it written), EPROTO malformed
   * chunked framing; the connection then carries no further request (the reply must close it).
   */
  receiveBody? (req: IncomingMessage, length: number | undefined, limit: number, idleMs: number): Promise<ReceivedBody | null>
}

export interface ReceivedBody {
  received: number
  error?: string
}

export interface StorageDriver {
  /** Creates what the driver needs and drops uploads left over by a crash. */
  init (): Promise<void>
  /** Whether its uploads may take chunked bodies from their connection (`receiveBody`): the server holds them then. */
  readonly receivesBodies?: boolean

  statBlob (digest: string): Promise<BlobStat | null>
  readBlob (digest: string): Promise<Buffer>
  blobStream (digest: string, range?: ByteRange): Readable
  /**
   * Writes a range of a blob (which the caller knows to exist and to hold it) to `out`, then ends `out`. `out` must
   * be done with a chunk once its write calls back, as a socket or an HTTP response is (a driver may reuse the
   * buffer then); a stream that passes chunks on by reference (a PassThrough) is not such a destination.
   */
  sendBlob (digest: string, range: ByteRange, out: Writable): Promise<void>
  /** Stores a whole buffer under its digest (idempotent). */
  putBlob (data: Buffer): Promise<string>
  createUpload (): Promise<UploadWriter>
  /**
   * Marks a blob as just used by a push that will not upload it (it checked that the blob is there, or mounted it):
   * garbage collection spares it for its grace period as if it had just been committed. Best effort: a blob gone, or
   * a storage that cannot record it (read-only), is no error.
   */
  touchBlob (digest: string): Promise<void>
  deleteBlob (digest: string): Promise<void>
  listBlobs (): Promise<string[]>

  /** A document's bytes, or null when absent. */
  readDocument (key: string): Promise<Buffer | null>
  /** Replaces a document atomically: readers and crashes see the old bytes or the new ones. */
  writeDocument (key: string, data: Buffer | string): Promise<void>
  deleteDocument (key: string): Promise<void>
  /** Every document key under a prefix ending in '/', recursively, in no particular order. */
  listDocuments (prefix: string): Promise<string[]>

  /** Releases what the driver holds (threads, handles). */
  close? (): Promise<void>
}
