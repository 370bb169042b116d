// Resolves Config.User ("name", "uid", "name:group", "uid:gid") against the container's /etc/passwd and /etc/group.
import { invalidArgument } from '../errors.js'
import { ScopedRoot, readScopedFile, scopedKind } from '../util/scoped-fs.js'

export interface ResolvedUser { uid: number, gid: number, additionalGids: number[], home: string }

/**
 * A root filesystem's /etc/passwd and /etc/group ('' where missing). `unsafe`: why the runtime must not start a
 * process there (undefined: it may), see userFilesProblem.
 */
export interface UserFiles { passwd: string, group: string, unsafe?: string }

/** Where the runtime mounts its own filesystems over the image: a user file resolving there is not the image's. */
const RUNTIME_MOUNTS = ['/dev', '/proc', '/sys']

/**
 * Why the runtime would hang or read without end on `/etc/<name>` as found in `root`, or undefined. The runtime
 * (`runc init`, inside the container) opens /etc/passwd and /etc/group with blocking reads to set up every process's
 * user, even a numeric one: a FIFO there blocked a start for ever (the container stayed Created), a device (or a link
 * into /dev, /proc, /sys, which the runtime mounts) can block or never end. A missing file, or a directory, makes
 * it fail at once: fine.
 */
async function userFileProblem (root: ScopedRoot, name: string): Promise<string | undefined> {
  const k = await scopedKind(root, `/etc/${name}`)
  if (k.kind === 'fifo' || k.kind === 'socket' || k.kind === 'character device' || k.kind === 'block device') {
    return `/etc/${name} in the container is a ${k.kind}${k.path !== `/etc/${name}` ? ` (${k.path})` : ''}, not a regular file`
  }
  if (RUNTIME_MOUNTS.some((m) => k.path === m || k.path.startsWith(m + '/')) && k.path !== '/dev/null') {
    return `/etc/${name} in the container resolves to ${k.path}, which the runtime mounts over`
  }
  return undefined
}

/**
 * Reads them as `docker cp` reads a container's files: links resolved inside the rootfs (never towards the host's
 * files), no blocking on a FIFO, no device read, a size cap. `rootfs`: a root filesystem, or `/proc/<pid>/root` of a
 * running container (its mounts included).
 */
export async function readUserFiles (rootfs: string): Promise<UserFiles> {
  let root: ScopedRoot
  try { root = await ScopedRoot.open(rootfs) } catch { return { passwd: '', group: '' } }
  try {
    const read = async (name: string): Promise<string> => {
      try {
        return (await readScopedFile(root, `/etc/${name}`))?.toString('utf8') ?? ''
      } catch (err) {
        throw invalidArgument(`cannot read /etc/${name} of the container: ${(err as Error).message}`)
      }
    }
    const [passwd, group, p1, p2] = await Promise.all([read('passwd'), read('group'), userFileProblem(root, 'passwd'), userFileProblem(root, 'group')])
    const unsafe = p1 ?? p2
    return { passwd, group, ...(unsafe !== undefined ? { unsafe } : {}) }
  } finally { await root.close() }
}

/** Throws when the runtime cannot be let loose on these user files (see userFileProblem). */
export function checkUserFiles (files: UserFiles): void {
  if (files.unsafe !== undefined) {
    throw invalidArgument(`${files.unsafe}: the runtime reads /etc/passwd and /etc/group to set up the process's user and would block on it; refusing to start the process`)
  }
}

function lines (text: string): string[][] {
  return text.split('\n').filter((l) => l !== '' && !l.startsWith('#')).map((l) => l.split(':'))
}

/** Resolves `user` against a root filesystem (a path) or its already read user files. */
export async function resolveUser (rootfs: string | UserFiles, user: string): Promise<ResolvedUser> {
  const files = typeof rootfs === 'string' ? await readUserFiles(rootfs) : rootfs
  const passwd = lines(files.passwd)
  const group = lines(files.group)
  const [u = '', g] = user === '' ? ['0'] : user.split(':')
  let uid: number
  let gid: number
  let home = '/'
  let userName: string | undefined
  const byName = passwd.find((p) => p[0] === u)
  if (byName !== undefined) {
    uid = Number(byName[2]); gid = Number(byName[3]); home = byName[5] ?? '/'; userName = byName[0]
  } else if (/^\d+$/.test(u)) {
    uid = Number(u)
    const byUid = passwd.find((p) => Number(p[2]) === uid)
    gid = byUid !== undefined ? Number(byUid[3]) : 0
    home = byUid?.[5] ?? '/'
    userName = byUid?.[0]
  } else {
    throw invalidArgument(`unable to find user ${u}: no matching entries in passwd file`)
  }
  if (g !== undefined && g !== '') {
    const gr = group.find((x) => x[0] === g)
    if (gr !== undefined) gid = Number(gr[2])
    else if (/^\d+$/.test(g)) gid = Number(g)
    else throw invalidArgument(`unable to find group ${g}: no matching entries in group file`)
  }
  const additionalGids = userName === undefined
    ? []
    : group.filter((x) => (x[3] ?? '').split(',').includes(userName as string)).map((x) => Number(x[2])).filter((n) => n !== gid)
  return { uid, gid, additionalGids, home }
}

/** --group-add: numbers as given, names from the container's /etc/group. */
export function resolveGroups (names: string[], groupFile: string): number[] {
  const rows = groupFile.split('\n').filter((l) => l !== '' && !l.startsWith('#')).map((l) => l.split(':'))
  return names.map((g) => {
    const row = rows.find((r) => r[0] === g)
    if (row !== undefined) return Number(row[2])
    if (/^\d+$/.test(g)) return Number(g)
    throw invalidArgument(`Unable to find group ${g}: no matching entries in group file`)
  })
}

/** The supplementary groups of a process run as `user` in a container: the user's own, then --group-add's (each once). */
export function supplementaryGids (user: ResolvedUser, groupAdd: string[], groupFile: string): number[] {
  const extra = groupAdd.length === 0 ? [] : resolveGroups(groupAdd, groupFile)
  return [...new Set([...user.additionalGids, ...extra.filter((g) => g !== user.gid)])]
}
