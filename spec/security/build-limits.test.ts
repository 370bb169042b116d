// Issue 21 point 7: a small Dockerfile whose ARGs each repeat the previous one ten times made the daemon expand
// (and keep, as intermediate images' configs) hundreds of megabytes. Expanded words and image configs are capped
// (1 MiB): the build stops at the first step past the cap with a clear error, having stored next to nothing.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { startEngine, importBusybox, request, hasDockerCli, dockerCli, containerSkipReason } from '../helpers/engine.js'
import { makeTar } from '../helpers/tar.js'

/** Bytes of the files below `dir`. */
function du (dir: string): number {
  let n = 0
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name)
    n += e.isDirectory() ? du(p) : statSync(p).size
  }
  return n
}

/** FROM busybox, then ARG A of 64 bytes and ARGs B..G, each ten times the previous one (64 MB at G, 245 bytes). */
function argBomb (): string {
  const lines = ['FROM busybox', `ARG A=${'a'.repeat(64)}`]
  let prev = 'A'
  for (const n of 'BCDEFG') { lines.push(`ARG ${n}=${`$${prev}`.repeat(10)}`); prev = n }
  return lines.join('\n') + '\n'
}

test('an ARG that repeats the previous one 10x per line stops at the 1 MiB cap', async (t) => {
  const { socket, dataRoot } = await startEngine(t)
  await importBusybox(socket)
  const content = join(dataRoot, 'content')
  const before = du(content)
  const rssBefore = process.memoryUsage().rss
  const r = await request(socket, 'POST', '/build?t=bomb', { raw: makeTar([{ name: 'Dockerfile', body: argBomb() }]), headers: { 'Content-Type': 'application/x-tar' } })
  assert.equal(r.status, 200)
  const records = r.text.trim().split('\n').map((l) => JSON.parse(l) as { error?: string, stream?: string })
  const error = records.find((x) => x.error !== undefined)?.error ?? ''
  assert.match(error, /the image config of this step would be \d+ bytes, more than the limit of 1048576 bytes \(1 MiB\)/)
  // E (640 KB, once in the command and once in the history) is the first step past the cap: nothing after it ran
  assert.ok(records.some((x) => x.stream?.startsWith('Step 6/8 : ARG E=') === true), r.text.slice(0, 2000))
  assert.ok(!records.some((x) => x.stream?.startsWith('Step 7/8') === true))
  assert.equal((await request(socket, 'GET', '/images/bomb/json')).status, 404)
  // what the failed build left (the configs of steps A..D) is a few hundred kilobytes, not hundreds of megabytes
  assert.ok(du(content) - before < 2 * 1024 * 1024, `${du(content) - before} bytes stored`)
  assert.ok(process.memoryUsage().rss - rssBefore < 128 * 1024 * 1024, `rss grew by ${process.memoryUsage().rss - rssBefore} bytes`)
})

test('the words of an instruction past 1 MiB once expanded are refused with the line', async (t) => {
  const { socket } = await startEngine(t)
  await importBusybox(socket)
  // a 2 KiB line naming a 1 KiB variable 1100 times
  const df = `FROM busybox\nARG A=${'a'.repeat(1024)}\nLABEL x=${'$A'.repeat(600)} y=${'$A'.repeat(500)}\n`
  const r = await request(socket, 'POST', '/build?nocache=1', { raw: makeTar([{ name: 'Dockerfile', body: df }]), headers: { 'Content-Type': 'application/x-tar' } })
  const error = r.text.trim().split('\n').map((l) => JSON.parse(l) as { error?: string }).find((x) => x.error !== undefined)?.error ?? ''
  assert.match(error, /^dockerfile parse error on line 3: the words of this instruction are longer than 1048576 characters \(1 MiB\) once their variables are substituted$/)
})

test('docker build (classic) shows the cap\'s error', { skip: containerSkipReason() ?? (hasDockerCli() ? false : 'the docker CLI is not installed') }, async (t) => {
  const { socket } = await startEngine(t)
  await importBusybox(socket)
  const r = await dockerCli(socket, ['build', '-'], makeTar([{ name: 'Dockerfile', body: argBomb() }]), { DOCKER_BUILDKIT: '0' })
  assert.notEqual(r.status, 0)
  assert.match(r.stderr, /more than the limit of 1048576 bytes \(1 MiB\)/)
})
