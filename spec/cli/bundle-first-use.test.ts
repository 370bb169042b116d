// The bundled program (dist/lib/cli/berth.cjs) on a fresh start, at the first use of each part it loads late: the
// runtime dependencies esbuild bundled (debug at boot; tar-fs at the first import, tar-stream at the first archive
// read), a first gzipped layer, and the hash thread's worker file, resolved from the bundle's place, at the
// first stream hashed off the event loop. The other specs run dist/lib/cli/main.js, where none of this is bundled.
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { createHash, randomBytes } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { gzipSync } from 'node:zlib'
import { ROOT, busyboxTar, cleanupDaemon, containerSkipReason, createContainer, daemonNetworkArgs, request, startDaemonProcess, tmpDir, uniqueNetworkOptions } from '../helpers/engine.js'
import { listTar, tarOf } from '../helpers/tar.js'

const PROGRAM = join(ROOT, 'dist', 'lib', 'cli', 'berth.cjs')

/** POST /images/create?fromSrc=- of `body` as repo:latest; the new image's ID. */
async function importImage (sock: string, repo: string, body: Buffer): Promise<string> {
  const r = await request(sock, 'POST', `/images/create?fromSrc=-&repo=${repo}&tag=latest`, { raw: body, headers: { 'Content-Type': 'application/x-tar' } })
  const m = /"status":"(sha256:[0-9a-f]{64})"/.exec(r.text)
  assert.equal(r.status, 200, r.text)
  assert.ok(m !== null, r.text)
  return m[1] as string
}

async function diffIds (sock: string, ref: string): Promise<string[]> {
  const r = await request(sock, 'GET', `/images/${ref}/json`)
  assert.equal(r.status, 200, r.text)
  return (r.json() as { RootFS: { Layers: string[] } }).RootFS.Layers
}

describe('the bundled program, each late-loaded part at its first use', { skip: containerSkipReason() ?? false }, () => {
  it('logs with debug, imports gzipped and large layers, and reads a container\'s files back as a tar', async (t) => {
    const dir = tmpDir()
    const net = uniqueNetworkOptions()
    const child = await startDaemonProcess(dir, ['--log-level', 'debug', ...daemonNetworkArgs(net)], 120_000, PROGRAM)
    t.after(async () => { await cleanupDaemon(child, dir, net) })
    let err = ''
    child.stderr?.on('data', (d: Buffer) => { err += d.toString() })
    const sock = join(dir, 'b.sock')
    // the bundle, as a program (not main.js under node)
    assert.match(readFileSync(`/proc/${child.pid ?? 0}/cmdline`, 'utf8').split('\0').join(' '), /node --max-semi-space-size=2 \S+ \S*berth\.cjs daemon /)

    // debug (bundled): a request's debug record
    assert.equal((await request(sock, 'GET', '/version')).status, 200)
    for (let i = 0; i < 100 && !/level=debug msg="GET \/version 200/.test(err); i++) await new Promise((resolve) => setTimeout(resolve, 20))
    assert.match(err, /level=debug msg="GET \/version 200/)

    // a gzipped layer; the layer's diff ID is its uncompressed tar's digest
    const tar = readFileSync(busyboxTar())
    await importImage(sock, 'gzipped', gzipSync(tar))
    assert.deepEqual(await diffIds(sock, 'gzipped'), [`sha256:${createHash('sha256').update(tar).digest('hex')}`])

    // the hash thread's worker file (resolved from the bundle's place): a layer over the 4 MiB hashed in place goes
    // to the thread
    const large = await tarOf([{ name: 'data/blob', body: randomBytes(6 * 1024 * 1024) }])
    await importImage(sock, 'large', large)
    assert.deepEqual(await diffIds(sock, 'large'), [`sha256:${createHash('sha256').update(large).digest('hex')}`])
    assert.match(err, /hash thread started/)

    // tar-stream (bundled, from tar-fs's tree): a container's files as a tar
    const id = await createContainer(sock, { Image: 'gzipped', Cmd: ['true'] })
    const archive = await request(sock, 'GET', `/containers/${id}/archive?path=/bin/busybox`)
    assert.equal(archive.status, 200, archive.text)
    const entries = await listTar(archive.body)
    assert.deepEqual(entries.map((e) => e.name), ['busybox'])
    assert.ok((entries[0]?.body.length ?? 0) > 100_000, 'busybox itself')
    assert.doesNotMatch(err, /level=(error|warn)/)
  })
})
