import { lstat, readdir } from 'node:fs/promises'
import { join } from 'node:path'

/** Apparent size of a tree (regular files and symlinks), without following links. */
export async function dirSize (dir: string): Promise<number> {
  let total = 0
  let entries
  try { entries = await readdir(dir, { withFileTypes: true }) } catch { return 0 }
  for (const e of entries) {
    const p = join(dir, e.name)
    if (e.isDirectory()) total += await dirSize(p)
    else {
      try { total += (await lstat(p)).size } catch { /* vanished */ }
    }
  }
  return total
}

/**
 * The size dockerd gives a layer (its directory.Size): the apparent sizes of everything that is not a directory,
 * each inode once (hard links count once), without following links.
 */
export async function contentSize (dir: string): Promise<number> {
  const seen = new Set<number>()
  const walk = async (d: string): Promise<number> => {
    let total = 0
    let entries
    try { entries = await readdir(d, { withFileTypes: true }) } catch { return 0 }
    for (const e of entries) {
      const p = join(d, e.name)
      if (e.isDirectory()) { total += await walk(p); continue }
      try {
        const st = await lstat(p)
        if (st.size === 0 || seen.has(st.ino)) continue
        seen.add(st.ino)
        total += st.size
      } catch { /* vanished */ }
    }
    return total
  }
  return await walk(dir)
}
