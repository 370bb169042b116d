// Where a build context's bytes live: in memory while the body stays under a threshold (the usual case: no file, no
// thread-pool round trip per read), spilled to the build's own file once it grows past it. Reads go through one
// small interface either way.
import { Writable } from 'node:stream'
import { closeSync, openSync, readSync } from 'node:fs'
import { open, type FileHandle } from 'node:fs/promises'
import { invalidArgument } from '../errors.js'

const CHUNK = 1024 * 1024

/** Reads `size` bytes at `start` in chunks of at most 1 MiB (one read for a small file). */
export async function * readRange (fh: FileHandle, start: number, size: number): AsyncGenerator<Buffer> {
  let done = 0
  while (done < size) {
    const buf = Buffer.allocUnsafe(Math.min(CHUNK, size - done))
    const { bytesRead } = await fh.read(buf, 0, buf.length, start + done)
    if (bytesRead === 0) throw invalidArgument('failed to read the build context: unexpected end of data')
    done += bytesRead
    yield bytesRead === buf.length ? buf : buf.subarray(0, bytesRead)
  }
}

/** Random access to the stored context. */
export interface ContextReader {
  /** `size` bytes at `offset` (fewer at the end of the data). */
  read (offset: number, size: number): Promise<Buffer>
  /** The same range as chunks of at most 1 MiB. */
  range (offset: number, size: number): AsyncGenerator<Buffer>
  close (): Promise<void>
}

class MemoryReader implements ContextReader {
  private readonly data: Buffer
  constructor (data: Buffer) { this.data = data }
  async read (offset: number, size: number): Promise<Buffer> { return this.data.subarray(offset, offset + size) }
  async * range (offset: number, size: number): AsyncGenerator<Buffer> {
    if (offset + size > this.data.length) throw invalidArgument('failed to read the build context: unexpected end of data')
    for (let o = offset; o < offset + size; o += CHUNK) yield this.data.subarray(o, Math.min(o + CHUNK, offset + size))
  }

  async close (): Promise<void> {}
}

class FileReader implements ContextReader {
  private readonly fh: FileHandle
  constructor (fh: FileHandle) { this.fh = fh }
  async read (offset: number, size: number): Promise<Buffer> {
    const buf = Buffer.allocUnsafe(size)
    const { bytesRead } = await this.fh.read(buf, 0, size, offset)
    return bytesRead === size ? buf : buf.subarray(0, bytesRead)
  }

  range (offset: number, size: number): AsyncGenerator<Buffer> { return readRange(this.fh, offset, size) }
  async close (): Promise<void> { await this.fh.close() }
}

/** Reads of small ranges made with direct calls (no event-loop turn): a slice of the memory, or a read of the file. */
export interface SyncReader {
  bytes (offset: number, size: number): Buffer
  close (): void
}

function fileSyncReader (file: string): SyncReader {
  const fd = openSync(file, 'r')
  return {
    bytes (offset, size) {
      const buf = Buffer.allocUnsafe(size)
      for (let got = 0; got < size;) {
        const n = readSync(fd, buf, got, size - got, offset + got)
        if (n === 0) throw invalidArgument('failed to read the build context: unexpected end of data')
        got += n
      }
      return buf
    },
    close () { closeSync(fd) }
  }
}

/** The stored bytes: `memory` when the body stayed under the threshold, else the file. */
export class StoredContext {
  readonly file: string
  readonly memory: Buffer | null
  readonly size: number
  constructor (file: string, memory: Buffer | null, size: number) {
    this.file = file
    this.memory = memory
    this.size = size
  }

  async open (): Promise<ContextReader> {
    return this.memory !== null ? new MemoryReader(this.memory) : new FileReader(await open(this.file, 'r'))
  }

  /** Direct reads (the caller closes it). */
  openSync (): SyncReader {
    const memory = this.memory
    if (memory === null) return fileSyncReader(this.file)
    return { bytes: (offset, size) => memory.subarray(offset, offset + size), close () {} }
  }
}

async function writeAll (fh: FileHandle, buf: Buffer): Promise<void> {
  for (let done = 0; done < buf.length;) done += (await fh.write(buf, done, buf.length - done, null)).bytesWritten
}

/** A sink that keeps up to `memLimit` bytes in memory and spills everything to `file` past that. */
export class ContextSink extends Writable {
  private parts: Buffer[] | null = []
  private total = 0
  private fh: FileHandle | null = null
  private readonly file: string
  private readonly memLimit: number

  constructor (file: string, memLimit: number) {
    super()
    this.file = file
    this.memLimit = memLimit
  }

  override _write (chunk: Buffer, _enc: BufferEncoding, cb: (err?: Error | null) => void): void {
    this.take(chunk).then(() => { cb() }, cb)
  }

  private async take (chunk: Buffer): Promise<void> {
    this.total += chunk.length
    if (this.parts !== null && this.total <= this.memLimit) { this.parts.push(chunk); return }
    if (this.fh === null) {
      this.fh = await open(this.file, 'w', 0o600)
      for (const p of this.parts ?? []) await writeAll(this.fh, p)
      this.parts = null
    }
    await writeAll(this.fh, chunk)
  }

  override _final (cb: (err?: Error | null) => void): void {
    const fh = this.fh
    this.fh = null
    if (fh === null) { cb(); return }
    fh.close().then(() => { cb() }, cb)
  }

  override _destroy (err: Error | null, cb: (err?: Error | null) => void): void {
    const fh = this.fh
    this.fh = null
    if (fh === null) { cb(err); return }
    fh.close().then(() => { cb(err) }, () => { cb(err) })
  }

  /** After the pipeline finished: what was stored. */
  stored (): StoredContext {
    return new StoredContext(this.file, this.parts !== null ? Buffer.concat(this.parts, this.total) : null, this.total)
  }
}
