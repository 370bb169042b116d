// docker run's process, namespace and device flags with the real docker CLI, each checked from inside the
// container (/proc/self/status, ulimit, mount, /sys/fs/cgroup), with the refused and warned cases.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { existsSync, readFileSync, readlinkSync, rmdirSync, statSync } from 'node:fs'
import { hostname } from 'node:os'
import { startEngine, containerSkipReason, hasDockerCli, dockerCli, busyboxTar, request } from '../helpers/engine.js'

const skip = containerSkipReason() ?? (hasDockerCli() ? null : 'the docker CLI is not installed')
const initSkip = ['/usr/bin/tini-static', '/usr/bin/docker-init', '/usr/libexec/docker/docker-init'].some((p) => existsSync(p)) ? false : 'no static init binary (apt-get install tini)'

// a block device of the host for the throttles (any will do: the limits are only written to the cgroup)
const blockDevice = ['/dev/loop0', '/dev/vda', '/dev/sda', '/dev/nvme0n1'].find((p) => { try { return statSync(p).isBlockDevice() } catch { return false } })
const blkioSkip = blockDevice === undefined
  ? 'no block device on this host'
  : !existsSync('/sys/fs/cgroup/blkio/blkio.throttle.read_bps_device') ? 'no cgroup v1 blkio throttles' : false

function devNumbers (path: string): { major: number, minor: number } {
  const rdev = statSync(path).rdev
  return { major: Math.floor(rdev / 256) & 0xfff, minor: (rdev & 0xff) | ((Math.floor(rdev / 4096) & 0xfff00)) }
}

function statusField (text: string, field: string): string {
  return new RegExp(`^${field}:\\s*(.*)$`, 'm').exec(text)?.[1]?.trim() ?? ''
}

test('docker run flags', { skip: skip ?? false }, async (t) => {
  const { socket, dir } = await startEngine(t)
  const docker = async (...args: string[]): ReturnType<typeof dockerCli> => await dockerCli(socket, args)
  const sh = async (flags: string[], script: string): Promise<string> => {
    const r = await docker('run', '--rm', ...flags, 'busybox', 'sh', '-c', script)
    assert.equal(r.status, 0, `${flags.join(' ')}: ${r.stderr}`)
    return r.stdout
  }
  const refused = async (flags: string[], message: RegExp): Promise<void> => {
    const r = await docker('create', ...flags, 'busybox', 'true')
    assert.notEqual(r.status, 0, `${flags.join(' ')} was accepted`)
    assert.match(r.stderr, message)
  }
  assert.equal((await docker('import', busyboxTar(), 'busybox:latest')).status, 0)

  await t.test('--init runs tini as PID 1 around the command', { skip: initSkip }, async () => {
    const out = await sh(['--init'], 'cat /proc/1/cmdline | tr "\\0" " "; echo; echo $$')
    const [cmdline, pid] = out.split('\n')
    assert.match(cmdline ?? '', /^\/sbin\/docker-init -- sh -c /)
    assert.notEqual(pid, '1')
    // the signal reaches the command through the init: stop is quick and the exit is the command's
    const id = (await docker('run', '-d', '--init', 'busybox', 'sleep', '60')).stdout.trim()
    // once the init runs its child: a TERM that comes before the init has its handlers is a PID 1's, ignored (under
    // load the stop then waited its whole timeout; dockerd's --init has the same window)
    for (let i = 0; i < 100 && !(await docker('top', id)).stdout.includes('sleep 60'); i++) await new Promise((resolve) => setTimeout(resolve, 50))
    const t0 = Date.now()
    assert.equal((await docker('stop', id)).status, 0)
    assert.ok(Date.now() - t0 < 8000, 'stop took the whole timeout')
    await docker('rm', '-f', id)
  })

  await t.test('--tmpfs and --mount type=tmpfs: size and mode; noexec,nosuid,nodev by default', async () => {
    const out = await sh(['--tmpfs', '/run:size=1m,mode=1770', '--mount', 'type=tmpfs,dst=/scratch,tmpfs-size=2097152,tmpfs-mode=0700', '--tmpfs', '/x:exec'],
      'grep -E " /(run|scratch|x) " /proc/mounts; stat -c "%n %a" /run /scratch')
    assert.match(out, /^tmpfs \/run tmpfs rw,nosuid,nodev,noexec,relatime,size=1024k,mode=1770/m)
    assert.match(out, /^tmpfs \/scratch tmpfs rw,nosuid,nodev,noexec,relatime,size=2048k,mode=700/m)
    assert.match(out, /^tmpfs \/x tmpfs rw,nosuid,nodev,relatime/m)
    assert.match(out, /^\/run 1770$/m)
    assert.match(out, /^\/scratch 700$/m)
    await refused(['--tmpfs', 'rel:size=1m'], /mount path must be absolute/)
  })

  await t.test('--ulimit nofile/nproc', async () => {
    const out = await sh(['--ulimit', 'nofile=1024:2048', '--ulimit', 'nproc=100:200'], 'ulimit -n; ulimit -Hn; grep processes /proc/self/limits')
    assert.match(out, /^1024\n2048\nMax processes\s+100\s+200\s/)
    await refused(['--ulimit', 'nofile=20:10'], /soft limit must be less than or equal to hard limit/)
  })

  await t.test('--sysctl: namespaced ones set, host-wide ones refused', async () => {
    const out = await sh(['--sysctl', 'net.ipv4.ip_forward=1', '--sysctl', 'kernel.shmmax=1000000', '--sysctl', 'fs.mqueue.msg_max=20'],
      'cat /proc/sys/net/ipv4/ip_forward /proc/sys/kernel/shmmax /proc/sys/fs/mqueue/msg_max')
    assert.equal(out, '1\n1000000\n20\n')
    // the CLI refuses vm.* itself: the daemon's own check, through the API
    const host = await request(socket, 'POST', '/containers/create', { body: { Image: 'busybox', Cmd: ['true'], HostConfig: { Sysctls: { 'kernel.panic': '1' } } } })
    assert.equal(host.status, 400)
    assert.match(host.text, /sysctl \\"kernel\.panic\\" is not in a separate kernel namespace/)
    await refused(['--network', 'host', '--sysctl', 'net.ipv4.ip_forward=1'], /sysctl "net\.ipv4\.ip_forward" not allowed in host network namespace/)
    await refused(['--ipc', 'host', '--sysctl', 'kernel.shmmax=1'], /not allowed in the hosts ipc namespace/)
  })

  await t.test('--device with cgroup permissions, --device-cgroup-rule; a missing device is refused', async () => {
    const out = await sh(['--device', '/dev/kmsg:/dev/mykmsg:r', '--device-cgroup-rule', 'c 10:237 r'],
      'ls -l /dev/mykmsg; cat /sys/fs/cgroup/devices/devices.list; (echo x > /dev/mykmsg) 2>/dev/null && echo wrote || echo refused-write')
    assert.match(out, /^cr.* 1,\s+11 .*\/dev\/mykmsg$/m)
    assert.match(out, /^c 1:11 r$/m)
    assert.match(out, /^c 10:237 r$/m)
    assert.match(out, /^refused-write$/m)
    await refused(['--device', '/dev/berth-no-such-device'], /error gathering device information while adding custom device "\/dev\/berth-no-such-device": no such file or directory/)
    await refused(['--device-cgroup-rule', 'x 1:2 r'], /invalid device cgroup format 'x 1:2 r'/)
  })

  await t.test('--group-add by number and name', async () => {
    const out = await sh(['--group-add', '1234', '--group-add', 'daemon'], 'id -G; grep Groups /proc/self/status')
    assert.match(out, /^0 1 1234$|^0 1234 1$/m)
    // docker exec -u keeps the container's --group-add groups, as dockerd does
    const id = (await docker('run', '-d', '--group-add', '1234', '--group-add', 'daemon', 'busybox', 'sleep', '60')).stdout.trim()
    const asNobody = await docker('exec', '-u', 'nobody', id, 'id')
    assert.equal(asNobody.status, 0, asNobody.stderr)
    assert.match(asNobody.stdout, /^uid=65534\(nobody\) gid=65534\(nogroup\) groups=(?=.*\b1\(daemon\))(?=.*\b1234\b)/)
    assert.match((await docker('exec', '-u', '0:0', id, 'id', '-G')).stdout, /^0 (1 1234|1234 1)\n$/)
    await docker('rm', '-f', id)
    const r = await docker('run', '--rm', '--group-add', 'nosuchgroup', 'busybox', 'true')
    assert.notEqual(r.status, 0)
    assert.match(r.stderr, /Unable to find group nosuchgroup/)
  })

  await t.test('--device-read-bps/--device-write-iops : the block I/O throttles in the cgroup', { skip: blkioSkip }, async () => {
    const dev = blockDevice as string
    const out = await sh(['--device-read-bps', `${dev}:1mb`, '--device-write-bps', `${dev}:2mb`, '--device-read-iops', `${dev}:100`, '--device-write-iops', `${dev}:200`],
      'cd /sys/fs/cgroup/blkio; cat blkio.throttle.read_bps_device blkio.throttle.write_bps_device blkio.throttle.read_iops_device blkio.throttle.write_iops_device')
    const { major, minor } = devNumbers(dev)
    assert.equal(out, `${major}:${minor} 1048576\n${major}:${minor} 2097152\n${major}:${minor} 100\n${major}:${minor} 200\n`)
    const missing = await docker('run', '--rm', '--device-read-bps', '/dev/berth-no-such-device:1mb', 'busybox', 'true')
    assert.notEqual(missing.status, 0)
    assert.match(missing.stderr, /stat \/dev\/berth-no-such-device: no such file or directory/)
  })

  await t.test('stats: blkio_stats lists the block I/O of the container\'s cgroup (docker stats BLOCK I/O), as dockerd', { skip: existsSync('/sys/fs/cgroup/blkio/blkio.throttle.io_service_bytes_recursive') ? false : 'cgroup v1 blkio controller not mounted' }, async () => {
    // the disk under the test's directory; the kernel counts a cgroup's I/O in these files where a throttle applies
    const st = statSync(dir)
    const sysDev = `/sys/dev/block/${Math.floor(st.dev / 256) & 0xfff}:${(st.dev & 0xff) | ((Math.floor(st.dev / 4096) & 0xfff00))}`
    const diskOf = (p: string): string => existsSync(`${p}/partition`) ? readlinkSync(p).split('/').slice(0, -1).pop() as string : readlinkSync(p).split('/').pop() as string
    const disk = `/dev/${diskOf(sysDev)}`
    const id = (await docker('run', '-d', '--device-write-bps', `${disk}:500mb`, '-v', `${dir}:/h`, 'busybox', 'sh', '-c',
      'dd if=/dev/zero of=/h/blkio-test bs=1M count=4 oflag=direct 2>/dev/null; touch /h/blkio-done; exec sleep 60')).stdout.trim()
    for (let i = 0; i < 200 && !existsSync(`${dir}/blkio-done`); i++) await new Promise((resolve) => setTimeout(resolve, 50))
    const stats = (await request(socket, 'GET', `/containers/${id}/stats?stream=0&one-shot=1`)).json() as { blkio_stats: Record<string, Array<{ major: number, minor: number, op: string, value: number }> | null> }
    const b = stats.blkio_stats
    assert.deepEqual(Object.keys(b), ['io_service_bytes_recursive', 'io_serviced_recursive', 'io_queue_recursive', 'io_service_time_recursive', 'io_wait_time_recursive', 'io_merged_recursive', 'io_time_recursive', 'sectors_recursive'])
    for (const list of Object.values(b)) assert.ok(Array.isArray(list), 'cgroup v1: lists, never null')
    const written = (b.io_service_bytes_recursive ?? []).filter((e) => e.op === 'Write').reduce((n, e) => n + e.value, 0)
    assert.ok(written >= 4 * 1024 * 1024, `the 4 MiB written are counted: ${JSON.stringify(b.io_service_bytes_recursive)}`)
    assert.match((await docker('stats', '--no-stream', '--format', '{{.BlockIO}}', id)).stdout, /^\S+ \/ [4-9]\.\d+MB\n$/)
    await docker('rm', '-f', id)
  })

  await t.test('--cgroup-parent: the container\'s cgroups below it (stats read there); a bad path refused', { skip: existsSync('/sys/fs/cgroup/memory/memory.limit_in_bytes') ? false : 'cgroup v1 memory controller not mounted' }, async () => {
    const parent = `berth-spec-${process.pid}`
    t.after(() => { for (const ctl of ['memory', 'cpu', 'cpuacct', 'pids', 'blkio', 'devices', 'freezer', 'cpuset', 'systemd', 'unified']) { try { rmdirSync(`/sys/fs/cgroup/${ctl}/${parent}`) } catch { /* none */ } } })
    const id = (await docker('run', '-d', '--cgroup-parent', `/${parent}`, '-m', '32m', 'busybox', 'sleep', '60')).stdout.trim()
    assert.match(id, /^[0-9a-f]{64}$/)
    const inside = (await docker('exec', id, 'cat', '/proc/self/cgroup')).stdout
    assert.match(inside, new RegExp(`:memory:/${parent}/${id}$`, 'm'))
    assert.match(inside, new RegExp(`:pids:/${parent}/${id}$`, 'm'))
    assert.equal(readFileSync(`/sys/fs/cgroup/memory/${parent}/${id}/memory.limit_in_bytes`, 'utf8').trim(), String(32 * 1024 * 1024))
    const stats = (await request(socket, 'GET', `/containers/${id}/stats?stream=0`)).json() as { memory_stats: { usage?: number, limit?: number } }
    assert.equal(stats.memory_stats.limit, 32 * 1024 * 1024)
    assert.ok((stats.memory_stats.usage ?? 0) > 0, 'stats read the container\'s cgroup')
    assert.equal((await docker('rm', '-f', id)).status, 0)
    await refused(['--cgroup-parent', '/a/../b'], /invalid cgroup parent "\/a\/\.\.\/b"/)
  })

  await t.test('--cpuset-cpus/--cpuset-mems; unavailable CPUs refused', async () => {
    const out = await sh(['--cpuset-cpus', '0', '--cpuset-mems', '0'], 'grep -E "^(Cpus|Mems)_allowed_list" /proc/self/status; cat /sys/fs/cgroup/cpuset/cpuset.cpus')
    assert.match(out, /^Cpus_allowed_list:\s+0$/m)
    assert.match(out, /^Mems_allowed_list:\s+0$/m)
    await refused(['--cpuset-cpus', '4000'], /Requested CPUs are not available - requested 4000, available: /)
    await refused(['--cpuset-cpus', 'x'], /Invalid value x for cpuset cpus/)
  })

  await t.test('--security-opt no-new-privileges, --oom-score-adj; bad values refused', async () => {
    const out = await sh(['--security-opt', 'no-new-privileges', '--oom-score-adj', '500'], 'cat /proc/self/status; echo adj=$(cat /proc/self/oom_score_adj)')
    assert.equal(statusField(out, 'NoNewPrivs'), '1')
    assert.match(out, /^adj=500$/m)
    const plain = await sh([], 'cat /proc/self/status')
    assert.equal(statusField(plain, 'NoNewPrivs'), '0')
    await refused(['--oom-score-adj', '1001'], /Invalid value 1001, range for oom score adj is \[-1000, 1000\]/)
    // the CLI checks the form; the daemon's own check, through the API
    const bogus = await request(socket, 'POST', '/containers/create', { body: { Image: 'busybox', Cmd: ['true'], HostConfig: { SecurityOpt: ['bogus=1'] } } })
    assert.equal(bogus.status, 400)
    assert.match(bogus.text, /invalid --security-opt 1: \\"bogus=1\\"/)
    await refused(['--security-opt', 'seccomp=/nonexistent.json'], /./)
  })

  await t.test('--pid host, --uts host, --ipc host|shareable|container:X', async () => {
    const hostPid = await sh(['--pid', 'host'], 'echo $$; readlink /proc/self/ns/pid')
    assert.notEqual(hostPid.split('\n')[0], '1')
    assert.equal(hostPid.split('\n')[1], readlinkSync('/proc/self/ns/pid'))
    const uts = await sh(['--uts', 'host'], 'hostname')
    assert.equal(uts.trim(), hostname())
    await refused(['--uts', 'host', '--hostname', 'x'], /Conflicting options: hostname and the UTS mode/)
    const ipcHost = await sh(['--ipc', 'host'], 'readlink /proc/self/ns/ipc')
    assert.equal(ipcHost.trim(), readlinkSync('/proc/self/ns/ipc'))
    const donor = (await docker('run', '-d', '--ipc', 'shareable', 'busybox', 'sh', '-c', 'echo shared > /dev/shm/x; sleep 60')).stdout.trim()
    const donorNs = (await docker('exec', donor, 'readlink', '/proc/self/ns/ipc')).stdout.trim()
    const joined = await sh(['--ipc', `container:${donor}`], 'readlink /proc/self/ns/ipc; cat /dev/shm/x')
    assert.equal(joined, `${donorNs}\nshared\n`)
    const priv = (await docker('run', '-d', 'busybox', 'sleep', '60')).stdout.trim()
    const r = await docker('run', '--rm', '--ipc', `container:${priv}`, 'busybox', 'true')
    assert.notEqual(r.status, 0)
    assert.match(r.stderr, /non-shareable IPC/)
    const pidJoin = await sh(['--pid', `container:${priv}`], 'cat /proc/1/comm')
    assert.equal(pidJoin, 'sleep\n')
    const none = await sh(['--ipc', 'none'], 'grep -c " /dev/shm " /proc/mounts || true')
    assert.equal(none.trim(), '0')
    await refused(['--ipc', 'bogus'], /invalid IPC mode: bogus/)
    await docker('rm', '-f', donor, priv)
  })

  await t.test('--stop-timeout: stop waits that long before the kill', async () => {
    const id = (await docker('run', '-d', '--stop-timeout', '1', 'busybox', 'sh', '-c', 'trap "" TERM; while :; do sleep 0.1; done')).stdout.trim()
    const t0 = Date.now()
    assert.equal((await docker('stop', id)).status, 0)
    const ms = Date.now() - t0
    assert.ok(ms >= 900 && ms < 8000, `stop took ${ms} ms`)
    assert.equal((await docker('wait', id)).stdout, '137\n')
    const insp = JSON.parse((await docker('inspect', id)).stdout) as Array<{ Config: { StopTimeout: number } }>
    assert.equal(insp[0]?.Config.StopTimeout, 1)
    await docker('rm', '-f', id)
  })

  await t.test('--privileged and --cap-add ALL: every capability the host can give; host devices; nothing masked', async () => {
    const hostBnd = statusField(readFileSync('/proc/self/status', 'utf8'), 'CapBnd')
    const priv = await sh(['--privileged'], 'cat /proc/self/status; grep -c -E " /proc/(kcore|keys|sys) " /proc/mounts || true; ls /dev')
    assert.equal(statusField(priv, 'CapEff'), hostBnd)
    assert.equal(statusField(priv, 'CapBnd'), hostBnd)
    assert.match(priv, /^0$/m, 'no masked or read-only /proc paths')
    assert.match(priv, /^loop0$/m)
    const all = await sh(['--cap-add', 'ALL'], 'cat /proc/self/status; grep -c " /proc/keys " /proc/mounts')
    assert.equal(statusField(all, 'CapEff'), hostBnd)
    assert.match(all, /^1$/m, 'still masked without --privileged')
    const plain = await sh([], 'ls /dev')
    assert.doesNotMatch(plain, /^loop0$/m)
  })
})

test('--init without an init binary warns and runs the command as PID 1', { skip: skip ?? false }, async (t) => {
  const { socket } = await startEngine(t, { options: { initPath: '/nonexistent/docker-init' } })
  const docker = async (...args: string[]): ReturnType<typeof dockerCli> => await dockerCli(socket, args)
  assert.equal((await docker('import', busyboxTar(), 'busybox:latest')).status, 0)
  const r = await docker('run', '--rm', '--init', 'busybox', 'sh', '-c', 'echo $$')
  assert.equal(r.status, 0, r.stderr)
  assert.equal(r.stdout, '1\n')
  assert.match(r.stderr, /WARNING: --init: no init binary found/)
})

test('other HostConfig fields: honoured, warned or refused', { skip: skip ?? false }, async (t) => {
  const { socket } = await startEngine(t)
  const docker = async (...args: string[]): ReturnType<typeof dockerCli> => await dockerCli(socket, args)
  assert.equal((await docker('import', busyboxTar(), 'busybox:latest')).status, 0)
  const create = async (hc: Record<string, unknown>, extra: Record<string, unknown> = {}): Promise<{ status: number, text: string, warnings: string[] }> => {
    const r = await request(socket, 'POST', '/containers/create', { body: { Image: 'busybox', Cmd: ['true'], ...extra, HostConfig: hc } })
    return { status: r.status, text: r.text, warnings: r.status === 201 ? (r.json() as { Warnings: string[] }).Warnings : [] }
  }
  for (const [hc, message] of [
    [{ Runtime: 'nosuch' }, /unknown or invalid runtime name: nosuch/],
    [{ Isolation: 'hyperv' }, /Invalid isolation: \\"hyperv\\" - linux only supports 'default'/],
    [{ StorageOpt: { size: '1G' } }, /--storage-opt is supported only for overlay over xfs/],
    [{ DeviceRequests: [{ Driver: '', Count: -1, Capabilities: [['gpu']] }] }, /could not select device driver .{2,4} with capabilities: \[\[gpu\]\]/],
    [{ UsernsMode: 'private' }, /UsernsMode ..?private..? is not supported/],
    [{ MemorySwappiness: 101 }, /valid memory swappiness range is 0-100/],
    [{ CgroupnsMode: 'bogus' }, /invalid cgroup namespace mode: bogus/]
  ] as const) {
    const r = await create(hc)
    assert.equal(r.status, 400, JSON.stringify(hc))
    assert.match(r.text, message)
  }
  for (const [hc, message] of [
    [{ KernelMemoryTCP: 8388608 }, /does not apply KernelMemoryTCP/],
    [{ BlkioWeight: 300 }, /does not apply BlkioWeight|Your kernel does not support Block I\/O weight or the cgroup is not mounted\. Weight discarded\./],
    [{ KernelMemory: 8388608 }, /kernel memory limit is deprecated.*does not apply KernelMemory/],
    [{ Annotations: { a: 'b' } }, /does not apply Annotations/],
    [{ CpuPercent: 50 }, /does not apply CpuPercent/],
    [{ OomKillDisable: true }, /OOM killer is disabled for the container, but no memory limit is set/]
  ] as const) {
    const r = await create(hc)
    assert.equal(r.status, 201, r.text)
    assert.ok(r.warnings.some((w) => message.test(w)), `${JSON.stringify(hc)}: ${JSON.stringify(r.warnings)}`)
  }
  // honoured: swappiness and the OOM killer switch in the memory cgroup, a private cgroup namespace, masked paths
  const out = await docker('run', '--rm', '-m', '64m', '--memory-swappiness', '10', '--oom-kill-disable', '--cgroupns', 'private', 'busybox', 'sh', '-c',
    'cat /sys/fs/cgroup/memory/memory.swappiness; grep oom_kill_disable /sys/fs/cgroup/memory/memory.oom_control; readlink /proc/self/ns/cgroup')
  assert.equal(out.status, 0, out.stderr)
  assert.match(out.stdout, /^10\noom_kill_disable 1\ncgroup:\[\d+\]\n$/)
  assert.notEqual(out.stdout.split('\n')[2], readlinkSync('/proc/self/ns/cgroup'))
  const masked = await request(socket, 'POST', '/containers/create?name=masked', { body: { Image: 'busybox', Cmd: ['sh', '-c', 'grep -c " /proc/version " /proc/mounts'], HostConfig: { MaskedPaths: ['/proc/version'], ReadonlyPaths: [] } } })
  assert.equal(masked.status, 201)
  assert.equal((await docker('start', '-a', 'masked')).stdout, '1\n')
})
