// Character devices, block devices and FIFOs from a tar archive, created the way dockerd's archive package does
// (mknod/mkfifo with the archived mode, owner and mtime). Node has neither call, so the coreutils tools do it, on a
// path reached through an open handle of the entry's directory (no symlink in the tree can redirect the write).
// Devices that the kernel refuses to create (no CAP_MKNOD) are skipped, as dockerd does in a user namespace.
import { runTool } from '../util/run-tool.js'
import { lchown, chmod, utimes } from 'node:fs/promises'
import { ScopedRoot, at, atForChild, removeAt } from '../util/scoped-fs.js'
import { logger } from '../log.js'

const log = logger('tar')

export type SpecialType = 'character-device' | 'block-device' | 'fifo'

export interface SpecialEntry {
  /** Path relative to the extraction root. */
  name: string
  type: SpecialType
  mode: number
  uid: number
  gid: number
  devmajor: number
  devminor: number
  mtime?: Date
}

export function isSpecialType (type: string | null | undefined): type is SpecialType {
  return type === 'character-device' || type === 'block-device' || type === 'fifo'
}

export async function createSpecialFiles (dir: string, entries: SpecialEntry[], o: { chown: boolean }): Promise<void> {
  const root = await ScopedRoot.open(dir)
  try {
    for (const e of entries) {
      const loc = await root.locate(e.name, { mkdirs: { mode: 0o755 } })
      try {
        if (loc.name === '') continue
        await removeAt(loc.dir, loc.name)
        const mode = (e.mode & 0o777).toString(8)
        const target = atForChild(loc.dir, loc.name)
        try {
          if (e.type === 'fifo') await runTool('mkfifo', ['-m', mode, target], 10_000)
          else await runTool('mknod', ['-m', mode, target, e.type === 'character-device' ? 'c' : 'b', String(e.devmajor), String(e.devminor)], 10_000)
        } catch (err) {
          if (e.type !== 'fifo' && (err as NodeJS.ErrnoException).code === 'EPERM') { log('skipping device %s: %s', e.name, (err as Error).message); continue }
          throw err
        }
        const path = at(loc.dir, loc.name)
        if (o.chown) await lchown(path, e.uid, e.gid)
        // after the chown, which clears setuid/setgid
        if ((e.mode & 0o7000) !== 0) await chmod(path, e.mode)
        if (e.mtime !== undefined) await utimes(path, e.mtime, e.mtime)
      } finally { await loc.dir.close() }
    }
  } finally { await root.close() }
}
