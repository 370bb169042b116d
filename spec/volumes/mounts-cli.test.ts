// Every mount form with the real docker CLI, checked from inside the container: -v named/anonymous/bind with modes,
// image VOLUMEs, --mount volume/bind/tmpfs and their options, --volumes-from, copy-up (owners, modes, nocopy),
// inspect's Mounts, rm -v, and bad input answered with dockerd's errors.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, statSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { tmpdir } from 'node:os'
import { startEngine, containerSkipReason, hasDockerCli, dockerCli, busyboxTar, request } from '../helpers/engine.js'
import { dockerOk } from '../helpers/tools.js'

function hostMounted (path: string): boolean {
  return readFileSync('/proc/self/mountinfo', 'utf8').split('\n').some((l) => l.split(' ')[4] === path)
}

const skip = containerSkipReason() ?? (hasDockerCli() ? null : 'the docker CLI is not installed')

interface MountWire { Type: string, Name?: string, Source: string, Destination: string, Driver?: string, Mode: string, RW: boolean, Propagation: string }

test('mount forms with the docker CLI', { skip: skip ?? false }, async (t) => {
  const te = await startEngine(t)
  const { socket } = te
  const docker = async (...args: string[]): ReturnType<typeof dockerCli> => await dockerCli(socket, args)
  const ok = dockerOk(socket)
  const fails = async (want: string, ...args: string[]): Promise<void> => {
    const r = await docker(...args)
    assert.notEqual(r.status, 0, `docker ${args.join(' ')} should fail`)
    assert.ok(r.stderr.includes(want), `docker ${args.join(' ')}: ${r.stderr}`)
  }
  const mountsOf = async (name: string): Promise<MountWire[]> => JSON.parse(await ok('inspect', '-f', '{{json .Mounts}}', name)) as MountWire[]
  const volRoot = join(te.dataRoot, 'volumes')
  assert.equal((await docker('import', busyboxTar(), 'busybox:latest')).status, 0)
  // an image with owned content and a VOLUME
  await ok('run', '--name', 'mk', 'busybox', 'sh', '-c', 'mkdir -p /data/sub && echo hello > /data/f && chown -R 1000:1001 /data && chmod 0750 /data/sub && chmod 0604 /data/f && ln -s f /data/link')
  await ok('commit', '-c', 'VOLUME /data', 'mk', 'withdata:1')
  await ok('rm', 'mk')
  const hostDir = mkdtempSync(join(tmpdir(), 'berth-bind-'))
  t.after(() => { rmSync(hostDir, { recursive: true, force: true }) })

  await t.test('-v name:/path copies the image content up with owners and modes; nocopy does not; inspect Mounts', async () => {
    const out = await ok('run', '--name', 'c1', '-v', 'named1:/data', 'withdata:1', 'sh', '-c', 'stat -c "%n %u:%g %a" /data/f /data/sub; cat /data/f; readlink /data/link')
    assert.equal(out, '/data/f 1000:1001 604\n/data/sub 1000:1001 750\nhello\nf\n')
    const st = statSync(join(volRoot, 'named1', '_data', 'f'))
    assert.deepEqual([st.uid, st.gid, st.mode & 0o777], [1000, 1001, 0o604])
    const m = await mountsOf('c1')
    assert.deepEqual(m, [{ Type: 'volume', Name: 'named1', Source: join(volRoot, 'named1', '_data'), Destination: '/data', Driver: 'local', Mode: 'z', RW: true, Propagation: '' }])
    // a volume with content is not filled again
    await ok('run', '--rm', '-v', 'named1:/data', 'busybox', 'sh', '-c', 'rm /data/f')
    assert.equal(await ok('run', '--rm', '-v', 'named1:/data', 'withdata:1', 'ls', '/data'), 'link\nsub\n')
    assert.equal(await ok('run', '--rm', '-v', 'empty1:/data:nocopy', 'withdata:1', 'ls', '-A', '/data'), '')
    assert.equal(await ok('run', '--rm', '--mount', 'type=volume,src=empty2,dst=/data,volume-nocopy', 'withdata:1', 'ls', '-A', '/data'), '')
    assert.deepEqual(readdirSync(join(volRoot, 'named1')).sort(), ['_data', 'volume.json'])
  })

  await t.test('image VOLUME and -v /path give anonymous volumes (filled from the image); rm -v removes them, named ones stay', async () => {
    await ok('create', '--name', 'c2', '-v', '/anon', '-v', 'named2:/n', 'withdata:1', 'true')
    const m = await mountsOf('c2')
    const anon = m.filter((x) => x.Name !== 'named2')
    assert.equal(anon.length, 2)
    for (const a of anon) { assert.match(a.Name as string, /^[0-9a-f]{64}$/); assert.equal(a.Mode, '') }
    const data = anon.find((x) => x.Destination === '/data') as MountWire
    assert.equal(await ok('start', '-a', 'c2'), '')
    assert.ok(existsSync(join(data.Source, 'f')), 'the image VOLUME was filled')
    const labels = await ok('volume', 'inspect', '-f', '{{json .Labels}}', data.Name as string)
    assert.equal(labels.trim(), '{"com.docker.volume.anonymous":""}')
    await ok('rm', '-v', 'c2')
    for (const a of anon) assert.equal((await docker('volume', 'inspect', a.Name as string)).status, 1)
    await ok('volume', 'inspect', 'named2')
    // --rm removes anonymous volumes too
    const before = (await ok('volume', 'ls', '-q')).trim().split('\n').length
    await ok('run', '--rm', 'withdata:1', 'true')
    assert.equal((await ok('volume', 'ls', '-q')).trim().split('\n').length, before)
  })

  await t.test('binds: -v creates a missing source, --mount refuses it; ro; propagation; tmpfs with size and mode', async () => {
    const missing = join(hostDir, 'made', 'by-v')
    await ok('run', '--rm', '-v', `${missing}:/h`, 'busybox', 'sh', '-c', 'echo x > /h/y')
    assert.ok(existsSync(join(missing, 'y')))
    await fails(`invalid mount config for type "bind": bind source path does not exist: ${hostDir}/nope`, 'run', '--rm', '--mount', `type=bind,src=${hostDir}/nope,dst=/h`, 'busybox', 'true')
    const r = await docker('run', '--rm', '-v', `${hostDir}:/h:ro`, 'busybox', 'sh', '-c', 'touch /h/z')
    assert.notEqual(r.status, 0)
    assert.match(r.stderr + r.stdout, /Read-only file system/)
    const out = await ok('run', '--rm', '--mount', `type=bind,src=${hostDir},dst=/b,readonly,bind-propagation=rslave`, '--mount', 'type=tmpfs,dst=/t,tmpfs-size=1048576,tmpfs-mode=1770', 'busybox', 'sh', '-c', 'grep -E " /(b|t) " /proc/mounts | cut -d" " -f2,3,4; stat -c %a /t')
    const lines = out.trim().split('\n')
    assert.ok(lines.some((l) => l.startsWith('/b ') && l.includes('ro')), out)
    assert.ok(lines.some((l) => l.startsWith('/t tmpfs') && l.includes('size=1024k')), out)
    assert.equal(lines[lines.length - 1], '1770')
    await ok('create', '--name', 'c3', '--mount', `type=bind,src=${hostDir},dst=/b,readonly`, '--mount', 'type=tmpfs,dst=/t', '-v', `${hostDir}:/v`, 'busybox', 'true')
    assert.deepEqual((await mountsOf('c3')).sort((a, b) => (a.Destination < b.Destination ? -1 : 1)), [
      { Type: 'bind', Source: hostDir, Destination: '/b', Mode: '', RW: false, Propagation: 'rprivate' },
      { Type: 'tmpfs', Source: '', Destination: '/t', Mode: '', RW: true, Propagation: '' },
      { Type: 'bind', Source: hostDir, Destination: '/v', Mode: '', RW: true, Propagation: 'rprivate' }
    ].sort((a, b) => (a.Destination < b.Destination ? -1 : 1)))
    await ok('rm', 'c3')
  })

  await t.test('--volumes-from X and X:ro share the mounts', async () => {
    await ok('create', '--name', 'src1', '-v', 'shared1:/s', '-v', '/anon1', 'busybox', 'true')
    assert.equal(await ok('run', '--rm', '--volumes-from', 'src1', 'busybox', 'sh', '-c', 'echo v > /s/f && echo w > /anon1/g && cat /s/f'), 'v\n')
    const r = await docker('run', '--rm', '--volumes-from', 'src1:ro', 'busybox', 'sh', '-c', 'cat /anon1/g; touch /s/x')
    assert.notEqual(r.status, 0)
    assert.match(r.stdout, /^w\n/)
    assert.match(r.stderr + r.stdout, /Read-only file system/)
    // (the CLI answers any 404 of a create by pulling the image: the API itself is asked)
    const nf = await request(socket, 'POST', '/containers/create', { body: { Image: 'busybox', Cmd: ['true'], HostConfig: { VolumesFrom: ['nope'] } } })
    assert.equal(nf.status, 404)
    assert.equal((nf.json() as { message: string }).message, 'No such container: nope')
    const del = await docker('volume', 'rm', 'shared1')
    assert.match(del.stderr, /volume is in use/)
    await ok('rm', '-v', 'src1')
    await ok('volume', 'rm', 'shared1')
  })

  await t.test('a volume with driver options is mounted at start and unmounted when its last container stops; mount/unmount events', async () => {
    const since = Math.floor(Date.now() / 1000) - 1
    await ok('volume', 'create', '-o', 'type=tmpfs', '-o', 'device=tmpfs', '-o', 'o=size=2m', 'tv1')
    const mp = join(volRoot, 'tv1', '_data')
    assert.equal(hostMounted(mp), false, 'not mounted at create')
    const c1 = (await ok('run', '-d', '--name', 'tm1', '-v', 'tv1:/tv', 'busybox', 'sh', '-c', 'echo kept > /tv/f; sleep 300')).trim()
    assert.equal(hostMounted(mp), true, 'mounted for the running container')
    let out = ''
    for (let i = 0; i < 50 && !out.includes('kept'); i++) out = await ok('run', '--rm', '-v', 'tv1:/tv:ro', 'busybox', 'sh', '-c', 'grep " /tv " /proc/mounts | cut -d" " -f3,4; cat /tv/f 2>/dev/null || true')
    assert.match(out, /^tmpfs ro,.*size=2048k.*\nkept\n$/)
    assert.equal(hostMounted(mp), true, 'a second container stopping leaves it mounted for the first')
    await ok('rm', '-f', 'tm1')
    assert.equal(hostMounted(mp), false, 'unmounted when the last container stopped')
    assert.equal(await ok('run', '--rm', '-v', 'tv1:/tv', 'busybox', 'ls', '-A', '/tv'), '', 'a new mount: the tmpfs is empty again, as with dockerd')
    assert.equal(hostMounted(mp), false)
    const ev = await request(socket, 'GET', `/events?since=${since}&until=${Math.floor(Date.now() / 1000) + 1}&filters=${encodeURIComponent(JSON.stringify({ type: ['volume'], volume: ['tv1'] }))}`)
    const events = ev.text.trim().split('\n').map((l) => JSON.parse(l) as { Action: string, Actor: { ID: string, Attributes: Record<string, string> } })
    assert.deepEqual(events.find((e) => e.Action === 'mount' && e.Actor.Attributes.container === c1)?.Actor, { ID: 'tv1', Attributes: { container: c1, destination: '/tv', driver: 'local', propagation: '', 'read/write': 'true' } })
    assert.deepEqual(events.find((e) => e.Action === 'unmount' && e.Actor.Attributes.container === c1)?.Actor, { ID: 'tv1', Attributes: { container: c1, driver: 'local' } })
    assert.equal(events.filter((e) => e.Action === 'mount').length, events.filter((e) => e.Action === 'unmount').length)
    assert.ok(events.some((e) => e.Action === 'mount' && e.Actor.Attributes['read/write'] === 'false'))
    await ok('volume', 'rm', 'tv1')
    assert.ok(!existsSync(join(volRoot, 'tv1')))
  })

  await t.test('--tmpfs on a -v path is refused (Duplicate mount point); over a --mount or an anonymous volume the tmpfs wins', async () => {
    await fails('Duplicate mount point: /a', 'run', '--rm', '--tmpfs', '/a', '-v', 'tclash1:/a', 'busybox', 'true')
    await fails('Duplicate mount point: /a', 'run', '--rm', '--tmpfs', '/a:size=1m', '-v', `${hostDir}:/a/`, 'busybox', 'true')
    assert.equal((await ok('volume', 'ls', '-q', '--filter', 'name=tclash1')).trim(), '', 'the refused create left no volume')
    const mountsAt = async (...args: string[]): Promise<string> => (await ok('run', '--rm', ...args, 'busybox', 'sh', '-c', 'grep " /a " /proc/mounts | cut -d" " -f3')).trim()
    assert.equal(await mountsAt('--tmpfs', '/a', '--mount', 'type=volume,src=tclash2,dst=/a'), 'tmpfs')
    assert.equal(await mountsAt('--tmpfs', '/a', '--mount', `type=bind,src=${hostDir},dst=/a`), 'tmpfs')
    assert.equal(await mountsAt('--tmpfs', '/a', '--mount', 'type=tmpfs,dst=/a'), 'tmpfs\ntmpfs')
    // dockerd compares --tmpfs paths as given: /a/ is no clash, both are mounted and the tmpfs goes on top
    assert.match(await mountsAt('--tmpfs', '/a/', '-v', 'tclash3:/a'), /^(?!tmpfs)\S+\ntmpfs$/)
    await ok('create', '--name', 'tc1', '--tmpfs', '/a', '--mount', 'type=volume,src=tclash2,dst=/a', '-v', '/a', 'busybox', 'true')
    assert.deepEqual((await mountsOf('tc1')).map((m) => [m.Type, m.Name, m.Destination]), [['volume', 'tclash2', '/a']])
    await ok('rm', 'tc1')
    const before = (await ok('volume', 'ls', '-q')).trim()
    await ok('run', '--rm', '--tmpfs', '/data', 'withdata:1', 'true')
    assert.equal((await ok('volume', 'ls', '-q')).trim(), before, 'no anonymous volume for the image VOLUME the tmpfs covers')
    await ok('volume', 'rm', 'tclash2', 'tclash3')
  })

  await t.test('the volume CLI (filters, inspect, system df -v); local driver bind options; --mount volume-opt and volume-label; -v :z/:Z', async () => {
    const bindSrc = join(hostDir, 'bv')
    mkdirSync(bindSrc)
    assert.equal(await ok('volume', 'create', '-o', 'type=none', '-o', 'o=bind', '-o', `device=${bindSrc}`, '--label', 'k=v', 'bv1'), 'bv1\n')
    assert.equal(await ok('run', '--rm', '-v', 'bv1:/b', 'busybox', 'sh', '-c', 'echo hi > /b/f; cat /b/f'), 'hi\n')
    assert.equal(readFileSync(join(bindSrc, 'f'), 'utf8'), 'hi\n', 'the bind option put the data in the device directory')
    assert.equal(hostMounted(join(volRoot, 'bv1', '_data')), false, 'unmounted when its container stopped')
    const bv = (JSON.parse(await ok('volume', 'inspect', 'bv1')) as Array<{ Options: unknown, Labels: unknown, Mountpoint: string }>)[0]
    assert.deepEqual([bv?.Options, bv?.Labels, bv?.Mountpoint], [{ type: 'none', o: 'bind', device: bindSrc }, { k: 'v' }, join(volRoot, 'bv1', '_data')])
    // --mount volume-opt creates the volume with driver options; volume-label labels it
    assert.equal(await ok('run', '--rm', '--mount', 'type=volume,src=ov1,dst=/o,volume-opt=type=tmpfs,volume-opt=device=tmpfs,volume-opt=o=size=1m,volume-label=a=b', 'busybox', 'sh', '-c', 'grep " /o " /proc/mounts | cut -d" " -f3'), 'tmpfs\n')
    const ov = (JSON.parse(await ok('volume', 'inspect', 'ov1')) as Array<{ Options: unknown, Labels: unknown }>)[0]
    assert.deepEqual([ov?.Options, ov?.Labels], [{ type: 'tmpfs', device: 'tmpfs', o: 'size=1m' }, { a: 'b' }])
    // -v modes z and Z are accepted (no SELinux relabel on this host) and shown as given
    await ok('run', '--name', 'zc', '-v', 'zv1:/z:Z', '-v', 'zv2:/y:ro,z', 'busybox', 'sh', '-c', 'printf ok > /z/f')
    assert.deepEqual((await mountsOf('zc')).map((m) => [m.Name, m.Mode, m.RW]).sort(), [['zv1', 'Z', true], ['zv2', 'ro,z', false]])
    const ls = async (...filters: string[]): Promise<string[]> => (await ok('volume', 'ls', '-q', ...filters.flatMap((f) => ['--filter', f]))).split('\n').filter((x) => x !== '').sort()
    assert.deepEqual(await ls('label=k=v'), ['bv1'])
    assert.deepEqual(await ls('label=a'), ['ov1'])
    assert.deepEqual(await ls('name=zv'), ['zv1', 'zv2'])
    assert.deepEqual(await ls('name=zv', 'dangling=false'), ['zv1', 'zv2'])
    assert.deepEqual(await ls('name=v1', 'driver=local'), ['bv1', 'ov1', 'zv1'])
    assert.equal(await ok('volume', 'ls', '--filter', 'name=bv1', '--format', '{{.Name}} {{.Driver}} {{.Labels}}'), 'bv1 local k=v\n')
    await ok('rm', 'zc')
    assert.deepEqual(await ls('name=zv', 'dangling=true'), ['zv1', 'zv2'])
    // system df -v: sizes and links; volumes with driver options are left out, as dockerd does
    const df = await ok('system', 'df', '-v')
    assert.match(df, /\nzv1\s+0\s+2B\n/)
    assert.doesNotMatch(df, /\n(bv1|ov1)\s/)
    await ok('volume', 'rm', 'bv1', 'ov1', 'zv1', 'zv2')
    assert.equal(readFileSync(join(bindSrc, 'f'), 'utf8'), 'hi\n', 'removing a bind-option volume leaves the device directory alone')
  })

  await t.test('bad input in dockerd wording', async () => {
    await fails(`invalid volume specification: 'v2:data': invalid mount config for type "volume": invalid mount path: 'data' mount path must be absolute`, 'run', '--rm', '-v', 'v2:data', 'busybox', 'true')
    await fails(`invalid volume specification: 'v2:/': invalid mount config for type "volume": invalid specification: destination can't be '/'`, 'run', '--rm', '-v', 'v2:/', 'busybox', 'true')
    await fails('Duplicate mount point: /a', 'run', '--rm', '-v', 'v2:/a', '-v', 'v3:/a', 'busybox', 'true')
    await fails('create bad/x: "bad/x" includes invalid characters for a local volume name', 'run', '--rm', '--mount', 'type=volume,src=bad/x,dst=/a', 'busybox', 'true')
    await fails('create x1: error looking up volume plugin nope: plugin "nope" not found', 'volume', 'create', '-d', 'nope', 'x1')
    await fails('create a: volume name is too short, names should be at least two alphanumeric characters', 'volume', 'create', 'a')
    await fails('create o1: invalid option: "bogus"', 'volume', 'create', '-o', 'bogus=1', 'o1')
    await fails('get nope1: no such volume', 'volume', 'inspect', 'nope1')
    await fails('invalid mode: bogus', 'run', '--rm', '-v', '/tmp:/a:bogus', 'busybox', 'true')
    const r = await request(socket, 'POST', '/containers/create', { body: { Image: 'busybox', Cmd: ['true'], HostConfig: { Mounts: [{ Type: 'volume', Target: '/a', VolumeOptions: { DriverConfig: { Name: 'nope' } } }] } } })
    assert.equal(r.status, 404)
    assert.match((r.json() as { message: string }).message, /^create [0-9a-f]{64}: error looking up volume plugin nope: plugin "nope" not found$/)
    // nothing was left behind by the refused creates
    assert.equal((await ok('volume', 'ls', '-q', '--filter', 'name=v2')).trim(), '')
  })
})
