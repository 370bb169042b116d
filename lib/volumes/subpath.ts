// A volume mount's Subpath (VolumeOptions.Subpath, API 1.45): the subdirectory (or file) of the volume that is mounted,
// resolved as dockerd's safepath.Join resolves it: symlinks in the volume are followed the way the host follows them
// (a relative one stays a path in the volume; an absolute one names a host path, which is inside the volume only if it
// points below the volume's own directory), and a subpath that lands outside the volume is refused. What is returned
// is an open handle on the exact entry found, every step taken through handles with O_NOFOLLOW: a container that swaps
// a directory of the volume for a symlink meanwhile makes the lookup fail, it cannot redirect it (mount the handle, not
// the path: /proc/self/fd/N).
import { open, readlink, realpath, type FileHandle } from 'node:fs/promises'
import { constants as fsc } from 'node:fs'
import { posix } from 'node:path'
import { invalidArgument, notFound } from '../errors.js'
import { at, lstatAt, openDirAt } from '../util/scoped-fs.js'

const MAX_LINKS = 40

function components (path: string): string[] {
  return path.split('/').filter((p) => p !== '' && p !== '.')
}

export interface OpenedSubpath {
  /** The entry found (a directory, or a regular file). */
  handle: FileHandle
  isDirectory: boolean
  /** Its path below the volume, symlinks resolved. */
  rel: string
}

/**
 * Opens `subpath` inside the volume directory `base` (see above). Errors as dockerd's: a subpath that lands outside
 * the volume is invalid ("path concatenation escapes the base directory"), one that does not exist is not found
 * ("cannot access path …").
 */
export async function openSubpath (base: string, subpath: string): Promise<OpenedSubpath> {
  const baseReal = await realpath(base)
  const escapes = (): Error => invalidArgument(`path concatenation escapes the base directory, base: ${baseReal}, subpath: ${subpath}`)
  const missing = (err?: unknown): Error => notFound(`cannot access path ${posix.join(baseReal, subpath)}: no such file or directory`, err === undefined ? undefined : { cause: err })
  const stack: FileHandle[] = [await open(baseReal, fsc.O_RDONLY | fsc.O_DIRECTORY | fsc.O_NOFOLLOW)]
  const names: string[] = []
  const todo = components(subpath)
  let links = 0
  let found: OpenedSubpath | undefined
  try {
    while (todo.length > 0) {
      const comp = todo.shift() as string
      if (comp === '..') {
        if (stack.length === 1) throw escapes()
        await (stack.pop() as FileHandle).close()
        names.pop()
        continue
      }
      const cur = stack[stack.length - 1] as FileHandle
      const st = await lstatAt(cur, comp)
      if (st === undefined) throw missing()
      if (st.isSymbolicLink()) {
        if (++links > MAX_LINKS) throw missing()
        let target = await readlink(at(cur, comp))
        if (target.startsWith('/')) {
          // a host path: inside the volume only below its own directory
          const clean = posix.normalize(target)
          if (clean !== baseReal && !clean.startsWith(baseReal + '/')) throw escapes()
          while (stack.length > 1) await (stack.pop() as FileHandle).close()
          names.length = 0
          target = clean.slice(baseReal.length)
        }
        todo.unshift(...components(target))
        continue
      }
      if (todo.length === 0 && !st.isDirectory()) {
        if (!st.isFile()) throw invalidArgument(`subpath ${subpath} of the volume is neither a directory nor a regular file`)
        const fh = await open(at(cur, comp), fsc.O_RDONLY | fsc.O_NOFOLLOW | fsc.O_NONBLOCK)
        found = { handle: fh, isDirectory: false, rel: [...names, comp].join('/') }
        break
      }
      if (!st.isDirectory()) throw missing()
      stack.push(await openDirAt(cur, comp))
      names.push(comp)
    }
    // the volume itself for a subpath of `.` or `x/..`, as dockerd's
    found ??= { handle: stack.pop() as FileHandle, isDirectory: true, rel: names.join('/') }
    return found
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code
    if (code === 'ENOENT' || code === 'ENOTDIR' || code === 'ELOOP') throw missing(err)
    throw err
  } finally {
    for (const fh of stack) await fh.close()
  }
}
