// Sends a byte range of a file to a writable (an HTTP response) through two buffers used over and over: one is read
// into from the file while the other is being written out, and a buffer is read into again only once its write has
// completed (the write callback: the socket took every byte, nothing refers to the buffer any more). A read stream
// allocates every chunk afresh: a 100 MiB blob was 100 MiB of new external memory, which drove V8 into full
// collections (40% of a registry pull's CPU, measured) and the allocator into page faults. With a pool, buffers
// also outlive the request: a pull allocates nothing.
import { open } from 'node:fs/promises'
import type { Writable } from 'node:stream'
import { internal } from '../errors.js'
import type { BufferPool } from '../util/buffer-pool.js'

/** Writes chunk and resolves once it has left the process (or rejects: the destination failed). */
function written (out: Writable, chunk: Buffer): Promise<void> {
  return new Promise((resolve, reject) => {
    out.write(chunk, (err) => { if (err === null || err === undefined) resolve(); else reject(err) })
  })
}

/**
 * Writes `length` bytes of the file at `path` from `start` to `out` through buffers from `pool`, then ends `out`.
 * `out` must be done with a chunk once its write calls back (a socket, an HTTP response, a file stream; not a
 * stream that passes the buffer on, such as a PassThrough: the buffer is read into again).
 * Rejects when the file ends early or the destination fails or closes; `out` is then destroyed (its reply cut
 * short, as a client must notice).
 */
export async function sendFile (path: string, out: Writable, start: number, length: number, pool: BufferPool): Promise<void> {
  const fh = await open(path, 'r')
  // a destination that closes with a write pending behind a full socket: the write's callback reports it, and this
  // makes sure nothing waits for ever meanwhile
  let onClose!: () => void
  const closed = new Promise<never>((_resolve, reject) => { onClose = () => { reject(internal('destination closed')) } })
  closed.catch(() => {}) // only ever raced against a write
  out.once('close', onClose)
  const buffers = length > pool.size ? [pool.take(), pool.take()] : [pool.take()]
  let clean = false
  try {
    let pos = start
    let left = length
    let pending: Promise<void> | null = null
    for (let i = 0; left > 0; i = (i + 1) % buffers.length) {
      const buf = buffers[i] as Buffer
      // this buffer's last write was awaited before the other buffer's write began: it is free
      const { bytesRead } = await fh.read(buf, 0, Math.min(buf.length, left), pos)
      if (bytesRead === 0) throw internal(`${path} ended ${left} bytes early`)
      pos += bytesRead
      left -= bytesRead
      if (pending !== null) await pending
      if (out.destroyed) throw internal('destination closed')
      pending = Promise.race([written(out, bytesRead === buf.length ? buf : buf.subarray(0, bytesRead)), closed])
      pending.catch(() => {}) // awaited after the next read: its failure is not unhandled meanwhile
      if (buffers.length === 1) await pending
    }
    if (pending !== null) await pending
    clean = true
    out.end()
  } catch (err) {
    out.destroy()
    throw err
  } finally {
    out.removeListener('close', onClose)
    // a buffer goes back only when every write from it completed (after a failure a cancelled write may still
    // hold one: those are left to the garbage collector)
    if (clean) for (const b of buffers) pool.give(b)
    await fh.close()
  }
}
