// The modes of what a daemon keeps on disk, and their repair. The engine's data and exec roots and the registry's
// storage are private to the user running them (dockerd since 20.10.9, CVE-2021-41091): a host user who could
// traverse them would run a container's setuid files, open its device nodes, and read its environment and logs.
// Only what a container reads through a bind mount (hosts, resolv.conf, hostname) and the trees a container sees as
// its own (a layer's diff/, a container's diff/ and rootfs/, a volume's _data) keep the modes they need; the
// directories above them are 0700, so no host user reaches them.
import { lstat, open, readdir, readFile } from 'node:fs/promises'
import { constants as fsc, type Dirent } from 'node:fs'
import { join } from 'node:path'
import { writeFileAtomic } from './atomic.js'

/** A directory of daemon state: its owner only. */
export const PRIVATE_DIR = 0o700
/** A record (JSON state, blobs, specs, keys): its owner only. */
export const PRIVATE_FILE = 0o600
/** A container's log, as dockerd's json-file logs: the owner writes, the owner's group reads. */
export const LOG_FILE = 0o640
/** A file a container reads through a bind mount as any user (hosts, resolv.conf, hostname). */
export const CONTAINER_READ_FILE = 0o644

/**
 * What an entry should be: `dir`/`file` the mode of a directory/regular file there (undefined: leave it), `child`
 * the rule for each entry of a directory (undefined: leave the entry and what is below it). Symlinks, sockets, FIFOs
 * and devices are never changed.
 */
export interface ModeRule {
  dir?: number
  file?: number
  child?: (name: string) => ModeRule | undefined
}

/** The entry itself, nothing below it. */
export const PRIVATE_ENTRY: ModeRule = { dir: PRIVATE_DIR, file: PRIVATE_FILE }
/** The entry and everything below it. */
export const PRIVATE_TREE: ModeRule = { dir: PRIVATE_DIR, file: PRIVATE_FILE, child: () => PRIVATE_TREE }

/** The file in a root recording the version of the rules its whole tree was last repaired for. */
export const MODES_MARKER = '.modes'

/** Whether the whole tree of `root` was repaired for rules `version` (else a deep walk is due). */
export async function modesCurrent (root: string, version: number): Promise<boolean> {
  return (await readFile(join(root, MODES_MARKER), 'utf8').catch(() => '')).trim() === String(version)
}

/** Records that the whole tree of `root` now follows rules `version`. */
export async function markModes (root: string, version: number): Promise<void> {
  await writeFileAtomic(join(root, MODES_MARKER), `${version}\n`, { mode: PRIVATE_FILE })
}

/** Keeps only the first level of a rule: the entry's own mode, nothing below it. */
export function topOnly (rule: ModeRule): ModeRule {
  return { ...(rule.dir !== undefined ? { dir: rule.dir } : {}), ...(rule.file !== undefined ? { file: rule.file } : {}) }
}

export interface RepairReport {
  /** Paths whose mode or owner was changed. */
  changed: string[]
  /** Paths the filesystem would not let us change (a read-only mount, a namespace file), with the error code. */
  refused: string[]
}

interface Owner { uid: number, gid: number }

function currentOwner (): Owner {
  return { uid: process.geteuid?.() ?? 0, gid: process.getegid?.() ?? 0 }
}

/**
 * Gives `path` and what its rule names below it their modes, and the running user as owner. Entries are changed
 * through a descriptor opened without following symlinks (O_NOFOLLOW) and checked to be the entry that was looked
 * at; an entry that vanishes meanwhile is skipped. Only entries that differ are opened: a tree already right costs
 * one readdir per directory and one lstat per entry. Paths in `skip` (absolute, as joined from `path`) are left
 * with what is below them.
 */
export async function repairModes (path: string, rule: ModeRule, o: { report?: RepairReport, skip?: readonly string[] } = {}): Promise<RepairReport> {
  const report = o.report ?? { changed: [], refused: [] }
  await repairEntry(path, rule, { owner: currentOwner(), report, skip: new Set(o.skip ?? []) }, undefined)
  return report
}

interface Walk { owner: Owner, report: RepairReport, skip: Set<string> }

async function repairEntry (path: string, rule: ModeRule, w: Walk, type: Dirent | undefined): Promise<void> {
  if (type !== undefined && !type.isDirectory() && !type.isFile()) return
  if (w.skip.has(path)) return
  let st
  try { st = await lstat(path) } catch (err) { if (gone(err)) return; throw err }
  const isDir = st.isDirectory()
  if (!isDir && !st.isFile()) return
  const want = isDir ? rule.dir : rule.file
  if (want !== undefined && ((st.mode & 0o7777) !== want || st.uid !== w.owner.uid || st.gid !== w.owner.gid)) {
    await fixEntry(path, isDir, st.ino, want, w.owner, w.report)
  }
  if (!isDir || rule.child === undefined) return
  let entries: Dirent[]
  try { entries = await readdir(path, { withFileTypes: true }) } catch (err) { if (gone(err)) return; throw err }
  await Promise.all(entries.map(async (e) => {
    const r = rule.child?.(e.name)
    if (r !== undefined) await repairEntry(join(path, e.name), r, w, e)
  }))
}

async function fixEntry (path: string, isDir: boolean, ino: number, mode: number, owner: Owner, report: RepairReport): Promise<void> {
  let fh
  try {
    fh = await open(path, fsc.O_RDONLY | fsc.O_NOFOLLOW | fsc.O_NONBLOCK | (isDir ? fsc.O_DIRECTORY : 0))
  } catch (err) {
    if (gone(err) || (err as NodeJS.ErrnoException).code === 'ELOOP') return
    throw err
  }
  try {
    const st = await fh.stat()
    // replaced between the lstat and the open: not the entry the rule was for
    if (st.ino !== ino || st.isDirectory() !== isDir) return
    if (st.uid !== owner.uid || st.gid !== owner.gid) await fh.chown(owner.uid, owner.gid)
    // chown clears setuid/setgid bits: the mode goes last
    await fh.chmod(mode)
    report.changed.push(path)
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code
    if (code !== 'EPERM' && code !== 'EROFS' && code !== 'EACCES') throw err
    report.refused.push(`${path} (${String(code)})`)
  } finally {
    await fh.close()
  }
}

function gone (err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException).code
  return code === 'ENOENT' || code === 'ENOTDIR'
}
