// The files a task gets for its secrets and configs: written on a tmpfs (nodev, nosuid, noexec), never under the
// container's directory, with the reference's uid, gid and mode, and bound read-only at their targets.
import { execFile } from 'node:child_process'
import { chown, chmod, mkdir, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises'
import { join, isAbsolute } from 'node:path'
import { promisify } from 'node:util'
import { levelLogger } from '../log.js'
import { describeError } from '../errors.js'
import type { SwarmState, TaskRecord } from './model.js'
import { findSecret, secretData } from './secrets.js'
import type { SwarmKeys } from './swarm-keys.js'
import type { TaskFile } from './task-container-spec.js'

const ops = levelLogger('swarm:secrets')
const run = promisify(execFile)

/** The tmpfs that holds task files: mounted on first use; a plain directory where mounting is not possible. */
export class TaskFiles {
  private readonly root: string
  private ready: Promise<void> | null = null
  constructor (execRoot: string) { this.root = join(execRoot, 'swarm-files') }

  private async mount (): Promise<void> {
    await mkdir(this.root, { recursive: true, mode: 0o700 })
    const mounts = await readFile('/proc/self/mountinfo', 'utf8').catch(() => '')
    if (mounts.split('\n').some((l) => l.split(' ')[4] === this.root)) return
    await run('mount', ['-t', 'tmpfs', '-o', 'nodev,nosuid,noexec,mode=0700,size=64m', 'tmpfs', this.root]).catch((err) => { ops.warn('no tmpfs for task files (%s): secrets and configs go to a plain directory on disk', describeError(err)) })
  }

  async write (st: SwarmState, keys: SwarmKeys, t: TaskRecord): Promise<TaskFile[]> {
    this.ready ??= this.mount()
    await this.ready
    const cs = t.spec.containerSpec
    const out: TaskFile[] = []
    const dir = join(this.root, t.id)
    let n = 0
    for (const kind of ['secret', 'config'] as const) {
      for (const r of kind === 'secret' ? cs.secrets : cs.configs) {
        const s = findSecret(st, kind, r.id)
        if (s === undefined) throw new Error(`${kind} not found: ${r.id}`)
        if (r.file === undefined) continue // a config for the runtime (credential spec): nothing to mount
        const name = r.file.name
        const target = isAbsolute(name) ? name : kind === 'secret' ? `/run/secrets/${name}` : `/${name}`
        await mkdir(dir, { recursive: true, mode: 0o700 })
        const file = join(dir, `${kind}-${n++}`)
        await writeFile(file, secretData(keys, s), { mode: 0o600 })
        // a file its process cannot read is a failed task, not a silent one (dockerd: "error setting ownership")
        await chown(file, r.file.uid, r.file.gid).catch((err) => { throw new Error(`error setting ownership for ${kind} ${name}: ${describeError(err)}`, { cause: err }) })
        await chmod(file, r.file.mode)
        out.push({ source: file, target })
      }
    }
    return out
  }

  async remove (taskId: string): Promise<void> {
    await rm(join(this.root, taskId), { recursive: true, force: true })
  }

  /**
   * Removes the files of every task `known` does not name (after a restart: a daemon killed between a task's record
   * going and its files' removal left them, and nothing else names them). One directory read, at a recovery only.
   */
  async removeOthers (known: (taskId: string) => boolean): Promise<void> {
    const names = await readdir(this.root).catch(() => [] as string[])
    await Promise.all(names.filter((n) => !known(n)).map(async (n) => { await this.remove(n) }))
  }

  /**
   * Unmounts the tmpfs and removes its directory: for when no task that may run is left (after a swarm leave, at a
   * stop with no task running, at a start outside a swarm). The next write mounts it again.
   */
  async release (): Promise<void> {
    const pending = this.ready
    this.ready = null
    await pending?.catch(() => {}) // a failed mount was the failure of the write that waited for it
    // no directory, nothing mounted (the usual case at a start outside a swarm: one stat)
    if (await stat(this.root).then(() => false, () => true)) return
    const mounts = await readFile('/proc/self/mountinfo', 'utf8').catch(() => '')
    if (mounts.split('\n').some((l) => l.split(' ')[4] === this.root)) {
      try {
        await run('umount', [this.root])
      } catch (err) {
        ops.warn('task files stay mounted at %s: %s', this.root, describeError(err))
        return
      }
    }
    await rm(this.root, { recursive: true, force: true }).catch((err) => { ops.warn('removing %s: %s', this.root, describeError(err)) })
  }
}
