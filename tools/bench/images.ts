// Image benchmarks (not part of npm test): pull and push of a 100 MiB image of 4 random gzip layers through a local
// distribution registry (Debian's docker-registry), and commit of a container with 100 MiB of changes. With
// --compare (a dockerd socket) each workload alternates between the two engines in the same session.
//
//   node dist/tools/bench/images.js [--compare unix:///var/run/docker.sock] [--runs 3]
import http from 'node:http'
import { spawn, type ChildProcess } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { createHash, randomBytes } from 'node:crypto'
import { gzipSync } from 'node:zlib'
import { parseArgs } from 'node:util'
import { type Target, median, timed, freePort, busyboxTar, importTar, startBerthDaemon, compareTarget, stopBerthDaemon } from './common.js'

const { values } = parseArgs({ options: { compare: { type: 'string' }, runs: { type: 'string' } } })
const RUNS = Number(values.runs ?? '3')
const LAYER = 25 * 1024 * 1024

async function api (socket: string, method: string, path: string, body?: unknown): Promise<{ status: number, text: string }> {
  return await new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body))
    // X-Registry-Auth as the CLI sends it without credentials (dockerd's push needs the header)
    const headers: Record<string, string | number> = { 'X-Registry-Auth': 'e30=' }
    if (payload !== undefined) { headers['Content-Type'] = 'application/json'; headers['Content-Length'] = payload.length }
    const r = http.request({ socketPath: socket, method, path, headers }, (res) => {
      let text = ''
      res.on('data', (d: Buffer) => { text += d.toString() })
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }))
    })
    r.on('error', reject)
    r.end(payload)
  })
}

async function startRegistry (dir: string): Promise<{ child: ChildProcess, host: string }> {
  const port = await freePort()
  const cfg = join(dir, `registry-${port}.yml`)
  writeFileSync(cfg, `version: 0.1\nlog:\n  level: error\nstorage:\n  filesystem:\n    rootdirectory: ${join(dir, `reg-${port}`)}\n  delete:\n    enabled: true\nhttp:\n  addr: 127.0.0.1:${port}\n`)
  const child = spawn('/usr/bin/docker-registry', ['serve', cfg], { stdio: 'ignore' })
  for (let i = 0; i < 200; i++) {
    const ok = await new Promise<boolean>((resolve) => { const r = http.get(`http://127.0.0.1:${port}/v2/`, (res) => { res.resume(); resolve(res.statusCode === 200) }); r.on('error', () => resolve(false)) })
    if (ok) break
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
  return { child, host: `127.0.0.1:${port}` }
}

function tarOf (name: string, data: Buffer): Buffer {
  const h = Buffer.alloc(512)
  h.write(name, 0); h.write('0000644\0', 100); h.write('0000000\0', 108); h.write('0000000\0', 116)
  h.write(data.length.toString(8).padStart(11, '0') + '\0', 124); h.write('00000000000\0', 136)
  h.write('        ', 148); h.write('0', 156); h.write('ustar\x0000', 257)
  let sum = 0
  for (const b of h) sum += b
  h.write(sum.toString(8).padStart(6, '0') + '\0 ', 148)
  const pad = (512 - (data.length % 512)) % 512
  return Buffer.concat([h, data, Buffer.alloc(pad), Buffer.alloc(1024)])
}

const sha = (b: Buffer): string => `sha256:${createHash('sha256').update(b).digest('hex')}`

async function put (url: string, method: string, body: Buffer, type = 'application/octet-stream'): Promise<http.IncomingMessage> {
  return await new Promise((resolve, reject) => {
    const r = http.request(url, { method, headers: { 'Content-Type': type, 'Content-Length': body.length } }, (res) => { res.resume(); res.on('end', () => resolve(res)) })
    r.on('error', reject)
    r.end(body)
  })
}

async function seed (host: string, repo: string): Promise<void> {
  const layers: Array<{ gz: Buffer, diffId: string }> = []
  for (let i = 0; i < 4; i++) {
    const tar = tarOf(`layer${i}.bin`, randomBytes(LAYER))
    layers.push({ gz: gzipSync(tar, { level: 1 }), diffId: sha(tar) })
  }
  const config = Buffer.from(JSON.stringify({ architecture: 'amd64', os: 'linux', config: { Cmd: ['true'] }, rootfs: { type: 'layers', diff_ids: layers.map((l) => l.diffId) } }))
  for (const blob of [config, ...layers.map((l) => l.gz)]) {
    const start = await put(`http://${host}/v2/${repo}/blobs/uploads/`, 'POST', Buffer.alloc(0))
    const loc = new URL(start.headers.location as string, `http://${host}`)
    loc.searchParams.set('digest', sha(blob))
    await put(loc.toString(), 'PUT', blob)
  }
  const manifest = Buffer.from(JSON.stringify({
    schemaVersion: 2,
    mediaType: 'application/vnd.docker.distribution.manifest.v2+json',
    config: { mediaType: 'application/vnd.docker.container.image.v1+json', size: config.length, digest: sha(config) },
    layers: layers.map((l) => ({ mediaType: 'application/vnd.docker.image.rootfs.diff.tar.gzip', size: l.gz.length, digest: sha(l.gz) }))
  }))
  await put(`http://${host}/v2/${repo}/manifests/latest`, 'PUT', manifest, 'application/vnd.docker.distribution.manifest.v2+json')
}

async function main (): Promise<void> {
  const { socket: sock, child: daemon, dir } = await startBerthDaemon('berth-ibench-', [])
  const targets: Target[] = [{ name: 'berth', socket: sock }, ...compareTarget(values.compare)]
  const rootfs = busyboxTar(dir)
  for (const t of targets) await importTar(t.socket, rootfs, 'bench-base')
  const reg = await startRegistry(dir)
  const mib = 4 * LAYER / 1048576
  const res: Record<string, Record<string, number[]>> = {}
  const add = (t: string, k: string, v: number): void => { ((res[t] ??= {})[k] ??= []).push(v) }
  try {
    for (let run = 0; run < RUNS; run++) {
      await seed(reg.host, `bench/img${run}`)
      const order = run % 2 === 0 ? targets : [...targets].reverse()
      for (const t of order) {
        const ref = `${reg.host}/bench/img${run}`
        add(t.name, 'pull_mib_per_s', mib / await timed(async () => {
          const r = await api(t.socket, 'POST', `/images/create?fromImage=${encodeURIComponent(ref)}&tag=latest`)
          if (r.status !== 200 || r.text.includes('errorDetail')) throw new Error(`${t.name} pull: ${r.text.slice(-300)}`)
        }))
        // push to a registry that has none of the blobs, so layers are really uploaded
        const fresh = await startRegistry(dir)
        const target = `${fresh.host}/bench/pushed`
        await api(t.socket, 'POST', `/images/${encodeURIComponent(ref)}:latest/tag?repo=${encodeURIComponent(target)}&tag=latest`)
        add(t.name, 'push_mib_per_s', mib / await timed(async () => {
          const r = await api(t.socket, 'POST', `/images/${encodeURIComponent(target)}/push?tag=latest`, undefined)
          if (r.status !== 200 || r.text.includes('errorDetail')) throw new Error(`${t.name} push: ${r.text.slice(-300)}`)
        }))
        fresh.child.kill()
        // commit of 100 MiB of changes
        const c = JSON.parse((await api(t.socket, 'POST', '/containers/create', { Image: 'bench-base', Cmd: ['sh', '-c', 'head -c 104857600 /dev/urandom > /big'] })).text) as { Id?: string, message?: string }
        if (c.Id === undefined) throw new Error(`${t.name} create: ${c.message ?? ''}`)
        await api(t.socket, 'POST', `/containers/${c.Id}/start`)
        await api(t.socket, 'POST', `/containers/${c.Id}/wait`)
        add(t.name, 'commit_100mib_s', await timed(async () => {
          const r = await api(t.socket, 'POST', `/commit?container=${c.Id as string}&repo=bench-commit&tag=r${run}`)
          if (r.status !== 201) throw new Error(`${t.name} commit: ${r.text}`)
        }))
        await api(t.socket, 'DELETE', `/containers/${c.Id}?force=1`)
        await api(t.socket, 'DELETE', `/images/bench-commit:r${run}?force=1`)
        await api(t.socket, 'DELETE', `/images/${encodeURIComponent(target)}:latest?force=1`)
        await api(t.socket, 'DELETE', `/images/${encodeURIComponent(ref)}:latest?force=1`)
      }
    }
  } finally {
    reg.child.kill()
    await stopBerthDaemon({ child: daemon, dir })
  }
  const medians: Record<string, Record<string, number>> = {}
  for (const [t, m] of Object.entries(res)) medians[t] = Object.fromEntries(Object.entries(m).map(([k, v]) => [k, median(v)]))
  process.stdout.write(JSON.stringify({ bench: 'images', node: process.version, runs: RUNS, results: medians }) + '\n')
  for (const [k, v] of Object.entries(medians.berth ?? {})) {
    const o = medians.other?.[k]
    process.stdout.write(`${k.padEnd(20)} berth ${v.toFixed(2)}${o !== undefined ? `  other ${o.toFixed(2)}  ratio ${(v / o).toFixed(2)}` : ''}\n`)
  }
}

main().catch((err: Error) => { process.stderr.write(err.stack + '\n'); process.exitCode = 1 })
