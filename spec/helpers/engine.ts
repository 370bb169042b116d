// Test helpers: an engine on a temp Unix socket and data root, a busybox image, raw HTTP over the socket.
import { mkdtempSync, mkdirSync, rmSync, existsSync, createReadStream, readFileSync, writeFileSync, appendFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, relative } from 'node:path'
import http from 'node:http'
import net from 'node:net'
import { execFileSync, spawnSync, spawn, type ChildProcess } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { fileURLToPath } from 'node:url'
import { once } from 'node:events'
import { createEngine, type Engine } from '../../lib/index.js'
import { purgeEngineNetwork } from '../../lib/network/purge.js'

export const ROOT = fileURLToPath(new URL('../../../', import.meta.url))

/** Why containers cannot run here, or null when they can. */
export function containerSkipReason (): string | null {
  if (process.getuid?.() !== 0) return 'containers need root'
  const r = spawnSync('runc', ['--version'])
  if (r.error !== undefined || r.status !== 0) return 'runc is not installed (apt-get install runc)'
  if (!existsSync(join(ROOT, 'dist', 'berth-shim'))) return 'dist/berth-shim is not built (npm run build)'
  if (!['/usr/bin/busybox', '/bin/busybox'].some((p) => existsSync(p))) return 'busybox-static is not installed'
  return null
}

export function tmpDir (prefix = 'berth-'): string {
  // short paths: Unix socket paths are limited to 107 bytes
  const dir = mkdtempSync(join(tmpdir(), prefix))
  // tools/run-tests.mjs names the test file of each directory still there at the end of the run from this log
  const dirlog = process.env.BERTH_TEST_DIRLOG
  if (dirlog !== undefined && dirlog !== '') appendFileSync(dirlog, `${dir} ${relative(ROOT, process.argv[1] ?? '?').replace(/^dist\//, '').replace(/\.js$/, '.ts')}\n`)
  return dir
}

let busyboxTarPath: string | null = null
/** Builds the busybox rootfs tar once per test process. */
export function busyboxTar (): string {
  if (busyboxTarPath !== null && existsSync(busyboxTarPath)) return busyboxTarPath
  const dir = tmpDir('berth-bb-')
  const out = join(dir, 'busybox.tar')
  execFileSync(process.execPath, [join(ROOT, 'tools', 'make-busybox-rootfs.mjs'), out])
  process.once('exit', () => { rmSync(dir, { recursive: true, force: true }) })
  busyboxTarPath = out
  return out
}

export interface TestEngine {
  engine: Engine
  dir: string
  socket: string
  dataRoot: string
  /**
   * A /16 no other test engine on the host takes subnets from (its default address pool): for `swarm init
   * --default-addr-pool`, so that its overlays never share a subnet with another engine's networks (the default
   * 10.0.0.0/8 is every swarm's on the host).
   */
  swarmPool: string
  close: () => Promise<void>
}

interface TestContextLike { after: (fn: () => Promise<void> | void) => void }

/**
 * Networking options unique to one test engine: its own default bridge, subnet, iptables chains and default address
 * pool (a /16 in 10.128-10.199 that no other test engine on this host holds: user-defined networks of engines running
 * at the same time never share a subnet), so engines of tests running at the same time (and other checkouts' tests)
 * never share host networking state.
 */
export function uniqueNetworkOptions (): { defaultBridge: string, bip: string, networkPrefix: string, defaultAddressPools: Array<{ base: string, size: number }> } {
  const tag = randomBytes(3).toString('hex')
  const a = 200 + Math.floor(Math.random() * 50)
  const b = Math.floor(Math.random() * 256)
  const n = { defaultBridge: `bt${tag}0`, bip: `10.${a}.${b}.1/24`, networkPrefix: `T${tag.slice(0, 5)}`, defaultAddressPools: [{ base: `10.${reservePoolOctet()}.0.0/16`, size: 24 }] }
  // tools/run-tests.mjs names the test file of what a run leaves on the host from this log
  const netlog = process.env.BERTH_TEST_NETLOG
  if (netlog !== undefined && netlog !== '') appendFileSync(netlog, `${n.networkPrefix} ${n.defaultBridge} ${relative(ROOT, process.argv[1] ?? '?').replace(/^dist\//, '').replace(/\.js$/, '.ts')}\n`)
  return n
}

const POOL_LOCKS = join(tmpdir(), 'berth-test-pools')
const heldPools = new Set<number>()
let poolExitHook = false

/**
 * A second octet in 128-199 reserved for this process until it exits: a file per octet holding the owner's pid,
 * taken over when that process is gone. Falls back to a random free one when all are held.
 */
function reservePoolOctet (): number {
  mkdirSync(POOL_LOCKS, { recursive: true })
  const start = Math.floor(Math.random() * 72)
  for (let i = 0; i < 72; i++) {
    const octet = 128 + (start + i) % 72
    if (heldPools.has(octet)) continue
    const file = join(POOL_LOCKS, String(octet))
    try {
      writeFileSync(file, String(process.pid), { flag: 'wx' })
    } catch {
      const owner = Number(readFileSync(file, 'utf8').trim())
      if (Number.isInteger(owner) && owner > 0 && pidAlive(owner)) continue
      writeFileSync(file, String(process.pid))
    }
    if (!poolExitHook) { poolExitHook = true; process.once('exit', () => { for (const o of heldPools) rmSync(join(POOL_LOCKS, String(o)), { force: true }) }) }
    heldPools.add(octet)
    return octet
  }
  return 128 + start
}

/** Lets another engine have the pools once this one's networks are gone from the host. */
function releasePools (pools: ReadonlyArray<{ base: string }>): void {
  for (const p of pools) {
    const octet = Number(p.base.split('.')[1])
    if (heldPools.delete(octet)) rmSync(join(POOL_LOCKS, String(octet)), { force: true })
  }
}

function pidAlive (pid: number): boolean {
  try { process.kill(pid, 0); return true } catch (err) { return (err as NodeJS.ErrnoException).code === 'EPERM' }
}

export async function startEngine (t: TestContextLike, opts: { dir?: string, keepNetwork?: boolean, options?: Partial<Parameters<typeof createEngine>[0]> } = {}): Promise<TestEngine> {
  const dir = opts.dir ?? tmpDir()
  const socket = join(dir, 'b.sock')
  const dataRoot = join(dir, 'data')
  const net = uniqueNetworkOptions()
  const engine = await createEngine({ dataRoot, hosts: [`unix://${socket}`], execRoot: join(dir, 'run'), ...net, ...opts.options })
  let closed = false
  const close = async (): Promise<void> => {
    if (closed) return
    closed = true
    await engine.close()
    // containers of a test are gone or going (cleanupDir): their namespaces, veths, bridges and chains go too
    if (opts.keepNetwork !== true) { await engine.network.purgeHost(); releasePools(net.defaultAddressPools) }
  }
  t.after(async () => {
    await close()
    if (opts.dir === undefined) await cleanupDir(dir)
  })
  const given = opts.options?.defaultAddressPools?.[0]?.base
  return { engine, dir, socket, dataRoot, swarmPool: given ?? net.defaultAddressPools[0]?.base as string, close }
}

/** Kills what containers of a test left running (their shims outlive engine.close by design), then removes the dir. */
export async function cleanupDir (dir: string): Promise<void> {
  const runRoot = join(dir, 'run', 'runtime')
  if (existsSync(runRoot)) {
    const list = spawnSync('runc', ['--root', runRoot, 'list', '-q'], { encoding: 'utf8' })
    for (const id of (list.stdout ?? '').split('\n').filter((x) => x !== '')) {
      spawnSync('runc', ['--root', runRoot, 'kill', '--all', id, 'KILL'])
      spawnSync('runc', ['--root', runRoot, 'delete', '--force', id])
    }
  }
  // wait for shims to notice and exit, then unmount anything left
  spawnSync('sh', ['-c', `for i in $(seq 1 50); do pgrep -f "[b]erth-shim.*${dir}" >/dev/null || break; sleep 0.1; done; pkill -9 -f "[b]erth-shim.*${dir}"; grep -o " ${dir}[^ ]*" /proc/self/mountinfo | sort -r | xargs -r -n1 umount -l`])
  rmSync(dir, { recursive: true, force: true })
}

export interface Reply { status: number, headers: http.IncomingHttpHeaders, body: Buffer, text: string, json: () => unknown }

export async function request (socket: string, method: string, path: string, opts: { body?: unknown, headers?: Record<string, string>, raw?: Buffer | NodeJS.ReadableStream } = {}): Promise<Reply> {
  return await new Promise((resolve, reject) => {
    const headers: Record<string, string> = { ...opts.headers }
    let payload: Buffer | undefined
    if (opts.body !== undefined) {
      payload = Buffer.from(JSON.stringify(opts.body))
      headers['Content-Type'] ??= 'application/json'
    } else if (opts.raw instanceof Buffer) payload = opts.raw
    if (payload !== undefined) headers['Content-Length'] = String(payload.length)
    const req = http.request({ socketPath: socket, method, path, headers }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (d: Buffer) => chunks.push(d))
      res.on('end', () => {
        const body = Buffer.concat(chunks)
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body, text: body.toString('utf8'), json: () => JSON.parse(body.toString('utf8')) })
      })
      res.on('error', reject)
      // a connection closed mid-answer (a daemon still starting) rejects instead of leaving the caller waiting
      res.on('close', () => { if (!res.complete) reject(new Error('response aborted')) })
    })
    req.on('error', reject)
    if (opts.raw !== undefined && !(opts.raw instanceof Buffer)) (opts.raw as NodeJS.ReadableStream).pipe(req)
    else req.end(payload)
  })
}

/** Imports the busybox rootfs as busybox:latest; returns the image ID. */
export async function importBusybox (socket: string, ref = 'busybox'): Promise<string> {
  const r = await request(socket, 'POST', `/images/create?fromSrc=-&repo=${encodeURIComponent(ref)}&tag=latest`, {
    raw: createReadStream(busyboxTar()),
    headers: { 'Content-Type': 'application/x-tar' }
  })
  const m = /"status":"(sha256:[0-9a-f]{64})"/.exec(r.text)
  if (r.status !== 200 || m === null) throw new Error(`import failed: ${r.status} ${r.text}`)
  return m[1] as string
}

/** Sends literal bytes and collects everything until the server closes (or `until` matches). */
export async function rawExchange (socket: string, bytes: string | Buffer, opts: { until?: (got: Buffer) => boolean, halfClose?: boolean } = {}): Promise<Buffer> {
  return await new Promise((resolve, reject) => {
    const s = net.connect(socket)
    const chunks: Buffer[] = []
    s.on('connect', () => {
      s.write(bytes)
      if (opts.halfClose === true) s.end()
    })
    s.on('data', (d: Buffer) => {
      chunks.push(d)
      if (opts.until?.(Buffer.concat(chunks)) === true) { s.destroy(); resolve(Buffer.concat(chunks)) }
    })
    s.on('end', () => { s.end() })
    s.on('close', () => { resolve(Buffer.concat(chunks)) })
    s.on('error', reject)
  })
}

/** Creates (and optionally starts) a container; returns its ID. */
export async function createContainer (socket: string, body: Record<string, unknown>, name?: string): Promise<string> {
  const r = await request(socket, 'POST', `/containers/create${name !== undefined ? `?name=${name}` : ''}`, { body })
  if (r.status !== 201) throw new Error(`create failed: ${r.status} ${r.text}`)
  return (r.json() as { Id: string }).Id
}

/** Runs the docker CLI against the engine (asynchronously: the engine lives in this process). */
export async function dockerCli (socket: string, args: string[], input?: string | Buffer, env: Record<string, string> = {}): Promise<{ status: number, stdout: string, stderr: string }> {
  return await new Promise((resolve) => {
    const child = spawn('docker', args, { env: { ...process.env, DOCKER_HOST: `unix://${socket}`, ...env } })
    const out: Buffer[] = []
    const err: Buffer[] = []
    child.stdout.on('data', (d: Buffer) => out.push(d))
    child.stderr.on('data', (d: Buffer) => err.push(d))
    const timer = setTimeout(() => { child.kill('SIGKILL') }, 60_000)
    child.on('close', (code) => {
      clearTimeout(timer)
      resolve({ status: code ?? -1, stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8') })
    })
    if (input !== undefined) child.stdin.end(input)
    else child.stdin.end()
  })
}

export function hasDockerCli (): boolean {
  return spawnSync('docker', ['--version']).status === 0
}

/** Daemon flags for uniqueNetworkOptions(). */
export function daemonNetworkArgs (n: ReturnType<typeof uniqueNetworkOptions>): string[] {
  return ['--bridge-name', n.defaultBridge, '--bip', n.bip, '--network-prefix', n.networkPrefix, ...n.defaultAddressPools.flatMap((p) => ['--default-address-pool', `base=${p.base},size=${p.size}`])]
}

/**
 * Removes what a daemon run with these options left on the host: its forwarders, links, namespaces and iptables
 * chains (a daemon process never purges: it leaves its networking behind, as dockerd does).
 */
export async function purgeNetwork (n: ReturnType<typeof uniqueNetworkOptions>, dir: string): Promise<void> {
  await purgeEngineNetwork({ dataRoot: join(dir, 'data'), execRoot: join(dir, 'run'), prefix: n.networkPrefix, defaultBridge: n.defaultBridge })
}

/**
 * The end of a test's daemon process: killed (-9) unless it already exited, then what it left goes: its networking
 * (purgeNetwork), its containers and its dir (cleanupDir).
 */
export async function cleanupDaemon (child: ChildProcess | undefined, dir: string, n: ReturnType<typeof uniqueNetworkOptions>): Promise<void> {
  // a daemon killed by a signal has exitCode null: waiting for its exit again would wait forever
  if (child !== undefined && child.exitCode === null && child.signalCode === null) {
    const exited = once(child, 'exit')
    child.kill('SIGKILL')
    await exited
  }
  await purgeNetwork(n, dir)
  await cleanupDir(dir)
}

/**
 * Starts `berth daemon` as a child process on `<dir>/b.sock` with `<dir>/data` and `<dir>/run` and no configuration
 * file (`--config-file /dev/null`: the host's /etc/berth/daemon.json is not a test's), resolving once it answers
 * `/_ping`. The bound is generous (a loaded machine runs many iptables calls slowly at start); a daemon
 * that does not come up in time is killed, so no child is left holding the test process open.
 */
export async function startDaemonProcess (dir: string, args: string[], limitMs = 120_000, program?: string): Promise<ChildProcess> {
  const sock = join(dir, 'b.sock')
  // `program`: a command run as a program (dist/lib/cli/berth.cjs, the bundle under its shebang) instead of main.js
  const command = program !== undefined ? [program] : [process.execPath, join(ROOT, 'dist', 'lib', 'cli', 'main.js')]
  const child = spawn(command[0] as string, [...command.slice(1), 'daemon', '--config-file', '/dev/null', '-H', `unix://${sock}`, '--data-root', join(dir, 'data'), '--exec-root', join(dir, 'run'), ...args], { stdio: ['ignore', 'ignore', 'pipe'] })
  let err = ''
  child.stderr?.on('data', (d: Buffer) => { err += d.toString() })
  const deadline = Date.now() + limitMs
  while (Date.now() < deadline) {
    if (existsSync(sock)) {
      const ok = await request(sock, 'GET', '/_ping').then((r) => r.status === 200, () => false)
      // /_ping answers before the boot is over; any other route waits for it (containers recovered, host reconciled)
      if (ok && await request(sock, 'GET', '/version').then((r) => r.status === 200, () => false)) return child
    }
    if (child.exitCode !== null) throw new Error(`daemon exited: ${err}`)
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
  child.kill('SIGKILL')
  throw new Error(`daemon did not come up within ${limitMs} ms: ${err}`)
}
