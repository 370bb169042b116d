// `docker cp` and the archive API see a container's volumes and bind mounts (issue 23.11), running or stopped, as
// dockerd's view of a container's files has them: copying into a path inside a volume writes the volume, reading reads
// it, a symlink inside a volume is expanded inside the container, read-only mounts refuse writes, and a tar of a
// directory holding mount points carries what is mounted there. `docker export` stays the root filesystem alone.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs'
import { join } from 'node:path'
import { tmpdir } from 'node:os'
import { startEngine, containerSkipReason, hasDockerCli, importBusybox, request } from '../helpers/engine.js'
import { dockerOk } from '../helpers/tools.js'
import { listTar, makeTar } from '../helpers/tar.js'

const skip = containerSkipReason() ?? (hasDockerCli() ? null : 'the docker CLI is not installed')

test('docker cp through volumes and bind mounts', { skip: skip ?? false }, async (t) => {
  const te = await startEngine(t)
  const { socket } = te
  await importBusybox(socket)
  const ok = dockerOk(socket)
  const host = mkdtempSync(join(tmpdir(), 'berth-cpvol-'))
  t.after(() => { rmSync(host, { recursive: true, force: true }) })
  const bind = join(host, 'bind')
  const robind = join(host, 'ro')
  for (const d of [bind, robind]) await ok('run', '--rm', '-v', `${d}:/x`, 'busybox', 'true')
  writeFileSync(join(host, 'in.txt'), 'from host\n')
  writeFileSync(join(robind, 'kept'), 'ro\n')
  await ok('volume', 'create', 'cpvol')
  const volData = join(te.dataRoot, 'volumes', 'cpvol', '_data')
  await ok('run', '-d', '--name', 'cpc', '--read-only', '-v', 'cpvol:/data', '-v', `${bind}:/bnd`, '-v', `${robind}:/ro:ro`, 'busybox', 'sh', '-c',
    'echo hello > /data/f; mkdir -p /data/d; ln -s /etc/hostname /data/abs; ln -s ../etc /data/up; touch /data/ready; sleep 600')
  for (let i = 0; i < 100 && !existsSync(join(volData, 'ready')); i++) await new Promise((resolve) => setTimeout(resolve, 50))

  await t.test('into and out of a volume of a running container; a symlink in the volume expands inside the container', async () => {
    await ok('cp', join(host, 'in.txt'), 'cpc:/data/')
    assert.equal(readFileSync(join(volData, 'in.txt'), 'utf8'), 'from host\n')
    assert.equal(await ok('exec', 'cpc', 'cat', '/data/in.txt'), 'from host\n')
    const listed = (await listTar((await request(socket, 'GET', '/containers/cpc/archive?path=/data')).body)).map((e) => e.name).sort()
    assert.deepEqual(listed, ['data/', 'data/abs', 'data/d/', 'data/f', 'data/in.txt', 'data/ready', 'data/up'])
    // /data/up -> ../etc is the container's /etc: its hostname file, not the host's
    const up = await listTar((await request(socket, 'GET', '/containers/cpc/archive?path=/data/up/hostname')).body)
    assert.equal(up[0]?.body.toString(), (await ok('exec', 'cpc', 'cat', '/etc/hostname')))
    const head = await request(socket, 'HEAD', '/containers/cpc/archive?path=/data/abs')
    assert.equal(head.status, 200)
    assert.equal((JSON.parse(Buffer.from(head.headers['x-docker-container-path-stat'] as string, 'base64').toString()) as { linkTarget: string }).linkTarget, '/etc/hostname')
  })

  await t.test('bind mounts; a read-only one and the read-only root filesystem refuse writes as dockerd', async () => {
    await ok('cp', join(host, 'in.txt'), 'cpc:/bnd/')
    assert.equal(readFileSync(join(bind, 'in.txt'), 'utf8'), 'from host\n')
    const tar = makeTar([{ name: 'x', body: '1' }])
    const ro = await request(socket, 'PUT', '/containers/cpc/archive?path=/ro', { raw: tar, headers: { 'Content-Type': 'application/x-tar' } })
    assert.equal(ro.status, 400)
    assert.equal((ro.json() as { message: string }).message, 'mounted volume is marked read-only')
    const rootfs = await request(socket, 'PUT', '/containers/cpc/archive?path=/tmp', { raw: tar, headers: { 'Content-Type': 'application/x-tar' } })
    assert.equal(rootfs.status, 400)
    assert.equal((rootfs.json() as { message: string }).message, 'container rootfs is marked read-only')
    // the read-only root filesystem does not stop writes into a volume
    assert.equal((await request(socket, 'PUT', '/containers/cpc/archive?path=/data/d', { raw: tar, headers: { 'Content-Type': 'application/x-tar' } })).status, 200)
    assert.equal(readFileSync(join(volData, 'd', 'x'), 'utf8'), '1')
  })

  await t.test('a tar of / carries the mounts; export does not', async () => {
    const all = (await listTar((await request(socket, 'GET', '/containers/cpc/archive?path=/')).body)).map((e) => e.name)
    for (const want of ['/data/f', '/bnd/in.txt', '/ro/kept']) assert.ok(all.includes(want), `${want} in the archive of /`)
    const exported = (await listTar((await request(socket, 'GET', '/containers/cpc/export')).body)).map((e) => e.name)
    assert.ok(exported.includes('data/'))
    assert.ok(!exported.some((n) => n.startsWith('data/f') || n.startsWith('bnd/in.txt')), 'export is the root filesystem only')
  })

  await t.test('a stopped container: the volume is still read and written through the container', async () => {
    await ok('stop', '-t', '0', 'cpc')
    await ok('cp', join(host, 'in.txt'), 'cpc:/data/stopped.txt')
    assert.equal(readFileSync(join(volData, 'stopped.txt'), 'utf8'), 'from host\n')
    await ok('cp', 'cpc:/data/f', join(host, 'out.txt'))
    assert.equal(readFileSync(join(host, 'out.txt'), 'utf8'), 'hello\n')
    assert.equal((await listTar((await request(socket, 'GET', '/containers/cpc/archive?path=/data/stopped.txt')).body))[0]?.body.toString(), 'from host\n')
    await ok('rm', 'cpc')
  })
})
