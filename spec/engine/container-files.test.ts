// Files in and out of containers (archive HEAD/GET/PUT, export), their changes, top and stats: through the real docker
// CLI (cp, export, diff, top, stats) and raw HTTP where the bytes matter (the stat header, hostile archives).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { mkdirSync, rmSync, writeFileSync, readFileSync, readlinkSync, statSync, chmodSync, symlinkSync, existsSync } from 'node:fs'
import { join } from 'node:path'
import { createHash } from 'node:crypto'
import http from 'node:http'
import {
  startEngine, containerSkipReason, hasDockerCli, dockerCli, importBusybox, createContainer, request, tmpDir
} from '../helpers/engine.js'
import { tarOf, listTar } from '../helpers/tar.js'
import { goFileMode, containerAbsPath } from '../../lib/containers/container-files.js'
import { parsePsOutput } from '../../lib/containers/container-stats.js'
import { rfc3339Nano } from '../../lib/util/time.js'
import { demuxAll } from '../../lib/stream/stdcopy.js'
import { layerTar, containerChanges } from '../../lib/image/diff.js'

// ---- pure parts (run everywhere) -----------------------------------------------------------------------------------

test('Go FileMode bits for the stat header', () => {
  assert.equal(goFileMode(0o040755), 2147484141)
  assert.equal(goFileMode(0o120777), 2 ** 27 + 0o777)
  assert.equal(goFileMode(0o100644), 0o644)
  assert.equal(goFileMode(0o104755), 2 ** 23 + 0o755)
  assert.equal(goFileMode(0o041777), 2 ** 31 + 2 ** 20 + 0o777)
  assert.equal(goFileMode(0o020666), 2 ** 26 + 2 ** 21 + 0o666)
  assert.equal(goFileMode(0o010644), 2 ** 25 + 0o644)
  assert.equal(rfc3339Nano(1_700_000_000_120_000_000n), '2023-11-14T22:13:20.12Z')
  assert.equal(rfc3339Nano(1_700_000_000_000_000_000n), '2023-11-14T22:13:20Z')
})

test('archive paths keep a trailing separator or dot, as dockerd does', () => {
  assert.equal(containerAbsPath('etc'), '/etc')
  assert.equal(containerAbsPath('/etc/'), '/etc/')
  assert.equal(containerAbsPath('/etc/.'), '/etc/.')
  assert.equal(containerAbsPath('/'), '/')
  assert.equal(containerAbsPath('../../etc/passwd'), '/etc/passwd')
})

test('ps output is filtered to the container PIDs and overhanging fields are merged', () => {
  const out = 'UID PID PPID CMD\nroot 1 0 init\nroot 42 1 sleep 300 --x\nroot 43 42 sh -c true\n'
  assert.deepEqual(parsePsOutput(out, [42, 43]), {
    Titles: ['UID', 'PID', 'PPID', 'CMD'],
    Processes: [['root', '42', '1', 'sleep 300 --x'], ['root', '43', '42', 'sh -c true']]
  })
})

// ---- against a real engine -----------------------------------------------------------------------------------------

const skip = containerSkipReason()
const cliSkip = skip ?? (hasDockerCli() ? null : 'the docker CLI is not installed')



/** GET with the response streamed (for stats). */
function openStream (socket: string, path: string): Promise<http.IncomingMessage> {
  return new Promise((resolve, reject) => {
    const req = http.request({ socketPath: socket, path, method: 'GET' }, resolve)
    req.on('error', reject)
    req.end()
  })
}

function decodeStat (header: string | string[] | undefined): Record<string, unknown> {
  assert.equal(typeof header, 'string', 'X-Docker-Container-Path-Stat is present')
  assert.match(header as string, /^[A-Za-z0-9+/]+={0,2}$/, 'standard base64 alphabet')
  return JSON.parse(Buffer.from(header as string, 'base64').toString('utf8')) as Record<string, unknown>
}

test('container files: archive, export, changes, top, stats', { skip: skip ?? false }, async (t) => {
  const { socket, engine } = await startEngine(t)
  await importBusybox(socket)
  const run = await createContainer(socket, { Image: 'busybox', Cmd: ['sleep', '300'] }, 'files')
  assert.equal((await request(socket, 'POST', `/containers/${run}/start`)).status, 204)
  const scratch = tmpDir('berth-cf-')
  t.after(() => { rmSync(scratch, { recursive: true, force: true }) })
  const canary = join(scratch, 'canary')
  writeFileSync(canary, 'canary\n')
  const docker = async (...args: string[]): ReturnType<typeof dockerCli> => await dockerCli(socket, args)
  const readIn = async (id: string, path: string): Promise<string> => {
    const r = await request(socket, 'GET', `/containers/${id}/archive?path=${encodeURIComponent(path)}`)
    assert.equal(r.status, 200, r.text)
    return (await listTar(r.body))[0]?.body.toString() ?? ''
  }
  // runs a shell command in a running container (its output is not needed: reads go through the archive)
  const exec = async (id: string, cmd: string): Promise<string> => {
    const c = await request(socket, 'POST', `/containers/${id}/exec`, { body: { Cmd: ['sh', '-c', cmd], AttachStdout: true, AttachStderr: true, Tty: true } })
    assert.equal(c.status, 201, c.text)
    const r = await request(socket, 'POST', `/exec/${(c.json() as { Id: string }).Id}/start`, { body: { Detach: false, Tty: true } })
    return r.text
  }

  await t.test('HEAD archive: the stat header, byte for byte', async () => {
    const dir = await request(socket, 'HEAD', '/v1.50/containers/files/archive?path=/etc')
    assert.equal(dir.status, 200)
    assert.equal(dir.body.length, 0)
    const st = decodeStat(dir.headers['x-docker-container-path-stat'])
    assert.deepEqual(Object.keys(st), ['name', 'size', 'mode', 'mtime', 'linkTarget'])
    assert.equal(st.name, 'etc')
    assert.equal(st.mode, 2 ** 31 + 0o755)
    assert.match(st.mtime as string, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,9})?Z$/)
    assert.equal(st.linkTarget, '')
    const link = decodeStat((await request(socket, 'HEAD', '/containers/files/archive?path=/bin/sh')).headers['x-docker-container-path-stat'])
    assert.equal(link.name, 'sh')
    assert.equal(link.mode, 2 ** 27 + 0o777)
    assert.equal(link.linkTarget, '/bin/busybox')
    const file = decodeStat((await request(socket, 'HEAD', `/containers/${run.slice(0, 12)}/archive?path=etc/passwd`)).headers['x-docker-container-path-stat'])
    assert.equal(file.mode, 0o644)
    assert.equal(file.size, statSync(join(engine.containers.get(run).rootfs.merged, 'etc', 'passwd')).size)
  })

  await t.test('archive errors: missing file 404, missing path 400, unknown container 404', async () => {
    const missing = await request(socket, 'GET', '/containers/files/archive?path=/nope/x')
    assert.equal(missing.status, 404)
    assert.equal(missing.headers['content-type'], 'application/json')
    assert.deepEqual(missing.json(), { message: 'Could not find the file /nope/x in container files' })
    const head = await request(socket, 'HEAD', '/containers/files/archive?path=/nope')
    assert.equal(head.status, 404)
    assert.equal((await request(socket, 'HEAD', '/containers/files/archive?path=/etc/passwd/')).status, 404)
    assert.equal((await request(socket, 'GET', '/containers/files/archive')).status, 400)
    assert.equal((await request(socket, 'PUT', '/containers/files/archive', { raw: Buffer.alloc(0) })).status, 400)
    assert.equal((await request(socket, 'GET', '/containers/nosuch/archive?path=/')).status, 404)
    const notDir = await request(socket, 'PUT', '/containers/files/archive?path=/etc/passwd', { raw: await tarOf([{ name: 'x', body: 'x' }]) })
    assert.equal(notDir.status, 400)
    assert.deepEqual(notDir.json(), { message: 'extraction point is not a directory' })
  })

  await t.test('GET archive: the base name is the top entry', async () => {
    const r = await request(socket, 'GET', '/containers/files/archive?path=/etc')
    assert.equal(r.status, 200)
    assert.equal(r.headers['content-type'], 'application/x-tar')
    assert.equal(decodeStat(r.headers['x-docker-container-path-stat']).name, 'etc')
    const entries = await listTar(r.body)
    assert.equal(entries[0]?.name, 'etc/')
    assert.equal(entries[0]?.type, 'directory')
    const passwd = entries.find((e) => e.name === 'etc/passwd')
    assert.ok(passwd !== undefined)
    assert.match(passwd.body.toString(), /^root:x:0:0:/)
    const contents = await listTar((await request(socket, 'GET', '/containers/files/archive?path=/etc/.')).body)
    assert.ok(contents.every((e) => e.name === './' || e.name.startsWith('./')), JSON.stringify(contents.map((e) => e.name)))
    const link = await listTar((await request(socket, 'GET', '/containers/files/archive?path=/bin/sh')).body)
    assert.deepEqual(link.map((e) => [e.name, e.type, e.linkname]), [['sh', 'symlink', '/bin/busybox']])
  })

  await t.test('docker cp into and out of a running container keeps modes, links and contents', { skip: cliSkip ?? false }, async () => {
    const src = join(scratch, 'tree')
    mkdirSync(join(src, 'sub'), { recursive: true })
    writeFileSync(join(src, 'a.txt'), 'alpha\n')
    writeFileSync(join(src, 'sub', 'b.txt'), 'beta\n')
    writeFileSync(join(src, 'suid'), '#!/bin/sh\n')
    chmodSync(join(src, 'suid'), 0o4755)
    symlinkSync('/bin/busybox', join(src, 'bb'))
    const into = await docker('cp', src, 'files:/root/')
    assert.equal(into.status, 0, into.stderr)
    const tree = new Map((await listTar((await request(socket, 'GET', '/containers/files/archive?path=/root/tree')).body)).map((e) => [e.name, e]))
    assert.equal(tree.get('tree/a.txt')?.body.toString(), 'alpha\n')
    assert.equal(tree.get('tree/sub/b.txt')?.body.toString(), 'beta\n')
    assert.equal(tree.get('tree/suid')?.mode, 0o4755)
    assert.equal(tree.get('tree/bb')?.linkname, '/bin/busybox')
    const out = join(scratch, 'out')
    const back = await docker('cp', 'files:/root/tree', out)
    assert.equal(back.status, 0, back.stderr)
    assert.equal(readFileSync(join(out, 'sub', 'b.txt'), 'utf8'), 'beta\n')
    assert.equal(statSync(join(out, 'suid')).mode & 0o7777, 0o4755)
    assert.equal(readlinkSync(join(out, 'bb')), '/bin/busybox')
    const single = await docker('cp', 'files:/etc/passwd', join(scratch, 'passwd.copy'))
    assert.equal(single.status, 0, single.stderr)
    assert.match(readFileSync(join(scratch, 'passwd.copy'), 'utf8'), /^root:x:0:0:/)
  })

  await t.test('paths resolve inside the container: its symlinks never reach the host', async () => {
    await exec(run, `ln -s / /tmp/rootlink; ln -s ${scratch} /tmp/hostpath; ln -s ../../../../../../${scratch.slice(1)} /tmp/rel`)
    // a stat through a link to "/" is the container's root
    const via = decodeStat((await request(socket, 'HEAD', '/containers/files/archive?path=/tmp/rootlink/etc/passwd')).headers['x-docker-container-path-stat'])
    assert.equal(via.name, 'passwd')
    assert.equal(via.size, statSync(join(engine.containers.get(run).rootfs.merged, 'etc', 'passwd')).size)
    const hostLink = decodeStat((await request(socket, 'HEAD', '/containers/files/archive?path=/tmp/hostpath')).headers['x-docker-container-path-stat'])
    assert.equal(hostLink.linkTarget, scratch)
    // the host directory of the same name does not exist in the container
    assert.equal((await request(socket, 'GET', '/containers/files/archive?path=/tmp/hostpath/canary')).status, 404)
    assert.equal((await request(socket, 'GET', '/containers/files/archive?path=/tmp/rel/canary')).status, 404)
    // writes through the container's links land in the container
    const put = await request(socket, 'PUT', '/containers/files/archive?path=/tmp/rootlink/tmp', { raw: await tarOf([{ name: 'landed', body: 'in the container\n' }]) })
    assert.equal(put.status, 200, put.text)
    assert.equal(put.body.length, 0)
    assert.equal(await readIn(run, '/tmp/landed'), 'in the container\n')
    const hostish = await request(socket, 'PUT', '/containers/files/archive?path=/tmp/hostpath', { raw: await tarOf([{ name: 'canary', body: 'pwned\n' }]) })
    assert.equal(hostish.status, 404, hostish.text)
    const overLink = await request(socket, 'PUT', '/containers/files/archive?path=/tmp', { raw: await tarOf([{ name: 'hostpath/canary', body: 'pwned\n' }]) })
    assert.ok(overLink.status === 200 || overLink.status === 404, overLink.text)
    assert.equal(readFileSync(canary, 'utf8'), 'canary\n')
  })

  await t.test('hostile archives are refused with 400 and write nothing outside the rootfs', async () => {
    const up = '../'.repeat(12) + scratch.slice(1)
    const cases: Array<[string, Buffer, RegExp]> = [
      ['.. in a name', await tarOf([{ name: `${up}/canary`, body: 'pwned\n' }]), /path contains '\.\.'/],
      ['absolute symlink, then an entry through it', await tarOf([{ name: 'abs', type: 'symlink', linkname: scratch }, { name: 'abs/canary', body: 'pwned\n' }]), /goes through the symlink "abs"/],
      ['relative symlink out, then an entry through it', await tarOf([{ name: 'rel2', type: 'symlink', linkname: up }, { name: 'rel2/canary', body: 'pwned\n' }]), /goes through the symlink "rel2"/],
      ['symlinked directory, then a nested entry', await tarOf([{ name: 'd', type: 'directory' }, { name: 'd/l', type: 'symlink', linkname: '/' }, { name: 'd/l' + scratch + '/canary', body: 'pwned\n' }]), /goes through the symlink "d\/l"/],
      ['hard link with ..', await tarOf([{ name: 'h', type: 'link', linkname: `${up}/canary` }]), /path contains '\.\.'/],
      ['not a tar at all', Buffer.from('this is not a tar archive, just text that is long enough to fill a header block. '.repeat(10)), /invalid tar archive/],
      ['a broken gzip stream', Buffer.concat([Buffer.from([0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3]), Buffer.alloc(600, 0xab)]), /invalid tar archive/]
    ]
    for (const [what, body, message] of cases) {
      const r = await request(socket, 'PUT', '/containers/files/archive?path=/tmp', { raw: body })
      assert.equal(r.status, 400, `${what}: ${r.text}`)
      assert.match((r.json() as { message: string }).message, message, what)
    }
    assert.equal(readFileSync(canary, 'utf8'), 'canary\n')
    assert.equal(existsSync(join(scratch, 'pwned')), false)
    assert.equal((await request(socket, 'GET', '/_ping')).status, 200)
  })

  await t.test('noOverwriteDirNonDir refuses to replace a directory with a file', async () => {
    const r = await request(socket, 'PUT', '/containers/files/archive?path=/&noOverwriteDirNonDir=true', { raw: await tarOf([{ name: 'tmp', body: 'x' }]) })
    assert.equal(r.status, 400)
    assert.match((r.json() as { message: string }).message, /cannot overwrite directory "\/tmp" with non-directory "tmp"/)
    const gz = await request(socket, 'PUT', '/containers/files/archive?path=/root&copyUIDGID=1', { raw: (await import('node:zlib')).gzipSync(await tarOf([{ name: 'zipped', body: 'gz\n' }])) })
    assert.equal(gz.status, 200, gz.text)
    assert.equal(await readIn(run, '/root/zipped'), 'gz\n')
  })

  await t.test('copyUIDGID gives files to the container user; without it the archive owner stays', async () => {
    const id = await createContainer(socket, { Image: 'busybox', Cmd: ['true'], User: 'daemon' })
    const body = await tarOf([{ name: 'owned', body: 'x', uid: 1234 }])
    assert.equal((await request(socket, 'PUT', `/containers/${id}/archive?path=/tmp&copyUIDGID=true`, { raw: body })).status, 200)
    const owned = (await listTar((await request(socket, 'GET', `/containers/${id}/archive?path=/tmp/owned`)).body))[0]
    assert.deepEqual([owned?.uid, owned?.gid], [1, 1])
    assert.equal((await request(socket, 'PUT', `/containers/${id}/archive?path=/tmp`, { raw: await tarOf([{ name: 'kept', body: 'x', uid: 1234 }]) })).status, 200)
    const kept = (await listTar((await request(socket, 'GET', `/containers/${id}/archive?path=/tmp/kept`)).body))[0]
    assert.deepEqual([kept?.uid, kept?.gid], [1234, 1234])
    const nouser = await createContainer(socket, { Image: 'busybox', Cmd: ['true'], User: 'nosuchuser' })
    const bad = await request(socket, 'PUT', `/containers/${nouser}/archive?path=/tmp&copyUIDGID=1`, { raw: body })
    assert.equal(bad.status, 400)
    assert.match((bad.json() as { message: string }).message, /failed to look up user "nosuchuser"/)
    await request(socket, 'DELETE', `/containers/${id}`)
    await request(socket, 'DELETE', `/containers/${nouser}`)
  })

  await t.test("a user added to the container's own /etc/passwd is found at every start, not the image's files", async () => {
    const id = await createContainer(socket, { Image: 'busybox', Cmd: ['id', '-u'], User: 'added' })
    const before = await request(socket, 'POST', `/containers/${id}/start`)
    assert.equal(before.status, 400, before.text)
    assert.match((before.json() as { message: string }).message, /unable to find user added/)
    const passwd = 'root:x:0:0:root:/root:/bin/sh\nadded:x:4321:4321::/tmp:/bin/sh\n'
    assert.equal((await request(socket, 'PUT', `/containers/${id}/archive?path=/etc`, { raw: await tarOf([{ name: 'passwd', body: passwd }]) })).status, 200)
    // twice: the second start finds the root filesystem unmounted by the monitor and the user in the writable layer
    for (let i = 1; i <= 2; i++) {
      assert.equal((await request(socket, 'POST', `/containers/${id}/start`)).status, 204)
      assert.deepEqual((await request(socket, 'POST', `/containers/${id}/wait`)).json(), { Error: null, StatusCode: 0 })
    }
    const logs = demuxAll((await request(socket, 'GET', `/containers/${id}/logs?stdout=1`)).body).stdout.toString()
    assert.equal(logs, '4321\n4321\n')
    await request(socket, 'DELETE', `/containers/${id}`)
  })

  await t.test('created and stopped containers: cp in before start, cp out after exit', { skip: cliSkip ?? false }, async () => {
    const id = await createContainer(socket, { Image: 'busybox', Cmd: ['sh', '-c', 'cat /greeting; echo bye > /tmp/after'] })
    writeFileSync(join(scratch, 'greeting'), 'hello before start\n')
    const cp = await docker('cp', join(scratch, 'greeting'), `${id}:/greeting`)
    assert.equal(cp.status, 0, cp.stderr)
    // a container that does not run keeps its root filesystem unmounted after each use, as dockerd's
    const mounted = (): boolean => readFileSync('/proc/mounts', 'utf8').includes(id)
    assert.ok(!mounted(), 'mounted after cp in')
    assert.equal((await request(socket, 'POST', `/containers/${id}/start`)).status, 204)
    const wait = await request(socket, 'POST', `/containers/${id}/wait`)
    assert.deepEqual(wait.json(), { Error: null, StatusCode: 0 })
    assert.match((await docker('logs', id)).stdout, /hello before start/)
    const out = await docker('cp', `${id}:/tmp/after`, '-')
    assert.equal(out.status, 0, out.stderr)
    const entries = await listTar(Buffer.from(out.stdout, 'latin1'))
    assert.equal(entries[0]?.body.toString(), 'bye\n')
    assert.ok(!mounted(), 'mounted after cp out')
    const diff = await docker('diff', id)
    assert.deepEqual(diff.stdout.trim().split('\n'), ['A /greeting', 'C /tmp', 'A /tmp/after'])
    assert.ok(!mounted(), 'mounted after diff')
    const exported = await request(socket, 'GET', `/containers/${id}/export`)
    assert.ok((await listTar(exported.body)).some((e) => e.name === 'tmp/after'))
    assert.ok(!mounted(), 'mounted after export')
    await request(socket, 'DELETE', `/containers/${id}`)
  })

  await t.test('docker export streams the whole root filesystem', { skip: cliSkip ?? false }, async () => {
    const file = join(scratch, 'export.tar')
    const r = await docker('export', '-o', file, 'files')
    assert.equal(r.status, 0, r.stderr)
    const entries = await listTar(readFileSync(file))
    const names = new Set(entries.map((e) => e.name))
    for (const n of ['bin/', 'bin/busybox', 'etc/passwd', 'tmp/landed', 'root/tree/a.txt']) assert.ok(names.has(n), n)
    const bb = entries.find((e) => e.name === 'bin/busybox')
    assert.equal(createHash('sha256').update(bb?.body ?? '').digest('hex'), createHash('sha256').update(readFileSync('/usr/bin/busybox')).digest('hex'))
    const raw = await request(socket, 'GET', '/containers/files/export')
    assert.equal(raw.headers['content-type'], 'application/x-tar')
    assert.equal(raw.headers['content-length'], undefined)
  })

  await t.test('changes: docker diff, null when nothing changed, whiteouts and opaque dirs in the layer tar', async () => {
    const fresh = await createContainer(socket, { Image: 'busybox', Cmd: ['true'] })
    const none = await request(socket, 'GET', `/containers/${fresh}/changes`)
    assert.equal(none.status, 200)
    assert.equal(none.text, 'null\n')
    await request(socket, 'DELETE', `/containers/${fresh}`)
    const id = await createContainer(socket, { Image: 'busybox', Cmd: ['sleep', '300'] })
    assert.equal((await request(socket, 'POST', `/containers/${id}/start`)).status, 204)
    await exec(id, 'echo more >> /etc/passwd; rm /etc/group; mkdir /newdir; touch /newdir/f; rm -rf /usr/sbin; mkdir /usr/sbin; echo x > /usr/sbin/only')
    const changes = await request(socket, 'GET', `/containers/${id}/changes`)
    assert.deepEqual(changes.json(), [
      { Path: '/etc', Kind: 0 },
      { Path: '/etc/group', Kind: 2 },
      { Path: '/etc/passwd', Kind: 0 },
      { Path: '/newdir', Kind: 1 },
      { Path: '/newdir/f', Kind: 1 },
      { Path: '/usr', Kind: 0 },
      { Path: '/usr/sbin', Kind: 0 },
      { Path: '/usr/sbin/only', Kind: 1 }
    ])
    if (cliSkip === null) {
      const d = await docker('diff', id)
      assert.equal(d.stdout, 'C /etc\nD /etc/group\nC /etc/passwd\nA /newdir\nA /newdir/f\nC /usr\nC /usr/sbin\nA /usr/sbin/only\n')
    }
    // the same walk makes commit's layer tar
    const c = engine.containers.get(id)
    const img = await engine.images.resolveImage(c.rec.imageId)
    const src = { upper: c.rootfs.upper, lowers: await engine.images.layerPaths(img), merged: c.rootfs.merged, mountPoints: ['/etc/hosts', '/etc/hostname', '/etc/resolv.conf'] }
    assert.equal((await containerChanges(src)).length, 8)
    const layer = await listTar(layerTar(src))
    const byName = new Map(layer.map((e) => [e.name, e]))
    assert.ok(byName.has('etc/.wh.group'), [...byName.keys()].join(' '))
    assert.equal(byName.get('etc/.wh.group')?.type, 'file')
    assert.match(byName.get('etc/passwd')?.body.toString() ?? '', /more\n$/)
    assert.ok(byName.has('usr/sbin/.wh..wh..opq'))
    assert.equal(byName.get('usr/sbin/only')?.body.toString(), 'x\n')
    assert.ok(!byName.has('etc/hosts'), 'runtime mount points stay out')
    await request(socket, 'DELETE', `/containers/${id}?force=1`)
  })

  await t.test('top: docker top, ps_args, 409 when not running', async () => {
    const r = await request(socket, 'GET', '/containers/files/top')
    assert.equal(r.status, 200)
    const top = r.json() as { Titles: string[], Processes: string[][] }
    assert.deepEqual(top.Titles, ['UID', 'PID', 'PPID', 'C', 'STIME', 'TTY', 'TIME', 'CMD'])
    assert.ok(top.Processes.some((p) => p[7] === 'sleep 300'), JSON.stringify(top))
    assert.ok(top.Processes.every((p) => p.length === 8 && p.every((v) => typeof v === 'string')))
    const aux = (await request(socket, 'GET', '/containers/files/top?ps_args=aux')).json() as { Titles: string[], Processes: string[][] }
    assert.equal(aux.Titles[1], 'PID')
    assert.equal(aux.Processes.length, top.Processes.length)
    if (cliSkip === null) {
      const cli = await docker('top', 'files')
      assert.equal(cli.status, 0, cli.stderr)
      assert.match(cli.stdout, /sleep 300/)
    }
    const stopped = await createContainer(socket, { Image: 'busybox', Cmd: ['true'] })
    const nr = await request(socket, 'GET', `/containers/${stopped}/top`)
    assert.equal(nr.status, 409)
    assert.deepEqual(nr.json(), { message: `container ${stopped} is not running` })
    await request(socket, 'DELETE', `/containers/${stopped}`)
  })

  await t.test('stats: one object, docker stats --no-stream, a stream that ends with the container', async () => {
    const one = await request(socket, 'GET', '/containers/files/stats?stream=0&one-shot=1')
    assert.equal(one.status, 200)
    const s = one.json() as { id: string, name: string, read: string, cpu_stats: { cpu_usage: { total_usage: number }, online_cpus: number, system_cpu_usage: number }, memory_stats: { usage: number, limit: number }, pids_stats: { current: number } }
    assert.equal(s.id, run)
    assert.equal(s.name, '/files')
    assert.ok(s.cpu_stats.cpu_usage.total_usage > 0)
    assert.ok(s.cpu_stats.system_cpu_usage > 0)
    assert.ok(s.memory_stats.usage > 0 && s.memory_stats.limit > 0)
    assert.equal(s.pids_stats.current, 1)
    if (cliSkip === null) {
      const cli = await docker('stats', '--no-stream', 'files')
      assert.equal(cli.status, 0, cli.stderr)
      assert.match(cli.stdout, /CONTAINER ID\s+NAME\s+CPU %[^\n]*\n[0-9a-f]{12}\s+files\s+\d+\.\d\d%/)
    }
    const id = await createContainer(socket, { Image: 'busybox', Cmd: ['sleep', '300'] })
    assert.equal((await request(socket, 'POST', `/containers/${id}/start`)).status, 204)
    const res = await openStream(socket, `/containers/${id}/stats`)
    assert.equal(res.headers['content-type'], 'application/json')
    let buf = ''
    let objects = 0
    let stopping: Promise<unknown> | undefined
    for await (const chunk of res as AsyncIterable<Buffer>) {
      buf += chunk.toString()
      const lines = buf.split('\n')
      buf = lines.pop() ?? ''
      for (const line of lines) {
        if (line === '') continue
        const o = JSON.parse(line) as { id: string, precpu_stats: { system_cpu_usage?: number } }
        assert.equal(o.id, id)
        objects++
        if (objects === 2) {
          assert.ok((o.precpu_stats.system_cpu_usage ?? 0) > 0, 'precpu_stats carries the previous sample')
          stopping = request(socket, 'POST', `/containers/${id}/stop?t=0`)
        }
      }
    }
    // the stream ended because the container stopped
    assert.ok(objects >= 2)
    assert.equal(((await stopping) as { status: number }).status, 204)
    const notRunning = (await request(socket, 'GET', `/containers/${id}/stats?stream=0`)).json() as { read: string, name: string }
    assert.equal(notRunning.read, '0001-01-01T00:00:00Z')
    await request(socket, 'DELETE', `/containers/${id}`)
  })
})
