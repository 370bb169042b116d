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
