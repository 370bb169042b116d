// Issue 21.2: the data root hands a host user nothing. A real unprivileged host user (useradd) tries what the review
// did: run a setuid-root binary a container made (through the container's diff/ and mounted rootfs/, and through the
// layer of an image committed from it) and read the containers' environments, logs, volumes, blobs and monitor state.
// Then the data root is given the modes of the earlier layout (0711 root, 0755 directories, 0644 specs, logs and
// blobs), where the same user gets euid 0, and a restart repairs it. Containers keep what they had: setuid binaries
// work inside them, a non-root container user still reads `/` and its volumes.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, copyFileSync } from 'node:fs'
import { join } from 'node:path'
import { spawnSync, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { randomBytes } from 'node:crypto'
import { tmpDir, request, importBusybox, createContainer, containerSkipReason, uniqueNetworkOptions, daemonNetworkArgs, cleanupDaemon, startDaemonProcess, ROOT } from '../helpers/engine.js'
import { hostUserSkipReason, makeHostUser, type HostUser } from '../helpers/host-user.js'
import { demuxAll } from '../../lib/stream/stdcopy.js'

function ccSkipReason (): string | null {
  return spawnSync('cc', ['--version'], { stdio: 'ignore' }).error !== undefined ? 'cc is not installed (apt-get install gcc libc6-dev)' : null
}

const skip = containerSkipReason() ?? hostUserSkipReason() ?? ccSkipReason()

interface Scene {
  secret: string
  /** exited: made /tmp/p setuid root */
  maker: string
  /** running, with the secret in its environment, its log and a volume */
  runner: string
  /** the image committed from the maker: its layer holds /tmp/p */
  image: string
}

async function runToExit (sock: string, body: Record<string, unknown>): Promise<{ id: string, code: number, stdout: string }> {
  const id = await createContainer(sock, body)
  assert.equal((await request(sock, 'POST', `/containers/${id}/start`)).status, 204)
  const code = ((await request(sock, 'POST', `/containers/${id}/wait`)).json() as { StatusCode: number }).StatusCode
  const stdout = demuxAll((await request(sock, 'GET', `/containers/${id}/logs?stdout=1&stderr=1`)).body).stdout.toString()
  return { id, code, stdout }
}

async function execAs (sock: string, id: string, user: string, cmd: string[]): Promise<{ code: number, output: string }> {
  const r = await request(sock, 'POST', `/containers/${id}/exec`, { body: { Cmd: cmd, User: user, AttachStdout: true, AttachStderr: true } })
  assert.equal(r.status, 201, r.text)
  const execId = (r.json() as { Id: string }).Id
  const out = await request(sock, 'POST', `/exec/${execId}/start`, { body: { Detach: false, Tty: false } })
  const d = demuxAll(out.body)
  const code = ((await request(sock, 'GET', `/exec/${execId}/json`)).json() as { ExitCode: number }).ExitCode
  return { code, output: d.stdout.toString() + d.stderr.toString() }
}

/** What the review's container did, plus a running container and a volume holding a secret. */
async function makeScene (sock: string, probeDir: string): Promise<Scene> {
  const secret = `hunter2-${randomBytes(6).toString('hex')}`
  await importBusybox(sock)
  const made = await runToExit(sock, { Image: 'busybox', Env: [`SECRET=${secret}`], HostConfig: { Binds: [`${probeDir}:/probe:ro`] }, Cmd: ['sh', '-c', 'cp /probe/probe /tmp/p && chmod 4755 /tmp/p && /tmp/p'] })
  assert.equal(made.code, 0, made.stdout)
  assert.match(made.stdout, /euid=0/)
  const runner = await createContainer(sock, {
    Image: 'busybox',
    Env: [`PASSWORD=${secret}`],
    HostConfig: { Binds: [`${probeDir}:/probe:ro`, 'secvol:/data'] },
    Cmd: ['sh', '-c', `cp /probe/probe /tmp/p && chmod 4755 /tmp/p && echo ${secret} > /data/note && chmod 644 /data/note && echo log-${secret} && sleep 600`]
  })
  assert.equal((await request(sock, 'POST', `/containers/${runner}/start`)).status, 204)
  for (let i = 0; i < 200; i++) {
    const logs = demuxAll((await request(sock, 'GET', `/containers/${runner}/logs?stdout=1`)).body).stdout.toString()
    if (logs.includes(`log-${secret}`)) break
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  const c = await request(sock, 'POST', `/commit?container=${made.id}&repo=suidimg&tag=latest`)
  assert.equal(c.status, 201, c.text)
  // a container of the image has its layer unpacked under layers/
  await createContainer(sock, { Image: 'suidimg', Cmd: ['true'] })
  return { secret, maker: made.id, runner, image: (c.json() as { Id: string }).Id }
}

/** Every way in the review tried, as the host user; returns what got through. */
async function attack (user: HostUser, dataRoot: string, execRoot: string, s: Scene): Promise<string[]> {
  const got: string[] = []
  const setuid = [
    join(dataRoot, 'containers', s.maker, 'diff/tmp/p'),
    join(dataRoot, 'containers', s.runner, 'diff/tmp/p'),
    join(dataRoot, 'containers', s.runner, 'rootfs/tmp/p'),
    ...readdirSync(join(dataRoot, 'layers')).map((l) => join(dataRoot, 'layers', l, 'diff/tmp/p')).filter((p) => existsSync(p))
  ]
  assert.ok(setuid.length >= 4, `the committed layer holds /tmp/p: ${setuid.join(' ')}`)
  for (const p of setuid) {
    const r = await user.run(p, [])
    if (/euid=0/.test(r.stdout)) got.push(`ran ${p} as euid 0 (${r.stdout.trim()})`)
  }
  const blobs = join(dataRoot, 'content/blobs/sha256')
  const readable = [
    join(dataRoot, 'containers', s.maker, 'config.json'),
    join(dataRoot, 'containers', s.runner, 'config.json'),
    join(dataRoot, 'containers', s.runner, 'container.json'),
    join(dataRoot, 'containers', s.runner, 'container.log'),
    join(dataRoot, 'volumes/secvol/_data/note'),
    ...readdirSync(blobs).map((b) => join(blobs, b)).filter((p) => readFileSync(p).includes(s.secret)),
    ...readdirSync(join(dataRoot, 'image/meta')).map((m) => join(dataRoot, 'image/meta', m))
  ]
  assert.ok(readable.length >= 8, 'the committed config blob holds the secret')
  for (const p of readable) {
    const r = await user.run('cat', [p])
    if (r.status === 0) got.push(`read ${p}${r.stdout.includes(s.secret) ? ' (with the secret)' : ''}`)
  }
  for (const d of [dataRoot, join(dataRoot, 'containers'), join(execRoot, s.runner.slice(0, 16))]) {
    const r = await user.run('ls', [d])
    if (r.status === 0) got.push(`listed ${d}`)
  }
  return got
}

function mode (p: string): string { return (statSync(p).mode & 0o7777).toString(8) }

/** The modes the data root and exec root must have (the README's table). */
function assertModes (dataRoot: string, execRoot: string, s: Scene): void {
  const c = join(dataRoot, 'containers', s.runner)
  const layer = readdirSync(join(dataRoot, 'layers')).find((l) => existsSync(join(dataRoot, 'layers', l, 'diff/tmp/p'))) as string
  const blob = readdirSync(join(dataRoot, 'content/blobs/sha256'))[0] as string
  const want: Array<[string, string]> = [
    [dataRoot, '700'], [join(dataRoot, 'berth.lock'), '600'],
    [join(dataRoot, 'containers'), '700'], [c, '700'], [join(c, 'config.json'), '600'], [join(c, 'container.json'), '600'],
    [join(c, 'container.log'), '640'], [join(c, 'hosts'), '644'], [join(c, 'resolv.conf'), '644'], [join(c, 'hostname'), '644'],
    [join(c, 'work'), '700'], [join(c, 'diff'), '755'],
    [join(dataRoot, 'layers'), '700'], [join(dataRoot, 'layers', layer), '700'], [join(dataRoot, 'layers', layer, 'meta.json'), '600'], [join(dataRoot, 'layers', layer, 'diff'), '755'],
    [join(dataRoot, 'content'), '700'], [join(dataRoot, 'content/blobs/sha256'), '700'], [join(dataRoot, 'content/blobs/sha256', blob), '600'],
    [join(dataRoot, 'image'), '700'], [join(dataRoot, 'image/meta'), '700'], [join(dataRoot, 'image/repositories.json'), '600'],
    [join(dataRoot, 'network'), '700'], [join(dataRoot, 'network/sandboxes'), '700'], [join(dataRoot, 'network/networks'), '700'],
    [join(dataRoot, 'volumes'), '700'], [join(dataRoot, 'volumes/secvol'), '700'], [join(dataRoot, 'volumes/secvol/volume.json'), '600'], [join(dataRoot, 'volumes/secvol/_data'), '755'],
    [execRoot, '700'], [join(execRoot, 'berth.lock'), '600'], [join(execRoot, s.runner.slice(0, 16)), '700'], [join(execRoot, s.runner.slice(0, 16), 'shim.pid'), '600']
  ]
  assert.deepEqual(want.map(([p]) => `${p.slice(dataRoot.length)} ${mode(p)}`), want.map(([p, m]) => `${p.slice(dataRoot.length)} ${m}`))
}

/** The modes the earlier layout gave (what a data root from before this fix has). */
function earlierModes (dataRoot: string, execRoot: string): void {
  const dirs = (p: string): string[] => readdirSync(p).map((n) => join(p, n))
  chmodSync(dataRoot, 0o711)
  rmSync(join(dataRoot, '.modes'), { force: true })
  for (const p of ['containers', 'layers', 'content', 'content/blobs', 'content/blobs/sha256', 'content/ingest', 'image', 'image/meta', 'network', 'network/networks', 'network/sandboxes']) chmodSync(join(dataRoot, p), 0o755)
  chmodSync(join(dataRoot, 'volumes'), 0o701)
  for (const c of dirs(join(dataRoot, 'containers'))) {
    chmodSync(c, 0o755)
    for (const f of ['config.json', 'container.log', 'work']) if (existsSync(join(c, f))) chmodSync(join(c, f), statSync(join(c, f)).isDirectory() ? 0o755 : 0o644)
  }
  for (const l of dirs(join(dataRoot, 'layers'))) chmodSync(l, 0o755)
  for (const b of dirs(join(dataRoot, 'content/blobs/sha256'))) chmodSync(b, 0o644)
  for (const v of dirs(join(dataRoot, 'volumes'))) chmodSync(v, 0o755)
  for (const d of dirs(execRoot)) {
    if (!statSync(d).isDirectory() || ['runtime', 'netns'].some((n) => d.endsWith('/' + n))) continue
    chmodSync(d, 0o755)
    for (const f of dirs(d)) if (statSync(f).isFile()) chmodSync(f, 0o644)
  }
}

test('the data root hands a host user nothing (21.2)', { skip: skip ?? false }, async (t) => {
  const user = makeHostUser(t)
  const net = uniqueNetworkOptions()
  const dir = tmpDir()
  // where a data root lives (/var/lib): every user may traverse the parent
  chmodSync(dir, 0o755)
  const dataRoot = join(dir, 'data')
  const execRoot = join(dir, 'run')
  const sock = join(dir, 'b.sock')
  let daemon: ChildProcess | undefined
  t.after(async () => { await cleanupDaemon(daemon, dir, net) })
  const probeDir = join(dir, 'probe')
  mkdirSync(probeDir, { mode: 0o755 })
  const cc = spawnSync('cc', ['-static', '-O2', '-o', join(probeDir, 'probe'), join(ROOT, 'spec/security/fixtures/suid-probe.c')], { encoding: 'utf8' })
  assert.equal(cc.status, 0, cc.stderr)
  // the probe works as a setuid file where the user can reach it (the filesystem honours setuid)
  const control = join(dir, 'control')
  mkdirSync(control, { mode: 0o755 })
  copyFileSync(join(probeDir, 'probe'), join(control, 'p'))
  chmodSync(join(control, 'p'), 0o4755)
  const honoursSetuid = /euid=0/.test((await user.run(join(control, 'p'), [])).stdout)
  if (!honoursSetuid) t.diagnostic(`${dir}'s filesystem ignores setuid: only the reads are attacked`)

  daemon = await startDaemonProcess(dir, daemonNetworkArgs(net))
  const s = await makeScene(sock, probeDir)

  await t.test('the host user runs no container setuid file and reads no container state', async () => {
    assert.deepEqual(await attack(user, dataRoot, execRoot, s), [])
    assertModes(dataRoot, execRoot, s)
  })

  await t.test('containers keep setuid files, their root and their volumes for a non-root user', async () => {
    const inImage = await runToExit(sock, { Image: 'suidimg', User: '1000:1000', Cmd: ['sh', '-c', 'ls / >/dev/null && /tmp/p'] })
    assert.equal(inImage.code, 0, inImage.stdout)
    assert.match(inImage.stdout, /^euid=0 /)
    const vol = await runToExit(sock, { Image: 'busybox', User: '1000:1000', HostConfig: { Binds: ['secvol:/data'] }, Cmd: ['sh', '-c', 'ls /data && cat /data/note'] })
    assert.equal(vol.code, 0, vol.stdout)
    assert.match(vol.stdout, new RegExp(s.secret))
    const ls = await execAs(sock, s.runner, '1000', ['ls', '/tmp'])
    assert.equal(ls.code, 0, ls.output)
  })

  await t.test('a data root with the earlier modes is repaired at start', async () => {
    daemon?.kill('SIGTERM')
    await once(daemon as ChildProcess, 'exit')
    earlierModes(dataRoot, execRoot)
    // the finding, on the earlier layout: the host user is root and reads the secrets
    const before = await attack(user, dataRoot, execRoot, s)
    if (honoursSetuid) assert.ok(before.some((g) => g.includes('as euid 0')), before.join('\n'))
    assert.ok(before.some((g) => g.includes('config.json (with the secret)')), before.join('\n'))

    daemon = await startDaemonProcess(dir, daemonNetworkArgs(net))
    assert.deepEqual(await attack(user, dataRoot, execRoot, s), [])
    assertModes(dataRoot, execRoot, s)
    assert.equal(readFileSync(join(dataRoot, '.modes'), 'utf8'), '1\n')
    // the running container was left alone: still running, its root still open to its non-root user
    const info = (await request(sock, 'GET', `/containers/${s.runner}/json`)).json() as { State: { Running: boolean } }
    assert.equal(info.State.Running, true)
    const ls = await execAs(sock, s.runner, '1000', ['sh', '-c', 'ls / >/dev/null && cat /data/note'])
    assert.equal(ls.code, 0, ls.output)
  })

  await t.test('a root chmodded by hand after the repair is put back at the next start', async () => {
    daemon?.kill('SIGTERM')
    await once(daemon as ChildProcess, 'exit')
    chmodSync(dataRoot, 0o755)
    chmodSync(join(dataRoot, 'containers'), 0o755)
    chmodSync(execRoot, 0o755)
    daemon = await startDaemonProcess(dir, daemonNetworkArgs(net))
    assert.equal(mode(dataRoot), '700')
    assert.equal(mode(join(dataRoot, 'containers')), '700')
    assert.equal(mode(execRoot), '700')
    assert.equal((await request(sock, 'DELETE', `/containers/${s.runner}?force=1`)).status, 204)
  })
})
