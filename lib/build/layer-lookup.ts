// Reads an image's filesystem from its unpacked layer directories without mounting them: the topmost layer that has
// a path (or a whiteout for it) decides. Used for a COPY destination's existing directories (their owner and mode go
// into the new layer unchanged), WORKDIR, and --chown names from /etc/passwd and /etc/group.
import { lstat } from 'node:fs/promises'
import { ScopedRoot, readScopedFile } from '../util/scoped-fs.js'
import { join, posix } from 'node:path'
import type { Stats } from 'node:fs'
import { invalidArgument } from '../errors.js'

const WHITEOUT = '.wh.'
const OPAQUE = '.wh..wh..opq'

async function exists (p: string): Promise<Stats | undefined> {
  try { return await lstat(p) } catch { return undefined }
}

/**
 * Where `/abs/path` is in the merged view of `layers` (lowest first): the topmost layer that has it, and its lstat;
 * undefined when absent. Walked as overlayfs merges, one component at a time, so a lookup never goes through a link:
 * a whiteout hides the path, a non-directory above it hides everything below it in the layers underneath (a symlink
 * included: resolve it first, see resolveInImage), an opaque directory hides the lower layers' contents.
 */
export async function lookupInLayers (layers: readonly string[], abs: string): Promise<{ layer: string, st: Stats } | undefined> {
  const rel = posix.normalize(abs).replace(/^\/+/, '')
  const top = layers[layers.length - 1]
  if (rel === '') {
    const st = top !== undefined ? await exists(top) : undefined
    return st !== undefined ? { layer: top as string, st } : undefined
  }
  const parts = rel.split('/')
  for (let i = layers.length - 1; i >= 0; i--) {
    const dir = layers[i] as string
    let opaque = false
    for (let k = 0; k < parts.length; k++) {
      // every component before k is a real directory of this layer: these lstats follow no link
      const parent = join(dir, ...parts.slice(0, k))
      if (await exists(join(parent, WHITEOUT + (parts[k] as string))) !== undefined) return undefined
      const st = await exists(join(parent, parts[k] as string))
      if (st === undefined) break
      if (k === parts.length - 1) return { layer: dir, st }
      if (!st.isDirectory()) return undefined
      if (await exists(join(parent, parts[k] as string, OPAQUE)) !== undefined) opaque = true
    }
    if (opaque) return undefined
  }
  return undefined
}

/** The stat of `/abs/path` in the merged view of `layers` (lowest first), or undefined when absent. */
export async function statInLayers (layers: readonly string[], abs: string): Promise<Stats | undefined> {
  return (await lookupInLayers(layers, abs))?.st
}

/**
 * A COPY destination's directory `abs` and its parents, shallowest first, skipping those already in `made` (each
 * yielded is added): with the image's stat of it, or undefined when the image has none. One that exists and is not a
 * directory is refused with `<cmdName> failed: cannot copy to <path>: not a directory`.
 */
export async function * destinationDirs (layers: readonly string[], cmdName: string, abs: string, made: Set<string>): AsyncGenerator<{ path: string, st: Stats | undefined }> {
  const parts = abs.split('/').filter((p) => p !== '')
  for (let i = 0; i < parts.length; i++) {
    const path = '/' + parts.slice(0, i + 1).join('/')
    if (made.has(path)) continue
    made.add(path)
    const st = await statInLayers(layers, path)
    if (st !== undefined && !st.isDirectory()) throw invalidArgument(`${cmdName} failed: cannot copy to ${path}: not a directory`)
    yield { path, st }
  }
}

/**
 * The text of the regular file `abs` in the merged view of `layers`. Read as `docker cp` reads a container's files:
 * links resolved inside the layer (never towards the host's files), no FIFO or device opened for reading, capped.
 */
export async function readInLayers (layers: readonly string[], abs: string): Promise<string | undefined> {
  const rel = abs.replace(/^\/+/, '')
  for (let i = layers.length - 1; i >= 0; i--) {
    const root = await ScopedRoot.open(layers[i] as string).catch(() => null)
    if (root === null) continue
    try {
      const text = await readScopedFile(root, rel)
      if (text !== null) return text.toString('utf8')
    } finally { await root.close() }
    if (await exists(join(layers[i] as string, posix.dirname(rel), WHITEOUT + posix.basename(rel))) !== undefined) return undefined
  }
  return undefined
}

/** Resolves a `user[:group]` (names or numbers) against the image's /etc/passwd and /etc/group. */
export async function resolveChown (layers: readonly string[], spec: string): Promise<{ uid: number, gid: number }> {
  const [user = '', group] = spec.split(':')
  const idOf = async (name: string, file: string): Promise<number> => {
    if (/^\d+$/.test(name)) return Number(name)
    const text = await readInLayers(layers, file)
    if (text === undefined) throw new Error(`unable to convert uid/gid chown string to host mapping: no such file: ${file}`)
    const line = text.split('\n').find((l) => l.split(':')[0] === name)
    if (line === undefined) throw new Error(`unable to convert uid/gid chown string to host mapping: unable to find ${file === '/etc/passwd' ? 'user' : 'group'} ${name}: no matching entries in ${file === '/etc/passwd' ? 'passwd' : 'group'} file`)
    return Number(line.split(':')[file === '/etc/passwd' ? 2 : 2])
  }
  const uid = await idOf(user, '/etc/passwd')
  let gid: number
  if (group !== undefined && group !== '') gid = await idOf(group, '/etc/group')
  else if (/^\d+$/.test(user)) gid = uid
  else {
    const text = await readInLayers(layers, '/etc/passwd') ?? ''
    gid = Number(text.split('\n').find((l) => l.split(':')[0] === user)?.split(':')[3] ?? uid)
  }
  return { uid, gid }
}
