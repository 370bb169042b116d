// An unprivileged host user for attack scenarios (spec/security/): made with useradd for one test, removed after it,
// and commands run as that user through setpriv (real and effective ids, no supplementary groups, no capabilities).
import { spawn, spawnSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'

export interface HostUser {
  name: string
  uid: number
  gid: number
  /** Runs a command as the user (no shell unless asked for); never throws for a failing command. */
  run: (cmd: string, args: string[], opts?: { timeoutMs?: number }) => Promise<{ status: number | null, stdout: string, stderr: string }>
}

interface TestContextLike { after: (fn: () => Promise<void> | void) => void }

/** Why a host user cannot be made here, or null when it can. */
export function hostUserSkipReason (): string | null {
  if (process.getuid?.() !== 0) return 'making a host user needs root'
  for (const [bin, pkg] of [['useradd', 'passwd'], ['userdel', 'passwd'], ['setpriv', 'util-linux']]) {
    const r = spawnSync(bin as string, ['--help'], { stdio: 'ignore' })
    if (r.error !== undefined) return `${bin as string} is not installed (apt-get install ${pkg as string})`
  }
  return null
}

/** A fresh system user without a home or a login shell, removed (with anything it still runs) when the test ends. */
export function makeHostUser (t: TestContextLike, prefix = 'bsec'): HostUser {
  const name = `${prefix}${randomBytes(4).toString('hex')}`
  const made = spawnSync('useradd', ['--system', '--no-create-home', '--shell', '/usr/sbin/nologin', '--user-group', name], { encoding: 'utf8' })
  if (made.status !== 0) throw new Error(`useradd ${name}: ${made.stderr}`)
  t.after(() => {
    spawnSync('pkill', ['-KILL', '-u', name])
    spawnSync('userdel', [name])
  })
  const ids = spawnSync('id', ['-u', name], { encoding: 'utf8' })
  const gids = spawnSync('id', ['-g', name], { encoding: 'utf8' })
  const uid = Number(ids.stdout.trim())
  const gid = Number(gids.stdout.trim())
  const run: HostUser['run'] = async (cmd, args, opts = {}) => await new Promise((resolve) => {
    // setpriv keeps its capabilities until its own exec (to apply --inh-caps), so the program it starts is looked up
    // with root's rights: a shell in between runs the command as the plain user, path lookup included
    const child = spawn('setpriv', [`--reuid=${uid}`, `--regid=${gid}`, '--clear-groups', '--inh-caps=-all', '--', '/bin/sh', '-c', 'exec "$@"', 'sh', cmd, ...args], { cwd: '/', env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin', HOME: '/' } })
    const out: Buffer[] = []
    const err: Buffer[] = []
    child.stdout.on('data', (d: Buffer) => out.push(d))
    child.stderr.on('data', (d: Buffer) => err.push(d))
    const timer = setTimeout(() => { child.kill('SIGKILL') }, opts.timeoutMs ?? 20_000)
    child.on('close', (status) => {
      clearTimeout(timer)
      resolve({ status, stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8') })
    })
    child.stdin.end()
  })
  return { name, uid, gid, run }
}
