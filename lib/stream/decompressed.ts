// A stream with its gzip compression undone, if it has any (archive uploads, image loads and imports, build
// contexts, layer files: dockerd's DecompressStream for the one compression clients send).
//
// The first bytes are read and put back on the stream itself (unshift), so that what the caller gets is the source
// or a gunzip piped from it: a consumer that gives up destroys the source too. (A generator re-yielding the source's
// iterator did not: it waited for a next chunk before it could stop, and a request body stayed paused, unread and
// undestroyed, holding its connection open after the error reply.)
import { createRequire } from 'node:module'
import { PassThrough, Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'

/**
 * Reads until `n` bytes are buffered or the stream ends. What was read is put back on the stream; when the stream
 * ended within those bytes it cannot be, and `rest` is a new stream of them.
 */
export async function peek (src: Readable, n: number): Promise<{ head: Buffer, rest: Readable }> {
  const chunks: Buffer[] = []
  let size = 0
  let ended = false
  await new Promise<void>((resolve, reject) => {
    const finish = (err?: Error): void => {
      src.off('readable', onReadable)
      src.off('end', onEnd)
      src.off('error', finish)
      src.off('close', onClose)
      if (err !== undefined) reject(err); else resolve()
    }
    const onReadable = (): void => {
      let c: Buffer | null
      while (size < n && (c = src.read() as Buffer | null) !== null) { chunks.push(c); size += c.length }
      if (size >= n) finish()
    }
    const onEnd = (): void => { ended = true; finish() }
    const onClose = (): void => { finish(src.errored ?? new Error('premature close')) }
    if (src.errored !== null && src.errored !== undefined) { reject(src.errored); return }
    src.on('readable', onReadable)
    src.once('end', onEnd)
    src.once('error', finish)
    src.once('close', onClose)
    onReadable()
  })
  const head = chunks.length === 1 ? chunks[0] as Buffer : Buffer.concat(chunks, size)
  if (ended) return { head, rest: Readable.from(head.length > 0 ? [head] : []) }
  if (head.length > 0) src.unshift(head)
  return { head, rest: src }
}

export async function decompressed (src: Readable): Promise<Readable> {
  const { head, rest } = await peek(src, 2)
  if (head.length < 2 || head[0] !== 0x1f || head[1] !== 0x8b) return rest
  // zlib on first use: a daemon's start does not load it (~5 ms of a restart before /_ping). Required, not
  // import()ed: the bundled command (dist/lib/cli/berth.cjs) has no dynamic import() of Node's modules
  const { createGunzip } = createRequire(import.meta.url)('node:zlib') as typeof import('node:zlib')
  const out = new PassThrough()
  pipeline(rest, createGunzip(), out).catch((err: Error) => { out.destroy(err) })
  return out
}
