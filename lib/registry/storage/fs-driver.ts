// The filesystem driver: blobs in the engine's ContentStore (blobs/sha256, ingest/), documents as files written with
// temp-file + fsync + rename. See paths.ts for the tree.
import { createReadStream, existsSync } from 'node:fs'
import { ServerResponse, type IncomingMessage } from 'node:http'
import { mkdir, open, readFile, readdir, rm, stat, utimes } from 'node:fs/promises'
import { join, resolve, sep } from 'node:path'
import type { Readable, Writable } from 'node:stream'
import { sendFile } from '../../stream/send-file.js'
import { BufferPool } from '../../util/buffer-pool.js'
import { ContentStore, type BlobWriter } from '../../image/content-store.js'
import { internal, invalidArgument, fromErrno } from '../../errors.js'
import { writeFileAtomic } from '../../util/atomic.js'
import { logger } from '../../log.js'
import { checkKey } from './paths.js'
import { BlobSender, type ReceiveReport } from './blob-sender.js'
import { takeBody } from './upload-handover.js'
import type { BlobStat, ByteRange, ReceivedBody, StorageDriver, UploadWriter } from './driver.js'
import { PRIVATE_DIR, PRIVATE_FILE, PRIVATE_TREE, repairModes, modesCurrent, markModes, topOnly } from '../../util/private-modes.js'

const log = logger('registry:storage')
const READ_CHUNK = 1024 * 1024
/** Blobs are served through buffers of this size, two per pull in flight (lib/stream/send-file.ts). */
const SEND_CHUNK = 1024 * 1024
/** Uploads flush to disk in the background every this many bytes, so the fsync at commit has only the tail left. */
const FLUSH_EVERY = 8 * 1024 * 1024

/** fdatasync through a second descriptor: it flushes the file, whichever descriptor wrote it. */
async function flushFile (path: string): Promise<void> {
  const fh = await open(path, 'r')
  try { await fh.datasync() } finally { await fh.close() }
}

/**
 * The content store's BlobWriter plus background flushing while a client is still sending: a commit (the client's
 * PUT, which it waits for) then syncs megabytes instead of a whole layer.
 */
class FsUpload implements UploadWriter {
  private readonly w: BlobWriter
  private readonly helper: BlobSender | null
  private unflushed = 0
  private flushing: Promise<void> | null = null
  constructor (w: BlobWriter, helper: BlobSender | null) {
    this.w = w
    this.helper = helper
  }

  get size (): number { return this.w.size }

  async write (data: Buffer | readonly Buffer[]): Promise<void> {
    const before = this.w.size
    await this.w.write(data)
    this.unflushed += this.w.size - before
    if (this.unflushed >= FLUSH_EVERY && this.flushing === null) {
      this.unflushed = 0
      // best effort: an early flush only shortens the commit's own sync, which reports any failure
      this.flushing = flushFile(this.w.path).catch(() => {}).finally(() => { this.flushing = null })
    }
  }

  /**
   * The rest of the body goes to the file through the blob helper (blob-receiver.c), which hashes it as it writes:
   * the bytes Node's parser had read are written here first (unhashed: the helper hashes the file from where the
   * last hash it reported stops, or from its start), then the helper appends the rest and reports its hash.
   */
  async receiveBody (req: IncomingMessage, length: number | undefined, limit: number, idleMs: number): Promise<ReceivedBody | null> {
    const helper = this.helper
    if (helper === null || !await helper.receives(length ?? limit)) return null
    // a chunked body that has reached the limit already: the caller reads it (and refuses what goes past the limit)
    if (length === undefined && req.readableLength >= limit) return null
    const taken = takeBody(req)
    if (taken === null) return null
    if (taken.pendingBytes > 0) await this.w.appendUnhashed(taken.pending)
    const rest = (length ?? limit) - taken.pendingBytes
    if (rest <= 0) return { received: taken.pendingBytes }
    taken.socket.setTimeout(0) // the helper times the body out now (Node no longer reads it)
    let report: ReceiveReport
    try {
      report = await helper.receive(taken.socket, taken.handle, rest, idleMs, { file: this.w.fileName, at: this.w.size, ...this.w.handOff }, taken.chunked)
    } catch (err) {
      await this.w.resync() // the helper went away mid-body: how much it wrote is in the file
      throw err
    }
    if (report.received > 0) {
      if (report.state === undefined || report.digest === undefined) { await this.w.resync(); throw internal('blob helper: receive reported no hash') }
      this.w.appended(report.received, { state: report.state, digest: report.digest })
    }
    const received = taken.pendingBytes + report.received
    return report.error === undefined ? { received } : { received, error: report.error }
  }

  async commit (expected?: { digest?: string }): Promise<string> {
    await this.flushing
    return await this.w.commit(expected)
  }

  async abort (): Promise<void> {
    await this.flushing
    await this.w.abort()
  }
}

/** Bumped when what an existing storage tree must be given changes. */
const MODES_VERSION = 1

/**
 * The storage is private to the registry's user (repositories, manifests and blobs of private repositories, the
 * token key): the root and its first entries are checked at every start, the whole tree once per rules version
 * (a tree from an earlier Berth had world-readable documents and blobs).
 */
async function secureStorage (root: string): Promise<void> {
  const deep = !await modesCurrent(root, MODES_VERSION)
  const r = await repairModes(root, deep ? PRIVATE_TREE : { ...topOnly(PRIVATE_TREE), child: () => topOnly(PRIVATE_TREE) })
  if (r.changed.length > 0) log('storage modes repaired: %d entries', r.changed.length)
  if (r.refused.length > 0) log('storage modes not repairable: %s', r.refused.join(', '))
  if (deep) await markModes(root, MODES_VERSION)
}

export class FsDriver implements StorageDriver {
  readonly root: string
  readonly content: ContentStore

  private readonly cleanIngest: boolean
  private readonly sendBuffers = new BufferPool(SEND_CHUNK)
  private readonly sender: BlobSender | null

  /**
   * `cleanIngest: false` leaves uploads of a running registry alone (offline tools such as gc). `blobSender`: the
   * berth-blob-sender binary that serves large blobs to plain HTTP replies with sendfile (blob-sender.ts); without
   * one, every blob goes through this process's buffers.
   */
  constructor (root: string, opts: { cleanIngest?: boolean, blobSender?: string | null } = {}) {
    this.root = resolve(root)
    this.content = new ContentStore(this.root)
    this.cleanIngest = opts.cleanIngest ?? true
    let bin = opts.blobSender ?? null
    if (bin !== null && !existsSync(bin)) { log('no blob sender at %s: blobs are served without sendfile', bin); bin = null }
    this.sender = bin === null ? null : new BlobSender(bin, this.content.blobDir, this.content.ingestDir)
  }

  async close (): Promise<void> {
    this.sendBuffers.clear()
    await this.sender?.close()
    await this.content.close()
  }

  get receivesBodies (): boolean { return this.sender !== null }

  async init (): Promise<void> {
    await mkdir(this.root, { recursive: true, mode: PRIVATE_DIR })
    await secureStorage(this.root)
    if (this.cleanIngest) {
      await this.content.init()
    } else {
      await mkdir(this.content.blobDir, { recursive: true, mode: PRIVATE_DIR })
      await mkdir(this.content.ingestDir, { recursive: true, mode: PRIVATE_DIR })
    }
  }

  /** The file behind a key, refusing anything that would resolve outside the data root. */
  private pathOf (key: string): string {
    const p = resolve(this.root, ...checkKey(key))
    if (!p.startsWith(this.root + sep)) throw invalidArgument(`invalid storage key ${key}`)
    return p
  }

  async statBlob (digest: string): Promise<BlobStat | null> {
    const path = this.content.blobPath(digest)
    try {
      const st = await stat(path)
      return { size: st.size, modified: st.mtimeMs }
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null
      throw fromErrno(err, `blob ${digest}`)
    }
  }

  async touchBlob (digest: string): Promise<void> {
    const path = this.content.blobPath(digest)
    const now = new Date()
    try {
      await utimes(path, now, now)
    } catch (err) {
      // best effort: a storage that cannot take the mark (read-only) still answers the HEAD that asked for it
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') log('blob %s not marked as used: %s', digest, (err as Error).message)
    }
  }

  async readBlob (digest: string): Promise<Buffer> {
    return await this.content.read(digest)
  }

  blobStream (digest: string, range?: ByteRange): Readable {
    const path = this.content.blobPath(digest)
    return createReadStream(path, { highWaterMark: READ_CHUNK, ...(range ?? {}) })
  }

  async sendBlob (digest: string, range: ByteRange, out: Writable): Promise<void> {
    const length = range.end - range.start + 1
    if (this.sender !== null && out instanceof ServerResponse && this.sender.accepts(out, length)) {
      const path = this.content.blobPath(digest)
      await this.sender.send(out, path.slice(this.content.blobDir.length + 1), range.start, length)
      return
    }
    await sendFile(this.content.blobPath(digest), out, range.start, range.end - range.start + 1, this.sendBuffers)
  }

  async putBlob (data: Buffer): Promise<string> {
    return await this.content.put(data)
  }

  async createUpload (): Promise<UploadWriter> {
    return new FsUpload(await this.content.writer(), this.sender)
  }

  async deleteBlob (digest: string): Promise<void> {
    await this.content.delete(digest)
  }

  async listBlobs (): Promise<string[]> {
    return await this.content.list()
  }

  async readDocument (key: string): Promise<Buffer | null> {
    const path = this.pathOf(key)
    try {
      return await readFile(path)
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code
      if (code === 'ENOENT' || code === 'ENOTDIR') return null
      throw fromErrno(err, `read ${key}`)
    }
  }

  async writeDocument (key: string, data: Buffer | string): Promise<void> {
    const p = this.pathOf(key)
    await mkdir(join(p, '..'), { recursive: true, mode: PRIVATE_DIR })
    // the temp file in ingest/, which a starting registry empties: a crash mid-write leaves nothing in repositories/
    await writeFileAtomic(p, data, { mode: PRIVATE_FILE, tmpDir: this.content.ingestDir })
  }

  async deleteDocument (key: string): Promise<void> {
    await rm(this.pathOf(key), { force: true })
  }

  async listDocuments (prefix: string): Promise<string[]> {
    if (!prefix.endsWith('/')) throw invalidArgument(`invalid prefix ${prefix}`)
    const out: string[] = []
    const walk = async (dir: string, keyPrefix: string): Promise<void> => {
      let entries
      try {
        entries = await readdir(dir, { withFileTypes: true })
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') return
        throw fromErrno(err, `list ${keyPrefix}`)
      }
      for (const e of entries) {
        if (e.name.startsWith('.')) continue // temp files of writes in flight
        if (e.isDirectory()) await walk(join(dir, e.name), `${keyPrefix}${e.name}/`)
        else if (e.isFile()) out.push(`${keyPrefix}${e.name}`)
      }
    }
    await walk(this.pathOf(prefix.slice(0, -1)), prefix)
    return out
  }
}
