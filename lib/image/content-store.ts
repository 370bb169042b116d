// The content-addressed blob store shared by the engine and the registry.
//
//   <root>/blobs/sha256/<hex>      committed blobs, immutable, named by the sha256 of their bytes
//   <root>/ingest/<random>         uploads in progress; hashed while written; removed on abort or at boot
//
// A blob becomes visible only by rename after its digest (and size, when known) matched and it was fsynced.
import { createHash, randomBytes } from 'node:crypto'
import { mkdir, open, rename, rm, stat, readdir, type FileHandle } from 'node:fs/promises'
import { createReadStream } from 'node:fs'
import { basename, join } from 'node:path'
import type { Readable } from 'node:stream'
import { internal, invalidArgument, notFound } from '../errors.js'
import { fsyncDir } from '../util/atomic.js'
import { digestMismatch, isSha256Digest } from './digest.js'
import { HashThread, localHash, type StreamHash } from '../util/hash-thread.js'
import { PRIVATE_DIR, PRIVATE_FILE } from '../util/private-modes.js'


export function sha256Digest (data: Buffer | string): string {
  return `sha256:${createHash('sha256').update(data).digest('hex')}`
}

/** Writes every byte of `chunks` (`bytes` in all) at `position`, in as few calls as the file takes. */
async function writeAll (fh: FileHandle, chunks: readonly Buffer[], bytes: number, position: number): Promise<void> {
  let rest = chunks
  let left = bytes
  let at = position
  while (left > 0) {
    const { bytesWritten } = rest.length === 1
      ? await fh.write(rest[0] as Buffer, 0, (rest[0] as Buffer).length, at)
      : await fh.writev(rest as Buffer[], at)
    left -= bytesWritten
    at += bytesWritten
    if (left <= 0) return
    // a short write (a full disk reports itself on the next call): go on from where it stopped
    let skip = bytesWritten
    let i = 0
    while (skip >= (rest[i] as Buffer).length) skip -= (rest[i++] as Buffer).length
    rest = [(rest[i] as Buffer).subarray(skip), ...rest.slice(i + 1)]
  }
}

/** The hash of an upload's first `bytes` bytes as another process reported it after appending to the file itself. */
interface ForeignHash {
  /** Its sha256 state (opaque, for that process's next append). */
  state: string
  /** The sha256 (hex) of those bytes. */
  digest: string
  bytes: number
}

/** Bytes hashed per read when a hash must be made again from the file. */
const REHASH_CHUNK = 1024 * 1024

export class BlobWriter {
  /** Null while the file's hash is a foreign one (or unknown): made again from the file when a write needs it. */
  private hash: StreamHash | null
  private foreign: ForeignHash | null = null
  size = 0
  private done = false
  private readonly store: ContentStore
  readonly path: string
  private readonly fh: FileHandle
  constructor (store: ContentStore, path: string, fh: FileHandle) {
    this.store = store
    this.path = path
    this.fh = fh
    this.hash = store.newHash()
  }

  /** Hashes and appends `data`; a list of chunks goes to the file as one write (no copy into one buffer). */
  async write (data: Buffer | readonly Buffer[]): Promise<void> {
    const hash = this.hash ?? await this.rehash()
    const chunks = Buffer.isBuffer(data) ? [data] : data
    let bytes = 0
    for (const chunk of chunks) bytes += chunk.length
    const at = this.size
    this.size += bytes
    // the file write and the hash (on the hash thread for long blobs, which may ask to wait) proceed together
    const writing = writeAll(this.fh, chunks, bytes, at)
    writing.catch(() => {}) // awaited below, after the hash: not unhandled meanwhile
    for (const chunk of chunks) {
      const room = hash.update(chunk)
      if (room !== null) await room
    }
    await writing
  }

  /** The file's name in the ingest directory (for a process that appends to it: see `appended`). */
  get fileName (): string { return basename(this.path) }

  /**
   * For a process that appends next and hashes what it appends: the hash state another such process reported and
   * how many of the file's bytes it covers (the file's bytes after those are not hashed yet); none covers 0 bytes.
   */
  get handOff (): { state?: string, hashed: number } {
    return this.foreign === null ? { hashed: 0 } : { state: this.foreign.state, hashed: this.foreign.bytes }
  }

  /**
   * Appends without hashing, for a process that appends next and hashes from `handOff` (it reads these bytes back).
   * The writer's own hash is dropped; a later `write` makes it again from the file.
   */
  async appendUnhashed (chunks: readonly Buffer[]): Promise<void> {
    this.hash?.drop()
    this.hash = null
    let bytes = 0
    for (const chunk of chunks) bytes += chunk.length
    const at = this.size
    this.size += bytes
    await writeAll(this.fh, chunks, bytes, at)
  }

  /**
   * Another process appended `bytes` to the file at its end and hashed the whole file: `hash` is what it reported.
   * The writer's own hash is dropped (a later write makes it again from the file).
   */
  appended (bytes: number, hash: { state: string, digest: string }): void {
    this.hash?.drop()
    this.hash = null
    this.size += bytes
    this.foreign = { ...hash, bytes: this.size }
  }

  /** Another process appended an unknown number of bytes: the length is read from the file, the hash made again. */
  async resync (): Promise<void> {
    this.hash?.drop()
    this.hash = null
    this.foreign = null
    this.size = (await this.fh.stat()).size
  }

  /** A hash of the file's `size` bytes, read back from it. */
  private async rehash (): Promise<StreamHash> {
    const hash = this.store.newHash()
    for (let pos = 0; pos < this.size;) {
      const { bytesRead, buffer } = await this.fh.read(Buffer.allocUnsafe(Math.min(REHASH_CHUNK, this.size - pos)), 0, Math.min(REHASH_CHUNK, this.size - pos), pos)
      if (bytesRead === 0) { hash.drop(); throw internal(`upload file ${this.path} is shorter than the ${this.size} bytes written`) }
      const room = hash.update(buffer.subarray(0, bytesRead))
      if (room !== null) await room
      pos += bytesRead
    }
    this.hash = hash
    this.foreign = null
    return hash
  }

  /** Verifies and publishes the blob; returns its digest. */
  async commit (expected?: { digest?: string, size?: number }): Promise<string> {
    this.done = true
    try {
      const foreign = this.foreign !== null && this.foreign.bytes === this.size ? this.foreign.digest : null
      const digest = `sha256:${foreign ?? await (this.hash ?? await this.rehash()).digest()}`
      if (expected?.size !== undefined && expected.size !== this.size) throw invalidArgument(`size mismatch: expected ${expected.size} bytes, got ${this.size}`)
      if (expected?.digest !== undefined && expected.digest !== digest) throw digestMismatch(expected.digest, digest)
      await this.fh.sync()
      await this.fh.close()
      const dest = this.store.blobPath(digest)
      await rename(this.path, dest)
      await fsyncDir(this.store.blobDir)
      return digest
    } catch (err) {
      await this.abort()
      throw err
    }
  }

  async abort (): Promise<void> {
    this.done = true
    this.hash?.drop()
    await this.fh.close().catch(() => {}) // best effort: a commit that failed after closing it closed it already
    await rm(this.path, { force: true })
  }

  get finished (): boolean { return this.done }
}

export class ContentStore {
  readonly root: string
  readonly blobDir: string
  readonly ingestDir: string
  private readonly hashes: HashThread | null
  /**
   * `hashThread`: hash long streams on a worker thread. The engine's pulls gain (their event loop also gunzips,
   * verifies and unpacks); the registry's uploads do not (its loop has time to spare, and the copies to the worker
   * cost CPU the uploading client needs on the same machine).
   */
  constructor (root: string, opts: { hashThread?: boolean } = {}) {
    this.root = root
    this.blobDir = join(root, 'blobs', 'sha256')
    this.ingestDir = join(root, 'ingest')
    this.hashes = opts.hashThread === true ? new HashThread() : null
  }

  /** An incremental sha256: on the store's hash thread once a stream is long, when the store has one. */
  newHash (): StreamHash { return this.hashes?.create() ?? localHash() }

  /** Stops the hash thread (it also stops by itself when idle). */
  async close (): Promise<void> { await this.hashes?.close() }

  async init (): Promise<void> {
    await mkdir(this.blobDir, { recursive: true, mode: PRIVATE_DIR })
    // uploads that were in progress when the process died are garbage
    await rm(this.ingestDir, { recursive: true, force: true })
    await mkdir(this.ingestDir, { recursive: true, mode: PRIVATE_DIR })
  }

  blobPath (digest: string): string {
    if (!isSha256Digest(digest)) throw invalidArgument(`invalid digest ${digest}`)
    return join(this.blobDir, digest.slice('sha256:'.length))
  }

  async has (digest: string): Promise<boolean> {
    try { await stat(this.blobPath(digest)); return true } catch { return false }
  }

  async size (digest: string): Promise<number> {
    try { return (await stat(this.blobPath(digest))).size } catch { throw notFound(`blob unknown: ${digest}`) }
  }

  async writer (): Promise<BlobWriter> {
    const path = join(this.ingestDir, randomBytes(12).toString('hex'))
    return new BlobWriter(this, path, await open(path, 'wx+', PRIVATE_FILE)) // read too: a hash may be made again from it
  }

  /** Stores a whole buffer (configs, manifests). */
  async put (data: Buffer, expectedDigest?: string): Promise<string> {
    const digest = sha256Digest(data)
    if (expectedDigest !== undefined && digest !== expectedDigest) throw digestMismatch(expectedDigest, digest)
    if (await this.has(digest)) return digest
    const w = await this.writer()
    await w.write(data)
    return await w.commit({ digest })
  }

  /** Stores a stream. */
  async ingest (src: Readable, expected?: { digest?: string, size?: number }): Promise<{ digest: string, size: number }> {
    // listening from the start: a source that fails while the writer opens rejects the loop with its own error
    const chunks = (src as AsyncIterable<Buffer>)[Symbol.asyncIterator]()
    let w: BlobWriter
    try { w = await this.writer() } catch (err) { await chunks.return?.(); throw err }
    try {
      for await (const chunk of { [Symbol.asyncIterator]: () => chunks }) await w.write(chunk)
    } catch (err) {
      await w.abort()
      throw err
    }
    const digest = await w.commit(expected)
    return { digest, size: w.size }
  }

  async read (digest: string): Promise<Buffer> {
    const fh = await open(this.blobPath(digest), 'r').catch((err) => { throw notFound(`blob unknown: ${digest}`, { cause: err }) })
    try { return await fh.readFile() } finally { await fh.close() }
  }

  stream (digest: string, range?: { start: number, end: number }): Readable {
    return createReadStream(this.blobPath(digest), range)
  }

  async delete (digest: string): Promise<void> {
    await rm(this.blobPath(digest), { force: true })
  }

  async list (): Promise<string[]> {
    return (await readdir(this.blobDir)).filter((n) => /^[0-9a-f]{64}$/.test(n)).map((n) => `sha256:${n}`)
  }
}
