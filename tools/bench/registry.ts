// Registry benchmarks (not part of npm test): push and pull of a 100 MiB image (4 random layers) with skopeo (and
// the registry's own CPU per MiB each way, its helper processes included, the steadier figure on a shared machine),
// manifest GET and blob HEAD rates at 16 connections (wrk), and resident memory when idle. Each round starts fresh
// registries (new data root, new port: nothing cached, nothing to mount) and alternates Berth with Debian's
// docker-registry (distribution 2.8.2) when it is installed. Berth runs as `berth registry` runs: the bundled entry
// point as a program (its first line's V8 and allocator settings), or dist/lib/cli/main.js without a bundle.
// Each registry is measured twice: a first push and pull of one image (a fresh process: Berth's JIT compiles its
// request paths meanwhile), then of a second image of the same size (the warm, steady figure). Prints a table and
// one JSON line.
//
//   node dist/tools/bench/registry.js [--rounds 3] [--size-mib 100] [--layers 4] [--duration 5] [--no-compare]
//                                     [--transfer-only] [--base DIR]
// --transfer-only skips the idle memory and the request rates (the quick loop for the CPU per MiB figures).
// --base DIR adds a third registry to every round: `berth registry` of another built checkout (an A/B of two builds
// in one alternating run, reported as berth-base).
import http from 'node:http'
import net from 'node:net'
import { spawn, execFile, execFileSync, type ChildProcess } from 'node:child_process'
import { mkdtempSync, mkdirSync, writeFileSync, readFileSync, readdirSync, rmSync, rmdirSync, existsSync, openSync, writeSync, closeSync } from 'node:fs'
import { createHash, randomBytes } from 'node:crypto'
import { tmpdir } from 'node:os'
import { gzipSync } from 'node:zlib'
import { join } from 'node:path'
import { once } from 'node:events'
import { parseArgs, promisify } from 'node:util'
import { setTimeout as delay } from 'node:timers/promises'
import { ROOT, median, timed, freePort, gitCommit } from './common.js'

const run = promisify(execFile)
const { values } = parseArgs({
  options: {
    rounds: { type: 'string' }, 'size-mib': { type: 'string' }, layers: { type: 'string' }, duration: { type: 'string' },
    'no-compare': { type: 'boolean' }, keep: { type: 'boolean' }, 'transfer-only': { type: 'boolean' }, base: { type: 'string' }
  }
})
const ROUNDS = Number(values.rounds ?? '3')
const SIZE_MIB = Number(values['size-mib'] ?? '100')
const LAYERS = Number(values.layers ?? '4')
const DURATION = Number(values.duration ?? '5')
const TRANSFER_ONLY = values['transfer-only'] === true

interface Target { name: string, url: string, host: string, child: ChildProcess, dir: string, cgroup: string | null }
interface Sample { pushMiBs: number, pullMiBs: number, pushCpuMsPerMiB: number, pullCpuMsPerMiB: number, warmPushCpuMsPerMiB: number, warmPullCpuMsPerMiB: number, manifestRps: number, headRps: number, idleRssMiB: number, idleSettledRssMiB: number, afterRssMiB: number }

function log (s: string): void { process.stderr.write(s + '\n') }
function sha (b: Buffer): string { return `sha256:${createHash('sha256').update(b).digest('hex')}` }

/**
 * An OCI layout with LAYERS random layers totalling SIZE_MIB, stored gzip-compressed (level 1, so about as large):
 * skopeo copies compressed layers as they are, while it would gzip uncompressed ones on the way and measure itself.
 */
function makeLayout (dir: string): { layerDigest: string, bytes: number } {
  mkdirSync(join(dir, 'blobs', 'sha256'), { recursive: true })
  writeFileSync(join(dir, 'oci-layout'), '{"imageLayoutVersion":"1.0.0"}')
  const put = (b: Buffer): { digest: string, size: number } => {
    const digest = sha(b)
    writeFileSync(join(dir, 'blobs', 'sha256', digest.slice(7)), b)
    return { digest, size: b.length }
  }
  const per = Math.floor(SIZE_MIB * 1024 * 1024 / LAYERS)
  const tars = Array.from({ length: LAYERS }, () => randomBytes(per))
  const layers = tars.map((t) => ({ mediaType: 'application/vnd.oci.image.layer.v1.tar+gzip', ...put(gzipSync(t, { level: 1 })) }))
  const config = put(Buffer.from(JSON.stringify({ architecture: 'amd64', os: 'linux', rootfs: { type: 'layers', diff_ids: tars.map((t) => sha(t)) } })))
  const manifest = put(Buffer.from(JSON.stringify({ schemaVersion: 2, mediaType: 'application/vnd.oci.image.manifest.v1+json', config: { mediaType: 'application/vnd.oci.image.config.v1+json', ...config }, layers })))
  writeFileSync(join(dir, 'index.json'), JSON.stringify({ schemaVersion: 2, manifests: [{ mediaType: 'application/vnd.oci.image.manifest.v1+json', ...manifest, annotations: { 'org.opencontainers.image.ref.name': 'latest' } }] }))
  return { layerDigest: (layers[0] as { digest: string }).digest, bytes: layers.reduce((a, l) => a + l.size, 0) }
}

async function waitReady (url: string, child: ChildProcess): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (child.exitCode !== null) throw new Error(`registry exited ${child.exitCode}`)
    const ok = await new Promise<boolean>((resolve) => {
      http.get(`${url}/v2/`, (res) => { res.resume(); resolve(res.statusCode === 200) }).on('error', () => { resolve(false) })
    })
    if (ok) return
    await delay(50)
  }
  throw new Error(`${url} did not come up`)
}

async function startBerth (root = ROOT): Promise<Target> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-berth-'))
  const port = await freePort()
  const args = ['registry', '--listen', `127.0.0.1:${port}`, '--data-root', join(dir, 'data')]
  const bundle = join(root, 'dist', 'lib', 'cli', 'berth.cjs')
  const child = existsSync(bundle)
    ? spawn(bundle, args, { stdio: 'ignore' })
    : spawn(process.execPath, [join(root, 'dist', 'lib', 'cli', 'main.js'), ...args], { stdio: 'ignore' })
  const cgroup = accountFor(child.pid as number)
  const url = `http://127.0.0.1:${port}`
  await waitReady(url, child)
  return { name: 'berth', url, host: `127.0.0.1:${port}`, child, dir, cgroup }
}

async function startDistribution (): Promise<Target> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-distribution-'))
  const port = await freePort()
  const config = join(dir, 'config.yml')
  writeFileSync(config, [
    'version: 0.1',
    'log:', '  level: error', '  accesslog:', '    disabled: true',
    'storage:', `  filesystem:`, `    rootdirectory: ${join(dir, 'data')}`, '  delete:', '    enabled: true',
    'http:', `  addr: 127.0.0.1:${port}`, ''
  ].join('\n'))
  const child = spawn('docker-registry', ['serve', config], { stdio: 'ignore' })
  const cgroup = accountFor(child.pid as number)
  const url = `http://127.0.0.1:${port}`
  await waitReady(url, child)
  return { name: 'distribution', url, host: `127.0.0.1:${port}`, child, dir, cgroup }
}

async function stop (t: Target): Promise<void> {
  if (t.child.exitCode === null) {
    const exited = once(t.child, 'exit')
    t.child.kill('SIGTERM')
    await exited
  }
  if (t.cgroup !== null) { try { rmdirSync(t.cgroup) } catch {} }
  if (values.keep !== true) rmSync(t.dir, { recursive: true, force: true })
}

/**
 * The registry's CPU time in ms, all threads and every process it started (a helper's CPU is the registry's): its
 * own cpuacct cgroup's usage when the machine has the cgroup v1 cpuacct hierarchy and we may make one (children
 * that have exited count too), else the sum of the schedstat run times (ns) of the process's threads and those of
 * its live children.
 */
function cpuMs (t: Target): number {
  if (t.cgroup !== null) return Number(readFileSync(join(t.cgroup, 'cpuacct.usage'), 'utf8')) / 1e6
  let ns = 0
  const visit = (pid: number): void => {
    let tids: string[] = []
    try { tids = readdirSync(`/proc/${pid}/task`) } catch { return } // a child that just ended
    for (const tid of tids) {
      try { ns += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]) } catch {} // a thread that just ended
      let children = ''
      try { children = readFileSync(`/proc/${pid}/task/${tid}/children`, 'utf8') } catch {}
      for (const c of children.split(' ')) if (c !== '' && c !== '\n') visit(Number(c))
    }
  }
  visit(t.child.pid as number)
  return ns / 1e6
}

const CPUACCT = '/sys/fs/cgroup/cpuacct'
let cgroups = 0
/** Moves a just-started registry into a cpuacct cgroup of its own (its later children follow); null when that fails. */
function accountFor (pid: number): string | null {
  const dir = join(CPUACCT, `bench-registry-${process.pid}-${cgroups++}`)
  try {
    mkdirSync(dir)
    writeFileSync(join(dir, 'cgroup.procs'), String(pid))
    return dir
  } catch {
    try { rmdirSync(dir) } catch {}
    return null
  }
}

function rssMiB (pid: number): number {
  const m = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
  return Number(m?.[1] ?? 0) / 1024
}

/** Client-side files (the layout skopeo pushes, the directory it pulls into) go to tmpfs when there is one, so the
 * client's disk does not bound what is measured; the registries' data roots stay on disk. */
const CLIENT_TMP = existsSync('/dev/shm') ? '/dev/shm' : tmpdir()

const authFile = join(mkdtempSync(join(tmpdir(), 'bench-auth-')), 'auth.json')
writeFileSync(authFile, '{}')
async function skopeo (...args: string[]): Promise<void> {
  await run('skopeo', args, { env: { ...process.env, REGISTRY_AUTH_FILE: authFile }, maxBuffer: 16 * 1024 * 1024 })
}

/** Requests per second from wrk at 16 connections. */
async function wrk (url: string, method: 'GET', accept?: string): Promise<number> {
  const script = join(tmpdir(), `bench-wrk-${process.pid}.lua`)
  const fd = openSync(script, 'w')
  writeSync(fd, `wrk.method = "${method}"\n${accept === undefined ? '' : `wrk.headers["Accept"] = "${accept}"\n`}`)
  closeSync(fd)
  const { stdout } = await run('wrk', ['-t2', '-c16', `-d${DURATION}s`, '-s', script, url])
  rmSync(script, { force: true })
  const m = /Requests\/sec:\s+([\d.]+)/.exec(stdout)
  if (/Non-2xx/.test(stdout)) throw new Error(`wrk saw errors:\n${stdout}`)
  return Number(m?.[1] ?? 0)
}

/**
 * Requests per second for HEAD at 16 keep-alive connections. wrk cannot measure HEAD (it waits for the body that
 * Content-Length announces), so this drives raw sockets: one request in flight per connection, a reply ends at the
 * blank line.
 */
async function headRate (url: string, path: string): Promise<number> {
  const u = new URL(url)
  const request = Buffer.from(`HEAD ${path} HTTP/1.1\r\nHost: ${u.host}\r\n\r\n`)
  let count = 0
  let failed = ''
  const deadline = Date.now() + DURATION * 1000
  await Promise.all(Array.from({ length: 16 }, async () => {
    const s = net.connect(Number(u.port), u.hostname)
    await once(s, 'connect')
    await new Promise<void>((resolve) => {
      let buf = ''
      s.on('data', (d: Buffer) => {
        buf += d.toString('latin1')
        const end = buf.indexOf('\r\n\r\n')
        if (end === -1) return
        if (!buf.startsWith('HTTP/1.1 200')) failed = buf.slice(0, end)
        buf = buf.slice(end + 4)
        count++
        if (Date.now() < deadline && failed === '') s.write(request)
        else { s.destroy(); resolve() }
      })
      s.on('error', (err) => { failed = err.message; resolve() })
      s.write(request)
    })
  }))
  if (failed !== '') throw new Error(`HEAD failed: ${failed}`)
  return count / DURATION
}

/** Pushes the layout as `repo` and pulls it back; the registry's CPU ms and the wall seconds of each. */
async function transfer (t: Target, layout: string, repo: string): Promise<{ push: number, pull: number, pushCpu: number, pullCpu: number }> {
  const c0 = cpuMs(t)
  const push = await timed(async () => { await skopeo('copy', '--dest-tls-verify=false', `oci:${layout}:latest`, `docker://${t.host}/${repo}:latest`) })
  const c1 = cpuMs(t)
  const pullDir = mkdtempSync(join(CLIENT_TMP, 'bench-pull-'))
  // dir: keeps layers as they come (oci: would recompress nothing here, but dir: is the plainest sink)
  const pull = await timed(async () => { await skopeo('copy', '--src-tls-verify=false', `docker://${t.host}/${repo}:latest`, `dir:${pullDir}`) })
  const c2 = cpuMs(t)
  rmSync(pullDir, { recursive: true, force: true })
  return { push, pull, pushCpu: c1 - c0, pullCpu: c2 - c1 }
}

async function sample (start: () => Promise<Target>, layouts: [string, string], layer: string, bytes: number): Promise<Sample> {
  const t = await start()
  try {
    await delay(500) // let start-up garbage settle before reading idle memory
    const idleRssMiB = rssMiB(t.child.pid as number)
    // and once the runtime has handed idle memory back (V8's memory reducer runs about 8 s into an idle period)
    if (!TRANSFER_ONLY) await delay(11_000)
    const idleSettledRssMiB = rssMiB(t.child.pid as number)
    const mib = bytes / 1024 / 1024
    const first = await transfer(t, layouts[0], 'bench/image')
    const second = await transfer(t, layouts[1], 'bench/second')
    const manifestRps = TRANSFER_ONLY ? 0 : await wrk(`${t.url}/v2/bench/image/manifests/latest`, 'GET', 'application/vnd.oci.image.manifest.v1+json')
    const headRps = TRANSFER_ONLY ? 0 : await headRate(t.url, `/v2/bench/image/blobs/${layer}`)
    await delay(500)
    return {
      pushMiBs: mib / first.push,
      pullMiBs: mib / first.pull,
      pushCpuMsPerMiB: first.pushCpu / mib,
      pullCpuMsPerMiB: first.pullCpu / mib,
      warmPushCpuMsPerMiB: second.pushCpu / mib,
      warmPullCpuMsPerMiB: second.pullCpu / mib,
      manifestRps,
      headRps,
      idleRssMiB,
      idleSettledRssMiB,
      afterRssMiB: rssMiB(t.child.pid as number)
    }
  } finally {
    await stop(t)
  }
}

async function main (): Promise<void> {
  for (const tool of ['skopeo', 'wrk']) {
    try { execFileSync(tool, ['--version'], { stdio: 'ignore' }) } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') throw new Error(`${tool} is not installed`)
    }
  }
  const compare = values['no-compare'] !== true && (() => { try { execFileSync('docker-registry', ['--version'], { stdio: 'ignore' }); return true } catch { return false } })()
  if (!compare) log('docker-registry not installed (or --no-compare): measuring Berth alone')
  const layoutDir = mkdtempSync(join(CLIENT_TMP, 'bench-layout-'))
  const { layerDigest, bytes } = makeLayout(layoutDir)
  const secondDir = mkdtempSync(join(CLIENT_TMP, 'bench-layout-'))
  makeLayout(secondDir)
  log(`image: ${LAYERS} layers, ${(bytes / 1024 / 1024).toFixed(0)} MiB; ${ROUNDS} rounds; wrk ${DURATION}s at 16 connections`)
  // the client's own floor: skopeo copying the same layout to a directory with no registry involved (it still reads,
  // verifies and writes every blob); no registry can make a push or pull through skopeo faster than this
  const floors: number[] = []
  for (let i = 0; i < 3; i++) {
    const out = mkdtempSync(join(CLIENT_TMP, 'bench-floor-'))
    floors.push(await timed(async () => { await skopeo('copy', `oci:${layoutDir}:latest`, `dir:${out}`) }))
    rmSync(out, { recursive: true, force: true })
  }
  const floorMiBs = bytes / 1024 / 1024 / median(floors)
  log(`skopeo alone (oci layout → dir, no registry): ${floorMiBs.toFixed(0)} MiB/s`)
  const targets: Array<[string, () => Promise<Target>]> = [['berth', async () => await startBerth()]]
  const base = values.base
  if (base !== undefined) targets.push(['berth-base', async () => await startBerth(base)])
  if (compare) targets.push(['distribution', startDistribution])
  const samples = new Map<string, Sample[]>(targets.map(([n]) => [n, []]))
  for (let r = 0; r < ROUNDS; r++) {
    for (const [name, start] of r % 2 === 0 ? targets : [...targets].reverse()) {
      const s = await sample(start, [layoutDir, secondDir], layerDigest, bytes)
      samples.get(name)?.push(s)
      log(`round ${r + 1} ${name}: push ${s.pushMiBs.toFixed(0)} MiB/s (${s.pushCpuMsPerMiB.toFixed(2)} ms CPU/MiB; warm ${s.warmPushCpuMsPerMiB.toFixed(2)}), pull ${s.pullMiBs.toFixed(0)} MiB/s (${s.pullCpuMsPerMiB.toFixed(2)} ms CPU/MiB; warm ${s.warmPullCpuMsPerMiB.toFixed(2)}), manifest GET ${s.manifestRps.toFixed(0)} req/s, blob HEAD ${s.headRps.toFixed(0)} req/s, idle ${s.idleRssMiB.toFixed(1)} MiB (settled ${s.idleSettledRssMiB.toFixed(1)}), after ${s.afterRssMiB.toFixed(1)} MiB`)
    }
  }
  rmSync(layoutDir, { recursive: true, force: true })
  rmSync(secondDir, { recursive: true, force: true })
  const keys: Array<keyof Sample> = ['pushMiBs', 'pullMiBs', 'pushCpuMsPerMiB', 'pullCpuMsPerMiB', 'warmPushCpuMsPerMiB', 'warmPullCpuMsPerMiB', 'manifestRps', 'headRps', 'idleRssMiB', 'idleSettledRssMiB', 'afterRssMiB']
  const results: Record<string, Record<string, number> | undefined> = {}
  for (const [name, list] of samples) results[name] = Object.fromEntries(keys.map((k) => [k, Math.round(median(list.map((s) => s[k])) * 100) / 100]))
  const b = results.berth as Record<string, number>
  const d = results.distribution
  const lines = results['berth-base'] === undefined
    ? ['', '| | Berth | distribution 2.8.2 | ratio |', '|---|---|---|---|']
    : ['', '| | Berth | distribution 2.8.2 | ratio | berth-base (ratio) |', '|---|---|---|---|---|']
  const labels: Record<string, string> = { pushMiBs: 'push (MiB/s)', pullMiBs: 'pull (MiB/s)', pushCpuMsPerMiB: 'registry CPU per MiB pushed, first image (ms)', pullCpuMsPerMiB: 'registry CPU per MiB pulled, first image (ms)', warmPushCpuMsPerMiB: 'registry CPU per MiB pushed, second image (ms)', warmPullCpuMsPerMiB: 'registry CPU per MiB pulled, second image (ms)', manifestRps: 'manifest GET (req/s)', headRps: 'blob HEAD (req/s)', idleRssMiB: 'idle RSS, 0.5 s (MiB)', idleSettledRssMiB: 'idle RSS, settled (MiB)', afterRssMiB: 'RSS after the run (MiB)' }
  for (const k of keys) {
    const ratio = d === undefined ? '' : ((b[k] as number) / (d[k] as number)).toFixed(2) + '×'
    const baseCell = results['berth-base'] === undefined ? '' : ` ${results['berth-base'][k] as number} (${d === undefined ? '' : ((results['berth-base'][k] as number) / (d[k] as number)).toFixed(2) + '×'}) |`
    lines.push(`| ${labels[k] as string} | ${b[k] as number} | ${d?.[k] ?? '—'} | ${ratio} |${baseCell}`)
  }
  lines.push(`| skopeo alone, no registry (MiB/s) | ${floorMiBs.toFixed(1)} | | |`)
  log(lines.join('\n'))
  const commit = gitCommit()
  process.stdout.write(JSON.stringify({ bench: 'registry', node: process.version, commit, sizeMiB: SIZE_MIB, layers: LAYERS, rounds: ROUNDS, skopeoAloneMiBs: Math.round(floorMiBs * 10) / 10, results }) + '\n')
  rmSync(join(authFile, '..'), { recursive: true, force: true })
}

main().catch((err: Error) => { log(`bench failed: ${err.message}`); process.exitCode = 1 })
