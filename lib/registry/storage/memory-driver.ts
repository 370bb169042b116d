// An in-memory driver: the reference for new drivers and the second target of the driver test suite.
import { createHash } from 'node:crypto'
import { Readable, type Writable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { invalidArgument, notFound } from '../../errors.js'
import { digestMismatch, isSha256Digest } from '../../image/digest.js'
import { checkKey } from './paths.js'
import type { BlobStat, ByteRange, StorageDriver, UploadWriter } from './driver.js'

interface StoredBlob { data: Buffer, modified: number }

function checkDigest (digest: string): void {
  if (!isSha256Digest(digest)) throw invalidArgument(`invalid digest ${digest}`)
}

class MemoryUpload implements UploadWriter {
  private readonly chunks: Buffer[] = []
  private readonly hash = createHash('sha256')
  private readonly blobs: Map<string, StoredBlob>
  size = 0
  private done = false
  constructor (blobs: Map<string, StoredBlob>) { this.blobs = blobs }

  async write (data: Buffer | readonly Buffer[]): Promise<void> {
    if (this.done) throw invalidArgument('upload is finished')
    for (const chunk of Buffer.isBuffer(data) ? [data] : data) {
      this.hash.update(chunk)
      this.chunks.push(Buffer.from(chunk))
      this.size += chunk.length
    }
  }

  async commit (expected?: { digest?: string }): Promise<string> {
    this.done = true
    const digest = `sha256:${this.hash.digest('hex')}`
    if (expected?.digest !== undefined && expected.digest !== digest) throw digestMismatch(expected.digest, digest)
    this.blobs.set(digest, { data: Buffer.concat(this.chunks, this.size), modified: Date.now() })
    this.chunks.length = 0
    return digest
  }

  async abort (): Promise<void> {
    this.done = true
    this.chunks.length = 0
  }
}

export class MemoryDriver implements StorageDriver {
  private readonly blobs = new Map<string, StoredBlob>()
  private readonly docs = new Map<string, Buffer>()

  async init (): Promise<void> {}

  private blob (digest: string): StoredBlob {
    checkDigest(digest)
    const b = this.blobs.get(digest)
    if (b === undefined) throw notFound(`blob unknown: ${digest}`)
    return b
  }

  async statBlob (digest: string): Promise<BlobStat | null> {
    checkDigest(digest)
    const b = this.blobs.get(digest)
    return b === undefined ? null : { size: b.data.length, modified: b.modified }
  }

  async readBlob (digest: string): Promise<Buffer> { return this.blob(digest).data }

  async touchBlob (digest: string): Promise<void> {
    checkDigest(digest)
    const b = this.blobs.get(digest)
    if (b !== undefined) b.modified = Date.now()
  }

  blobStream (digest: string, range?: ByteRange): Readable {
    const { data } = this.blob(digest)
    return Readable.from([range === undefined ? data : data.subarray(range.start, range.end + 1)])
  }

  async sendBlob (digest: string, range: ByteRange, out: Writable): Promise<void> {
    await pipeline(this.blobStream(digest, range), out)
  }

  async putBlob (data: Buffer): Promise<string> {
    const digest = `sha256:${createHash('sha256').update(data).digest('hex')}`
    if (!this.blobs.has(digest)) this.blobs.set(digest, { data: Buffer.from(data), modified: Date.now() })
    return digest
  }

  async createUpload (): Promise<UploadWriter> { return new MemoryUpload(this.blobs) }

  async deleteBlob (digest: string): Promise<void> {
    checkDigest(digest)
    this.blobs.delete(digest)
  }

  async listBlobs (): Promise<string[]> { return [...this.blobs.keys()] }

  async readDocument (key: string): Promise<Buffer | null> {
    checkKey(key)
    return this.docs.get(key) ?? null
  }

  async writeDocument (key: string, data: Buffer | string): Promise<void> {
    checkKey(key)
    this.docs.set(key, Buffer.from(data))
  }

  async deleteDocument (key: string): Promise<void> {
    checkKey(key)
    this.docs.delete(key)
  }

  async listDocuments (prefix: string): Promise<string[]> {
    return [...this.docs.keys()].filter((k) => k.startsWith(prefix))
  }

  /** For tests: backdates a blob so garbage collection's grace period does not spare it. */
  age (digest: string, ms: number): void {
    const b = this.blobs.get(digest)
    if (b !== undefined) b.modified -= ms
  }
}
