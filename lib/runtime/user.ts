// Resolves Config.User ("name", "uid", "name:group", "uid:gid") against the container's /etc/passwd and /etc/group.
import { invalidArgument } from '../errors.js'
import { ScopedRoot, readScopedFile } from '../util/scoped-fs.js'

export interface ResolvedUser { uid: number, gid: number, additionalGids: number[], home: string }

/** A root filesystem's /etc/passwd and /etc/group ('' where missing). */
export interface UserFiles { passwd: string, group: string }

/**
 * Reads them as `docker cp` reads a container's files: links resolved inside the rootfs (never towards the host's
 * files), no blocking on a FIFO, no device read, a size cap.
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
    const [passwd, group] = await Promise.all([read('passwd'), read('group')])
    return { passwd, group }
  } finally { await root.close() }
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
