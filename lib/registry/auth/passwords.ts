// User passwords: salted scrypt from node:crypto, encoded as `$scrypt$N=16384,r=8,p=1$<salt>$<hash>` (base64url), and
// the users file: one `name:hash` line per user, optionally `:ns1,ns2` (extra namespaces the user may push to; `*` for
// all). A user always owns the namespace spelled like their name. `#` starts a comment line.
import { randomBytes, scrypt as scryptCb, timingSafeEqual, type ScryptOptions } from 'node:crypto'
import { readFile } from 'node:fs/promises'
import { invalidArgument } from '../../errors.js'

const N = 16384
const R = 8
const P = 1
const KEY_LENGTH = 32

function scrypt (password: string, salt: Buffer, keylen: number, opts: ScryptOptions): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    scryptCb(password, salt, keylen, opts, (err, key) => { if (err !== null) reject(err); else resolve(key) })
  })
}

export async function hashPassword (password: string): Promise<string> {
  const salt = randomBytes(16)
  const key = await scrypt(password, salt, KEY_LENGTH, { N, r: R, p: P })
  return `$scrypt$N=${N},r=${R},p=${P}$${salt.toString('base64url')}$${key.toString('base64url')}`
}

const ENCODED = /^\$scrypt\$N=(\d+),r=(\d+),p=(\d+)\$([A-Za-z0-9_-]+)\$([A-Za-z0-9_-]+)$/

export function isPasswordHash (s: string): boolean { return ENCODED.test(s) }

export async function verifyPassword (password: string, encoded: string): Promise<boolean> {
  const m = ENCODED.exec(encoded)
  if (m === null) return false
  const [n, r, p] = [Number(m[1]), Number(m[2]), Number(m[3])]
  // refuse parameters that would make one login cost more than ~64 MiB or a second of CPU
  if (n > 1 << 17 || r > 16 || p > 4 || (n & (n - 1)) !== 0) return false
  const salt = Buffer.from(m[4] as string, 'base64url')
  const expected = Buffer.from(m[5] as string, 'base64url')
  const key = await scrypt(password, salt, expected.length, { N: n, r, p, maxmem: 256 * n * r + 1024 * 1024 })
  return key.length === expected.length && timingSafeEqual(key, expected)
}

export interface UserEntry {
  name: string
  hash: string
  /** Namespaces beyond the user's own that the user may push to; '*' means all. */
  namespaces: string[]
}

export function parseUsers (text: string, source = 'users file'): UserEntry[] {
  const out: UserEntry[] = []
  const seen = new Set<string>()
  text.split('\n').forEach((raw, i) => {
    const line = raw.trim()
    if (line === '' || line.startsWith('#')) return
    const [name, hash, namespaces, ...rest] = line.split(':')
    if (name === undefined || hash === undefined || rest.length > 0 || !/^[a-z0-9][a-z0-9._-]*$/.test(name) || !isPasswordHash(hash)) {
      throw invalidArgument(`${source}:${i + 1}: expected name:hash[:namespace,…] with a hash from \`berth registry passwd\``)
    }
    if (seen.has(name)) throw invalidArgument(`${source}:${i + 1}: user ${name} appears twice`)
    seen.add(name)
    out.push({ name, hash, namespaces: namespaces === undefined || namespaces === '' ? [] : namespaces.split(',').map((s) => s.trim()).filter((s) => s !== '') })
  })
  return out
}

export async function readUsersFile (path: string): Promise<UserEntry[]> {
  return parseUsers(await readFile(path, 'utf8'), path)
}
