// What the benchmarks share: the repo root, their targets and figures (median, timing, the commit measured), the
// docker CLI against a target, a free loopback port, the busybox base image, and a private Berth daemon (its own data
// root, and when it runs containers its own bridge, subnet and chains) with the cleanup a benchmark owes the host.
import http from 'node:http'
import net from 'node:net'
import { spawn, spawnSync, execFileSync, type ChildProcess } from 'node:child_process'
import { createReadStream, existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { randomBytes } from 'node:crypto'
import { fileURLToPath } from 'node:url'
import { purgeEngineNetwork } from '../../lib/network/purge.js'

export const ROOT = fileURLToPath(new URL('../../../', import.meta.url))

/** An engine a benchmark measures: Berth, or the one given with --compare. */
export interface Target { name: string, socket: string }

/** The target named `other` for a --compare value (unix:///path or a bare socket path), if one was given. */
export function compareTarget (compare: string | undefined): Target[] {
  return compare === undefined ? [] : [{ name: 'other', socket: compare.replace(/^unix:\/\//, '') }]
}

export function median (xs: number[]): number { const s = [...xs].sort((a, b) => a - b); return s[Math.floor(s.length / 2)] as number }

/** Seconds fn takes. */
export async function timed (fn: () => Promise<unknown>): Promise<number> {
  const t0 = process.hrtime.bigint()
  await fn()
  return Number(process.hrtime.bigint() - t0) / 1e9
}

/** The short commit the figures were measured at (`unknown` outside a git checkout). */
export function gitCommit (): string {
  try { return execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT, encoding: 'utf8' }).trim() } catch { return 'unknown' }
}

/** The docker CLI against a target, bounded in time. */
export function docker (t: Target, args: string[], timeoutMs = 60_000): { status: number, stdout: string, stderr: string } {
  const r = spawnSync('docker', args, { env: { ...process.env, DOCKER_HOST: `unix://${t.socket}` }, encoding: 'utf8', timeout: timeoutMs })
  return { status: r.status ?? -1, stdout: r.stdout ?? '', stderr: r.stderr ?? '' }
}

/** A TCP port that was free on 127.0.0.1 when asked. */
export async function freePort (): Promise<number> {
  return await new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => { const p = (s.address() as net.AddressInfo).port; s.close(() => { resolve(p) }) })
  })
}

/** Writes a busybox root filesystem tar into dir (tools/make-busybox-rootfs.mjs) and returns its path. */
export function busyboxTar (dir: string): string {
  const tar = join(dir, 'busybox.tar')
  execFileSync(process.execPath, [join(ROOT, 'tools/make-busybox-rootfs.mjs'), tar])
  return tar
}

/** Imports a root filesystem tar as repo:latest through the API (POST /images/create?fromSrc=-). */
export async function importTar (socket: string, tar: string, repo: string): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    const r = http.request({ socketPath: socket, method: 'POST', path: `/images/create?fromSrc=-&repo=${encodeURIComponent(repo)}&tag=latest`, headers: { 'Content-Type': 'application/x-tar' } }, (res) => { res.resume(); res.on('end', resolve) })
    r.on('error', reject)
    createReadStream(tar).pipe(r)
  })
}

/** A bridge, subnet and chain prefix of the benchmark's own (never the default berth0 another engine may use). */
export interface PrivateNetwork { bridge: string, prefix: string, args: string[] }

export function privateNetwork (letter: string): PrivateNetwork {
  const tag = randomBytes(2).toString('hex')
  const bridge = `b${letter.toLowerCase()}${tag}0`
  const prefix = `B${letter.toUpperCase()}${tag}`
  const bip = `10.${200 + Math.floor(Math.random() * 50)}.${Math.floor(Math.random() * 256)}.1/24`
  return { bridge, prefix, args: ['--bridge-name', bridge, '--bip', bip, '--network-prefix', prefix] }
}

/**
 * The daemon leaves its networking behind (as dockerd does): a benchmark removes it after itself (forwarders, links,
 * namespaces, chains), from the daemon's data and exec roots below dir.
 */
export async function removePrivateNetwork (n: PrivateNetwork, dir: string): Promise<void> {
  await purgeEngineNetwork({ dataRoot: join(dir, 'data'), execRoot: join(dir, 'run'), prefix: n.prefix, defaultBridge: n.bridge })
}

/** Lazily unmounts whatever is still mounted below dir (deepest first), so the directory can be removed. */
export function unmountUnder (dir: string): void {
  try { execFileSync('sh', ['-c', `grep -o " ${dir}[^ ]*" /proc/self/mountinfo | sort -r | xargs -r -n1 umount -l`]) } catch { /* none */ }
}

async function pingOk (socket: string): Promise<boolean> {
  return await new Promise((resolve) => {
    http.get({ socketPath: socket, path: '/_ping' }, (res) => { res.resume(); resolve(res.statusCode === 200) }).on('error', () => { resolve(false) })
  })
}

/**
 * A Berth daemon in a new temp dir: socket dir/b.sock, data root dir/data, exec root dir/run (short paths for the
 * shims' sockets), and the extra arguments; resolves once it answers /_ping (or after about 30 s).
 */
export async function startBerthDaemon (tmpPrefix: string, args: string[]): Promise<{ socket: string, child: ChildProcess, dir: string, network?: PrivateNetwork }> {
  const dir = mkdtempSync(join(tmpdir(), tmpPrefix))
  const socket = join(dir, 'b.sock')
  // never the default berth0 and BERTH chains another engine may use: a private network unless the caller gave one
  const network = args.includes('--network-prefix') ? undefined : privateNetwork('x')
  const child = spawn(process.execPath, [join(ROOT, 'dist/lib/cli/main.js'), 'daemon', '--config-file', '/dev/null', '-H', `unix://${socket}`, '--data-root', join(dir, 'data'), '--exec-root', join(dir, 'run'), ...args, ...(network?.args ?? [])], { stdio: 'ignore' })
  for (let i = 0; i < 400 && !existsSync(socket); i++) await new Promise((resolve) => setTimeout(resolve, 25))
  for (let i = 0; i < 600 && !await pingOk(socket); i++) await new Promise((resolve) => setTimeout(resolve, 50))
  return { socket, child, dir, ...(network !== undefined ? { network } : {}) }
}

/** SIGTERM to a daemon and wait for its exit (at once if it already exited). */
export async function stopDaemon (child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return
  const exited = new Promise((resolve) => child.once('exit', resolve))
  child.kill('SIGTERM')
  await exited
}

/**
 * Stops a daemon from startBerthDaemon and removes what it leaves behind: its private network when it had one (the
 * daemon leaves its bridge and chains, as dockerd does), what is still mounted below its dir, and the dir.
 */
export async function stopBerthDaemon (d: { child: ChildProcess, dir: string, network?: PrivateNetwork }, network?: PrivateNetwork): Promise<void> {
  await stopDaemon(d.child)
  const n = network ?? d.network
  if (n !== undefined) await removePrivateNetwork(n, d.dir)
  unmountUnder(d.dir)
  rmSync(d.dir, { recursive: true, force: true })
}
