// Benchmark: the PHP manual's EventHttp::bind() example (`/about` → sendReply(200, "OK")) on berth/evhttp,
// against a plain node:http server answering the same path, both driven by wrk in the same run:
//   keep-alive      wrk defaults (HTTP/1.1, persistent connections)
//   1.0 close       every request `GET /about HTTP/1.0` + `Connection: close` (a wrk Lua script)
// In 1.0 close mode evhttp's reply has no Content-Length and ends with the server's close; wrk then reconnects
// twice and closes one of the new connections unused, so such a server accepts two connections per request
// (libevent as well as berth/evhttp). node:http answers with a Content-Length and is spared the extra one.
// Servers run in child processes of their own; rounds are interleaved and medians reported, since the machine
// may be shared. With taskset available and two CPUs or more, wrk runs on CPU 0 and the servers on CPU 1, so
// the load generator and the server do not compete for one core (EVHTTP_BENCH_PIN=0 turns that off; pin an
// external libevent server yourself: `taskset -c 1 ./about 8088`). On Linux the server's own CPU time per request
// (user + system, from /proc) is reported too, a figure that depends less on the load generator and on other
// processes; give EVHTTP_BENCH_LIBEVENT_PID to get it for the libevent server. wrk's own CPU is reported too ("wrk
// busy"): with HTTP/1.0 close it spends ~100 µs per request on its one core, so there the rates of all servers meet
// at wrk's ceiling. Set EVHTTP_BENCH_LIBEVENT_URL (e.g. http://127.0.0.1:8088/about, a C build of the same example
// against libevent) to measure libevent in the same run and get the ratios the targets are stated in.
//
//   node dist/tools/bench/evhttp.js [--duration 5] [--rounds 3] [--connections 50]
//   node dist/tools/bench/evhttp.js serve evhttp|node      (internal: one server, prints its port)

import { execFileSync, spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:http'
import { availableParallelism, tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { EventBase, EventHttp, type EventHttpRequest } from '../../lib/evhttp/index.js'
import net from 'node:net'

const ROOT_DIR = fileURLToPath(new URL('../../../', import.meta.url))

type Mode = 'keepalive' | 'close'
const MODES: readonly Mode[] = ['keepalive', 'close']

interface Target {
  name: string
  url: string
  child?: ChildProcess
  pid?: number
}

interface Run {
  rps: number
  errors: number
  non2xx: number
  requests: number
  /** Server CPU seconds (user + system) during the run, when /proc tells. */
  cpu?: number
  /** wrk's own CPU seconds (user + system; the waited-for children's times of this process). */
  wrkCpu?: number
}

/**
 * utime + stime of a process in seconds, from /proc/<pid>/stat (Linux); undefined elsewhere. `children`: cutime +
 * cstime instead, the CPU of the children it has waited for (wrk, run with execFileSync).
 */
function cpuSeconds (pid: number | undefined | 'self', children = false): number | undefined {
  if (pid === undefined) return undefined
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    const at = children ? 13 : 11
    return (Number(fields[at]) + Number(fields[at + 1])) / 100 // clock ticks; USER_HZ is 100 on Linux
  } catch {
    return undefined
  }
}

function arg (name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`)
  return i !== -1 ? Number(process.argv[i + 1]) : fallback
}

function aboutHandler (req: EventHttpRequest): void {
  req.sendReply(200, 'OK')
}

function serveEvhttp (): void {
  const base = new EventBase()
  const http = new EventHttp(base)
  if (!http.bind('127.0.0.1', 0)) throw new Error('bind failed: ' + String(http.lastError))
  http.setCallback('/about', aboutHandler)
  process.stdout.write(`port ${http.getBoundAddresses()[0]!.port}\n`)
  void base.dispatch()
}

function serveNode (): void {
  const server = createServer((req, res) => {
    if (req.url === '/about') {
      res.writeHead(200, 'OK', { 'Content-Type': 'text/html; charset=ISO-8859-1', 'Content-Length': '0' })
      res.end()
    } else {
      res.writeHead(404)
      res.end()
    }
  })
  server.listen(0, '127.0.0.1', () => {
    const a = server.address()
    process.stdout.write(`port ${typeof a === 'object' && a !== null ? a.port : 0}\n`)
  })
}

function canPin (): boolean {
  if (process.env.EVHTTP_BENCH_PIN === '0' || availableParallelism() < 2) return false
  try {
    execFileSync('taskset', ['-c', '0', 'true'])
    return true
  } catch {
    return false
  }
}

const PIN = canPin()

function startServer (kind: string): Promise<Target> {
  const argv = [fileURLToPath(import.meta.url), 'serve', kind]
  const child = PIN
    ? spawn('taskset', ['-c', '1', process.execPath, ...argv], { stdio: ['ignore', 'pipe', 'inherit'] })
    : spawn(process.execPath, argv, { stdio: ['ignore', 'pipe', 'inherit'] })
  return new Promise((resolve, reject) => {
    child.once('error', reject)
    child.stdout!.once('data', (d: Buffer) => {
      const port = /port (\d+)/.exec(String(d))?.[1]
      if (port === undefined) reject(new Error(`server ${kind} did not start: ${String(d)}`))
      else {
        const name = kind === 'evhttp' ? 'berth/evhttp' : 'node:http'
        // Under taskset the child is taskset, which execs node: same pid.
        resolve({ name, url: `http://127.0.0.1:${port}/about`, child, pid: child.pid })
      }
    })
  })
}

function wrk (target: Target, mode: Mode, seconds: number, connections: number, script: string): Run {
  const url = target.url
  const args = ['-t1', `-c${connections}`, `-d${seconds}s`]
  if (mode === 'close') args.push('-s', script)
  const cpu0 = cpuSeconds(target.pid)
  const wrk0 = cpuSeconds('self', true)
  const out = PIN
    ? execFileSync('taskset', ['-c', '0', 'wrk', ...args, url], { encoding: 'utf8' })
    : execFileSync('wrk', [...args, url], { encoding: 'utf8' })
  const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1] ?? 0)
  const e = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(out)
  // With HTTP/1.0 close-delimited replies wrk counts each server-side close as a "read" error; only connect,
  // write and timeout errors are failures here.
  const errors = e === null ? 0 : Number(e[1]) + Number(e[3]) + Number(e[4])
  const non2xx = Number(/Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1] ?? 0)
  const requests = Number(/(\d+) requests in/.exec(out)?.[1] ?? 0)
  const cpu1 = cpuSeconds(target.pid)
  const cpu = cpu0 !== undefined && cpu1 !== undefined ? cpu1 - cpu0 : undefined
  const wrk1 = cpuSeconds('self', true)
  const wrkCpu = wrk0 !== undefined && wrk1 !== undefined ? wrk1 - wrk0 : undefined
  return { rps, errors, non2xx, requests, cpu, wrkCpu }
}

function median (xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b)
  const m = s.length >> 1
  return s.length % 2 === 1 ? s[m]! : (s[m - 1]! + s[m]!) / 2
}

function commit (): string {
  try {
    return execFileSync('git', ['rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim()
  } catch {
    return 'unknown'
  }
}

/**
 * The same example in C against libevent (tools/bench/libevent-about.c), built with the system cc when libevent-dev
 * is installed and started on CPU 1 like the other servers; null (with the reason on stderr) otherwise.
 */
async function startLibevent (dir: string): Promise<Target | null> {
  const src = join(ROOT_DIR, 'tools/bench/libevent-about.c')
  const bin = join(dir, 'libevent-about')
  try {
    execFileSync('cc', ['-O2', '-o', bin, src, '-levent'], { stdio: ['ignore', 'ignore', 'pipe'] })
  } catch (err) {
    process.stderr.write(`libevent not measured (cc or libevent-dev missing?): ${(err as Error).message.split('\n')[0] ?? ''}\n`)
    return null
  }
  const port = await new Promise<number>((resolve) => {
    const srv = net.createServer().listen(0, '127.0.0.1', () => { const p = (srv.address() as net.AddressInfo).port; srv.close(() => { resolve(p) }) })
  })
  const child = PIN ? spawn('taskset', ['-c', '1', bin, String(port)], { stdio: ['ignore', 'pipe', 'ignore'] }) : spawn(bin, [String(port)], { stdio: ['ignore', 'pipe', 'ignore'] })
  await new Promise<void>((resolve, reject) => {
    child.stdout?.once('data', () => { resolve() })
    child.once('exit', (code) => { reject(new Error(`libevent-about exited with ${String(code)}`)) })
  })
  return { name: 'libevent', url: `http://127.0.0.1:${port}/about`, pid: child.pid, child }
}

async function main (): Promise<void> {
  const seconds = arg('duration', 5)
  const rounds = arg('rounds', 3)
  const connections = arg('connections', 50)
  const dir = mkdtempSync(join(tmpdir(), 'evhttp-bench-'))
  const script = join(dir, 'http10-close.lua')
  writeFileSync(script, 'request = function() return "GET /about HTTP/1.0\\r\\nConnection: close\\r\\n\\r\\n" end\n')
  const targets: Target[] = [await startServer('evhttp'), await startServer('node')]
  const libevent = process.env.EVHTTP_BENCH_LIBEVENT_URL
  if (libevent !== undefined && libevent !== '') {
    const pid = Number(process.env.EVHTTP_BENCH_LIBEVENT_PID)
    targets.push({ name: 'libevent', url: libevent, pid: Number.isInteger(pid) && pid > 0 ? pid : undefined })
  } else {
    const own = await startLibevent(dir)
    if (own !== null) targets.push(own)
  }
  const runs = new Map<string, Run[]>()
  try {
    for (const t of targets) for (const m of MODES) wrk(t, m, 1, connections, script) // warm-up
    for (let r = 0; r < rounds; r++) {
      for (const m of MODES) {
        for (const t of targets) {
          const key = `${t.name}|${m}`
          const run = wrk(t, m, seconds, connections, script)
          if (!runs.has(key)) runs.set(key, [])
          runs.get(key)!.push(run)
        }
      }
    }
  } finally {
    for (const t of targets) t.child?.kill()
    rmSync(dir, { recursive: true, force: true })
  }
  const figures: Record<string, Record<string, number>> = {}
  for (const t of targets) {
    figures[t.name] = {}
    for (const m of MODES) {
      const rs = runs.get(`${t.name}|${m}`)!
      figures[t.name]![m] = Math.round(median(rs.map((x) => x.rps)))
      figures[t.name]![`${m}_min`] = Math.round(Math.min(...rs.map((x) => x.rps)))
      figures[t.name]![`${m}_max`] = Math.round(Math.max(...rs.map((x) => x.rps)))
      const cpu = rs.filter((x) => x.cpu !== undefined && x.requests > 0)
      if (cpu.length > 0) {
        figures[t.name]![`${m}_cpu_us`] = Number(median(cpu.map((x) => x.cpu! * 1e6 / x.requests)).toFixed(1))
      }
      const gen = rs.filter((x) => x.wrkCpu !== undefined && x.requests > 0)
      if (gen.length > 0) {
        // how busy the load generator was: near 100% of its CPU, the rate is wrk's ceiling, not the server's
        figures[t.name]![`${m}_wrk_cpu_us`] = Number(median(gen.map((x) => x.wrkCpu! * 1e6 / x.requests)).toFixed(1))
        figures[t.name]![`${m}_wrk_busy`] = Number(median(gen.map((x) => x.wrkCpu! / seconds)).toFixed(2))
      }
      const bad = rs.reduce((n, x) => n + x.errors + x.non2xx, 0)
      if (bad > 0) figures[t.name]![`${m}_errors`] = bad
    }
  }
  const ratio = (a: string, b: string, m: Mode): number | undefined =>
    figures[a] !== undefined && figures[b] !== undefined ? Number((figures[a]![m]! / figures[b]![m]!).toFixed(3)) : undefined
  const ratios: Record<string, number | undefined> = {
    keepalive_vs_node: ratio('berth/evhttp', 'node:http', 'keepalive'),
    close_vs_node: ratio('berth/evhttp', 'node:http', 'close'),
    keepalive_vs_libevent: ratio('berth/evhttp', 'libevent', 'keepalive'),
    close_vs_libevent: ratio('berth/evhttp', 'libevent', 'close'),
  }
  const lines = [`wrk -t1 -c${connections}, ${rounds} × ${seconds}s per figure (median)${PIN ? ', wrk on CPU 0, servers on CPU 1' : ''}`,
    'server           keep-alive req/s   1.0 close req/s   server CPU µs/req (keep-alive, close)   wrk busy (keep-alive, close)']
  for (const t of targets) {
    const f = figures[t.name]!
    const cpu = f.keepalive_cpu_us !== undefined ? `${f.keepalive_cpu_us}, ${f.close_cpu_us}` : '-'
    const busy = f.keepalive_wrk_busy !== undefined ? `${Math.round(f.keepalive_wrk_busy * 100)}%, ${Math.round(f.close_wrk_busy! * 100)}%` : '-'
    lines.push(`${t.name.padEnd(16)} ${String(f.keepalive).padStart(18)} ${String(f.close).padStart(17)}   ${cpu.padEnd(38)} ${busy}`)
  }
  lines.push('(wrk busy: its CPU over the run\'s length; near 100% the rate is the load generator\'s ceiling, not the server\'s)')
  for (const [k, v] of Object.entries(ratios)) if (v !== undefined) lines.push(`ratio ${k}: ${v}`)
  process.stdout.write(lines.join('\n') + '\n')
  process.stdout.write(JSON.stringify({
    bench: 'evhttp', node: process.version, commit: commit(), seconds, rounds, connections, pinned: PIN, figures, ratios,
  }) + '\n')
}

if (process.argv[2] === 'serve') {
  if (process.argv[3] === 'evhttp') serveEvhttp()
  else serveNode()
} else {
  main().catch((err: unknown) => {
    process.stderr.write(String(err) + '\n')
    process.exitCode = 1
  })
}
