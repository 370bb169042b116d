// Subpath volume mounts (VolumeOptions.Subpath, API 1.45; issue 23.15): a subdirectory of a named volume is mounted,
// resolved inside the volume as dockerd's safepath does (a relative symlink inside the volume is followed; a subpath
// that leaves the volume, through `..` or a symlink, is refused), and what the runtime binds is the directory that was
// checked (a private mount of its handle, let go when the container stops).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { startEngine, containerSkipReason, hasDockerCli, dockerCli, importBusybox, request } from '../helpers/engine.js'
import { dockerOk } from '../helpers/tools.js'
import { until } from '../helpers/poll.js'

const skip = containerSkipReason() ?? (hasDockerCli() ? null : 'the docker CLI is not installed')

function subpathMounts (root: string): string[] {
  return readFileSync('/proc/self/mountinfo', 'utf8').split('\n').map((l) => l.split(' ')[4] ?? '').filter((p) => p.startsWith(join(root, 'subpaths') + '/'))
}

test('volume subpath mounts', { skip: skip ?? false }, async (t) => {
  const te = await startEngine(t)
  const { socket } = te
  await importBusybox(socket)
  const ok = dockerOk(socket)
  const execRoot = join(te.dir, 'run')
  const run = async (subpath: string, ...cmd: string[]): Promise<{ status: number, stdout: string, stderr: string }> =>
    await dockerCli(socket, ['run', '--rm', '--mount', `type=volume,src=sp,dst=/m,volume-subpath=${subpath}`, 'busybox', ...cmd])
  await ok('volume', 'create', 'sp')
  await ok('run', '--rm', '-v', 'sp:/v', 'busybox', 'sh', '-c', 'mkdir -p /v/sub/inner && echo in-sub > /v/sub/f && echo top > /v/top && ln -s sub /v/rel && ln -s /etc /v/abs && ln -s ../.. /v/up && ln -s ../f /v/sub/inner/file-link')

  await t.test('a subdirectory, through a relative link, a file; the container sees only it', async () => {
    const first = await run('sub', 'cat', '/m/f')
    assert.equal(first.stdout, 'in-sub\n', first.stderr)
    assert.equal((await run('rel', 'ls', '/m')).stdout, 'f\ninner\n')
    assert.equal((await run('sub/inner/..', 'cat', '/m/f')).stdout, 'in-sub\n')
    assert.equal((await run('sub/inner/file-link', 'cat', '/m')).stdout, 'in-sub\n')
    assert.equal((await run('.', 'cat', '/m/top')).stdout, 'top\n')
    // writes land in the volume's subdirectory
    await ok('run', '--rm', '--mount', 'type=volume,src=sp,dst=/m,volume-subpath=sub', 'busybox', 'sh', '-c', 'echo new > /m/written')
    assert.equal(readFileSync(join(te.dataRoot, 'volumes', 'sp', '_data', 'sub', 'written'), 'utf8'), 'new\n')
  })

  await t.test('refused: leaving the volume, missing, absolute, anonymous, before API 1.45', async () => {
    const escapes = await run('abs', 'true')
    assert.notEqual(escapes.status, 0)
    assert.match(escapes.stderr, /path concatenation escapes the base directory, base: \S+\/volumes\/sp\/_data, subpath: abs/)
    assert.match((await run('up', 'true')).stderr, /path concatenation escapes the base directory/)
    assert.match((await run('missing', 'true')).stderr, /cannot access path \S+\/volumes\/sp\/_data\/missing: no such file or directory/)
    assert.match((await run('../x', 'true')).stderr, /invalid mount config for type "volume": subpath must be a relative path within the volume/)
    assert.match((await run('/sub', 'true')).stderr, /subpath must be a relative path within the volume/)
    assert.match((await dockerCli(socket, ['run', '--rm', '--mount', 'type=volume,dst=/m,volume-subpath=sub', 'busybox', 'true'])).stderr, /must not set Subpath when using anonymous volumes/)
    const old = await request(socket, 'POST', '/v1.44/containers/create', { body: { Image: 'busybox', Cmd: ['true'], HostConfig: { Mounts: [{ Type: 'volume', Source: 'sp', Target: '/m', VolumeOptions: { Subpath: 'sub' } }] } } })
    assert.equal(old.status, 400)
    assert.equal((old.json() as { message: string }).message, 'VolumeOptions.Subpath needs API v1.45 or newer')
    // refused starts leave no mount behind
    assert.deepEqual(subpathMounts(execRoot), [])
  })

  await t.test('the private mount lives while the container runs; docker cp sees the subpath', async () => {
    await ok('run', '-d', '--name', 'held', '--mount', 'type=volume,src=sp,dst=/m,volume-subpath=sub', 'busybox', 'sleep', '600')
    assert.equal(subpathMounts(execRoot).length, 1)
    assert.equal(await ok('exec', 'held', 'cat', '/m/f'), 'in-sub\n')
    const head = await request(socket, 'HEAD', '/containers/held/archive?path=/m/f')
    assert.equal(head.status, 200)
    await ok('stop', '-t', '0', 'held')
    await until('the subpath mount let go', async () => subpathMounts(execRoot).length === 0)
    assert.deepEqual(existsSync(join(execRoot, 'subpaths')) ? readdirSync(join(execRoot, 'subpaths')) : [], [])
    // started again, mounted again
    await ok('start', 'held')
    assert.equal(await ok('exec', 'held', 'cat', '/m/f'), 'in-sub\n')
    await ok('rm', '-f', 'held')
    await until('the subpath mount let go', async () => subpathMounts(execRoot).length === 0)
  })
})
