// An image's filesystem as a plain directory tree (COPY --from): its unpacked layers applied lowest first, whiteouts
// (`.wh.<name>`) removing what lower layers had, opaque markers (`.wh..wh..opq`) emptying a directory first.
import { cp, lstat, mkdir, readdir, rm } from 'node:fs/promises'
import { join } from 'node:path'

const WHITEOUT = '.wh.'
const OPAQUE = '.wh..wh..opq'

async function applyDir (layer: string, dest: string, rel: string): Promise<void> {
  const names = await readdir(join(layer, rel))
  if (names.includes(OPAQUE)) {
    for (const n of await readdir(join(dest, rel)).catch(() => [] as string[])) await rm(join(dest, rel, n), { recursive: true, force: true })
  }
  for (const n of names) {
    if (n === OPAQUE) continue
    if (n.startsWith(WHITEOUT)) { await rm(join(dest, rel, n.slice(WHITEOUT.length)), { recursive: true, force: true }); continue }
  }
  for (const n of names) {
    if (n.startsWith(WHITEOUT)) continue
    const r = rel === '' ? n : `${rel}/${n}`
    const st = await lstat(join(layer, r))
    if (st.isDirectory()) {
      const existing = await lstat(join(dest, r)).catch(() => undefined)
      if (existing !== undefined && !existing.isDirectory()) await rm(join(dest, r), { force: true })
      await mkdir(join(dest, r), { recursive: true, mode: st.mode & 0o7777 })
      await applyDir(layer, dest, r)
    } else {
      await rm(join(dest, r), { recursive: true, force: true })
      await cp(join(layer, r), join(dest, r), { preserveTimestamps: true, verbatimSymlinks: true, force: true })
    }
  }
}

export async function mergeLayers (layers: readonly string[], dest: string): Promise<void> {
  await mkdir(dest, { recursive: true })
  for (const l of layers) await applyDir(l, dest, '')
}
