// Container root filesystems: overlayfs over the image's unpacked layers where the kernel allows it, a copied
// tree otherwise. The daemon mounts with mount(8) (Node has no mount syscall) when it needs the tree itself (create of
// a container of a new image, cp, diff, export, commit); a start leaves the mount to the monitor (mount(2)).
import { execFile } from 'node:child_process'
import { mkdir, readFile, rm, cp, stat } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { internal } from '../errors.js'
import { logger } from '../log.js'

const log = logger('engine:rootfs')

export type RootfsKind = 'overlay' | 'copy'

export interface RootfsPaths { dir: string, merged: string, upper: string, work: string }

export function rootfsPaths (containerDir: string): RootfsPaths {
  return { dir: containerDir, merged: join(containerDir, 'rootfs'), upper: join(containerDir, 'diff'), work: join(containerDir, 'work') }
}

async function run (cmd: string, args: string[]): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    execFile(cmd, args, { timeout: 60_000 }, (err, _stdout, stderr) => {
      if (err !== null) reject(internal(`${cmd} ${args.join(' ')}: ${String(stderr).trim() || err.message}`, { cause: err }))
      else resolve()
    })
  })
}

/** Mount points currently present (from /proc/self/mountinfo, field 5). */
export async function currentMounts (): Promise<Set<string>> {
  const text = await readFile('/proc/self/mountinfo', 'utf8')
  const out = new Set<string>()
  for (const line of text.split('\n')) {
    const f = line.split(' ')
    if (f[4] !== undefined) out.add(f[4].replace(/\\040/g, ' '))
  }
  return out
}

/**
 * Whether a filesystem is mounted on `path`: its device differs from its parent directory's. True for the mounts the
 * runtime makes (overlay, tmpfs, nsfs); two stats instead of reading the whole of /proc/self/mountinfo (which grows
 * with every container and takes ms to read on a busy host).
 */
export async function isMountPoint (path: string): Promise<boolean> {
  try {
    const [here, parent] = await Promise.all([stat(path), stat(dirname(path))])
    return here.dev !== parent.dev
  } catch { return false }
}

/** The overlay mount options for a container's root filesystem (`layers` lowest first). */
export function overlayOptions (p: RootfsPaths, layers: string[]): string {
  return `lowerdir=${[...layers].reverse().join(':')},upperdir=${p.upper},workdir=${p.work}`
}

/** Creates the directories of an overlay root filesystem without mounting it (the monitor mounts it at start). */
export async function prepareOverlay (p: RootfsPaths): Promise<void> {
  await Promise.all([
    mkdir(p.merged, { recursive: true }),
    mkdir(p.upper, { recursive: true }),
    mkdir(p.work, { recursive: true, mode: 0o700 })
  ])
}

/**
 * Makes `merged` show the image layers (lowest first in `layers`) with the container's own writable layer on top.
 * Returns the kind used. `preferred` is what the container was created with (a copy never becomes overlay later).
 * `onFallback`: told why an overlay mount failed (a copy is used instead).
 */
export async function mountRootfs (p: RootfsPaths, layers: string[], preferred: RootfsKind, onFallback?: (cause: string) => void): Promise<RootfsKind> {
  await mkdir(p.merged, { recursive: true })
  if (await isMountPoint(p.merged)) return 'overlay'
  if (preferred === 'overlay' && layers.length > 0) {
    await mkdir(p.upper, { recursive: true })
    await mkdir(p.work, { recursive: true, mode: 0o700 })
    try {
      await run('mount', ['-t', 'overlay', 'overlay', '-o', overlayOptions(p, layers), p.merged])
      return 'overlay'
    } catch (err) {
      log('overlay mount failed, copying layers instead: %s', (err as Error).message)
      onFallback?.((err as Error).message)
    }
  }
  return 'copy'
}

/** Fills a copied rootfs from the layers (only once, at create). */
export async function copyLayers (p: RootfsPaths, layers: string[]): Promise<void> {
  await mkdir(p.merged, { recursive: true })
  for (const layer of layers) await cp(layer, p.merged, { recursive: true, force: true, verbatimSymlinks: true, preserveTimestamps: true })
}

export async function unmountRootfs (p: RootfsPaths): Promise<void> {
  if (!await isMountPoint(p.merged)) return
  try {
    await run('umount', [p.merged])
  } catch {
    await run('umount', ['-l', p.merged])
  }
}

export async function removeRootfs (p: RootfsPaths): Promise<void> {
  await unmountRootfs(p)
  await rm(p.merged, { recursive: true, force: true })
  await rm(p.upper, { recursive: true, force: true })
  await rm(p.work, { recursive: true, force: true })
}

/** A shareable IPC container's /dev/shm: a tmpfs the daemon mounts at `path` (kept until the container is removed). */
export async function mountShm (path: string, sizeBytes: number): Promise<void> {
  if (await isMountPoint(path)) return
  await mkdir(path, { recursive: true })
  await run('mount', ['-t', 'tmpfs', '-o', `nosuid,nodev,noexec,mode=1777,size=${sizeBytes}`, 'shm', path])
}

export async function unmountShm (path: string): Promise<void> {
  if (!await isMountPoint(path)) return
  await run('umount', ['-l', path])
}
