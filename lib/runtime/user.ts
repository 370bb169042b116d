// Resolves Config.User ("name", "uid", "name:group", "uid:gid") against the container's /etc/passwd and /etc/group.
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { invalidArgument } from '../errors.js'

export interface ResolvedUser { uid: number, gid: number, additionalGids: number[], home: string }

/** A root filesystem's /etc/passwd and /etc/group ('' where missing). */
export interface UserFiles { passwd: string, group: string }

export async function readUserFiles (rootfs: string): Promise<UserFiles> {
  const read = async (name: string): Promise<string> => await readFile(join(rootfs, 'etc', name), 'utf8').catch(() => '')
  const [passwd, group] = await Promise.all([read('passwd'), read('group')])
  return { passwd, group }
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
