// The build context: the request body (a tar, plain or gzip) unpacked under the build's own temp directory, with a
// size limit, `..`/absolute entries refused, then .dockerignore applied (clients filter too; raw API callers may not).
import { readdir, readFile, rm, lstat } from 'node:fs/promises'
import { join } from 'node:path'
import { Transform, type Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { extractTar } from '../stream/tar.js'
import { decompressed } from '../image/image-service.js'
import { tooLarge, invalidArgument } from '../errors.js'
import { parseDockerignore, isIgnored, type IgnorePattern } from './dockerignore.js'

/**
 * A pass-through that fails once more than `limit` bytes went through, and that ends the tar properly: padding to a
 * whole block plus the two end-of-archive blocks (the docker CLI's context for a Dockerfile outside the context
 * ends right after the last entry's data, which dockerd's reader accepts; extra zero blocks are harmless).
 */
function contextGuard (limit: number): Transform {
  let n = 0
  return new Transform({
    transform (chunk: Buffer, _enc, cb) {
      n += chunk.length
      if (n > limit) { cb(tooLarge(`the build context is larger than the limit of ${limit} bytes`)); return }
      cb(null, chunk)
    },
    flush (cb) { cb(null, Buffer.alloc((512 - (n % 512)) % 512 + 1024)) }
  })
}

export interface ContextOptions {
  /** Limit on the (uncompressed) tar stream. */
  limit: number
  /** The Dockerfile's path in the context (never removed by .dockerignore). */
  dockerfile: string
}

export async function unpackContext (body: Readable, dir: string, o: ContextOptions): Promise<IgnorePattern[]> {
  const guard = contextGuard(o.limit)
  try {
    await Promise.all([pipeline(await decompressed(body), guard), extractTar(guard, dir, { chown: false, strictLinks: false })])
  } catch (err) {
    if ((err as { kind?: string }).kind !== undefined) throw err
    throw invalidArgument(`failed to read the build context: ${(err as Error).message}`)
  }
  const ignoreText = await readFile(join(dir, '.dockerignore'), 'utf8').catch(() => '')
  const patterns = parseDockerignore(ignoreText)
  if (patterns.length > 0) await applyIgnore(dir, '', patterns, new Set([o.dockerfile.replace(/^\.?\/+/, ''), '.dockerignore']))
  return patterns
}

async function applyIgnore (root: string, rel: string, patterns: IgnorePattern[], keep: Set<string>): Promise<void> {
  const names = await readdir(join(root, rel)).catch(() => [] as string[])
  for (const name of names) {
    const r = rel === '' ? name : `${rel}/${name}`
    const st = await lstat(join(root, r))
    if (st.isDirectory()) {
      await applyIgnore(root, r, patterns, keep)
      if (isIgnored(patterns, r) && (await readdir(join(root, r))).length === 0) await rm(join(root, r), { recursive: true })
    } else if (!keep.has(r) && isIgnored(patterns, r)) await rm(join(root, r), { force: true })
  }
}
