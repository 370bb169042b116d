// dockerd's copy-up: a new, empty volume mounted over a path the image has content at is filled from the image first,
// with owners, modes, times and links. The copy goes to a hidden directory beside the volume's _data and replaces the
// (still empty) _data by rename(2): a crash leaves the volume empty (the leftover is removed at boot) or complete.
import { lstat, mkdir, readdir, rename, rm, chown, chmod } from 'node:fs/promises'
import { join } from 'node:path'
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { randomBytes } from 'node:crypto'
import { ScopedRoot, atForChild } from '../util/scoped-fs.js'
import { errorMessage, internal } from '../errors.js'

const exec = promisify(execFile)

export async function isEmptyDir (dir: string): Promise<boolean> {
  try { return (await readdir(dir)).length === 0 } catch { return false }
}

/**
 * Copies `path` of the root filesystem at `rootfs` into the volume directory `volumeDir` (whose data is `_data`),
 * when `_data` is empty and the path is a directory with entries there. Returns whether it copied.
 */
export async function copyUp (rootfs: string, path: string, volumeDir: string): Promise<boolean> {
  const data = join(volumeDir, '_data')
  if (!(await isEmptyDir(data))) return false
  const root = await ScopedRoot.open(rootfs)
  let loc
  try { loc = await root.locate(path, { followLast: true }) } catch { await root.close(); return false }
  try {
    const srcPath = atForChild(loc.dir, loc.name === '' ? '.' : loc.name)
    const st = await lstat(srcPath).catch(() => null)
    if (st === null || !st.isDirectory()) return false
    const tmp = join(volumeDir, `.copyup-${randomBytes(6).toString('hex')}`)
    await mkdir(tmp)
    try {
      if ((await readdir(srcPath)).length > 0) await exec('cp', ['-a', '--', `${srcPath}/.`, tmp])
      await chown(tmp, st.uid, st.gid)
      await chmod(tmp, st.mode & 0o7777)
      // rename(2) replaces an empty directory atomically; a _data that got content meanwhile is left alone
      if (!(await isEmptyDir(data))) { await rm(tmp, { recursive: true, force: true }); return false }
      await rename(tmp, data)
    } catch (err) {
      await rm(tmp, { recursive: true, force: true }).catch(() => {}) // best effort: a leftover .copyup- goes at the next start
      if ((err as NodeJS.ErrnoException).code === 'ENOTEMPTY' || (err as NodeJS.ErrnoException).code === 'EEXIST') return false
      throw internal(`copying ${path} into the volume: ${errorMessage(err)}`, { cause: err })
    }
    return true
  } finally {
    await loc.dir.close().catch(() => {}) // best effort: a read-only descriptor
    await root.close()
  }
}
