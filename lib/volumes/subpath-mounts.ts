// The host side of subpath mounts, as dockerd's safepath does it: the subpath is opened inside its volume through
// handles (subpath.ts) and that handle (/proc/<pid>/fd/N) is bind-mounted onto a private mount point, which the
// runtime then binds into the container. The runtime never resolves a path inside the volume itself, so a container
// that swaps a directory of a shared volume for a symlink cannot make it mount a host directory.
//
//   <exec-root>/subpaths/<container id>-<n>    one mount point per subpath mount of a running container
//
// A mount point lives while its container runs: let go when the container stops (or its start fails), and at daemon
// start for containers that are no longer running. Mount points are removed with rmdir/unlink only, never recursively.
import { execFile } from 'node:child_process'
import { mkdir, readdir, rmdir, unlink, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { errorMessage, internal } from '../errors.js'
import { logger } from '../log.js'
import { currentMounts } from '../runtime/rootfs.js'
import { openSubpath } from './subpath.js'

const log = logger('volumes')
const exec = promisify(execFile)

export class SubpathMounts {
  private readonly root: string

  constructor (root: string) { this.root = root }

  /** Mounts the volume directory's `subpath` for mount `index` of the container; returns the mount point. */
  async mount (containerId: string, index: number, volumeDir: string, subpath: string): Promise<string> {
    const opened = await openSubpath(volumeDir, subpath)
    try {
      await mkdir(this.root, { recursive: true, mode: 0o700 })
      const target = join(this.root, `${containerId}-${index}`)
      await this.letGo(target, (await currentMounts()).has(target))
      if (opened.isDirectory) await mkdir(target, { mode: 0o700 })
      else await writeFile(target, '', { mode: 0o600 })
      try {
        // --no-canonicalize: mount(2) gets the handle's magic link itself, which the kernel follows to the entry opened
        await exec('mount', ['--no-canonicalize', '--bind', `/proc/${process.pid}/fd/${opened.handle.fd}`, target], { timeout: 30_000 })
      } catch (err) {
        await this.letGo(target, false)
        throw internal(`failed to mount resolved path: ${((err as { stderr?: string }).stderr ?? errorMessage(err)).trim()}`, { cause: err })
      }
      return target
    } finally { await opened.handle.close() }
  }

  /** The container stopped: its subpath mount points go. */
  async release (containerId: string): Promise<void> {
    const mine = (await this.entries()).filter((n) => n.startsWith(`${containerId}-`))
    if (mine.length === 0) return
    const mounted = await currentMounts()
    for (const name of mine) {
      const target = join(this.root, name)
      await this.letGo(target, mounted.has(target)).catch((err) => { log('subpath mount %s: %s', target, errorMessage(err)) })
    }
  }

  /** Daemon start: the mount points of containers that are not running (they stopped while it was down) go. */
  async settle (running: ReadonlySet<string>): Promise<void> {
    const ids = new Set((await this.entries()).map((n) => n.replace(/-\d+$/, '')))
    for (const id of ids) if (!running.has(id)) await this.release(id)
  }

  private async entries (): Promise<string[]> {
    // no subpaths/ yet: no mount points
    return await readdir(this.root).catch(() => [] as string[])
  }

  private async letGo (target: string, mounted: boolean): Promise<void> {
    if (mounted) await exec('umount', ['--lazy', target], { timeout: 30_000 })
    await rmdir(target).catch(async (err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOTDIR') await unlink(target)
      else if (err.code !== 'ENOENT') throw err
    })
  }
}
