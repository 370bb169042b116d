// Durable state writes: temp file, fsync, rename, fsync of the directory. A crash leaves the old or the new file.
// Without the directory fsync (syncDir: false) a power loss may still undo the rename, leaving the previous complete
// file: for records that are rewritten on every state change and reconciled at boot, atomicity is what matters.
import { open, rename, unlink } from 'node:fs/promises'
import { dirname, join, basename } from 'node:path'
import { randomBytes } from 'node:crypto'

export async function fsyncDir (dir: string): Promise<void> {
  const fh = await open(dir, 'r')
  try { await fh.sync() } finally { await fh.close() }
}

export interface AtomicWriteOptions {
  mode?: number
  syncDir?: boolean
  /**
   * false: the data is not flushed before the rename (nor the directory after). Only for a file that did not exist:
   * a crash of the process still leaves no file or the whole one; a power loss may leave no file, an empty one or
   * the whole one (never a mix of two versions, as there is only one), which a reader must take as no file.
   */
  sync?: boolean
  /**
   * Where the temp file is made (on the same filesystem as `path`): default beside it. A directory the owner empties
   * at start (an ingest area) keeps a crash mid-write from leaving temp files beside the documents for ever.
   */
  tmpDir?: string
}

/** Flushes a file's data to the disk (a write that skipped it, made durable later); a file gone meanwhile is no error. */
export async function fsyncFile (path: string): Promise<void> {
  let fh
  try { fh = await open(path, 'r') } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return
    throw err
  }
  try { await fh.datasync() } finally { await fh.close() }
}

export async function writeFileAtomic (path: string, data: string | Buffer, opts: AtomicWriteOptions = {}): Promise<void> {
  const mode = opts.mode ?? 0o600
  const tmp = join(opts.tmpDir ?? dirname(path), `.${basename(path)}.${randomBytes(6).toString('hex')}.tmp`)
  const fh = await open(tmp, 'w', mode)
  try {
    await fh.writeFile(data)
    if (opts.sync !== false) await fh.sync()
  } catch (err) {
    // best effort: the write's own error is the one reported; a temp file left over is harmless (another name)
    await fh.close().catch(() => {})
    await unlink(tmp).catch(() => {})
    throw err
  }
  await fh.close()
  try {
    await rename(tmp, path)
  } catch (err) {
    await unlink(tmp).catch(() => {}) // best effort: the rename's error is the one reported
    throw err
  }
  if (opts.syncDir !== false && opts.sync !== false) await fsyncDir(dirname(path))
}

export async function writeJsonAtomic (path: string, value: unknown): Promise<void> {
  await writeFileAtomic(path, JSON.stringify(value))
}
