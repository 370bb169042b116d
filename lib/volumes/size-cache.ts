// Volume sizes for `system df` that stay true without walking every volume on every request: a volume's tree is
// walked once, each of its directories watched (inotify, through fs.watch) from before it is read, and the size is
// remembered until any event arrives from the tree (writes by a container through its bind mount included: inotify
// follows inodes, not paths). Volumes with many directories, or when watches run out, are walked every time.
import { watch, type FSWatcher } from 'node:fs'
import { dirSizeSync } from './dir-size.js'
import { readdirSync, lstatSync } from 'node:fs'
import { join } from 'node:path'
import { logger } from '../log.js'

const log = logger('volumes')

/** Trees with more directories than this are not watched (walked on each request instead). */
const MAX_WATCHED_DIRS = 64

interface Entry { size: number, watchers: FSWatcher[], valid: boolean }

export class VolumeSizes {
  private readonly entries = new Map<string, Entry>()
  private watchesFailed = false
  /** Bumped whenever a remembered size stops being true (or one is dropped): callers key their own caches on it. */
  version = 0

  /** The remembered size, when it is still true. */
  cached (key: string): number | undefined {
    const e = this.entries.get(key)
    return e !== undefined && e.valid ? e.size : undefined
  }

  /** The apparent size of the tree at `path`, remembered under `key` while no change is seen. */
  async size (key: string, path: string): Promise<number> {
    const e = this.entries.get(key)
    if (e !== undefined && e.valid) return e.size
    this.forget(key)
    if (this.watchesFailed) return await dirSizeSync(path)
    const entry: Entry = { size: 0, watchers: [], valid: true }
    const invalidate = (): void => { if (entry.valid) { entry.valid = false; this.version++ } }
    let total = 0
    const stack = [path]
    while (stack.length > 0) {
      const dir = stack.pop() as string
      if (entry.watchers.length >= MAX_WATCHED_DIRS) { entry.valid = false; total += await dirSizeSync(dir); continue }
      try {
        const w = watch(dir, { persistent: false }, invalidate)
        w.on('error', invalidate)
        entry.watchers.push(w)
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOSPC' || (err as NodeJS.ErrnoException).code === 'EMFILE') {
          log('no more inotify watches: volume sizes are walked on each request')
          this.watchesFailed = true
        }
        entry.valid = false
      }
      let names
      try { names = readdirSync(dir, { withFileTypes: true }) } catch { continue }
      for (const d of names) {
        const p = join(dir, d.name)
        if (d.isDirectory()) stack.push(p)
        else { try { total += lstatSync(p).size } catch { /* vanished */ } }
      }
    }
    entry.size = total
    if (entry.valid) this.entries.set(key, entry)
    else for (const w of entry.watchers) w.close()
    return total
  }

  forget (key: string): void {
    const e = this.entries.get(key)
    if (e === undefined) return
    this.version++
    for (const w of e.watchers) w.close()
    this.entries.delete(key)
  }

  close (): void {
    for (const key of [...this.entries.keys()]) this.forget(key)
  }
}
