// Build benchmark (not part of npm test): a 6-step Dockerfile (FROM busybox, COPY of 200 files, RUN, ENV, WORKDIR,
// CMD) through POST /build (classic builder), once with nocache and once fully cached, and two COPY-only builds with
// nocache (5,000 small files in 50 directories from an in-memory context; the same with a 24 MiB file, past the
// 16 MiB threshold, written from the context's file), alternating between Berth and another engine (--compare, e.g. a
// dockerd started by hand) run by run.
//
//   node dist/tools/bench/build.js [--compare unix:///tmp/dockerd.sock] [--runs 5]
import http from 'node:http'
import { execFileSync } from 'node:child_process'
import { writeFileSync, mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { type Target, median, timed, busyboxTar, importTar, privateNetwork, startBerthDaemon, compareTarget, stopBerthDaemon } from './common.js'

const { values } = parseArgs({ options: { compare: { type: 'string' }, runs: { type: 'string' } } })
const RUNS = Number(values.runs ?? '5')

async function build (socket: string, context: Buffer, query: string): Promise<string> {
  return await new Promise((resolve, reject) => {
    const r = http.request({ socketPath: socket, method: 'POST', path: `/v1.41/build?${query}`, headers: { 'Content-Type': 'application/x-tar', 'Content-Length': context.length } }, (res) => {
      let text = ''
      res.on('data', (d: Buffer) => { text += d.toString() })
      res.on('end', () => {
        if (res.statusCode !== 200 || text.includes('errorDetail')) reject(new Error(`build: ${res.statusCode ?? 0} ${text.slice(-300)}`))
        else resolve(text)
      })
    })
    r.on('error', reject)
    r.end(context)
  })
}

/** `COPY . /src/` of 5,000 small files in 50 directories, plus `extra` bytes in one file (a context on disk). */
function copyContext (dir: string, extra: number): Buffer {
  for (let d = 0; d < 50; d++) {
    mkdirSync(join(dir, 'files', `d${d}`), { recursive: true })
    for (let i = 0; i < 100; i++) writeFileSync(join(dir, 'files', `d${d}`, `f${i}.txt`), `file ${i}\n`.repeat(20))
  }
  if (extra > 0) writeFileSync(join(dir, 'blob.bin'), Buffer.alloc(extra, 1))
  writeFileSync(join(dir, 'Dockerfile'), 'FROM busybox\nCOPY . /src/\n')
  return execFileSync('tar', ['-C', dir, '-cf', '-', '.'], { maxBuffer: 128 * 1024 * 1024 })
}

function makeContext (dir: string): Buffer {
  mkdirSync(join(dir, 'files'), { recursive: true })
  for (let i = 0; i < 200; i++) writeFileSync(join(dir, 'files', `f${i}.txt`), `file ${i}\n`.repeat(50))
  writeFileSync(join(dir, 'Dockerfile'), 'FROM busybox\nCOPY files/ /src/\nRUN ls /src | wc -l > /count\nENV MODE=bench\nWORKDIR /src\nCMD ["cat", "/count"]\n')
  return execFileSync('tar', ['-C', dir, '-cf', '-', '.'], { maxBuffer: 64 * 1024 * 1024 })
}

async function main (): Promise<void> {
  const network = privateNetwork('b')
  const { socket: sock, child: daemon, dir } = await startBerthDaemon('berth-bbench-', network.args)
  const targets: Target[] = [{ name: 'berth', socket: sock }, ...compareTarget(values.compare)]
  const rootfs = busyboxTar(dir)
  for (const t of targets) await importTar(t.socket, rootfs, 'busybox')
  const context = makeContext(join(dir, 'ctx'))
  const copyMemory = copyContext(join(dir, 'copy-mem'), 0)
  const copyDisk = copyContext(join(dir, 'copy-disk'), 24 * 1024 * 1024)
  const res: Record<string, Record<string, number[]>> = {}
  const add = (t: string, k: string, v: number): void => { ((res[t] ??= {})[k] ??= []).push(v) }
  try {
    // one uncounted build per engine (first-use costs: module loading, the overlay probe)
    for (const t of targets) await build(t.socket, context, 't=bench-warm&rm=1')
    for (let run = 0; run < RUNS; run++) {
      const order = run % 2 === 0 ? targets : [...targets].reverse()
      for (const t of order) {
        add(t.name, 'no_cache_s', await timed(async () => { await build(t.socket, context, `t=bench:r${run}&nocache=1&rm=1`) }))
        add(t.name, 'full_cache_s', await timed(async () => {
          const out = await build(t.socket, context, `t=bench:c${run}&rm=1`)
          if ((out.match(/Using cache/g) ?? []).length !== 5) throw new Error(`${t.name}: not all steps cached:\n${out}`)
        }))
        add(t.name, 'copy_5000_s', await timed(async () => { await build(t.socket, copyMemory, `t=bench:m${run}&nocache=1&rm=1`) }))
        add(t.name, 'copy_disk_s', await timed(async () => { await build(t.socket, copyDisk, `t=bench:d${run}&nocache=1&rm=1`) }))
      }
    }
  } finally {
    await stopBerthDaemon({ child: daemon, dir }, network)
  }
  const medians: Record<string, Record<string, number>> = {}
  for (const [t, m] of Object.entries(res)) medians[t] = Object.fromEntries(Object.entries(m).map(([k, v]) => [k, median(v)]))
  process.stdout.write(JSON.stringify({ bench: 'build', node: process.version, runs: RUNS, results: medians }) + '\n')
  for (const [k, v] of Object.entries(medians.berth ?? {})) {
    const o = medians.other?.[k]
    // the ratio of each run's pair (the engines ran back to back) besides the ratio of the medians
    const pairs = (res.berth?.[k] ?? []).map((b, i) => b / (res.other?.[k]?.[i] ?? NaN)).filter((r) => !Number.isNaN(r))
    const range = pairs.length > 0 ? `  (runs ${Math.min(...pairs).toFixed(2)}–${Math.max(...pairs).toFixed(2)})` : ''
    process.stdout.write(`${k.padEnd(14)} berth ${v.toFixed(3)} s${o !== undefined ? `  other ${o.toFixed(3)} s  ratio ${(v / o).toFixed(2)}${range}` : ''}\n`)
  }
}

main().catch((err: Error) => { process.stderr.write(err.stack + '\n'); process.exitCode = 1 })
