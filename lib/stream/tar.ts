// tar-fs with safe defaults: entries never land outside the target directory, never through a symlink the same
// archive created, and never through a symlink that points out of the tree. Two things tar-fs does not do are added
// here: the setuid, setgid and sticky bits are kept (tar-fs masks every mode with 0o777), and character devices,
// block devices and FIFOs are created (tar-fs refuses them) as dockerd's archive package does.
import { createRequire } from 'node:module'
import type TarFs from 'tar-fs'
import fs from 'node:fs'
import { posix, join, relative, isAbsolute } from 'node:path'
import type { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { lstat, readlink } from 'node:fs/promises'
import { invalidArgument } from '../errors.js'
import { trackedFs } from './tracked-fs.js'
import { createSpecialFiles, isSpecialType, type SpecialEntry } from './special-files.js'

// tar-fs (and its streamx tree) is loaded on first use: an idle daemon does not carry it
let tarFsModule: typeof TarFs | null = null
function tarFs (): typeof TarFs {
  tarFsModule ??= createRequire(import.meta.url)('tar-fs') as typeof TarFs
  return tarFsModule
}

/**
 * A tar-stream extractor destroys the entry it is reading with the archive's error when the archive fails (its
 * source reset, cut short, or failing verification). Whoever takes entries (tar-fs, our own loop) may still be
 * making the entry's directory and not yet listening on it: the error, emitted on an entry nobody listens on,
 * would be thrown as an uncaught exception and stop the process. Each entry gets a listener at once; the failure
 * reaches the extraction's caller through the archive itself.
 */
export function entryErrorsViaArchive<T extends { on: (event: 'entry', fn: (header: unknown, stream: { on: (event: 'error', fn: () => void) => unknown }) => void) => unknown }> (extract: T): T {
  extract.on('entry', (_header, stream) => { stream.on('error', () => { /* the archive's error, reported by it */ }) })
  return extract
}

export interface TarHeaderLike {
  name: string
  type?: string | null
  linkname?: string | null
  mode?: number
  uid?: number
  gid?: number
  mtime?: Date
  devmajor?: number
  devminor?: number
}

/** Normalises an entry name to a relative path, or throws for names that escape (`..`). */
export function safeEntryName (name: string): string {
  const n = posix.normalize('/' + name.replace(/\\/g, '/')).slice(1)
  const raw = name.replace(/\\/g, '/').split('/')
  if (raw.includes('..')) throw invalidArgument(`invalid tar entry ${JSON.stringify(name)}: path contains '..'`)
  return n.replace(/\/$/, '')
}

export interface ExtractOptions {
  /** Skip entries for which this returns true (after validation), e.g. whiteouts. */
  skip?: (name: string, header: TarHeaderLike) => boolean
  /** Refuse symlinks with absolute targets or targets that leave the tree (archive PUT into a container). */
  strictLinks?: boolean
  /** Keep ownership from the archive (root only). */
  chown?: boolean
  /** Directory inside `dir` that is the root for link-target checks (defaults to dir). */
  root?: string
}

/**
 * Resolves `rel` inside `root` following symlinks as if `root` were `/` (a chroot-style walk), and reports whether
 * an existing path component is a symlink that would carry a write outside `root`.
 */
export async function escapesThroughSymlink (root: string, rel: string): Promise<boolean> {
  const parts = rel.split('/').filter((p) => p !== '' && p !== '.')
  let cur = ''
  for (let i = 0; i < parts.length - 1; i++) {
    cur = cur === '' ? parts[i] as string : `${cur}/${parts[i] as string}`
    let st
    try { st = await lstat(join(root, cur)) } catch { return false }
    if (!st.isSymbolicLink()) continue
    const target = await readlink(join(root, cur))
    const resolved = isAbsolute(target) ? posix.normalize(target) : posix.normalize('/' + posix.join(posix.dirname(cur), target))
    // a link that stays inside the tree is followed in the next component; one that leaves it is refused
    if (resolved.startsWith('/..') || resolved === '/..') return true
    const rest = parts.slice(i + 1).join('/')
    return await escapesThroughSymlink(root, posix.join(resolved.slice(1), rest))
  }
  return false
}

export async function extractTar (src: Readable, dir: string, o: ExtractOptions = {}): Promise<void> {
  const createdLinks = new Set<string>()
  let failure: Error | null = null
  const fail = (err: Error): true => {
    if (failure === null) {
      failure = err
      process.nextTick(() => { extract.destroy(err) })
    }
    return true
  }
  const chown = o.chown ?? (process.getuid?.() === 0)
  // devices and FIFOs are made once the stream is done (tar-fs cannot); a later entry of the same name wins
  const special = new Map<string, SpecialEntry>()
  // tar-fs chmods every entry with `mode & 0o777` after its chown; the entry being written gets its full mode back
  let current: { path: string, mode: number } | null = null
  const files = trackedFs({
    chmod (path, mode, cb) {
      fs.chmod(path as string, current !== null && current.path === path ? current.mode : mode as number, cb as (err: NodeJS.ErrnoException | null) => void)
    }
  })
  const extract = tarFs().extract(dir, {
    fs: files.fs,
    umask: 0,
    // image layers legitimately hold absolute symlinks (/bin/sh -> /bin/busybox); writes through links are refused
    // by our own check below instead
    validateSymlinks: o.strictLinks === true,
    chown,
    map (header: TarHeaderLike) {
      current = { path: join(dir, join('/', header.name)), mode: (header.mode ?? 0) & 0o7777 }
      return header
    },
    ignore (fullName: string, header?: TarHeaderLike) {
      if (header === undefined) return false
      let rel: string
      try {
        rel = safeEntryName(header.name)
      } catch (err) { return fail(err as Error) }
      if (rel === '') return true
      for (const link of createdLinks) {
        if (rel.startsWith(link + '/')) return fail(invalidArgument(`invalid tar entry ${JSON.stringify(header.name)}: path goes through a symlink`))
      }
      special.delete(rel)
      if (header.type === 'symlink') {
        const target = header.linkname ?? ''
        const resolved = isAbsolute(target) ? posix.normalize(target) : posix.normalize('/' + posix.join(posix.dirname(rel), target))
        if (o.strictLinks === true && (isAbsolute(target) || resolved.startsWith('/..'))) {
          return fail(invalidArgument(`invalid tar entry ${JSON.stringify(header.name)}: symlink target ${JSON.stringify(target)} leaves the directory`))
        }
        createdLinks.add(rel)
      }
      if (header.type === 'link') {
        const target = header.linkname ?? ''
        if (target.split('/').includes('..')) return fail(invalidArgument(`invalid tar entry ${JSON.stringify(header.name)}: hard link target leaves the directory`))
      }
      if (o.skip?.(rel, header) === true) return true
      const where = relative(dir, fullName)
      if (where.startsWith('..') || isAbsolute(where)) return fail(invalidArgument(`invalid tar entry ${JSON.stringify(header.name)}`))
      if (isSpecialType(header.type)) {
        special.set(rel, {
          name: rel,
          type: header.type,
          mode: (header.mode ?? 0) & 0o7777,
          uid: header.uid ?? 0,
          gid: header.gid ?? 0,
          devmajor: header.devmajor ?? 0,
          devminor: header.devminor ?? 0,
          mtime: header.mtime
        })
        return true
      }
      return false
    }
  } as unknown as TarFs.ExtractOptions)
  entryErrorsViaArchive(extract as unknown as Parameters<typeof entryErrorsViaArchive>[0])
  try {
    await pipeline(src, extract)
  } catch (err) {
    // tar-fs's file calls already under way go on after its stream is destroyed: none starts now, and the caller
    // hears of the failure once the last has returned (it removes the half-made tree next)
    files.stop(failure ?? err as Error)
    await files.idle()
    throw failure ?? err
  }
  if (failure !== null) {
    files.stop(failure)
    await files.idle()
    throw failure
  }
  if (special.size > 0) await createSpecialFiles(dir, [...special.values()], { chown })
}

export function packDir (dir: string, entries?: string[]): Readable {
  return tarFs().pack(dir, { ...(entries !== undefined ? { entries } : {}), umask: 0 } as TarFs.PackOptions) as unknown as Readable
}
