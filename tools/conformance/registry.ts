// Registry conformance flows with real clients, kept out of `npm test`: skopeo copies (OCI layout, multi-platform
// index, Docker schema 2 via docker-archive), tag listing and deletion, cross-registry copies between Berth and
// Debian's docker-registry (distribution 2.8.2) with digests unchanged, and the protocol points where the OCI
// conformance suite separates registries (416 on out-of-order chunks, n/last, referrers, malformed digests, DELETE by
// tag). Every check runs against Berth and, when installed, against distribution, so the report shows both.
// Writes a JSON report and ends with `N passed, N failed`.
//
//   node dist/tools/conformance/registry.js [--report FILE] [--no-compare]
import http from 'node:http'
import net from 'node:net'
import { spawn, execFile, execFileSync, type ChildProcess } from 'node:child_process'
import { mkdtempSync, writeFileSync, readFileSync, rmSync } from 'node:fs'
import { createHash, randomBytes } from 'node:crypto'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { once } from 'node:events'
import { parseArgs, promisify } from 'node:util'
import { setTimeout as delay } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'
import { writeOciLayout, layoutDigest } from '../../spec/registry/oci-layout.js'

const ROOT = fileURLToPath(new URL('../../../', import.meta.url))
const run = promisify(execFile)
const { values } = parseArgs({ options: { report: { type: 'string' }, 'no-compare': { type: 'boolean' } } })

interface Registry { name: string, url: string, host: string, child: ChildProcess, dir: string }
interface Result { registry: string, check: string, status: 'pass' | 'fail' | 'skip', detail?: string }

const work = mkdtempSync(join(tmpdir(), 'berth-conformance-'))
const authFile = join(work, 'auth.json')
writeFileSync(authFile, '{}')

function sha (b: Buffer | string): string { return `sha256:${createHash('sha256').update(b).digest('hex')}` }

async function freePort (): Promise<number> {
  const s = net.createServer().listen(0, '127.0.0.1')
  await once(s, 'listening')
  const port = (s.address() as net.AddressInfo).port
  s.close()
  await once(s, 'close')
  return port
}

async function start (name: string, argv: (port: number, dir: string) => [string, string[]]): Promise<Registry> {
  const dir = mkdtempSync(join(work, `${name}-`))
  const port = await freePort()
  const [cmd, args] = argv(port, dir)
  const child = spawn(cmd, args, { stdio: 'ignore' })
  const url = `http://127.0.0.1:${port}`
  for (let i = 0; i < 200; i++) {
    if (child.exitCode !== null) throw new Error(`${name} exited ${child.exitCode}`)
    const r = await fetch(`${url}/v2/`).then((x) => x.status, () => 0)
    if (r === 200) return { name, url, host: `127.0.0.1:${port}`, child, dir }
    await delay(50)
  }
  throw new Error(`${name} did not come up`)
}

const startBerth = async (): Promise<Registry> => await start('berth', (port, dir) =>
  [process.execPath, [join(ROOT, 'dist', 'lib', 'cli', 'main.js'), 'registry', '--listen', `127.0.0.1:${port}`, '--data-root', join(dir, 'data')]])

const startDistribution = async (): Promise<Registry> => await start('distribution', (port, dir) => {
  const config = join(dir, 'config.yml')
  writeFileSync(config, `version: 0.1\nlog:\n  level: error\n  accesslog:\n    disabled: true\nstorage:\n  filesystem:\n    rootdirectory: ${join(dir, 'data')}\n  delete:\n    enabled: true\nhttp:\n  addr: 127.0.0.1:${port}\n`)
  return ['docker-registry', ['serve', config]]
})

async function skopeo (...args: string[]): Promise<string> {
  const { stdout } = await run('skopeo', args, { env: { ...process.env, REGISTRY_AUTH_FILE: authFile }, maxBuffer: 64 * 1024 * 1024 })
  return stdout
}

async function req (url: string, method: string, path: string, body?: Buffer | string, headers: Record<string, string> = {}): Promise<{ status: number, headers: http.IncomingHttpHeaders, body: Buffer }> {
  const u = new URL(url)
  return await new Promise((resolve, reject) => {
    const r = http.request({ host: u.hostname, port: u.port, method, path, headers: { ...headers, ...(body !== undefined ? { 'Content-Length': Buffer.byteLength(body) } : {}) } }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (d: Buffer) => chunks.push(d))
      res.on('end', () => { resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }) })
    })
    r.on('error', reject)
    r.end(body)
  })
}

function expect (cond: boolean, detail: string): void { if (!cond) throw new Error(detail) }

type Check = [string, (r: Registry, peer: Registry | null) => Promise<void>]

function checks (single: string, multi: string): Check[] {
  return [
    ['skopeo copy OCI layout → registry → OCI layout: digest unchanged', async (r) => {
      await skopeo('copy', '--dest-tls-verify=false', `oci:${single}:latest`, `docker://${r.host}/conf/busybox:latest`)
      const back = mkdtempSync(join(work, 'back-'))
      await skopeo('copy', '--src-tls-verify=false', `docker://${r.host}/conf/busybox:latest`, `oci:${back}:latest`)
      expect(layoutDigest(back) === layoutDigest(single), `got ${layoutDigest(back)}`)
    }],
    ['skopeo copy --all of a multi-platform index: digest unchanged', async (r) => {
      await skopeo('copy', '--all', '--dest-tls-verify=false', `oci:${multi}:latest`, `docker://${r.host}/conf/multi:latest`)
      const back = mkdtempSync(join(work, 'back-'))
      await skopeo('copy', '--all', '--src-tls-verify=false', `docker://${r.host}/conf/multi:latest`, `oci:${back}:latest`)
      expect(layoutDigest(back) === layoutDigest(multi), `got ${layoutDigest(back)}`)
    }],
    ['skopeo copy as Docker schema 2 and back through docker-archive: digest unchanged', async (r) => {
      await skopeo('copy', '--format', 'v2s2', '--dest-tls-verify=false', `oci:${single}:latest`, `docker://${r.host}/conf/docker:a`)
      const archive = join(mkdtempSync(join(work, 'arch-')), 'a.tar')
      await skopeo('copy', '--src-tls-verify=false', `docker://${r.host}/conf/docker:a`, `docker-archive:${archive}:conf/docker:a`)
      await skopeo('copy', '--dest-tls-verify=false', `docker-archive:${archive}`, `docker://${r.host}/conf/docker:b`)
      const a = JSON.parse(await skopeo('inspect', '--tls-verify=false', `docker://${r.host}/conf/docker:a`)) as { Digest: string }
      const b = JSON.parse(await skopeo('inspect', '--tls-verify=false', `docker://${r.host}/conf/docker:b`)) as { Digest: string }
      expect(a.Digest === b.Digest, `${a.Digest} ≠ ${b.Digest}`)
    }],
    ['skopeo list-tags and delete', async (r) => {
      const tags = (JSON.parse(await skopeo('list-tags', '--tls-verify=false', `docker://${r.host}/conf/docker`)) as { Tags: string[] }).Tags.sort()
      expect(tags.join() === 'a,b', `tags ${tags.join()}`)
      await skopeo('delete', '--tls-verify=false', `docker://${r.host}/conf/docker:a`)
      expect((await req(r.url, 'GET', '/v2/conf/docker/manifests/b')).status === 404, 'deleting by digest should remove both tags')
    }],
    ['cross-registry copy to and from the other registry: digest unchanged', async (r, peer) => {
      if (peer === null) throw new Skip('no second registry')
      await skopeo('copy', '--all', '--src-tls-verify=false', '--dest-tls-verify=false', `docker://${r.host}/conf/multi:latest`, `docker://${peer.host}/from-${r.name}/multi:latest`)
      await skopeo('copy', '--all', '--src-tls-verify=false', '--dest-tls-verify=false', `docker://${peer.host}/from-${r.name}/multi:latest`, `docker://${r.host}/conf/roundtrip:latest`)
      const back = await req(r.url, 'HEAD', '/v2/conf/roundtrip/manifests/latest', undefined, { Accept: 'application/vnd.oci.image.index.v1+json' })
      expect(back.headers['docker-content-digest'] === layoutDigest(multi), `got ${String(back.headers['docker-content-digest'])}`)
    }],
    ['chunked upload: an out-of-order chunk is 416', async (r) => {
      const post = await req(r.url, 'POST', '/v2/conf/chunks/blobs/uploads/')
      const loc = String(post.headers.location).replace(/^https?:\/\/[^/]+/, '')
      const res = await req(r.url, 'PATCH', loc, 'abcd', { 'Content-Range': '10-13', 'Content-Type': 'application/octet-stream' })
      expect(res.status === 416, `status ${res.status}`)
    }],
    ['tags/list honours n and last', async (r) => {
      for (const tag of ['a', 'b']) await skopeo('copy', '--dest-tls-verify=false', `oci:${single}:latest`, `docker://${r.host}/conf/paged:${tag}`)
      const page = async (q: string): Promise<string[]> => (JSON.parse((await req(r.url, 'GET', `/v2/conf/paged/tags/list?${q}`)).body.toString()) as { tags: string[] | null }).tags ?? []
      const first = await page('n=1')
      expect(first.join() === 'a', `n=1 gave [${first.join()}]`)
      const rest = await page('n=1&last=a')
      expect(rest.join() === 'b', `n=1&last=a gave [${rest.join()}]`)
    }],
    ['referrers API answers an empty index for an unknown subject', async (r) => {
      const res = await req(r.url, 'GET', `/v2/conf/busybox/referrers/${sha(randomBytes(8))}`)
      expect(res.status === 200, `status ${res.status}`)
    }],
    ['a malformed digest is 400 or 404 with OCI errors, not 500', async (r) => {
      const res = await req(r.url, 'GET', '/v2/conf/busybox/manifests/sha256:totallywrong')
      expect(res.status === 400 || res.status === 404, `status ${res.status}`)
    }],
    ['DELETE of a manifest by tag is 202', async (r) => {
      await skopeo('copy', '--dest-tls-verify=false', `oci:${single}:latest`, `docker://${r.host}/conf/deltag:x`)
      const res = await req(r.url, 'DELETE', '/v2/conf/deltag/manifests/x')
      expect(res.status === 202, `status ${res.status}`)
    }]
  ]
}

class Skip extends Error {}

async function stop (r: Registry): Promise<void> {
  if (r.child.exitCode === null) {
    const exited = once(r.child, 'exit')
    r.child.kill('SIGTERM')
    await exited
  }
}

async function main (): Promise<number> {
  execFileSync('skopeo', ['--version'], { stdio: 'ignore' })
  const rootfs = join(work, 'rootfs.tar')
  execFileSync(process.execPath, [join(ROOT, 'tools', 'make-busybox-rootfs.mjs'), rootfs])
  const tar = readFileSync(rootfs)
  const single = join(work, 'single')
  writeOciLayout(single, [tar])
  const multi = join(work, 'multi')
  writeOciLayout(multi, [tar], { platforms: [{ architecture: 'amd64', os: 'linux' }, { architecture: 'arm64', os: 'linux' }] })
  const compare = values['no-compare'] !== true && (() => { try { execFileSync('docker-registry', ['--version'], { stdio: 'ignore' }); return true } catch { return false } })()
  const registries = [await startBerth()]
  if (compare) registries.push(await startDistribution())
  const results: Result[] = []
  try {
    for (const r of registries) {
      const peer = registries.find((x) => x !== r) ?? null
      for (const [name, fn] of checks(single, multi)) {
        try {
          await fn(r, peer)
          results.push({ registry: r.name, check: name, status: 'pass' })
        } catch (err) {
          results.push({ registry: r.name, check: name, status: err instanceof Skip ? 'skip' : 'fail', detail: (err as Error).message.split('\n')[0] ?? '' })
        }
        const last = results[results.length - 1] as Result
        process.stderr.write(`${last.status.padEnd(4)} ${r.name.padEnd(12)} ${name}${last.detail === undefined ? '' : ` — ${last.detail}`}\n`)
      }
    }
  } finally {
    for (const r of registries) await stop(r)
    rmSync(work, { recursive: true, force: true })
  }
  const report = { suite: 'registry', node: process.version, results }
  if (values.report !== undefined) writeFileSync(values.report, JSON.stringify(report, null, 2) + '\n')
  for (const r of registries) {
    const mine = results.filter((x) => x.registry === r.name)
    process.stdout.write(`${r.name}: ${mine.filter((x) => x.status === 'pass').length} passed, ${mine.filter((x) => x.status === 'fail').length} failed\n`)
  }
  const berth = results.filter((x) => x.registry === 'berth')
  const passed = berth.filter((x) => x.status === 'pass').length
  const failed = berth.filter((x) => x.status === 'fail').length
  process.stdout.write(`${passed} passed, ${failed} failed\n`)
  return failed === 0 ? 0 : 1
}

main().then((code) => { process.exitCode = code }, (err: Error) => { process.stderr.write(`conformance run failed: ${err.message}\n`); process.exitCode = 1 })
