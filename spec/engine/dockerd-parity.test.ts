// Places where Berth answered differently from dockerd (issue 23 points 5, 7, 12, 20), through the docker CLI and
// the API: each assertion is what dockerd 20.10 answers.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { dockerOk } from '../helpers/tools.js'
import { startEngine, containerSkipReason, hasDockerCli, dockerCli, importBusybox, request } from '../helpers/engine.js'
import { makeTar } from '../helpers/tar.js'
import { until } from '../helpers/poll.js'

const skip = containerSkipReason() ?? (hasDockerCli() ? null : 'the docker CLI is not installed')

test('dockerd parity: name filters, tail, create strictness, sizes', { skip: skip ?? false }, async (t) => {
  const { socket } = await startEngine(t)
  await importBusybox(socket)
  const docker = async (...args: string[]): ReturnType<typeof dockerCli> => await dockerCli(socket, args)
  const ok = dockerOk(socket)

  await t.test('ps --filter name= matches the name with its leading / (^/web$ is an exact match)', async () => {
    await ok('create', '--name', 'web', 'busybox', 'true')
    await ok('create', '--name', 'web2', 'busybox', 'true')
    await ok('create', '--name', 'myweb', 'busybox', 'true')
    const names = async (f: string): Promise<string[]> => (await ok('ps', '-a', '--filter', `name=${f}`, '--format', '{{.Names}}')).split('\n').filter((x) => x !== '').sort()
    assert.deepEqual(await names('^/web$'), ['web'])
    assert.deepEqual(await names('^web$'), ['web'])
    assert.deepEqual(await names('/web'), ['web', 'web2'])
    assert.deepEqual(await names('web'), ['myweb', 'web', 'web2'])
    assert.deepEqual(await names('^/web'), ['web', 'web2'])
    await ok('rm', 'web', 'web2', 'myweb')
  })

  await t.test('logs tail=-1 (and any tail that is not a number) is every line', async () => {
    const id = (await ok('run', '-d', 'busybox', 'sh', '-c', 'echo one; echo two; echo three')).trim()
    await ok('wait', id)
    for (const tail of ['-1', '-5', 'all', 'x', '']) {
      const r = await request(socket, 'GET', `/containers/${id}/logs?stdout=1&tail=${tail}`)
      assert.equal(r.status, 200)
      assert.equal(r.body.subarray(8).toString().replace(/\x01\0\0\0\0\0\0./g, ''), 'one\ntwo\nthree\n', `tail=${tail}`)
    }
    assert.equal(await ok('logs', '--tail', '2', id), 'two\nthree\n')
    assert.equal(await ok('logs', '--tail', '0', id), '')
    await ok('rm', id)
  })

  await t.test('create accepts what dockerd accepts: max-file without max-size, any VolumeDriver without volumes', async () => {
    await ok('create', '--name', 'mf', '--log-opt', 'max-file=3', 'busybox', 'true')
    await ok('create', '--name', 'vd', '--volume-driver', 'nosuchdriver', 'busybox', 'true')
    // a volume the driver would have to create is still looked up (dockerd's 404)
    const r = await request(socket, 'POST', '/containers/create', { body: { Image: 'busybox', Cmd: ['true'], HostConfig: { VolumeDriver: 'nosuchdriver', Binds: ['/data'] } } })
    assert.equal(r.status, 404)
    assert.match((r.json() as { message: string }).message, /error looking up volume plugin nosuchdriver: plugin "nosuchdriver" not found/)
    await ok('rm', 'mf', 'vd')
  })

  await t.test('HostConfig.Isolation comes back as sent: "default" when given, "" when not', async () => {
    await ok('create', '--name', 'iso-default', '--isolation', 'default', 'busybox', 'true')
    await ok('create', '--name', 'iso-empty', 'busybox', 'true')
    assert.equal(await ok('inspect', '-f', '{{.HostConfig.Isolation}}|', 'iso-default'), 'default|\n')
    assert.equal(await ok('inspect', '-f', '{{.HostConfig.Isolation}}|', 'iso-empty'), '|\n')
    await ok('rm', 'iso-default', 'iso-empty')
  })

  await t.test('a restarting container is not removed without force', async () => {
    await ok('run', '-d', '--name', 'flap', '--restart', 'always', 'busybox', 'sh', '-c', 'exit 1')
    // restarting after its fourth restart: the next delay is 1.6 s (100 ms doubled each time), so the DELETE below
    // meets it restarting, not in the few ms it runs between delays (the first delays are 100 and 200 ms)
    await until('the container restarting after 4 restarts', async () => {
      const [status, count] = (await ok('inspect', '-f', '{{.State.Status}} {{.RestartCount}}', 'flap')).trim().split(' ')
      return status === 'restarting' && Number(count) >= 4
    })
    const r = await request(socket, 'DELETE', '/containers/flap')
    assert.equal(r.status, 409)
    assert.equal((r.json() as { message: string }).message, 'cannot remove container "/flap": container is restarting: stop the container before removing or force remove')
    await ok('rm', '-f', 'flap')
    assert.equal((await docker('inspect', 'flap')).status, 1)
  })

  await t.test('image and history sizes are what the layer holds unpacked, not its tar', async () => {
    const tar = makeTar([{ name: 'f', body: '12345678' }, { name: 'd/', type: 'dir' }, { name: 'd/a', body: '1234' }, { name: 'd/b', type: 'link', linkname: 'd/a' }, { name: 's', type: 'symlink', linkname: 'f' }])
    const imp = await request(socket, 'POST', '/images/create?fromSrc=-&repo=sized&tag=1', { raw: tar, headers: { 'Content-Type': 'application/x-tar' } })
    assert.equal(imp.status, 200, imp.text)
    // 8 + 4 (the hard link counted once) + 1 (the symlink's target): dockerd's 13
    assert.equal(await ok('image', 'inspect', '-f', '{{.Size}}', 'sized:1'), '13\n')
    assert.match(await ok('images', 'sized'), /sized\s+1\s+[0-9a-f]{12}\s+.*\s13B\n/)
    assert.match(await ok('history', 'sized:1'), /\s13B\s+Imported from -/)
    await ok('run', '--name', 'committed', 'busybox', 'sh', '-c', 'printf 1234567 > /x')
    await ok('commit', 'committed', 'committed:1')
    const base = Number(await ok('image', 'inspect', '-f', '{{.Size}}', 'busybox'))
    assert.equal(Number(await ok('image', 'inspect', '-f', '{{.Size}}', 'committed:1')), base + 7)
    assert.match((await ok('history', '--format', '{{.Size}}', 'committed:1')).split('\n')[0] as string, /^7B$/)
    await ok('rm', 'committed')
  })
})
