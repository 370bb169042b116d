// Engine benchmarks (not part of npm test). Starts a Berth daemon in a temp dir (or uses --socket), optionally a
// second engine (--compare unix:///var/run/docker.sock, e.g. a dockerd), runs each workload against both in the
// same session, alternating, and prints figures and ratios.
//
//   node dist/tools/bench/engine.js [--compare unix:///path/to/docker.sock [--compare-tcp 127.0.0.1:2375]]
//                                   [--runs 20] [--only run,list,...]
// The list workload uses wrk over TCP when wrk is installed and both engines have a TCP address (Berth gets one on
// 127.0.0.1; give dockerd `-H tcp://127.0.0.1:2375` and --compare-tcp), otherwise a Node client on the socket.
import http from 'node:http'
import { spawn, execFileSync, type ChildProcess } from 'node:child_process'
import { mkdtempSync, readFileSync, existsSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { ROOT, median, gitCommit, busyboxTar, importTar, unmountUnder, privateNetwork, removePrivateNetwork, type PrivateNetwork } from './common.js'

const { values } = parseArgs({ options: { compare: { type: 'string' }, 'compare-tcp': { type: 'string' }, runs: { type: 'string' }, only: { type: 'string' }, socket: { type: 'string' } } })
const RUNS = Number(values.runs ?? '20')
const ONLY = values.only?.split(',')

interface Target { name: string, socket: string, pid: number | null, tcp: string | null }

const agent = (socket: string): http.Agent => new http.Agent({ keepAlive: true, maxSockets: 8, socketPath: socket } as http.AgentOptions)
const agents = new Map<string, http.Agent>()

async function req (socket: string, method: string, path: string, body?: unknown): Promise<{ status: number, body: Buffer }> {
  let a = agents.get(socket)
  if (a === undefined) { a = agent(socket); agents.set(socket, a) }
  return await new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body))
    const r = http.request({ agent: a, socketPath: socket, method, path, headers: payload === undefined ? {} : { 'Content-Type': 'application/json', 'Content-Length': payload.length } }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (d: Buffer) => chunks.push(d))
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks) }))
      res.on('error', reject)
    })
    r.on('error', reject)
    r.end(payload)
  })
}

async function discard (socket: string, path: string): Promise<void> {
  let a = agents.get(socket)
  if (a === undefined) { a = agent(socket); agents.set(socket, a) }
  await new Promise<void>((resolve, reject) => {
    const r = http.request({ agent: a, socketPath: socket, method: 'GET', path }, (res) => { res.resume(); res.on('end', resolve); res.on('error', reject) })
    r.on('error', reject)
    r.end()
  })
}

async function drain (socket: string, path: string): Promise<number> {
  return await new Promise((resolve, reject) => {
    const r = http.request({ socketPath: socket, method: 'GET', path }, (res) => {
      let n = 0
      res.on('data', (d: Buffer) => { n += d.length })
      res.on('end', () => resolve(n))
      res.on('error', reject)
    })
    r.on('error', reject)
    r.end()
  })
}

function hasWrk (): boolean {
  try { execFileSync('wrk', ['--version'], { stdio: 'ignore' }); return true } catch (err) { return (err as { status?: number }).status === 1 }
}

async function cli (socket: string, args: string[]): Promise<number> {
  const t0 = process.hrtime.bigint()
  await new Promise<void>((resolve, reject) => {
    const c = spawn('docker', args, { env: { ...process.env, DOCKER_HOST: `unix://${socket}` }, stdio: 'ignore' })
    c.on('exit', (code) => { if (code === 0) resolve(); else reject(new Error(`docker ${args.join(' ')} exited ${String(code)}`)) })
  })
  return Number(process.hrtime.bigint() - t0) / 1e6
}

async function apiRun (socket: string, cmd: string[]): Promise<string> {
  const c = await req(socket, 'POST', '/containers/create', { Image: 'busybox', Cmd: cmd })
  const id = (JSON.parse(c.body.toString()) as { Id: string }).Id
  await req(socket, 'POST', `/containers/${id}/start`)
  await req(socket, 'POST', `/containers/${id}/wait`)
  return id
}

function rssKiB (pid: number): number {
  const m = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
  return Number(m?.[1] ?? 0)
}

function pssKiB (pids: number[]): number {
  let total = 0
  for (const p of pids) {
    try { total += Number(/^Pss:\s+(\d+)/m.exec(readFileSync(`/proc/${p}/smaps_rollup`, 'utf8'))?.[1] ?? 0) } catch { /* gone */ }
  }
  return total
}

function pidsOf (pattern: string): number[] {
  try { return execFileSync('pgrep', ['-f', pattern], { encoding: 'utf8' }).split('\n').filter((x) => x !== '').map(Number) } catch { return [] }
}

/**
 * Latency workloads: one sample per call. The engines take turns sample by sample (A B, B A, …), so a slow patch of
 * the machine weighs on both alike; each reports its median.
 */
const latencies: Record<string, (t: Target) => Promise<number>> = {
  async run_latency_ms (t) { return await cli(t.socket, ['run', '--rm', 'busybox', 'true']) },
  async api_cycle_ms (t) {
    const t0 = process.hrtime.bigint()
    const id = await apiRun(t.socket, ['echo', 'hi'])
    await drain(t.socket, `/containers/${id}/logs?stdout=1`)
    await req(t.socket, 'DELETE', `/containers/${id}`)
    return Number(process.hrtime.bigint() - t0) / 1e6
  }
}

const workloads: Record<string, (t: Target) => Promise<Record<string, number>>> = {
  async parallel (t) {
    const t0 = process.hrtime.bigint()
    let next = 0
    const worker = async (): Promise<void> => {
      while (next < 50) { next++; await cli(t.socket, ['run', '--rm', 'busybox', 'true']) }
    }
    await Promise.all([worker(), worker()])
    return { fifty_runs_2_parallel_s: Number(process.hrtime.bigint() - t0) / 1e9 }
  },
  async list (t) {
    const ids: string[] = []
    for (let i = 0; i < 100; i++) {
      const c = await req(t.socket, 'POST', '/containers/create', { Image: 'busybox', Cmd: ['true'] })
      ids.push((JSON.parse(c.body.toString()) as { Id: string }).Id)
    }
    let rate: number
    if (t.tcp !== null && hasWrk()) {
      // wrk (C) over TCP, so that the load generator costs little next to the daemon on a small machine; a 1 s run
      // first, not counted, so that the figure is the steady rate rather than a JIT's warm-up after other workloads
      execFileSync('wrk', ['-t1', '-c8', '-d1s', `http://${t.tcp}/containers/json?all=1`], { encoding: 'utf8' })
      const out = execFileSync('wrk', ['-t1', '-c8', '-d3s', `http://${t.tcp}/containers/json?all=1`], { encoding: 'utf8' })
      rate = Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1] ?? 0)
    } else {
      await Promise.all([0, 1, 2, 3, 4, 5, 6, 7].map(async () => { for (let i = 0; i < 50; i++) await discard(t.socket, '/containers/json?all=1') }))
      const end = Date.now() + 3000
      let n = 0
      // a lean client (bodies discarded, 8 connections) over the Unix socket
      await Promise.all([0, 1, 2, 3, 4, 5, 6, 7].map(async () => { while (Date.now() < end) { await discard(t.socket, '/containers/json?all=1'); n++ } }))
      rate = n / 3
    }
    for (const id of ids) await req(t.socket, 'DELETE', `/containers/${id}`)
    return { list_100_req_per_s: rate }
  },
  async logs (t) {
    const id = await apiRun(t.socket, ['sh', '-c', 'yes 0123456789012345678901234567890123456789012345678901234567890123456789 | head -c 104857600'])
    const t0 = process.hrtime.bigint()
    const bytes = await drain(t.socket, `/containers/${id}/logs?stdout=1&stderr=1`)
    const s = Number(process.hrtime.bigint() - t0) / 1e9
    await req(t.socket, 'DELETE', `/containers/${id}`)
    return { logs_read_mb_per_s: bytes / 1e6 / s, logs_bytes: bytes }
  },
  async memory (t): Promise<Record<string, number>> {
    if (t.pid === null) return {}
    const before = pssKiB(t.name === 'berth' ? [t.pid] : [t.pid, ...pidsOf('^containerd( |$)')])
    const ids: string[] = []
    for (let i = 0; i < 10; i++) {
      const c = await req(t.socket, 'POST', '/containers/create', { Image: 'busybox', Cmd: ['sleep', '600'] })
      const id = (JSON.parse(c.body.toString()) as { Id: string }).Id
      await req(t.socket, 'POST', `/containers/${id}/start`)
      ids.push(id)
    }
    await new Promise((resolve) => setTimeout(resolve, 500))
    const monitors = t.name === 'berth' ? pidsOf('[b]erth-shim') : pidsOf('[c]ontainerd-shim')
    const daemons = t.name === 'berth' ? [t.pid] : [t.pid, ...pidsOf('^containerd( |$)')]
    const after = pssKiB(daemons) + pssKiB(monitors)
    for (const id of ids) await req(t.socket, 'DELETE', `/containers/${id}?force=1`)
    return { per_container_pss_mib: (after - before) / 10 / 1024 }
  }
}

async function startBerth (): Promise<{ target: Target, child: ChildProcess, dir: string, network: PrivateNetwork }> {
  const dir = mkdtempSync(join(tmpdir(), 'berth-bench-'))
  const socket = join(dir, 'b.sock')
  // its own bridge, subnet and chains (never berth0/BERTH), removed after the run
  const network = privateNetwork('e')
  const child = spawn(process.execPath, [join(ROOT, 'dist/lib/cli/main.js'), 'daemon', '--config-file', '/dev/null', '-H', `unix://${socket}`, '-H', 'tcp://127.0.0.1:0', '--data-root', join(dir, 'data'), '--exec-root', join(dir, 'run'), ...network.args], { stdio: ['ignore', 'ignore', 'pipe'] })
  let tcp: string | null = null
  let stderr = ''
  child.stderr?.on('data', (d: Buffer) => {
    stderr += d.toString()
    const m = /listening on tcp:\/\/([\d.]+:\d+)/.exec(stderr)
    if (m !== null) tcp = m[1] as string
  })
  for (let i = 0; i < 200 && (!existsSync(socket) || tcp === null); i++) await new Promise((resolve) => setTimeout(resolve, 25))
  await importTar(socket, busyboxTar(dir), 'busybox')
  return { target: { name: 'berth', socket, pid: child.pid ?? null, tcp }, child, dir, network }
}

async function main (): Promise<void> {
  const berth = values.socket !== undefined ? { target: { name: 'berth', socket: values.socket.replace(/^unix:\/\//, ''), pid: null, tcp: null }, child: null, dir: null, network: null } : await startBerth()
  const targets: Target[] = [berth.target]
  if (values.compare !== undefined) {
    const sock = values.compare.replace(/^unix:\/\//, '')
    const pid = pidsOf('^dockerd')[0] ?? null
    targets.push({ name: 'other', socket: sock, pid, tcp: values['compare-tcp'] ?? null })
  }
  const results: Record<string, Record<string, number>> = {}
  // idle footprint first, before any workload grows the heap: once a second after start-up, and again once the
  // daemon has sat idle long enough for its runtime to hand memory back (V8's memory reducer runs about 8 s into an
  // idle period; Go's scavenger works on a similar scale)
  const footprint = (t: Target): number => {
    // dockerd's footprint includes the containerd it needs
    const extra = t.name === 'other' ? pidsOf('^containerd( |$)').reduce((n, p) => n + rssKiB(p), 0) : 0
    return (rssKiB(t.pid as number) + extra) / 1024
  }
  await new Promise((resolve) => setTimeout(resolve, 1000))
  for (const t of targets) if (t.pid !== null) results[t.name] = { idle_rss_mib: footprint(t) }
  await new Promise((resolve) => setTimeout(resolve, 11_000))
  for (const t of targets) if (t.pid !== null) results[t.name] = { ...results[t.name], idle_settled_rss_mib: footprint(t) }
  for (const [name, sample] of Object.entries(latencies)) {
    if (ONLY !== undefined && !ONLY.includes(name.replace(/_.*/, ''))) continue
    const times = new Map<Target, number[]>(targets.map((t) => [t, []]))
    for (const t of targets) await sample(t) // warm-up, not counted
    for (let i = 0; i < RUNS; i++) {
      for (const t of i % 2 === 0 ? targets : [...targets].reverse()) times.get(t)?.push(await sample(t))
    }
    for (const t of targets) results[t.name] = { ...(results[t.name] ?? {}), [name]: median(times.get(t) ?? []) }
  }
  let turn = 0
  for (const name of Object.keys(workloads)) {
    if (ONLY !== undefined && !ONLY.includes(name)) continue
    // engines take turns going first, and each starts after a pause: the previous workload's background work (a
    // dockerd's containerd cleaning up after 50 runs, say) should not land on whoever happens to be measured next
    for (const t of turn++ % 2 === 0 ? targets : [...targets].reverse()) {
      await new Promise((resolve) => setTimeout(resolve, 2000))
      const r = await workloads[name]!(t)
      results[t.name] = { ...(results[t.name] ?? {}), ...r }
    }
  }
  const commit = gitCommit()
  process.stdout.write(JSON.stringify({ bench: 'engine', node: process.version, commit, results }) + '\n')
  for (const [k, v] of Object.entries(results.berth ?? {})) {
    const other = results.other?.[k]
    const ratio = other !== undefined && other !== 0 ? `  ratio ${(v / other).toFixed(2)}` : ''
    process.stdout.write(`${k.padEnd(28)} berth ${v.toFixed(2)}${other !== undefined ? `  other ${other.toFixed(2)}` : ''}${ratio}\n`)
  }
  if (berth.child !== null) {
    berth.child.kill('SIGTERM')
    await new Promise((resolve) => berth.child?.on('exit', resolve))
    if (berth.network !== null) await removePrivateNetwork(berth.network, berth.dir as string)
    unmountUnder(berth.dir as string)
    rmSync(berth.dir as string, { recursive: true, force: true })
  }
  for (const a of agents.values()) a.destroy()
}

main().catch((err: Error) => { process.stderr.write(err.stack + '\n'); process.exitCode = 1 })
