// Volume and disk-usage benchmarks (not part of npm test): `GET /system/df` (what `docker system df` asks) and
// `GET /volumes` (`docker volume ls`) with 1,000 volumes (each with a small file) and 200 images, sequential requests
// per second, and the same through the docker CLI. With --compare (a dockerd socket) the same population is created
// there and the engines take turns in the same session; everything the bench created is removed afterwards.
//
//   node dist/tools/bench/volumes.js [--compare unix:///path/to/docker.sock] [--volumes 1000] [--images 200] [--seconds 5]
import http from 'node:http'
import { spawnSync, execFileSync, type ChildProcess } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { parseArgs } from 'node:util'
import { type Target, privateNetwork, startBerthDaemon, compareTarget, gitCommit, stopBerthDaemon } from './common.js'

const { values } = parseArgs({ options: { compare: { type: 'string' }, volumes: { type: 'string' }, images: { type: 'string' }, seconds: { type: 'string' } } })
const VOLUMES = Math.min(Number(values.volumes ?? '1000'), 10_000)
const IMAGES = Math.min(Number(values.images ?? '200'), 2000)
const SECONDS = Math.min(Number(values.seconds ?? '5'), 60)
const TAG = `vb${randomBytes(3).toString('hex')}`

const agent = (): http.Agent => new http.Agent({ keepAlive: true, maxSockets: 1 })

async function api (socket: string, method: string, path: string, body?: unknown | Buffer, ag?: http.Agent): Promise<{ status: number, text: string }> {
  return await new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : Buffer.isBuffer(body) ? body : Buffer.from(JSON.stringify(body))
    const headers: Record<string, string | number> = {}
    if (payload !== undefined) { headers['Content-Type'] = Buffer.isBuffer(body) ? 'application/x-tar' : 'application/json'; headers['Content-Length'] = payload.length }
    const r = http.request({ socketPath: socket, method, path, headers, ...(ag !== undefined ? { agent: ag } : {}) }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (d: Buffer) => chunks.push(d))
      res.on('end', () => { resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }) })
    })
    r.on('error', reject)
    r.end(payload)
  })
}

/** A one-file tar (ustar), distinct per `n`: each import is a new image. */
function tinyTar (n: number): Buffer {
  const data = Buffer.from(`image ${n} ${TAG}\n`)
  const h = Buffer.alloc(512)
  h.write(`f${n}`, 0)
  h.write('0000644\0', 100)
  h.write('0000000\0', 108)
  h.write('0000000\0', 116)
  h.write(data.length.toString(8).padStart(11, '0') + '\0', 124)
  h.write('14000000000\0', 136)
  h.write('        ', 148)
  h.write('0', 156)
  h.write('ustar\0', 257)
  h.write('00', 263)
  let sum = 0
  for (const b of h) sum += b
  h.write(sum.toString(8).padStart(6, '0') + '\0 ', 148)
  const pad = Buffer.alloc((512 - (data.length % 512)) % 512)
  return Buffer.concat([h, data, pad, Buffer.alloc(1024)])
}

async function populate (t: Target): Promise<void> {
  const jobs: Array<() => Promise<void>> = []
  for (let i = 0; i < VOLUMES; i++) {
    jobs.push(async () => {
      const r = await api(t.socket, 'POST', '/volumes/create', { Name: `${TAG}-${i}`, Labels: { bench: TAG } })
      if (r.status !== 201) throw new Error(`${t.name}: volume create: ${r.status} ${r.text}`)
    })
  }
  for (let i = 0; i < IMAGES; i++) {
    jobs.push(async () => {
      const r = await api(t.socket, 'POST', `/images/create?fromSrc=-&repo=${TAG}-img&tag=${i}`, tinyTar(i))
      if (r.status !== 200) throw new Error(`${t.name}: import: ${r.status} ${r.text}`)
    })
  }
  // eight at a time
  let next = 0
  await Promise.all(Array.from({ length: 8 }, async () => { while (next < jobs.length) await (jobs[next++] as () => Promise<void>)() }))
}

/** A small file in each volume (the engines read volume sizes for df); written through a container on the host path. */
async function fillVolumes (t: Target): Promise<void> {
  const r = await api(t.socket, 'GET', `/volumes?filters=${encodeURIComponent(JSON.stringify({ label: [`bench=${TAG}`] }))}`)
  const vols = (JSON.parse(r.text) as { Volumes: Array<{ Mountpoint: string }> }).Volumes
  const script = vols.map((v) => `printf 'bench data' > '${v.Mountpoint}/f'`).join('\n')
  execFileSync('sh', ['-c', script])
}

async function cleanup (t: Target): Promise<void> {
  for (let i = 0; i < VOLUMES; i++) await api(t.socket, 'DELETE', `/volumes/${TAG}-${i}`)
  for (let i = 0; i < IMAGES; i++) await api(t.socket, 'DELETE', `/images/${TAG}-img:${i}`)
}

/** Sequential requests per second over one keep-alive connection for SECONDS (at least 3 requests). */
async function rate (t: Target, path: string, check: (text: string) => void): Promise<number> {
  const ag = agent()
  try {
    check((await api(t.socket, 'GET', path, undefined, ag)).text) // warm-up, and the answer is what we expect
    let n = 0
    const start = performance.now()
    while (performance.now() - start < SECONDS * 1000 || n < 3) {
      const r = await api(t.socket, 'GET', path, undefined, ag)
      if (r.status !== 200) throw new Error(`${t.name}: GET ${path}: ${r.status}`)
      n++
    }
    return n / ((performance.now() - start) / 1000)
  } finally { ag.destroy() }
}

/** Median ms of a docker CLI command (3 runs). */
function cliMs (t: Target, args: string[]): number {
  const times: number[] = []
  for (let i = 0; i < 3; i++) {
    const s = performance.now()
    const r = spawnSync('docker', args, { env: { ...process.env, DOCKER_HOST: `unix://${t.socket}` }, stdio: ['ignore', 'ignore', 'pipe'], timeout: 120_000 })
    if (r.status !== 0) throw new Error(`${t.name}: docker ${args.join(' ')}: ${String(r.stderr)}`)
    times.push(performance.now() - s)
  }
  times.sort((a, b) => a - b)
  return times[1] as number
}

async function startBerth (): Promise<{ target: Target, child: ChildProcess, dir: string }> {
  const { socket, child, dir } = await startBerthDaemon('berth-vbench-', ['--iptables=false', ...privateNetwork('v').args])
  return { target: { name: 'berth', socket }, child, dir }
}

async function main (): Promise<void> {
  const berth = await startBerth()
  const targets: Target[] = [berth.target]
  targets.push(...compareTarget(values.compare))
  const results: Record<string, Record<string, number>> = {}
  try {
    for (const t of targets) {
      const s = performance.now()
      await populate(t)
      await fillVolumes(t)
      results[t.name] = { populate_s: (performance.now() - s) / 1000 }
    }
    const checkDf = (text: string): void => {
      const d = JSON.parse(text) as { Volumes: unknown[], Images: unknown[] }
      if (d.Volumes.length < VOLUMES || d.Images.length < IMAGES) throw new Error(`df: ${d.Volumes.length} volumes, ${d.Images.length} images`)
    }
    const checkLs = (text: string): void => {
      const d = JSON.parse(text) as { Volumes: unknown[] }
      if (d.Volumes.length < VOLUMES) throw new Error(`volume ls: ${d.Volumes.length} volumes`)
    }
    // engines take turns: berth, other, other, berth; the better of each engine's two runs
    const order = [...targets, ...[...targets].reverse()]
    for (const [key, path, check] of [['system_df_rps', '/system/df', checkDf], ['volume_ls_rps', '/volumes', checkLs]] as const) {
      for (const t of order) {
        const r = results[t.name] as Record<string, number>
        r[key] = Math.max(r[key] ?? 0, await rate(t, path, check))
      }
    }
    for (const t of order.slice(0, targets.length)) {
      const r = results[t.name] as Record<string, number>
      r.cli_system_df_ms = cliMs(t, ['system', 'df'])
      r.cli_volume_ls_ms = cliMs(t, ['volume', 'ls', '-q'])
    }
  } finally {
    for (const t of targets) await cleanup(t).catch(() => {})
    await stopBerthDaemon(berth)
  }
  const commit = gitCommit()
  process.stdout.write(JSON.stringify({ bench: 'volumes', node: process.version, commit, volumes: VOLUMES, images: IMAGES, results }) + '\n')
  for (const [k, v] of Object.entries(results.berth ?? {})) {
    const other = results.other?.[k]
    const ratio = other !== undefined && other !== 0 ? `  ratio ${(k.endsWith('_rps') ? v / other : other / v).toFixed(2)}` : ''
    process.stdout.write(`${k.padEnd(18)} berth ${v.toFixed(2)}${other !== undefined ? `  other ${other.toFixed(2)}` : ''}${ratio}\n`)
  }
}

main().catch((err: Error) => { process.stderr.write(err.stack + '\n'); process.exitCode = 1 })
