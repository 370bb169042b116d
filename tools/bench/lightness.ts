// Long because it is one harness printing every row of issue 22's table from one run: the run path, published
// ports, restart, memory and `_ping` rows, Berth against its peer in the same session.
//
//   node dist/tools/bench/lightness.js [--runs 10] [--only run,ports,restart,memory,hostile,ping] [--no-peer]
//                                      [--hostile 10000] [--settle 60] [--restarts 3] [--base DIR]
//
// --base DIR: the restart and fresh-memory rows also run the build in DIR (another worktree, built), alternating
// with this one cycle by cycle (an A/B of two builds in one session, at the same load).
//
// The peer is Debian's dockerd 20.10 with its default bridge networking (docker0, iptables, docker-proxy), started in
// a network namespace of its own (tools/bench/peer.ts) and removed afterwards. Each Berth daemon gets a temp dir, its
// own bridge, subnet, chains and address pool, removed afterwards. Latency rows alternate the engines sample by
// sample; workloads alternate which engine goes first. Traffic goes only to loopback and the engines' namespaces;
// every loop is bounded. See tools/bench/README.md for what each row measures.
import http from 'node:http'
import { spawn, execFileSync, type ChildProcess } from 'node:child_process'
import { mkdtempSync, mkdirSync, rmSync, readFileSync, writeFileSync, existsSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { ROOT, median, gitCommit, busyboxTar, importTar, unmountUnder, privateNetwork, removePrivateNetwork, freePort, type PrivateNetwork } from './common.js'
import { startPeer, stopPeer, type Peer } from './peer.js'
import { engineProcesses, rssKiB, pssKiB, cpuMs } from './procs.js'
import { sendHostile } from './hostile.js'

const { values } = parseArgs({
  options: {
    runs: { type: 'string' },
    only: { type: 'string' },
    'no-peer': { type: 'boolean' },
    hostile: { type: 'string' },
    settle: { type: 'string' },
    restarts: { type: 'string' },
    base: { type: 'string' }
  }
})
const RUNS = Number(values.runs ?? '10')
const ONLY = values.only?.split(',')
const HOSTILE = Number(values.hostile ?? '10000')
const SETTLE_S = Number(values.settle ?? '60')
const RESTARTS = Number(values.restarts ?? '3')
// what `berth daemon` runs (the package's bin, tools/up.sh): the bundled entry point when it was built
const BERTH_MAIN = existsSync(join(ROOT, 'dist/lib/cli/berth.cjs')) ? join(ROOT, 'dist/lib/cli/berth.cjs') : join(ROOT, 'dist/lib/cli/main.js')
const BASE_MAIN = values.base !== undefined ? join(values.base, 'dist/lib/cli/berth.cjs') : undefined
if (BASE_MAIN !== undefined && !existsSync(BASE_MAIN)) throw new Error(`--base: ${BASE_MAIN} is missing (build that worktree first)`)
/** The builds under measurement: this one, and the --base one. */
const BUILDS: Array<{ label: string, main: string }> = [{ label: 'berth', main: BERTH_MAIN }, ...(BASE_MAIN !== undefined ? [{ label: 'base', main: BASE_MAIN }] : [])]
const wanted = (s: string): boolean => ONLY === undefined || ONLY.includes(s)
const sleep = async (ms: number): Promise<void> => { await new Promise((resolve) => setTimeout(resolve, ms)) }

/** An engine under measurement: its socket, its daemon's PID, a TCP address wrk can reach, how to run wrk there. */
interface Engine {
  name: 'berth' | 'dockerd'
  socket: string
  pid: () => number
  tcp: string
  /** The command prefix that reaches `tcp` (the peer's namespace). */
  wrkPrefix: string[]
  /** What names its detached processes on their command lines. */
  markers: string[]
}

// ---------------------------------------------------------------------------------------------------------------
// clients

async function api (socket: string, method: string, path: string, body?: unknown, timeoutMs = 120_000): Promise<{ status: number, body: string }> {
  return await new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body))
    const r = http.request({ socketPath: socket, method, path, headers: payload === undefined ? {} : { 'Content-Type': 'application/json', 'Content-Length': payload.length } }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (d: Buffer) => chunks.push(d))
      res.on('end', () => { resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString() }) })
      res.on('error', reject)
    })
    r.setTimeout(timeoutMs, () => { r.destroy(new Error(`${method} ${path}: no answer in ${timeoutMs} ms`)) })
    r.on('error', reject)
    r.end(payload)
  })
}

/** ms the docker CLI takes (throws on failure). */
async function cli (socket: string, args: string[]): Promise<number> {
  const t0 = process.hrtime.bigint()
  await new Promise<void>((resolve, reject) => {
    const c = spawn('docker', args, { env: { ...process.env, DOCKER_HOST: `unix://${socket}` }, stdio: ['ignore', 'ignore', 'pipe'] })
    let err = ''
    c.stderr.on('data', (d: Buffer) => { err += d.toString() })
    const timer = setTimeout(() => { c.kill('SIGKILL') }, 120_000)
    c.on('exit', (code) => { clearTimeout(timer); if (code === 0) resolve(); else reject(new Error(`docker ${args.join(' ')} exited ${String(code)}: ${err.trim()}`)) })
  })
  return Number(process.hrtime.bigint() - t0) / 1e6
}

async function timedSpawn (cmd: string, args: string[]): Promise<number> {
  const t0 = process.hrtime.bigint()
  await new Promise<void>((resolve, reject) => {
    const c = spawn(cmd, args, { stdio: 'ignore' })
    const timer = setTimeout(() => { c.kill('SIGKILL') }, 60_000)
    c.on('exit', (code) => { clearTimeout(timer); if (code === 0) resolve(); else reject(new Error(`${cmd} ${args.join(' ')} exited ${String(code)}`)) })
  })
  return Number(process.hrtime.bigint() - t0) / 1e6
}

/** Daemon CPU µs per request of the last wrkRate() run, by engine and path. */
const cpuPerRequest = new Map<string, number>()

/** wrk's requests/s on a URL with 4 connections (after an uncounted 1 s warm-up). */
function wrkRate (e: Engine, path: string, seconds = 3): number {
  const url = `http://${e.tcp}${path}`
  const [cmd = 'wrk', ...pre] = [...e.wrkPrefix, 'wrk']
  execFileSync(cmd, [...pre, '-t1', '-c4', '-d1s', url], { stdio: 'ignore' })
  const c0 = cpuMs([e.pid()])
  const out = execFileSync(cmd, [...pre, '-t1', '-c4', `-d${seconds}s`, url], { encoding: 'utf8' })
  const c1 = cpuMs([e.pid()])
  const n = Number(/(\d+) requests in/.exec(out)?.[1] ?? 0)
  if (n > 0) cpuPerRequest.set(`${e.name} ${path}`, (c1 - c0) * 1000 / n)
  return Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1] ?? 0)
}

/** Removes containers (forced), 4 requests at a time. */
async function removeAll (socket: string, ids: string[]): Promise<void> {
  let next = 0
  await Promise.all([0, 1, 2, 3].map(async () => {
    while (next < ids.length) await api(socket, 'DELETE', `/containers/${ids[next++] as string}?force=1`).catch(() => {})
  }))
}

async function pingOk (socket: string): Promise<boolean> {
  return await new Promise((resolve) => {
    const r = http.get({ socketPath: socket, path: '/_ping' }, (res) => { res.resume(); resolve(res.statusCode === 200) })
    r.on('error', () => { resolve(false) })
    r.setTimeout(5000, () => { r.destroy() })
  })
}

// ---------------------------------------------------------------------------------------------------------------
// Berth daemons of the harness's own

interface BerthSetup {
  dir: string, socket: string, tcp: string, network: PrivateNetwork, args: string[], child: ChildProcess | null
  /** The program it runs (this build's, or --base's). */
  main: string
  /** The daemon's main-thread CPU (ms, /proc/PID/schedstat) when its last start answered /_ping. */
  pingCpu: number
}

/** The main thread's CPU time in ms (/proc/PID/schedstat: ns on a CPU). */
function mainThreadCpuMs (pid: number): number {
  try { return Number(readFileSync(`/proc/${pid}/schedstat`, 'latin1').split(' ')[0]) / 1e6 } catch { return NaN }
}

async function berthSetup (letter: string, main = BERTH_MAIN): Promise<BerthSetup> {
  const dir = mkdtempSync(join(tmpdir(), 'berth-light-'))
  const network = privateNetwork(letter)
  const port = await freePort()
  // user networks come from a pool of the harness's own (10.250-254.x), away from the test suites' 10.128-199
  const pool = `base=10.${250 + Math.floor(Math.random() * 5)}.${Math.floor(Math.random() * 16) * 16}.0/20,size=24`
  const socket = join(dir, 'b.sock')
  const args = ['daemon', '-H', `unix://${socket}`, '-H', `tcp://127.0.0.1:${port}`, '--data-root', join(dir, 'data'), '--exec-root', join(dir, 'run'), '--pidfile', join(dir, 'b.pid'), '--default-address-pool', pool, ...network.args]
  return { dir, socket, tcp: `127.0.0.1:${port}`, network, args, child: null, main, pingCpu: NaN }
}

/** Starts (or restarts) the daemon of a setup; resolves with the ms until /_ping answered. */
async function berthStart (s: BerthSetup): Promise<number> {
  const t0 = process.hrtime.bigint()
  // the bundle runs as a program, as `berth daemon` does: its first line sets Node's and malloc's memory settings
  s.child = s.main.endsWith('.cjs') ? spawn(s.main, s.args, { stdio: 'ignore' }) : spawn(process.execPath, [s.main, ...s.args], { stdio: 'ignore' })
  for (let i = 0; i < 30_000; i++) {
    if (await pingOk(s.socket)) {
      const ms = Number(process.hrtime.bigint() - t0) / 1e6
      s.pingCpu = mainThreadCpuMs(s.child.pid ?? 0)
      return ms
    }
    if (s.child.exitCode !== null) throw new Error(`berth daemon exited with ${s.child.exitCode}`)
    await sleep(2)
  }
  throw new Error('berth daemon did not answer /_ping within 60 s')
}

async function berthStop (s: BerthSetup, removeEverything = true): Promise<void> {
  const c = s.child
  if (removeEverything && c !== null && c.exitCode === null) {
    await api(s.socket, 'POST', '/swarm/leave?force=1', undefined, 60_000).catch(() => {})
    const l = await api(s.socket, 'GET', '/containers/json?all=1', undefined, 60_000).catch(() => ({ status: 0, body: '[]' }))
    if (l.status === 200) await removeAll(s.socket, (JSON.parse(l.body) as Array<{ Id: string }>).map((x) => x.Id))
  }
  if (c !== null && c.exitCode === null && c.signalCode === null) {
    const exited = new Promise((resolve) => c.once('exit', resolve))
    c.kill('SIGTERM')
    await exited
  }
  if (!removeEverything) return
  await removePrivateNetwork(s.network, s.dir)
  unmountUnder(s.dir)
  rmSync(s.dir, { recursive: true, force: true })
}

function berthEngine (s: BerthSetup): Engine {
  return { name: 'berth', socket: s.socket, pid: () => s.child?.pid ?? 0, tcp: s.tcp, wrkPrefix: [], markers: [s.dir, ` ${s.network.prefix}`] }
}

function peerEngine (p: Peer): Engine {
  return { name: 'dockerd', socket: p.socket, pid: () => p.pid, tcp: p.tcp, wrkPrefix: ['ip', 'netns', 'exec', p.netns], markers: [p.dir] }
}

/** The engine's processes besides the daemon itself (containerd for dockerd; monitors, forwarders, lock holders). */
function helpers (e: Engine): number[] {
  return engineProcesses(e.pid(), e.markers).map((p) => p.pid).filter((p) => p !== e.pid())
}

/** Daemon RSS, in MiB; dockerd's includes its containerd (it cannot run without it). */
function daemonRss (e: Engine): number {
  if (e.name === 'berth') return rssKiB(e.pid()) / 1024
  const containerd = engineProcesses(e.pid(), e.markers).filter((p) => /^containerd /.test(p.cmdline)).map((p) => p.pid)
  return (rssKiB(e.pid()) + containerd.reduce((n, p) => n + rssKiB(p), 0)) / 1024
}

// ---------------------------------------------------------------------------------------------------------------
// results

interface Row { measure: string, berth: string, peer: string, ratio: string, target: string }
const rows: Row[] = []
const raw: Record<string, unknown> = {}
const f1 = (x: number): string => Number.isFinite(x) ? x.toFixed(1) : '—'
function row (measure: string, berth: number | string, peer: number | string | undefined, target: string, unit = ''): void {
  const b = typeof berth === 'number' ? f1(berth) + unit : berth
  const p = peer === undefined ? '—' : typeof peer === 'number' ? f1(peer) + unit : peer
  const ratio = typeof berth === 'number' && typeof peer === 'number' && peer !== 0 ? (berth / peer).toFixed(2) + '×' : ''
  rows.push({ measure, berth: b, peer: p, ratio, target })
  process.stderr.write(`  ${measure}: berth ${b}, dockerd ${p} ${ratio}\n`)
}

// ---------------------------------------------------------------------------------------------------------------
// rows

/** A runc bundle of the same busybox: `runc run` of it is the floor of `docker run --network none`. */
function runcBundle (dir: string, tar: string): { bundle: string, root: string } {
  const bundle = join(dir, 'bundle')
  mkdirSync(join(bundle, 'rootfs'), { recursive: true })
  execFileSync('tar', ['-xf', tar, '-C', join(bundle, 'rootfs')])
  execFileSync('runc', ['spec', '--bundle', bundle])
  const spec = JSON.parse(readFileSync(join(bundle, 'config.json'), 'utf8')) as { process: { terminal: boolean, args: string[] } }
  spec.process.terminal = false
  spec.process.args = ['true']
  writeFileSync(join(bundle, 'config.json'), JSON.stringify(spec))
  return { bundle, root: join(dir, 'runc-root') }
}

/**
 * The bundle Berth itself hands runc for `docker run --network none busybox true` (Docker's seccomp profile, masked
 * paths, capabilities: what dockerd's containers pay too), made runnable alone: its root is the busybox tree, the /etc
 * files it bind-mounts are copied beside it and runc makes the network namespace. `runc run` of it is the floor of
 * Berth's own run; the row above (runc spec's bundle, no seccomp filter) is the floor of a bare runtime.
 */
async function berthRuncBundle (dir: string, tar: string, socket: string, dataRoot: string): Promise<string> {
  const bundle = join(dir, 'bundle-berth')
  mkdirSync(join(bundle, 'rootfs'), { recursive: true })
  execFileSync('tar', ['-xf', tar, '-C', join(bundle, 'rootfs')])
  const name = `bench-config-${process.pid}`
  await cli(socket, ['run', '--name', name, '--network', 'none', 'busybox', 'true'])
  const id = JSON.parse((await api(socket, 'GET', `/containers/${name}/json`)).body).Id as string
  const cdir = join(dataRoot, 'containers', id)
  const spec = JSON.parse(readFileSync(join(cdir, 'config.json'), 'utf8')) as {
    root: { path: string, readonly?: boolean }, process: { terminal: boolean, args: string[] }, hooks?: unknown,
    mounts: Array<{ source?: string, destination: string }>, linux: { namespaces: Array<{ type: string, path?: string }>, cgroupsPath?: string }
  }
  spec.root = { path: join(bundle, 'rootfs'), readonly: false }
  spec.process.terminal = false
  spec.process.args = ['true']
  delete spec.hooks
  for (const m of spec.mounts) {
    if (m.source === undefined || !m.source.startsWith(cdir)) continue
    const copy = join(bundle, m.destination.replace(/\//g, '_'))
    writeFileSync(copy, readFileSync(m.source))
    m.source = copy
  }
  for (const ns of spec.linux.namespaces) delete ns.path
  spec.linux.cgroupsPath = `/berth-bench-${process.pid}`
  writeFileSync(join(bundle, 'config.json'), JSON.stringify(spec))
  await cli(socket, ['rm', name])
  return bundle
}

/**
 * The same bundle with its root on an overlay mount of the busybox tree (a writable layer of its own, empty as a new
 * container's), as Berth and dockerd give a container its image: `runc run` of it is the runtime's whole floor under
 * both engines (the plain tree's row leaves overlayfs out). Returns it and its unmount.
 */
function overlayBundle (dir: string, berthBundle: string): { bundle: string, unmount: () => void } {
  const bundle = join(dir, 'bundle-berth-overlay')
  for (const d of ['upper', 'work', 'merged']) mkdirSync(join(bundle, d), { recursive: true })
  execFileSync('mount', ['-t', 'overlay', 'overlay', '-o', `lowerdir=${join(berthBundle, 'rootfs')},upperdir=${join(bundle, 'upper')},workdir=${join(bundle, 'work')}`, join(bundle, 'merged')])
  const spec = JSON.parse(readFileSync(join(berthBundle, 'config.json'), 'utf8')) as { root: { path: string, readonly?: boolean }, linux: { cgroupsPath?: string } }
  spec.root = { path: join(bundle, 'merged'), readonly: false }
  spec.linux.cgroupsPath = `/berth-bench-ovl-${process.pid}`
  writeFileSync(join(bundle, 'config.json'), JSON.stringify(spec))
  return { bundle, unmount: () => { execFileSync('umount', [join(bundle, 'merged')]) } }
}

async function runRows (engines: Engine[], dir: string, tar: string, berthData: string): Promise<void> {
  const { bundle, root } = runcBundle(dir, tar)
  const berthBundle = await berthRuncBundle(dir, tar, (engines[0] as Engine).socket, berthData)
  const overlay = overlayBundle(dir, berthBundle)
  try { await runSamples(engines, bundle, root, berthBundle, overlay.bundle) } finally { overlay.unmount() }
}

async function runSamples (engines: Engine[], bundle: string, root: string, berthBundle: string, overlayBundle: string): Promise<void> {
  let n = 0
  const samples: Array<[string, (e: Engine) => Promise<number>, boolean]> = [
    ['run_none', async (e) => await cli(e.socket, ['run', '--rm', '--network', 'none', 'busybox', 'true']), true],
    ['run_bridge', async (e) => await cli(e.socket, ['run', '--rm', 'busybox', 'true']), true],
    ['run_p1', async (e) => await cli(e.socket, ['run', '--rm', '-p', '0:80', 'busybox', 'true']), true],
    ['run_p3', async (e) => await cli(e.socket, ['run', '--rm', '-p', '0:80', '-p', '0:81', '-p', '0:82', 'busybox', 'true']), true],
    ['runc_run', async () => await timedSpawn('runc', ['--root', root, 'run', '--bundle', bundle, `bench${n++}`]), false],
    ['runc_run_berth', async () => await timedSpawn('runc', ['--root', root, 'run', '--bundle', berthBundle, `bench${n++}`]), false],
    ['runc_run_overlay', async () => await timedSpawn('runc', ['--root', root, 'run', '--bundle', overlayBundle, `bench${n++}`]), false],
    ['docker_version', async (e) => await cli(e.socket, ['version']), false]
  ]
  const times = new Map<string, number[]>()
  const cpu = new Map<string, number[]>()
  const push = (m: Map<string, number[]>, k: string, v: number): void => { m.set(k, [...(m.get(k) ?? []), v]) }
  const berth = engines[0] as Engine
  for (let i = -1; i < RUNS; i++) {
    for (const [name, fn, both] of samples) {
      const order = both ? (i % 2 === 0 ? engines : [...engines].reverse()) : [berth]
      for (const e of order) {
        const pids = e.name === 'berth' ? [e.pid()] : engineProcesses(e.pid(), e.markers).filter((p) => /^(dockerd|containerd) /.test(p.cmdline)).map((p) => p.pid)
        const c0 = cpuMs(pids)
        const ms = await fn(e)
        const c1 = cpuMs(pids)
        if (i < 0) continue // warm-up, not counted
        push(times, `${e.name}.${name}`, ms)
        push(cpu, `${e.name}.${name}`, c1 - c0)
      }
    }
  }
  raw.run = Object.fromEntries([...times].map(([k, v]) => [k, { median: median(v), all: v.map((x) => Math.round(x)) }]))
  raw.run_cpu = Object.fromEntries([...cpu].map(([k, v]) => [k, median(v)]))
  const m = (k: string): number => times.has(k) ? median(times.get(k) ?? []) : NaN
  const c = (k: string): number => cpu.has(k) ? median(cpu.get(k) ?? []) : NaN
  row('`docker run --rm --network none busybox true`, median ms', m('berth.run_none'), times.has('dockerd.run_none') ? m('dockerd.run_none') : undefined, '—', ' ms')
  row('  `runc run` of the same busybox bundle; `docker version`', `${f1(m('berth.runc_run'))} ms; ${f1(m('berth.docker_version'))} ms`, undefined, '—')
  row('  Berth\'s own share (run − runc run − docker version)', m('berth.run_none') - m('berth.runc_run') - m('berth.docker_version'), undefined, '≤ 15 ms', ' ms')
  row('  `runc run` of Berth\'s own config.json for it (Docker\'s seccomp profile, masked paths)', m('berth.runc_run_berth'), undefined, '—', ' ms')
  row('  Berth\'s own share against that floor (run − runc run of its config − docker version)', m('berth.run_none') - m('berth.runc_run_berth') - m('berth.docker_version'), undefined, '≤ 15 ms', ' ms')
  row('  `runc run` of that config with its root on an overlay mount, as both engines give a container its image', m('berth.runc_run_overlay'), undefined, '—', ' ms')
  row('  Berth\'s own share against the overlay floor (run − runc run on overlay − docker version)', m('berth.run_none') - m('berth.runc_run_overlay') - m('berth.docker_version'), undefined, '—', ' ms')
  row('  daemon CPU per run (dockerd: + containerd), median', c('berth.run_none'), cpu.has('dockerd.run_none') ? c('dockerd.run_none') : undefined, '—', ' ms')
  row('`docker run --rm busybox true`, default bridge', m('berth.run_bridge'), times.has('dockerd.run_bridge') ? m('dockerd.run_bridge') : undefined, `≤ none + 10 ms (${f1(m('berth.run_bridge') - m('berth.run_none'))} over)`, ' ms')
  row('`docker run --rm -p 0:80 …`', m('berth.run_p1'), times.has('dockerd.run_p1') ? m('dockerd.run_p1') : undefined, `≤ bridge + 5 ms (+${f1(m('berth.run_p1') - m('berth.run_bridge'))}; dockerd +${f1(m('dockerd.run_p1') - m('dockerd.run_bridge'))})`, ' ms')
  row('`docker run --rm` with 3 ports', m('berth.run_p3'), times.has('dockerd.run_p3') ? m('dockerd.run_p3') : undefined, `≤ bridge + 15 ms (+${f1(m('berth.run_p3') - m('berth.run_bridge'))}; dockerd +${f1(m('dockerd.run_p3') - m('dockerd.run_bridge'))})`, ' ms')
}

/** PSS the engine's processes gain for a running container with 3 published ports over one without, per port. */
async function portRows (engines: Engine[]): Promise<void> {
  const perPort: Record<string, number> = {}
  const procs: Record<string, number> = {}
  for (const e of engines) {
    const all = (): number[] => engineProcesses(e.pid(), e.markers).map((p) => p.pid)
    const ids: string[] = []
    const run = async (ports: string[]): Promise<{ pss: number, count: number }> => {
      const before = all()
      const pss0 = pssKiB(before)
      const out = execFileSync('docker', ['run', '-d', ...ports.flatMap((p) => ['-p', p]), 'busybox', 'sleep', '600'], { env: { ...process.env, DOCKER_HOST: `unix://${e.socket}` }, encoding: 'utf8' })
      ids.push(out.trim())
      await sleep(1500)
      const after = all()
      return { pss: pssKiB(after) - pss0, count: after.length - before.length }
    }
    await run([]) // the first container pays for one-time growth
    const plain = await run([])
    const ported = await run(['0:80', '0:81', '0:82'])
    perPort[e.name] = (ported.pss - plain.pss) / 3 / 1024
    procs[e.name] = (ported.count - plain.count) / 3
    await removeAll(e.socket, ids)
  }
  raw.ports = { perPort, procs }
  row('PSS per published port (3 ports vs none, running container)', perPort.berth ?? NaN, perPort.dockerd, '≤ 1 MiB, no process per port', ' MiB')
  row('  processes per published port', procs.berth ?? NaN, procs.dockerd, '0')
}

/**
 * The restart row's state in a setup's daemon: 100 containers (50 running, 10 of them publishing a port), 3 networks
 * and a service. Returns the last running container's ID.
 */
async function restartState (s: BerthSetup): Promise<string> {
  await importTar(s.socket, busyboxTar(s.dir), 'busybox')
  const nets: string[] = []
  for (let i = 0; i < 3; i++) {
    const r = await api(s.socket, 'POST', '/networks/create', { Name: `light${i}`, Driver: 'bridge' })
    if (r.status !== 201) throw new Error(`network create: ${r.status} ${r.body}`)
    nets.push(`light${i}`)
  }
  const init = await api(s.socket, 'POST', '/swarm/init', { ListenAddr: '127.0.0.1:0', AdvertiseAddr: '127.0.0.1' })
  if (init.status !== 200) throw new Error(`swarm init: ${init.status} ${init.body}`)
  const svc = await api(s.socket, 'POST', '/services/create', { Name: 'lightsvc', TaskTemplate: { ContainerSpec: { Image: 'busybox', Command: ['sleep', '3600'] } }, Mode: { Replicated: { Replicas: 1 } } })
  if (svc.status !== 201) throw new Error(`service create: ${svc.status} ${svc.body}`)
  let last = ''
  for (let i = 0; i < 100; i++) {
    const net = ['bridge', ...nets][i % 4] as string
    const ported = i < 50 && i % 5 === 0
    const r = await api(s.socket, 'POST', `/containers/create?name=light${i}`, {
      Image: 'busybox',
      Cmd: ['sleep', '3600'],
      ...(ported ? { ExposedPorts: { '80/tcp': {} } } : {}),
      HostConfig: { NetworkMode: net, ...(ported ? { PortBindings: { '80/tcp': [{ HostIp: '127.0.0.1', HostPort: '' }] } } : {}) }
    })
    if (r.status !== 201) throw new Error(`create: ${r.status} ${r.body}`)
    const id = (JSON.parse(r.body) as { Id: string }).Id
    if (i < 50) {
      const st = await api(s.socket, 'POST', `/containers/${id}/start`)
      if (st.status !== 204) throw new Error(`start: ${st.status} ${st.body}`)
      last = id
    }
  }
  return last
}

/**
 * kill -9 of a setup's daemon and a new start: ms to `/_ping`, its main thread's CPU then, ms to every container
 * recovered (all listed, the 50 and the service's task running, the last one inspected running), RSS 3 s later.
 */
async function restartOnce (s: BerthSetup, last: string): Promise<{ ping: number, cpu: number, recovered: number, rss: number }> {
  const c = s.child as ChildProcess
  const exited = new Promise((resolve) => c.once('exit', resolve))
  c.kill('SIGKILL')
  await exited
  const t0 = process.hrtime.bigint()
  const ping = await berthStart(s)
  for (let j = 0; j < 6000; j++) {
    const l = await api(s.socket, 'GET', '/containers/json?all=1')
    const list = l.status === 200 ? JSON.parse(l.body) as Array<{ State: string }> : []
    const ins = await api(s.socket, 'GET', `/containers/${last}/json`)
    if (list.length >= 101 && list.filter((x) => x.State === 'running').length >= 51 && ins.status === 200 && (JSON.parse(ins.body) as { State: { Running: boolean } }).State.Running) break
    await sleep(5)
  }
  const recovered = Number(process.hrtime.bigint() - t0) / 1e6
  await sleep(3000)
  return { ping, cpu: s.pingCpu, recovered, rss: rssKiB(s.child?.pid ?? 0) / 1024 }
}

/** ms from spawning a bare node:http server on a Unix socket to its first answer: any Node daemon's floor. */
async function bareNodeStart (dir: string): Promise<number> {
  const sock = join(dir, `bare-${process.pid}.sock`)
  rmSync(sock, { force: true })
  const t0 = process.hrtime.bigint()
  const child = spawn(process.execPath, ['-e', `require('node:http').createServer((q, s) => { s.end('OK') }).listen(${JSON.stringify(sock)})`], { stdio: 'ignore' })
  try {
    for (let i = 0; i < 30_000; i++) {
      if (await pingOk(sock)) return Number(process.hrtime.bigint() - t0) / 1e6
      await sleep(2)
    }
    return NaN
  } finally {
    child.kill('SIGKILL')
    rmSync(sock, { force: true })
  }
}

/**
 * A restart with 100 containers (50 running, 10 of them publishing a port), 3 networks and a service; with --base,
 * the same in a daemon of each build, restarted in turn (the order alternating cycle by cycle), and bare node:http's
 * start in every cycle.
 */
async function restartRows (): Promise<void> {
  const setups: BerthSetup[] = []
  try {
    const lasts: string[] = []
    for (const b of BUILDS) {
      const s = await berthSetup('r', b.main)
      setups.push(s)
      await berthStart(s)
      lasts.push(await restartState(s))
    }
    await sleep(3000)
    const res = BUILDS.map(() => ({ ping: [] as number[], cpu: [] as number[], recovered: [] as number[], rss: [] as number[] }))
    const bare: number[] = []
    for (let i = 0; i < RESTARTS; i++) {
      const order = BUILDS.map((_, k) => k)
      if (i % 2 === 1) order.reverse()
      for (const k of order) {
        const r = await restartOnce(setups[k] as BerthSetup, lasts[k] as string)
        const into = res[k] as typeof res[number]
        into.ping.push(r.ping); into.cpu.push(r.cpu); into.recovered.push(r.recovered); into.rss.push(r.rss)
      }
      bare.push(await bareNodeStart((setups[0] as BerthSetup).dir))
    }
    raw.restart = { builds: BUILDS, results: res, bareNode: bare, load: readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ') }
    const range = (xs: number[], unit: string): string => `${f1(median(xs))}${unit} (${f1(Math.min(...xs))}–${f1(Math.max(...xs))})`
    for (const [k, b] of BUILDS.entries()) {
      const r = res[k] as typeof res[number]
      const who = BUILDS.length > 1 ? ` [${b.label}]` : ''
      row(`daemon kill -9 → \`/_ping\`, 100 containers (50 running), 3 networks, 10 ports, a service${who}`, range(r.ping, ' ms'), undefined, '≤ 300 ms')
      row(`  daemon main-thread CPU when \`/_ping\` answered${who}`, range(r.cpu, ' ms'), undefined, '—')
      row(`  kill -9 → every container recovered (list and inspect)${who}`, range(r.recovered, ' ms'), undefined, '—')
      row(`  daemon RSS 3 s after every container recovered${who}`, range(r.rss, ' MiB'), undefined, '—')
    }
    row('  bare node:http, spawn → first answer', range(bare, ' ms'), undefined, '—')
  } finally {
    for (const s of setups) await berthStop(s)
  }
}

/**
 * Fresh and settled, busybox imported, against a bare node:http server started at the same time; then the same
 * daemon killed (-9), started again and settled (a start that reads the code cache the first one wrote). With
 * --base, a daemon of each build, side by side.
 */
async function freshRows (engines: Engine[], settleMs: number): Promise<void> {
  const bare = spawn(process.execPath, ['-e', "require('node:http').createServer((q, s) => { s.end('OK') }).listen(0, '127.0.0.1')"], { stdio: 'ignore' })
  const setups: BerthSetup[] = []
  try {
    for (const b of BUILDS) setups.push(await berthSetup('f', b.main))
    for (const s of setups) {
      await berthStart(s)
      await importTar(s.socket, busyboxTar(s.dir), 'busybox')
    }
    await sleep(settleMs)
    const fresh = setups.map((s) => rssKiB(berthEngine(s).pid()) / 1024)
    const node = rssKiB(bare.pid ?? 0) / 1024
    const b = berthEngine(setups[0] as BerthSetup)
    const peer = engines.find((e) => e.name === 'dockerd')
    const helpersIdle = helpers(b)
    for (const s of setups) {
      const c = s.child as ChildProcess
      const exited = new Promise((resolve) => c.once('exit', resolve))
      c.kill('SIGKILL')
      await exited
      await berthStart(s)
    }
    await sleep(settleMs)
    const restarted = setups.map((s) => rssKiB(berthEngine(s).pid()) / 1024)
    raw.fresh = { builds: BUILDS, berth: fresh, restarted, bareNode: node, peer: peer !== undefined ? daemonRss(peer) : null, helpers: engineProcesses(b.pid(), b.markers) }
    for (const [k, build] of BUILDS.entries()) {
      const who = BUILDS.length > 1 ? ` [${build.label}]` : ''
      row(`daemon RSS fresh, settled, busybox imported${who}`, fresh[k] as number, peer !== undefined && k === 0 ? daemonRss(peer) : undefined, `≤ bare node:http + 4 MiB = ${f1(node + 4)} MiB (bare ${f1(node)})`, ' MiB')
      row(`  the same daemon after kill -9 and a new start, settled${who}`, restarted[k] as number, undefined, '—', ' MiB')
    }
    row('helper processes at idle', helpersIdle.length, peer !== undefined ? helpers(peer).length : undefined, '0')
  } finally {
    bare.kill('SIGKILL')
    for (const s of setups) await berthStop(s)
  }
}

/** 50 runs (2 at a time), 100 containers created, 300 lists, all removed; then 30 s idle. */
async function workloadRows (engines: Engine[]): Promise<void> {
  const res: Record<string, { rss: number, peak: number, helpersPss: number, total: number }> = {}
  for (const e of engines) {
    let peak = 0
    const watch = setInterval(() => { peak = Math.max(peak, daemonRss(e)) }, 250)
    let next = 0
    await Promise.all([0, 1].map(async () => { while (next < 50) { next++; await cli(e.socket, ['run', '--rm', 'busybox', 'true']) } }))
    const ids: string[] = []
    for (let i = 0; i < 100; i++) ids.push((JSON.parse((await api(e.socket, 'POST', '/containers/create', { Image: 'busybox', Cmd: ['true'] })).body) as { Id: string }).Id)
    for (let i = 0; i < 300; i++) await api(e.socket, 'GET', '/containers/json?all=1')
    for (const id of ids) await api(e.socket, 'DELETE', `/containers/${id}`)
    await sleep(30_000)
    clearInterval(watch)
    const hp = pssKiB(helpers(e)) / 1024
    const daemonPss = e.name === 'berth' ? pssKiB([e.pid()]) / 1024 : pssKiB(engineProcesses(e.pid(), e.markers).filter((p) => /^(dockerd|containerd) /.test(p.cmdline)).map((p) => p.pid)) / 1024
    res[e.name] = { rss: daemonRss(e), peak, helpersPss: hp, total: e.name === 'berth' ? daemonPss + hp : pssKiB(engineProcesses(e.pid(), e.markers).map((p) => p.pid)) / 1024 }
  }
  raw.workload = res
  row('daemon RSS 30 s after a workload (50 runs, 100 containers, 300 lists, all removed)', res.berth?.rss ?? NaN, res.dockerd?.rss, '≤ 60 MiB', ' MiB')
  row('  peak RSS during it', res.berth?.peak ?? NaN, res.dockerd?.peak, '—', ' MiB')
  row('  PSS with helper processes (dockerd: + containerd)', res.berth?.total ?? NaN, res.dockerd?.total, '—', ' MiB')
}

/** RSS before, right after `HOSTILE` hostile requests, and after the settle. */
async function hostileRows (engines: Engine[], settleMs: number): Promise<void> {
  const s = await berthSetup('h')
  try {
    await berthStart(s)
    await sleep(5000)
    const b = berthEngine(s)
    const targets = [b, ...engines.filter((e) => e.name === 'dockerd')]
    const res: Record<string, { start: number, after: number, settled: number }> = {}
    for (const e of targets) res[e.name] = { start: e.name === 'berth' ? rssKiB(e.pid()) / 1024 : daemonRss(e), after: 0, settled: 0 }
    for (const e of targets) {
      await sendHostile(e.socket, HOSTILE)
      res[e.name] = { ...res[e.name] as { start: number }, after: e.name === 'berth' ? rssKiB(e.pid()) / 1024 : daemonRss(e), settled: 0 }
    }
    await sleep(settleMs)
    for (const e of targets) (res[e.name] as { settled: number }).settled = e.name === 'berth' ? rssKiB(e.pid()) / 1024 : daemonRss(e)
    raw.hostile = res
    const fmt = (r?: { start: number, after: number, settled: number }): string => r === undefined ? '—' : `${f1(r.start)} → ${f1(r.after)} → ${f1(r.settled)} MiB`
    row(`RSS: fresh → after ${HOSTILE} hostile requests → ${SETTLE_S} s later`, fmt(res.berth), res.dockerd !== undefined ? fmt(res.dockerd) : undefined, `within 10 MB of the start (${f1((res.berth?.settled ?? NaN) - (res.berth?.start ?? NaN))} MiB now)`)
  } finally {
    await berthStop(s)
  }
}

/** `_ping` req/s with no containers and with 100 (50 running); list of the 100. */
async function pingRows (engines: Engine[]): Promise<void> {
  const res: Record<string, Record<string, number>> = {}
  for (const e of engines) res[e.name] = { none: wrkRate(e, '/_ping'), noneCpu: cpuPerRequest.get(`${e.name} /_ping`) ?? NaN }
  const ids = new Map<string, string[]>()
  for (const e of engines) {
    const list: string[] = []
    for (let i = 0; i < 100; i++) {
      const r = await api(e.socket, 'POST', '/containers/create', { Image: 'busybox', Cmd: ['sleep', '3600'] })
      const id = (JSON.parse(r.body) as { Id: string }).Id
      if (i < 50) await api(e.socket, 'POST', `/containers/${id}/start`)
      list.push(id)
    }
    ids.set(e.name, list)
  }
  await sleep(3000)
  for (const e of [...engines].reverse()) {
    const r = res[e.name] as Record<string, number>
    r.hundred = wrkRate(e, '/_ping')
    r.hundredCpu = cpuPerRequest.get(`${e.name} /_ping`) ?? NaN
  }
  for (const e of engines) (res[e.name] as Record<string, number>).list = wrkRate(e, '/containers/json?all=1')
  for (const e of engines) await removeAll(e.socket, ids.get(e.name) ?? [])
  raw.ping = res
  row('`_ping` req/s, 4 connections, no containers', res.berth?.none ?? NaN, res.dockerd?.none, '—')
  row('`_ping` req/s with 100 containers (50 running)', res.berth?.hundred ?? NaN, res.dockerd?.hundred, `no slower than with none (${f1((res.berth?.hundred ?? NaN) / (res.berth?.none ?? NaN) * 100)}%)`)
  row('  daemon CPU µs per `_ping`: none; 100 containers', `${f1(res.berth?.noneCpu ?? NaN)}; ${f1(res.berth?.hundredCpu ?? NaN)}`, res.dockerd !== undefined ? `${f1(res.dockerd.noneCpu ?? NaN)}; ${f1(res.dockerd.hundredCpu ?? NaN)}` : undefined, '—')
  row('list of 100 containers, req/s, 4 connections', res.berth?.list ?? NaN, res.dockerd?.list, '≥ 20×')
}

// ---------------------------------------------------------------------------------------------------------------

async function main (): Promise<void> {
  const started = Date.now()
  const scratch = mkdtempSync(join(tmpdir(), 'berth-light-x-'))
  const tar = busyboxTar(scratch)
  let peer: Peer | undefined
  const main = await berthSetup('l')
  try {
    if (values['no-peer'] !== true) {
      process.stderr.write('starting the peer (dockerd in its own network namespace)…\n')
      peer = await startPeer()
      await importTar(peer.socket, tar, 'busybox')
    }
    await berthStart(main)
    await importTar(main.socket, tar, 'busybox')
    const engines: Engine[] = [berthEngine(main), ...(peer !== undefined ? [peerEngine(peer)] : [])]
    for (const e of engines) if (!existsSync(e.socket)) throw new Error(`${e.name}: no socket`)
    if (wanted('memory')) { process.stderr.write('fresh memory…\n'); await freshRows(engines, 12_000) }
    if (wanted('run')) { process.stderr.write('run rows…\n'); await runRows(engines, scratch, tar, join(main.dir, 'data')) }
    if (wanted('ports')) { process.stderr.write('published ports…\n'); await portRows(engines) }
    if (wanted('ping')) { process.stderr.write('_ping and list…\n'); await pingRows(engines) }
    if (wanted('memory')) { process.stderr.write('workload memory…\n'); await workloadRows(engines) }
    if (wanted('hostile')) { process.stderr.write('hostile requests…\n'); await hostileRows(engines, SETTLE_S * 1000) }
    if (wanted('restart')) { process.stderr.write('restart…\n'); await restartRows() }
  } finally {
    await berthStop(main)
    if (peer !== undefined) await stopPeer(peer)
    rmSync(scratch, { recursive: true, force: true })
  }
  const load = readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')
  process.stdout.write(JSON.stringify({ bench: 'lightness', node: process.version, commit: gitCommit(), load, seconds: Math.round((Date.now() - started) / 1000), raw }) + '\n')
  const w = [60, 30, 34, 8]
  const line = (r: Row): string => `| ${r.measure.padEnd(w[0] as number)} | ${r.berth.padEnd(w[1] as number)} | ${r.peer.padEnd(w[2] as number)} | ${r.ratio.padEnd(w[3] as number)} | ${r.target} |`
  process.stdout.write(`\ncommit ${gitCommit()}, node ${process.version}, load average ${load}, ${RUNS} samples per latency row\n`)
  process.stdout.write(line({ measure: 'measure', berth: 'Berth', peer: peer !== undefined ? 'dockerd 20.10 (default bridge)' : 'peer', ratio: 'ratio', target: 'target' }) + '\n')
  process.stdout.write(`|${'-'.repeat((w[0] as number) + 2)}|${'-'.repeat((w[1] as number) + 2)}|${'-'.repeat((w[2] as number) + 2)}|${'-'.repeat((w[3] as number) + 2)}|---|\n`)
  for (const r of rows) process.stdout.write(line(r) + '\n')
}

main().catch((err: Error) => { process.stderr.write(err.stack + '\n'); process.exitCode = 1 })
