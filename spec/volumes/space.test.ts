// Space that comes back: rmi of a pulled image's last tag leaves no <none> image, removals free layers and blobs,
// image prune frees what it reports, system df is honest, system prune -a --volumes completes, and after pull, tag,
// commit and removing everything the data root is back to its empty size.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { readdirSync, writeFileSync, mkdirSync, existsSync, statSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { startEngine, containerSkipReason, hasDockerCli, busyboxTar, dockerCli } from '../helpers/engine.js'
import { dockerOk } from '../helpers/tools.js'
import { registrySkipReason, startDistribution } from '../images/registry-fixture.js'

const skip = containerSkipReason() ?? (hasDockerCli() ? null : 'the docker CLI is not installed') ?? registrySkipReason()

function du (dir: string): number {
  return Number(execFileSync('du', ['-sb', dir], { encoding: 'utf8' }).split('\t')[0])
}

function files (dir: string): number {
  let n = 0
  for (const e of readdirSync(dir, { withFileTypes: true })) n += e.isDirectory() ? files(join(dir, e.name)) : 1
  return n
}

interface Df { LayersSize: number, Images: Array<{ Id: string, Size: number, SharedSize: number, Containers: number }>, Containers: Array<{ SizeRw: number }>, Volumes: Array<{ Name: string, UsageData: { Size: number, RefCount: number } }>, BuildCache: unknown[] | null }

test('space that comes back', { skip: skip ?? false }, async (t) => {
  const reg = await startDistribution(t)
  const te = await startEngine(t)
  const { socket, dataRoot } = te
  const ok = dockerOk(socket)
  const docker = async (...args: string[]): ReturnType<typeof dockerCli> => await dockerCli(socket, args)
  const df = async (): Promise<Df> => JSON.parse((await import('../helpers/engine.js').then(async (m) => await m.request(socket, 'GET', '/system/df'))).text) as Df
  const empty = du(dataRoot)
  const remote = `${reg.host}/space/bb`

  await ok('import', busyboxTar(), 'busybox:latest')
  await ok('tag', 'busybox', `${remote}:1`)
  await ok('push', `${remote}:1`)
  await ok('rmi', 'busybox', `${remote}:1`)
  assert.equal((await ok('images', '-aq')).trim(), '')
  assert.ok(du(dataRoot) - empty < 16 * 1024, `imported and removed: ${du(dataRoot) - empty} bytes left`)

  await t.test('rmi of a pulled image by its last tag removes it (digests of the repository go along)', async () => {
    await ok('pull', `${remote}:1`)
    assert.match(await ok('images', '--digests', '--format', '{{.Digest}}'), /^sha256:/)
    const out = await ok('rmi', `${remote}:1`)
    assert.match(out, /Untagged: .*space\/bb:1\nUntagged: .*space\/bb@sha256:[0-9a-f]{64}\nDeleted: sha256:/)
    assert.equal((await ok('images', '-aq')).trim(), '')
    assert.ok(du(dataRoot) - empty < 16 * 1024, `pulled and removed: ${du(dataRoot) - empty} bytes left`)
  })

  await t.test('pull, tag, commit, then remove everything without prune: the data root is back to its empty size', async () => {
    await ok('pull', `${remote}:1`)
    await ok('tag', `${remote}:1`, 'gc:1')
    await ok('run', '--name', 'g1', '-v', 'gcvol:/v', '-v', '/anon', 'gc:1', 'sh', '-c', 'head -c 200000 /dev/urandom > /big; head -c 3000 /dev/zero > /v/f')
    await ok('commit', 'g1', 'gc:committed')
    await ok('run', '--name', 'g2', 'gc:committed', 'sh', '-c', 'head -c 1000 /dev/zero > /small')
    await ok('commit', 'g2', 'gc:committed2')
    await ok('rm', '-v', 'g1', 'g2')
    await ok('volume', 'rm', 'gcvol')
    await ok('rmi', 'gc:committed2', 'gc:committed', 'gc:1', `${remote}:1`)
    assert.equal((await ok('images', '-aq')).trim(), '')
    let left = du(dataRoot) - empty
    for (let i = 0; i < 100 && left >= 16 * 1024; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100))
      left = du(dataRoot) - empty
    }
    assert.ok(left < 16 * 1024, `removed without prune: ${left} bytes left (${files(dataRoot)} files)\n${execFileSync('find', [dataRoot, '-type', 'f', '-size', '+2k'], { encoding: 'utf8' })}`)
  })

  await t.test('the collector runs after removals (no prune): leftovers no image references go', async () => {
    // what a crash between a removal's steps or an interrupted pull leaves: a blob and an unpacked layer nobody uses
    const blob = join(dataRoot, 'content', 'blobs', 'sha256', 'ab'.repeat(32))
    const layer = join(dataRoot, 'layers', 'cd'.repeat(32))
    await ok('import', busyboxTar(), 'gone:1')
    await ok('create', '--name', 'gone1', 'gone:1', 'true')
    await ok('volume', 'create', 'gonevol')
    for (const removal of [['rm', 'gone1'], ['volume', 'rm', 'gonevol'], ['rmi', 'gone:1']]) {
      writeFileSync(blob, Buffer.alloc(50_000))
      mkdirSync(join(layer, 'diff'), { recursive: true })
      writeFileSync(join(layer, 'diff', 'f'), Buffer.alloc(50_000))
      await ok(...removal)
      for (let i = 0; i < 100 && (existsSync(blob) || existsSync(layer)); i++) await new Promise((resolve) => setTimeout(resolve, 50))
      assert.ok(!existsSync(blob) && !existsSync(layer), `after docker ${removal.join(' ')} the leftovers are collected`)
    }
    assert.equal((await ok('images', '-aq')).trim(), '')
    assert.ok(du(dataRoot) - empty < 16 * 1024, `${du(dataRoot) - empty} bytes left`)
  })

  await t.test('pulls, commits and removals racing the collector lose nothing', async () => {
    // r2 = r1 + one layer: its pull finds r1's layers stored while the rmi of r1 frees them; a commit runs alongside
    const delay = async (ms: number): Promise<void> => { await new Promise((resolve) => setTimeout(resolve, ms)) }
    await ok('import', busyboxTar(), 'bb:base')
    await ok('run', '--name', 'mk1', 'bb:base', 'sh', '-c', 'head -c 1000000 /dev/urandom > /a')
    await ok('commit', 'mk1', `${remote}:r1`)
    await ok('run', '--name', 'mk2', `${remote}:r1`, 'sh', '-c', 'head -c 3000000 /dev/urandom > /extra')
    await ok('commit', 'mk2', `${remote}:r2`)
    await ok('push', `${remote}:r1`)
    await ok('push', `${remote}:r2`)
    await ok('rm', 'mk1', 'mk2')
    await ok('rmi', `${remote}:r2`)
    await ok('run', '--name', 'src2', 'bb:base', 'sh', '-c', 'echo x > /y')
    for (let i = 0; i < 4; i++) {
      const [pull, rmi, commit] = await Promise.all([
        docker('pull', `${remote}:r2`),
        delay(i * 60).then(async () => await docker('rmi', `${remote}:r1`)),
        delay(i * 30).then(async () => await docker('commit', 'src2', `race:${i}`))
      ])
      assert.equal(pull.status, 0, pull.stderr)
      assert.equal(rmi.status, 0, rmi.stderr)
      assert.equal(commit.status, 0, commit.stderr)
      await delay(400) // a sweep the removal asked for has run
      assert.equal(await ok('run', '--rm', `${remote}:r2`, 'sh', '-c', 'wc -c < /a; wc -c < /extra'), '1000000\n3000000\n')
      assert.equal(await ok('run', '--rm', `race:${i}`, 'cat', '/y'), 'x\n')
      // every layer's blob is there: the archive holds /a and /extra (random, incompressible)
      const archive = join(te.dir, 'race.tar')
      await ok('save', '-o', archive, `${remote}:r2`, `race:${i}`)
      assert.ok(statSync(archive).size > 4_000_000, `archive of ${statSync(archive).size} bytes`)
      rmSync(archive)
      await ok('rmi', `${remote}:r2`, `race:${i}`)
      await ok('pull', `${remote}:r1`)
    }
    await ok('rm', 'src2')
    await ok('rmi', `${remote}:r1`, 'bb:base')
    assert.equal((await ok('images', '-aq')).trim(), '')
  })

  await t.test('system df is honest; image prune frees what it reports; system prune -a --volumes completes', async () => {
    await ok('pull', `${remote}:1`)
    await ok('tag', `${remote}:1`, 'local:1')
    await ok('run', '--name', 'w1', '-v', 'dfvol:/v', 'local:1', 'sh', '-c', 'head -c 100000 /dev/zero > /big; head -c 5000 /dev/zero > /v/f')
    await ok('commit', 'w1', 'committed:1')
    await ok('run', '--name', 'w2', 'committed:1', 'true')
    const d = await df()
    assert.equal(d.Images.length, 2)
    const base = d.Images.find((i) => i.Containers === 1 && i.Size < 3_000_000) as Df['Images'][number]
    assert.ok(base !== undefined)
    assert.equal(base.SharedSize, base.Size, 'the base layer is shared with the committed image')
    assert.ok(d.LayersSize >= base.Size + 100_000 && d.LayersSize < base.Size + 120_000, `LayersSize ${d.LayersSize}`)
    assert.ok(d.Containers.some((c) => c.SizeRw >= 100_000))
    assert.deepEqual(d.Volumes.map((v) => [v.Name, v.UsageData.Size, v.UsageData.RefCount]), [['dfvol', 5000, 1]])
    // remembered sizes follow writes through a container, deep in the tree too, and from the host
    await ok('run', '--rm', '-v', 'dfvol:/v', 'local:1', 'sh', '-c', 'mkdir -p /v/a/b && head -c 3000 /dev/zero > /v/a/b/g')
    assert.deepEqual((await df()).Volumes.map((v) => v.UsageData.Size), [8000])
    await ok('run', '--rm', '-v', 'dfvol:/v', 'local:1', 'sh', '-c', 'head -c 1000 /dev/zero >> /v/a/b/g')
    assert.deepEqual((await df()).Volumes.map((v) => v.UsageData.Size), [9000])
    execFileSync('sh', ['-c', `rm ${join(dataRoot, 'volumes', 'dfvol', '_data', 'a', 'b', 'g')}`])
    assert.deepEqual((await df()).Volumes.map((v) => v.UsageData.Size), [5000])
    const text = await ok('system', 'df')
    assert.match(text, /Local Volumes\s+1\s+1\s+5kB\s+0B/)
    // image prune: a dangling committed image; SpaceReclaimed is at most what left the disk
    await ok('rm', 'w2')
    await ok('commit', 'w1')
    await ok('rmi', 'committed:1')
    const before = du(dataRoot)
    const pr = JSON.parse((await import('../helpers/engine.js').then(async (m) => await m.request(socket, 'POST', '/images/prune'))).text) as { ImagesDeleted: unknown[], SpaceReclaimed: number }
    assert.ok(pr.ImagesDeleted.length >= 1)
    const freed = before - du(dataRoot)
    assert.ok(pr.SpaceReclaimed > 0 && pr.SpaceReclaimed <= freed, `reported ${pr.SpaceReclaimed}, freed ${freed}`)
    const prune = await ok('system', 'prune', '-a', '--volumes', '-f')
    assert.match(prune, /Total reclaimed space/)
    assert.equal((await ok('ps', '-aq')).trim(), '')
    assert.equal((await ok('images', '-aq')).trim(), '')
    // API >= 1.42: prune takes anonymous volumes only; -a the named ones too
    assert.equal((await ok('volume', 'ls', '-q')).trim(), 'dfvol')
    assert.match(await ok('volume', 'prune', '-a', '-f'), /Deleted Volumes:\ndfvol\n/)
    assert.equal((await ok('volume', 'ls', '-q')).trim(), '')
    const after = await df()
    assert.equal(after.LayersSize, 0)
    assert.deepEqual([after.Images.length, after.Containers.length, after.Volumes.length], [0, 0, 0])
    assert.match(await ok('system', 'df'), /Images\s+0\s+0\s+0B\s+0B[\s\S]*Containers\s+0\s+0\s+0B\s+0B[\s\S]*Local Volumes\s+0\s+0\s+0B\s+0B/)
    assert.ok(du(dataRoot) - empty < 16 * 1024, `everything removed: ${du(dataRoot) - empty} bytes left (${files(dataRoot)} files)`)
  })
})
