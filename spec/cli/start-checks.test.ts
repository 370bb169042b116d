// The daemon's checks at start, before anything is touched: each refusal exits 1 with the real cause and leaves the
// host as it was (no data root, exec root or socket created; a file in the socket's place untouched). A pidfile
// naming a zombie or a process that is not a berth daemon is stale. A start that fails later removes what it made.
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { execFileSync, spawn, spawnSync } from 'node:child_process'
import { once } from 'node:events'
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import net from 'node:net'
import { join } from 'node:path'
import { livePidInFile } from '../../lib/cli/pidfile.js'
import { createEngine } from '../../lib/index.js'
import { cleanupDaemon, containerSkipReason, createContainer, daemonNetworkArgs, importBusybox, request, tmpDir, uniqueNetworkOptions } from '../helpers/engine.js'
import { MAIN, berth, pingable, startDaemon, startProc } from './helpers.js'

const skip = containerSkipReason()

/** `berth daemon` with its roots and socket in `dir`, run to its end. */
function daemonIn (dir: string, extra: string[], o: { sock?: string, dataRoot?: string, env?: NodeJS.ProcessEnv } = {}): ReturnType<typeof berth> {
  return berth(['daemon', '-H', `unix://${o.sock ?? join(dir, 'b.sock')}`, '--data-root', o.dataRoot ?? join(dir, 'data'), '--exec-root', join(dir, 'run'), '--config-file', join(dir, 'none.json'), ...extra],
    o.env !== undefined ? { env: o.env } : {})
}

/**
 * The command line of `berth daemon ARGS` in a private mount namespace of its own, after `setup` (shell commands run
 * there first: what they mount is seen by the daemon and its monitors only, and goes with them).
 */
function inMountNamespace (setup: string, args: string[]): [string, string[]] {
  return ['unshare', ['--mount', '--propagation', 'private', 'sh', '-c', `${setup} && exec "$@"`, 'sh', process.execPath, MAIN, 'daemon', ...args]]
}

const noUnshare = spawnSync('unshare', ['--version']).status === 0 ? null : 'unshare (util-linux) is not installed'

function untouched (dir: string): void {
  assert.ok(!existsSync(join(dir, 'data')), 'no data root created')
  assert.ok(!existsSync(join(dir, 'run')), 'no exec root created')
  assert.ok(!existsSync(join(dir, 'b.sock')), 'no socket created')
}

describe('start checks', { skip: skip ?? false }, () => {
  it('a runtime not in PATH: dockerd\'s "executable file not found in $PATH", nothing created', (t) => {
    const dir = tmpDir()
    t.after(() => { rmSync(dir, { recursive: true, force: true }) })
    writeFileSync(join(dir, 'none.json'), '{}')
    const r = daemonIn(dir, ['--runtime', 'no-such-runtime'])
    assert.equal(r.status, 1)
    assert.match(r.stderr, /exec: \\"no-such-runtime\\": executable file not found in \$PATH/)
    untouched(dir)
  })

  it('a runtime path that does not exist or does not run', (t) => {
    const dir = tmpDir()
    t.after(() => { rmSync(dir, { recursive: true, force: true }) })
    writeFileSync(join(dir, 'none.json'), '{}')
    const missing = daemonIn(dir, ['--runtime', join(dir, 'nope', 'runc')])
    assert.equal(missing.status, 1)
    assert.match(missing.stderr, /stat .*nope\/runc: no such file or directory \(ENOENT\)/)
    const broken = join(dir, 'broken-runtime')
    writeFileSync(broken, '#!/bin/sh\necho "no version for you" >&2\nexit 3\n', { mode: 0o755 })
    const r = daemonIn(dir, ['--runtime', broken])
    assert.equal(r.status, 1)
    assert.match(r.stderr, /OCI runtime .*broken-runtime does not run: no version for you/)
    untouched(dir)
  })

  it('a data root on a read-only bind mount: the kernel\'s EROFS, nothing created', (t) => {
    const dir = tmpDir()
    const ro = join(dir, 'ro')
    mkdirSync(join(ro, 'existing'), { recursive: true })
    execFileSync('mount', ['--bind', ro, ro])
    t.after(() => { spawnSync('umount', [ro]); rmSync(dir, { recursive: true, force: true }) })
    execFileSync('mount', ['-o', 'remount,bind,ro', ro])
    writeFileSync(join(dir, 'none.json'), '{}')
    for (const dataRoot of [join(ro, 'existing'), join(ro, 'new', 'data')]) {
      const r = daemonIn(dir, [], { dataRoot })
      assert.equal(r.status, 1, r.stderr)
      assert.match(r.stderr, new RegExp(`data root ${dataRoot.replace(/[/.]/g, '\\$&')} is not writable: .*read-only file system \\(EROFS\\)`))
      assert.doesNotMatch(r.stderr, /ENOENT/)
    }
    untouched(dir)
  })

  it('/proc, /sys and a file as data root are refused', (t) => {
    const dir = tmpDir()
    t.after(() => { rmSync(dir, { recursive: true, force: true }) })
    writeFileSync(join(dir, 'none.json'), '{}')
    writeFileSync(join(dir, 'file'), 'keep')
    const cases: Array<[string, RegExp]> = [
      ['/proc/berth-data', /data root \/proc\/berth-data is under \/proc, a kernel filesystem/],
      ['/sys/fs/berth', /data root \/sys\/fs\/berth is under \/sys, a kernel filesystem/],
      [join(dir, 'file'), /data root .*\/file is not a directory/],
      [join(dir, 'file', 'below'), /data root .*\/file\/below: .*\/file is not a directory/]
    ]
    for (const [dataRoot, text] of cases) {
      const r = daemonIn(dir, [], { dataRoot })
      assert.equal(r.status, 1, dataRoot)
      assert.match(r.stderr, text)
    }
    assert.ok(!existsSync('/proc/berth-data'))
    assert.equal(readFileSync(join(dir, 'file'), 'utf8'), 'keep')
    untouched(dir)
  })

  it('a file that is not a socket where the socket goes is left untouched', (t) => {
    const dir = tmpDir()
    t.after(() => { rmSync(dir, { recursive: true, force: true }) })
    writeFileSync(join(dir, 'none.json'), '{}')
    const precious = join(dir, 'precious.txt')
    writeFileSync(precious, 'do not delete')
    const r = daemonIn(dir, [], { sock: precious })
    assert.equal(r.status, 1)
    assert.match(r.stderr, /precious\.txt exists and is not a socket \(a regular file\): refusing to replace it/)
    assert.equal(readFileSync(precious, 'utf8'), 'do not delete')
    untouched(dir)
  })

  it('a socket path longer than a Unix socket takes is refused before anything is created', (t) => {
    const dir = tmpDir()
    t.after(() => { rmSync(dir, { recursive: true, force: true }) })
    writeFileSync(join(dir, 'none.json'), '{}')
    const sock = join(dir, 'x'.repeat(120 - dir.length), 'b.sock')
    const r = daemonIn(dir, [], { sock })
    assert.equal(r.status, 1)
    assert.match(r.stderr, /socket path .* is too long: \d+ bytes, a Unix socket path takes at most 107/)
    assert.ok(!existsSync(join(sock, '..')), 'not even its directory')
    untouched(dir)
  })

  it('not root: a clear "needs root" (setpriv to nobody)', (t) => {
    if (spawnSync('setpriv', ['--version']).status !== 0) { t.skip('setpriv (util-linux) is not installed'); return }
    const dir = tmpDir()
    t.after(() => { rmSync(dir, { recursive: true, force: true }) })
    const r = spawnSync('setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups', process.execPath, MAIN, 'daemon', '-H', `unix://${join(dir, 'b.sock')}`, '--data-root', join(dir, 'data')], { encoding: 'utf8' })
    assert.equal(r.status, 1, r.stderr)
    assert.match(r.stderr, /berth daemon needs root \(running as uid 65534\)/)
    untouched(dir)
  })

  it('several failures are reported together', (t) => {
    const dir = tmpDir()
    t.after(() => { rmSync(dir, { recursive: true, force: true }) })
    writeFileSync(join(dir, 'none.json'), '{}')
    const r = daemonIn(dir, ['--runtime', 'no-such-runtime'], { dataRoot: '/proc/x' })
    assert.equal(r.status, 1)
    assert.match(r.stderr, /the host is not ready \(2 problems above\)/)
    assert.match(r.stderr, /no-such-runtime/)
    assert.match(r.stderr, /\/proc\/x is under \/proc/)
  })

  it('a monitor binary that does not run is refused, with what to do (embedded engine)', async (t) => {
    const dir = tmpDir()
    t.after(() => { rmSync(dir, { recursive: true, force: true }) })
    const fake = join(dir, 'berth-shim')
    writeFileSync(fake, 'not an executable\n', { mode: 0o755 })
    await assert.rejects(createEngine({ dataRoot: join(dir, 'data'), execRoot: join(dir, 'run'), hosts: [`unix://${join(dir, 'b.sock')}`], shimPath: fake }),
      /the container monitor \(berth-shim\) does not run on linux-\w+: .*berth-shim: .*Build it: install a C compiler/)
    untouched(dir)
  })
})

describe('start checks: cgroups and overlayfs', { skip: skip ?? noUnshare ?? false }, () => {
  it('no cgroup filesystem: refused with what to do, nothing created', (t) => {
    const dir = tmpDir()
    t.after(() => { rmSync(dir, { recursive: true, force: true }) })
    writeFileSync(join(dir, 'none.json'), '{}')
    // an empty tmpfs over /sys/fs/cgroup, for this daemon only
    const [cmd, args] = inMountNamespace('mount -t tmpfs none /sys/fs/cgroup', ['-H', `unix://${join(dir, 'b.sock')}`, '--data-root', join(dir, 'data'), '--exec-root', join(dir, 'run'), '--config-file', join(dir, 'none.json')])
    const r = spawnSync(cmd, args, { encoding: 'utf8', timeout: 60_000 })
    assert.equal(r.status, 1, r.stderr)
    assert.match(r.stderr, /no usable cgroup filesystem at \/sys\/fs\/cgroup \(neither cgroup v2 nor v1 memory and pids controllers\): containers need cgroups; mount cgroup2 there/)
    untouched(dir)
  })

  it('no overlayfs in the kernel: the start says layers are copied, and containers\' root filesystems are copies', async (t) => {
    const dir = tmpDir()
    const nets = uniqueNetworkOptions()
    const sock = join(dir, 'b.sock')
    writeFileSync(join(dir, 'none.json'), '{}')
    // the kernel's list of filesystems without overlay, for this daemon only
    const filesystems = join(dir, 'filesystems')
    writeFileSync(filesystems, readFileSync('/proc/filesystems', 'utf8').split('\n').filter((l) => !/\toverlay$/.test(l)).join('\n'))
    const [cmd, args] = inMountNamespace(`mount --bind '${filesystems}' /proc/filesystems`, ['-H', `unix://${sock}`, '--data-root', join(dir, 'data'), '--exec-root', join(dir, 'run'), '--config-file', join(dir, 'none.json'), ...daemonNetworkArgs(nets)])
    const d = startProc(cmd, args)
    t.after(async () => { await cleanupDaemon(d.child, dir, nets) })
    await pingable(sock, d)
    await d.waitFor(/level=warning msg="overlayfs is not available \(modprobe overlay\): image layers are copied into every container's root filesystem/)
    await importBusybox(sock)
    const id = await createContainer(sock, { Image: 'busybox', Cmd: ['cat', '/etc/hostname'], HostConfig: { NetworkMode: 'none' } })
    const inspect = (await request(sock, 'GET', `/containers/${id}/json`)).json() as { GraphDriver: { Name: string } }
    assert.equal(inspect.GraphDriver.Name, 'vfs')
    assert.equal((await request(sock, 'POST', `/containers/${id}/start`)).status, 204)
    assert.equal(((await request(sock, 'POST', `/containers/${id}/wait`)).json() as { StatusCode: number }).StatusCode, 0)
    assert.equal((await request(sock, 'DELETE', `/containers/${id}`)).status, 204)
    // no overlay mount was even tried
    assert.doesNotMatch(d.stderr(), /an overlay mount failed/)
    d.child.kill('SIGTERM')
    assert.equal(await d.exited(), 0)
  })

  it('an overlay mount that fails at create: said once with the cause, and the root filesystem is a copy', async (t) => {
    const dir = tmpDir()
    const nets = uniqueNetworkOptions()
    const sock = join(dir, 'b.sock')
    writeFileSync(join(dir, 'none.json'), '{}')
    // the data root on an overlayfs, which the kernel refuses as an overlay's upper directory
    for (const d of ['lower', 'upper', 'work', 'data']) mkdirSync(join(dir, d))
    const [cmd, args] = inMountNamespace(`mount -t overlay overlay -o 'lowerdir=${join(dir, 'lower')},upperdir=${join(dir, 'upper')},workdir=${join(dir, 'work')}' '${join(dir, 'data')}'`,
      ['-H', `unix://${sock}`, '--data-root', join(dir, 'data'), '--exec-root', join(dir, 'run'), '--config-file', join(dir, 'none.json'), ...daemonNetworkArgs(nets)])
    const d = startProc(cmd, args)
    t.after(async () => { await cleanupDaemon(d.child, dir, nets) })
    await pingable(sock, d)
    await importBusybox(sock)
    for (let i = 0; i < 2; i++) {
      const id = await createContainer(sock, { Image: 'busybox', Cmd: ['cat', '/etc/hostname'], HostConfig: { NetworkMode: 'none' } })
      assert.equal(((await request(sock, 'GET', `/containers/${id}/json`)).json() as { GraphDriver: { Name: string } }).GraphDriver.Name, 'vfs')
      assert.equal((await request(sock, 'POST', `/containers/${id}/start`)).status, 204)
      assert.equal(((await request(sock, 'POST', `/containers/${id}/wait`)).json() as { StatusCode: number }).StatusCode, 0)
      assert.equal((await request(sock, 'DELETE', `/containers/${id}`)).status, 204)
    }
    const told = d.stderr().split('\n').filter((l) => /level=warning msg="an overlay mount failed: root filesystems are made by copying their image's layers \(slower creates, more disk\) while it does: mount -t overlay /.test(l))
    assert.equal(told.length, 1, d.stderr())
    d.child.kill('SIGTERM')
    assert.equal(await d.exited(), 0)
  })
})

describe('pidfile', { skip: skip ?? false }, () => {
  it('names a stale file: a dead pid, a zombie, a process that is not a berth daemon; a live daemon is not', async (t) => {
    const dir = tmpDir()
    t.after(() => { rmSync(dir, { recursive: true, force: true }) })
    const pidfile = join(dir, 'p.pid')
    // a zombie: `sleep 0` exits, and its parent (sh replaced by sleep 30) never reaps it
    const parent = spawn('sh', ['-c', 'sleep 0 & echo $!; exec sleep 30'], { stdio: ['ignore', 'pipe', 'ignore'] })
    t.after(() => { parent.kill('SIGKILL') })
    const [line] = await once(parent.stdout, 'data') as [Buffer]
    const zombie = Number(line.toString().trim())
    // (on a loaded machine `sleep 0` may exit before sh execs, and sh reaps it: the pid is then a dead one, as stale)
    const stat = (): string => { try { return readFileSync(`/proc/${zombie}/stat`, 'utf8') } catch { return ') Z ' } }
    for (let i = 0; i < 100 && !stat().includes(') Z '); i++) await new Promise((resolve) => setTimeout(resolve, 20))
    writeFileSync(pidfile, `${zombie}\n`)
    assert.equal(await livePidInFile(pidfile), null, 'a zombie is not a running daemon')
    writeFileSync(pidfile, `${parent.pid ?? 0}\n`)
    assert.equal(await livePidInFile(pidfile), null, 'sleep is not a berth daemon')
    writeFileSync(pidfile, '999999999\n')
    assert.equal(await livePidInFile(pidfile), null)
    // a process whose command line is a berth daemon's
    const daemonLike = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 30000)', join(dir, 'lib', 'cli', 'main.js'), 'daemon'], { stdio: 'ignore' })
    t.after(() => { daemonLike.kill('SIGKILL') })
    writeFileSync(pidfile, `${daemonLike.pid ?? 0}\n`)
    for (let i = 0; i < 100 && !readFileSync(`/proc/${daemonLike.pid ?? 0}/cmdline`, 'utf8').includes('daemon'); i++) await new Promise((resolve) => setTimeout(resolve, 20))
    assert.equal(await livePidInFile(pidfile), daemonLike.pid)
  })

  it('a daemon starts over a pidfile naming a zombie (a killed daemon nobody reaped) and takes it over', async (t) => {
    const dir = tmpDir()
    const net = uniqueNetworkOptions()
    const pidfile = join(dir, 'berth.pid')
    const parent = spawn('sh', ['-c', 'sleep 0 & echo $!; exec sleep 60'], { stdio: ['ignore', 'pipe', 'ignore'] })
    const [line] = await once(parent.stdout, 'data') as [Buffer]
    writeFileSync(pidfile, `${line.toString().trim()}\n`)
    const d = startDaemon(['-H', `unix://${join(dir, 'b.sock')}`, '--data-root', join(dir, 'data'), '--exec-root', join(dir, 'run'), '--pidfile', pidfile, '--config-file', join(dir, 'none.json'), ...daemonNetworkArgs(net)])
    t.after(async () => { parent.kill('SIGKILL'); await cleanupDaemon(d.child, dir, net) })
    writeFileSync(join(dir, 'none.json'), '{}')
    await pingable(join(dir, 'b.sock'), d)
    for (let i = 0; i < 100 && readFileSync(pidfile, 'utf8').trim() !== String(d.child.pid); i++) await new Promise((resolve) => setTimeout(resolve, 20))
    assert.equal(readFileSync(pidfile, 'utf8').trim(), String(d.child.pid))
  })
})

describe('a start that fails later removes what it created', { skip: skip ?? false }, () => {
  it('a TCP port in use: exit 1, and the data root this start made is gone', async (t) => {
    const dir = tmpDir()
    const nets = uniqueNetworkOptions()
    const holder = net.createServer()
    await new Promise<void>((resolve) => { holder.listen(0, '127.0.0.1', resolve) })
    t.after(() => { holder.close() })
    const port = (holder.address() as { port: number }).port
    writeFileSync(join(dir, 'none.json'), '{}')
    const fresh = join(dir, 'fresh')
    const d = startDaemon(['-H', `unix://${join(dir, 'b.sock')}`, '-H', `tcp://127.0.0.1:${port}`, '--data-root', join(fresh, 'data'), '--exec-root', join(fresh, 'data', 'run'), '--config-file', join(dir, 'none.json'), ...daemonNetworkArgs(nets)])
    t.after(async () => { await cleanupDaemon(d.child, dir, nets) })
    assert.equal(await d.exited(), 1)
    assert.match(d.stderr(), /failed to start daemon: .*EADDRINUSE/)
    assert.ok(!existsSync(fresh), `${fresh} was created by the failed start and must be gone`)
    assert.ok(!existsSync(join(dir, 'b.sock')), 'its socket too')
  })
})

