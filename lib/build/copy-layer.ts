// COPY/ADD as a layer written directly (no container): the files are laid out under a staging directory exactly as
// they must appear in the image (destination parents carrying the image's own owner and mode, symlinked parents
// followed), owned by root or --chown, --chmod applied, local tar archives unpacked for ADD; the staging tree is then
// packed as the layer tar.
import { chmod, cp, lchown, lstat, mkdir, readdir, readlink } from 'node:fs/promises'
import { createReadStream } from 'node:fs'
import { join, posix } from 'node:path'
import { extractTar } from '../stream/tar.js'
import { decompressed } from '../image/image-service.js'
import { invalidArgument } from '../errors.js'
import { statInLayers, destinationDirs } from './layer-lookup.js'
import { archiveKind, type CopySource } from './copy-sources.js'

export interface StageCopy {
  cmdName: string
  sources: CopySource[]
  /** The destination as written (relative ones are under the working directory). */
  dest: string
  workdir: string
  /** The current image's layer directories, lowest first. */
  layers: string[]
  staging: string
  chown?: { uid: number, gid: number }
  /** Keep the source owners (COPY --from without --chown). */
  preserveOwner: boolean
  chmod?: number
  /** ADD: unpack local archives. */
  unpackArchives: boolean
}

/** Follows symlinks in the image for every parent of `abs` (max 32 hops); returns the real path. */
export async function resolveInImage (layers: string[], abs: string): Promise<string> {
  let parts = posix.normalize(abs).split('/').filter((p) => p !== '')
  let hops = 0
  for (let i = 0; i < parts.length; i++) {
    const prefix = '/' + parts.slice(0, i + 1).join('/')
    const st = await statInLayers(layers, prefix)
    if (st?.isSymbolicLink() !== true) continue
    if (++hops > 32) throw invalidArgument(`too many levels of symbolic links: ${abs}`)
    let target = ''
    for (let l = layers.length - 1; l >= 0; l--) {
      try { target = await readlink(join(layers[l] as string, prefix)); break } catch { /* lower */ }
    }
    const resolved = target.startsWith('/') ? target : posix.join(posix.dirname(prefix), target)
    parts = [...posix.normalize(resolved).split('/').filter((p) => p !== ''), ...parts.slice(i + 1)]
    i = -1
  }
  return '/' + parts.join('/')
}

/** Creates `abs` and its parents in the staging tree with the image's attributes (or 0755 and the owner). */
async function ensureDir (o: StageCopy, abs: string, made: Set<string>): Promise<void> {
  for await (const { path: p, st } of destinationDirs(o.layers, o.cmdName, abs, made)) {
    const where = join(o.staging, p)
    await mkdir(where, { recursive: true })
    if (st !== undefined) {
      await chmod(where, st.mode & 0o7777)
      await lchown(where, st.uid, st.gid)
    } else {
      await chmod(where, 0o755)
      const owner = o.chown ?? { uid: 0, gid: 0 }
      await lchown(where, owner.uid, owner.gid)
    }
  }
}

/** Owner and mode for what was copied (recursively). */
async function fixup (o: StageCopy, path: string): Promise<void> {
  const st = await lstat(path)
  if (!o.preserveOwner || o.chown !== undefined) {
    const owner = o.chown ?? { uid: 0, gid: 0 }
    await lchown(path, owner.uid, owner.gid)
  }
  if (o.chmod !== undefined && !st.isSymbolicLink()) await chmod(path, o.chmod)
  if (st.isDirectory()) for (const n of await readdir(path)) await fixup(o, join(path, n))
}

export async function stageCopy (o: StageCopy): Promise<void> {
  let dest = o.dest.replace(/\\/g, '/')
  const endsInSlash = dest.endsWith('/') || dest.endsWith('/.') || dest === '.'
  if (!dest.startsWith('/')) dest = posix.join('/', o.workdir === '' ? '/' : o.workdir, dest)
  dest = posix.normalize(dest)
  const many = o.sources.length > 1
  if (many && !endsInSlash) throw invalidArgument(`When using ${o.cmdName} with more than one source file, the destination must be a directory and end with a /`)
  const made = new Set<string>()
  const realDest = await resolveInImage(o.layers, dest)
  const destStat = await statInLayers(o.layers, realDest)
  const destIsDir = endsInSlash || many || destStat?.isDirectory() === true
  for (const s of o.sources) {
    if (s.kind === 'dir') {
      await ensureDir(o, realDest, made)
      for (const n of await readdir(s.path)) {
        await cp(join(s.path, n), join(o.staging, realDest, n), { recursive: true, preserveTimestamps: true, verbatimSymlinks: true, force: true })
        await fixup(o, join(o.staging, realDest, n))
      }
      continue
    }
    if (o.unpackArchives && s.url === undefined) {
      const kind = await archiveKind(s.path)
      if (kind !== null) {
        await ensureDir(o, realDest, made)
        const before = new Set(await readdir(join(o.staging, realDest)))
        await extractTar(await decompressed(createReadStream(s.path)), join(o.staging, realDest), { chown: true })
        for (const n of await readdir(join(o.staging, realDest))) if (!before.has(n)) await fixup(o, join(o.staging, realDest, n))
        continue
      }
    }
    const target = destIsDir ? posix.join(realDest, s.name) : realDest
    await ensureDir(o, posix.dirname(target), made)
    await cp(s.path, join(o.staging, target), { preserveTimestamps: true, force: true })
    if (s.url !== undefined) await chmod(join(o.staging, target), 0o600)
    await fixup(o, join(o.staging, target))
  }
}
