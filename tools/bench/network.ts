// Networking benchmarks (not part of npm test): HTTP throughput through a published port (wrk from the host to
// busybox httpd in a container) and `docker run --rm` latency on a user-defined bridge network. Starts a Berth daemon
// with its own bridge, subnet and chains; --compare runs the same workloads against another engine (a dockerd started
// with its default networking: bridge, iptables, userland proxy) in the same session, engines taking turns.
//
//   node dist/tools/bench/network.js [--compare unix:///path/to/docker.sock] [--runs 10] [--seconds 5]
import http from 'node:http'
import { execFileSync, spawnSync, type ChildProcess } from 'node:child_process'
import { parseArgs } from 'node:util'
import { randomBytes } from 'node:crypto'
import { type Target, type PrivateNetwork, docker, freePort, busyboxTar, privateNetwork, startBerthDaemon, compareTarget, gitCommit, stopBerthDaemon } from './common.js'

const { values } = parseArgs({ options: { compare: { type: 'string' }, runs: { type: 'string' }, seconds: { type: 'string' } } })
const RUNS = Math.min(Number(values.runs ?? '10'), 100)
const SECONDS = Math.min(Number(values.seconds ?? '5'), 30)

async function waitHttp (port: number): Promise<void> {
  for (let i = 0; i < 100; i++) {
    const ok = await new Promise<boolean>((resolve) => {
      http.get({ host: '127.0.0.1', port, path: '/f', timeout: 1000 }, (res) => { res.resume(); res.on('end', () => { resolve(res.statusCode === 200) }) }).on('error', () => { resolve(false) })
    })
    if (ok) return
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  throw new Error(`nothing answers on 127.0.0.1:${port}`)
}

/** Requests per second of wrk (2 threads, 32 connections) on a 16 KiB file through a published port. */
async function throughput (t: Target): Promise<number> {
  const port = await freePort()
  const name = `bench-web-${randomBytes(3).toString('hex')}`
  const r = docker(t, ['run', '-d', '--name', name, '-p', `${port}:80`, 'busybox', 'sh', '-c', 'head -c 16384 /dev/zero > /tmp/f; httpd -f -p 80 -h /tmp'])
  if (r.status !== 0) throw new Error(`${t.name}: ${r.stderr}`)
  try {
    await waitHttp(port)
    const out = execFileSync('wrk', ['-t2', '-c32', `-d${SECONDS}s`, `http://127.0.0.1:${port}/f`], { encoding: 'utf8' })
    const m = /Requests\/sec:\s+([\d.]+)/.exec(out)
    return m === null ? 0 : Number(m[1])
  } finally {
    docker(t, ['rm', '-f', name])
  }
}

/** Median ms of `docker run --rm busybox true` on a user-defined bridge network. */
function runLatency (t: Target, network: string): number {
  const times: number[] = []
  docker(t, ['run', '--rm', '--network', network, 'busybox', 'true']) // warm-up
  for (let i = 0; i < RUNS; i++) {
    const start = process.hrtime.bigint()
    const r = docker(t, ['run', '--rm', '--network', network, 'busybox', 'true'])
    if (r.status !== 0) throw new Error(`${t.name}: ${r.stderr}`)
    times.push(Number(process.hrtime.bigint() - start) / 1e6)
  }
  times.sort((a, b) => a - b)
  return times[Math.floor(times.length / 2)] as number
}

async function startBerth (): Promise<{ target: Target, child: ChildProcess, dir: string, network: PrivateNetwork }> {
  const network = privateNetwork('n')
  const { socket, child, dir } = await startBerthDaemon('berth-nbench-', network.args)
  const target = { name: 'berth', socket }
  docker(target, ['import', busyboxTar(dir), 'busybox:latest'])
  return { target, child, dir, network }
}

async function main (): Promise<void> {
  if (spawnSync('wrk', ['--version']).error !== undefined) throw new Error('wrk is not installed')
  const berth = await startBerth()
  const targets: Target[] = [berth.target]
  targets.push(...compareTarget(values.compare))
  const netName = `bench-${randomBytes(3).toString('hex')}`
  for (const t of targets) {
    const r = docker(t, ['network', 'create', netName])
    if (r.status !== 0) throw new Error(`${t.name}: network create: ${r.stderr}`)
  }
  const results: Record<string, Record<string, number>> = {}
  for (const [i, t] of [...targets, ...[...targets].reverse()].entries()) {
    const rps = await throughput(t)
    results[t.name] = { ...(results[t.name] ?? {}), [`http_rps_${i < targets.length ? 1 : 2}`]: rps }
    await new Promise((resolve) => setTimeout(resolve, 1000))
  }
  for (const t of targets) {
    const r = results[t.name] as Record<string, number>
    r.http_rps = Math.max(r.http_rps_1 ?? 0, r.http_rps_2 ?? 0)
    delete r.http_rps_1
    delete r.http_rps_2
  }
  for (const t of targets.length > 1 ? [targets[1] as Target, targets[0] as Target] : targets) {
    results[t.name] = { ...(results[t.name] ?? {}), run_rm_bridge_ms: runLatency(t, netName) }
  }
  for (const t of targets) docker(t, ['network', 'rm', netName])
  const commit = gitCommit()
  process.stdout.write(JSON.stringify({ bench: 'network', node: process.version, commit, results }) + '\n')
  for (const [k, v] of Object.entries(results.berth ?? {})) {
    const other = results.other?.[k]
    const ratio = other !== undefined && other !== 0 ? `  ratio ${(v / other).toFixed(2)}` : ''
    process.stdout.write(`${k.padEnd(20)} berth ${v.toFixed(1)}${other !== undefined ? `  other ${other.toFixed(1)}` : ''}${ratio}\n`)
  }
  await stopBerthDaemon(berth, berth.network)
}

main().catch((err: Error) => { process.stderr.write(err.stack + '\n'); process.exitCode = 1 })
