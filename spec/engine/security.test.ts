// Security regressions of the engine (issue 15): layer modes and special files, list filters that cannot be made to
// backtrack, type-checked create fields, container files read without following links or blocking, seccomp.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { writeFileSync, mkdirSync } from 'node:fs'
import { join } from 'node:path'
import type { Readable } from 'node:stream'
import { startEngine, request, importBusybox, createContainer, containerSkipReason, dockerCli, hasDockerCli } from '../helpers/engine.js'
import { busyboxWith } from '../helpers/tar.js'
import { tarStreamOf, addEntry } from '../../lib/stream/tar-tree.js'
import { demuxAll } from '../../lib/stream/stdcopy.js'
import { buildRuntimeSpec, DEFAULT_CAPS } from '../../lib/runtime/oci-spec.js'

const skip = containerSkipReason()

async function collect (s: Readable): Promise<Buffer> {
  const chunks: Buffer[] = []
  for await (const c of s as AsyncIterable<Buffer>) chunks.push(c)
  return Buffer.concat(chunks)
}

async function run (socket: string, cmd: string[], extra: Record<string, unknown> = {}): Promise<{ id: string, code: number, stdout: string, stderr: string }> {
  const id = await createContainer(socket, { Cmd: cmd, ...extra, Image: extra.Image ?? 'busybox' })
  const wait = request(socket, 'POST', `/containers/${id}/wait?condition=next-exit`)
  const started = await request(socket, 'POST', `/containers/${id}/start`)
  assert.equal(started.status, 204, started.text)
  const w = await wait
  const logs = demuxAll((await request(socket, 'GET', `/containers/${id}/logs?stdout=1&stderr=1`)).body)
  return { id, code: (w.json() as { StatusCode: number }).StatusCode, stdout: logs.stdout.toString(), stderr: logs.stderr.toString() }
}

test('engine security', { skip: skip ?? false }, async (t) => {
  const { socket, dir } = await startEngine(t)
  await importBusybox(socket)

  await t.test('layers keep setuid, setgid and sticky bits; devices and FIFOs in a layer are created', async () => {
    const layer = await busyboxWith([
      { name: 'tmp/', type: 'directory', mode: 0o1777 },
      { name: 'opt/suid', type: 'file', mode: 0o4755, body: Buffer.from('#!/bin/sh\n') },
      { name: 'opt/sgid/', type: 'directory', mode: 0o2775 },
      { name: 'opt/null', type: 'character-device', mode: 0o666, devmajor: 1, devminor: 3 },
      { name: 'opt/loop', type: 'block-device', mode: 0o660, devmajor: 7, devminor: 0 },
      { name: 'opt/pipe', type: 'fifo', mode: 0o640 },
      // a device replaced by a later entry of the same name: the file wins
      { name: 'opt/later', type: 'fifo', mode: 0o600 },
      { name: 'opt/later', type: 'file', mode: 0o644, body: Buffer.from('x') }
    ])
    const r = await request(socket, 'POST', '/images/create?fromSrc=-&repo=special&tag=latest', { raw: layer, headers: { 'Content-Type': 'application/x-tar' } })
    assert.equal(r.status, 200)
    assert.match(r.text, /"status":"sha256:[0-9a-f]{64}"/, r.text)
    const out = await run(socket, ['stat', '-c', '%n %a %F %t:%T', '/tmp', '/opt/suid', '/opt/sgid', '/opt/null', '/opt/loop', '/opt/pipe', '/opt/later'], { Image: 'special' })
    assert.equal(out.code, 0, out.stderr)
    assert.deepEqual(out.stdout.trim().split('\n'), [
      '/tmp 1777 directory 0:0',
      '/opt/suid 4755 regular file 0:0',
      '/opt/sgid 2775 directory 0:0',
      '/opt/null 666 character special file 1:3',
      '/opt/loop 660 block special file 7:0',
      '/opt/pipe 640 fifo 0:0',
      '/opt/later 644 regular file 0:0'
    ])
  })

  await t.test('list filters cannot be made to backtrack: reference globs and name patterns answer in linear time', async () => {
    const name = 'abcdefghijklmnopqrstuvwxyz0'
    await createContainer(socket, { Image: 'busybox', Cmd: ['true'] }, name)
    const q = (v: unknown): string => encodeURIComponent(JSON.stringify(v))
    let t0 = Date.now()
    const evil = await request(socket, 'GET', `/containers/json?all=1&filters=${q({ name: ['(\\w|\\w)*-'] })}`)
    assert.ok(Date.now() - t0 < 2000, `name filter took ${Date.now() - t0} ms`)
    assert.equal(evil.status, 200)
    assert.deepEqual(evil.json(), [])
    const names = async (v: string): Promise<string[]> => {
      const r = await request(socket, 'GET', `/containers/json?all=1&filters=${q({ name: [v] })}`)
      assert.equal(r.status, 200, r.text)
      return (r.json() as Array<{ Names: string[] }>).map((c) => c.Names[0] as string)
    }
    assert.deepEqual(await names('^abc.*z0$'), [`/${name}`])
    assert.deepEqual(await names('(\\w|\\w)*0'), [`/${name}`])
    assert.deepEqual(await names('xyz'), [`/${name}`])
    assert.deepEqual(await names(`/${name}`), [`/${name}`])
    assert.deepEqual(await names('(?=abc)'), []) // RE2 refuses look-ahead: nothing matches, as in dockerd
    assert.deepEqual(await names('^ABC'), [])

    assert.equal((await request(socket, 'POST', '/images/busybox/tag?repo=aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa&tag=latest')).status, 201)
    const refs = async (v: string): Promise<number> => {
      t0 = Date.now()
      const r = await request(socket, 'GET', `/images/json?filters=${q({ reference: [v] })}`)
      assert.ok(Date.now() - t0 < 2000, `reference filter took ${Date.now() - t0} ms`)
      assert.equal(r.status, 200, r.text)
      return (r.json() as unknown[]).length
    }
    assert.equal(await refs('*'.repeat(30) + 'b'), 0)
    assert.equal(await refs('a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b'), 0)
    assert.equal(await refs('busy*'), 1)
    assert.equal(await refs('busybox:lat?st'), 1)
    assert.equal(await refs('[ab]usybox'), 1)
    assert.equal(await refs('*/*'), 0)
    const bad = await request(socket, 'GET', `/images/json?filters=${q({ reference: ['[z'] })}`)
    assert.equal(bad.status, 400)
    assert.match((bad.json() as { message: string }).message, /syntax error in pattern/)
  })

  await t.test('create checks every field\'s JSON type: 400 with dockerd\'s wording, nothing created', async () => {
    const before = ((await request(socket, 'GET', '/containers/json?all=1')).json() as unknown[]).length
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ HostConfig: { Dns: '1.1.1.1' } }, 'string into Go struct field HostConfig.HostConfig.Dns of type []string'],
      [{ HostConfig: { ExtraHosts: 'a:1.2.3.4' } }, 'string into Go struct field HostConfig.HostConfig.ExtraHosts of type []string'],
      [{ HostConfig: { CapAdd: {} } }, 'object into Go struct field HostConfig.HostConfig.CapAdd of type string'],
      [{ HostConfig: { DnsSearch: [1] } }, 'number into Go struct field HostConfig.HostConfig.DnsSearch of type string'],
      [{ hostconfig: { dns: 'x' } }, 'string into Go struct field HostConfig.HostConfig.Dns of type []string'],
      [{ Env: 'A=1' }, 'string into Go struct field CreateRequest.Env of type []string'],
      [{ Tty: 'yes' }, 'string into Go struct field CreateRequest.Tty of type bool'],
      [{ Cmd: [1] }, 'array into Go struct field CreateRequest.Cmd of type string'],
      [{ Volumes: [] }, 'array into Go struct field CreateRequest.Volumes of type map[string]struct {}'],
      [{ ExposedPorts: { '80/tcp': 1 } }, 'number into Go struct field CreateRequest.ExposedPorts of type struct {}'],
      [{ Labels: { a: 1 } }, 'number into Go struct field CreateRequest.Labels of type string'],
      [{ StopTimeout: '1' }, 'string into Go struct field CreateRequest.StopTimeout of type int'],
      [{ Healthcheck: { Interval: '1s' } }, 'string into Go struct field HealthConfig.Healthcheck.Interval of type time.Duration'],
      [{ HostConfig: 'x' }, 'string into Go struct field CreateRequest.HostConfig of type container.HostConfig'],
      [{ HostConfig: { Memory: '1' } }, 'string into Go struct field HostConfig.HostConfig.Memory of type int64'],
      [{ HostConfig: { Memory: 1.5 } }, 'number 1.5 into Go struct field HostConfig.HostConfig.Memory of type int64'],
      [{ HostConfig: { BlkioWeight: 70000 } }, 'number 70000 into Go struct field HostConfig.HostConfig.BlkioWeight of type uint16'],
      [{ HostConfig: { RestartPolicy: { Name: 5 } } }, 'number into Go struct field RestartPolicy.HostConfig.RestartPolicy.Name of type container.RestartPolicyMode'],
      [{ HostConfig: { PortBindings: { '80/tcp': [{ HostPort: 80 }] } } }, 'number into Go struct field PortBinding.HostConfig.PortBindings.HostPort of type string'],
      [{ HostConfig: { PortBindings: { '80/tcp': { HostPort: '80' } } } }, 'object into Go struct field HostConfig.HostConfig.PortBindings of type []nat.PortBinding'],
      [{ HostConfig: { Ulimits: [{ Name: 'nofile', Soft: '1' }] } }, 'string into Go struct field Ulimit.HostConfig.Ulimits.Soft of type int64'],
      [{ HostConfig: { Mounts: [{ BindOptions: { Propagation: 1 } }] } }, 'number into Go struct field BindOptions.HostConfig.Mounts.BindOptions.Propagation of type mount.Propagation'],
      [{ HostConfig: { LogConfig: { Config: { a: 1 } } } }, 'number into Go struct field LogConfig.HostConfig.LogConfig.Config of type string'],
      [{ HostConfig: { Devices: [{ PathOnHost: 1 }] } }, 'number into Go struct field DeviceMapping.HostConfig.Devices.PathOnHost of type string'],
      [{ HostConfig: { Sysctls: { a: 1 } } }, 'number into Go struct field HostConfig.HostConfig.Sysctls of type string'],
      [{ HostConfig: { Init: 'true' } }, 'string into Go struct field HostConfig.HostConfig.Init of type bool'],
      [{ HostConfig: { ConsoleSize: [-1, 2] } }, 'number -1 into Go struct field HostConfig.HostConfig.ConsoleSize of type uint'],
      [{ NetworkingConfig: { EndpointsConfig: { n: { Aliases: 'a' } } } }, 'string into Go struct field EndpointSettings.NetworkingConfig.EndpointsConfig.Aliases of type []string'],
      [{ NetworkingConfig: { EndpointsConfig: { n: 'x' } } }, 'string into Go struct field NetworkingConfig.NetworkingConfig.EndpointsConfig of type network.EndpointSettings']
    ]
    for (const [body, message] of cases) {
      const r = await request(socket, 'POST', '/containers/create', { body: { Image: 'busybox', Cmd: ['true'], ...body } })
      assert.equal(r.status, 400, `${JSON.stringify(body)}: ${r.text}`)
      assert.equal((r.json() as { message: string }).message, `json: cannot unmarshal ${message}`)
    }
    assert.equal(((await request(socket, 'GET', '/containers/json?all=1')).json() as unknown[]).length, before)
    // well-typed values still decode: a string where Go takes a StrSlice, nulls as zero values
    const ok = await request(socket, 'POST', '/containers/create', { body: { Image: 'busybox', Cmd: 'true', HostConfig: { CapAdd: 'NET_ADMIN', Dns: null, Memory: null } } })
    assert.equal(ok.status, 201, ok.text)
  })

  await t.test('a container\'s /etc/passwd is read inside its rootfs: no host file through a symlink, no hang on a FIFO', async () => {
    const hostFile = join(dir, 'host-passwd')
    writeFileSync(hostFile, 'evil:x:4242:4242::/:/bin/sh\n')
    const id = await createContainer(socket, { Image: 'busybox', Cmd: ['sleep', '300'] })
    assert.equal((await request(socket, 'POST', `/containers/${id}/start`)).status, 204)
    const exec = async (cmd: string[], user = ''): Promise<{ status: number, text: string }> => {
      const c = await request(socket, 'POST', `/containers/${id}/exec`, { body: { Cmd: cmd, User: user, AttachStdout: true, AttachStderr: true } })
      assert.equal(c.status, 201, c.text)
      const execId = (c.json() as { Id: string }).Id
      const r = await request(socket, 'POST', `/exec/${execId}/start`, { body: { Detach: false, Tty: false } })
      // the output frames, or the error dockerd writes raw into the taken-over stream
      return { status: r.status, text: r.body.toString('latin1') }
    }
    // a link to a host file: its entries must not be seen (the link resolves inside the rootfs, where it is missing)
    assert.equal((await exec(['sh', '-c', `rm /etc/passwd && ln -s ${hostFile} /etc/passwd`])).status, 200)
    const viaLink = await exec(['id', '-u'], 'evil')
    assert.doesNotMatch(viaLink.text, /4242/)
    assert.match(viaLink.text, /unable to find user evil/)
    // numeric users still work without a passwd entry (runc itself then reads the file, inside the container)
    assert.match((await exec(['id', '-u'], '1234')).text, /1234\n/)
    // a FIFO: four execs (named and numeric users, and none) answer at once (no thread stuck in open, no runtime
    // stuck reading it: refused, 21.5), and the daemon keeps answering
    assert.equal((await exec(['sh', '-c', 'rm /etc/passwd && mkfifo /etc/passwd'])).status, 200)
    const t0 = Date.now()
    const four = await Promise.all(['nobody', '1234', '', 'nobody'].map(async (u) => await exec(['id', '-u'], u)))
    for (const r of four) assert.match(r.text, /\/etc\/passwd in the container is a fifo, not a regular file/)
    const inspect = await request(socket, 'GET', '/images/busybox/json')
    assert.equal(inspect.status, 200)
    const created = await request(socket, 'POST', '/containers/create', { body: { Image: 'busybox', Cmd: ['true'] } })
    assert.equal(created.status, 201)
    assert.ok(Date.now() - t0 < 10_000, `took ${Date.now() - t0} ms`)
    await request(socket, 'DELETE', `/containers/${id}?force=1`)
  })

  await t.test('seccomp: Docker\'s default profile in every container, unconfined on request or when privileged, a profile sent as JSON', async () => {
    const info = (await request(socket, 'GET', '/info')).json() as { SecurityOptions: string[] }
    assert.ok(info.SecurityOptions.includes('name=seccomp,profile=builtin'), JSON.stringify(info.SecurityOptions))
    const probe = ['sh', '-c', 'grep "^Seccomp:" /proc/self/status; unshare -U true && echo unshare-ok || echo unshare-refused; mkdir /tmp/d && echo mkdir-ok || echo mkdir-refused']
    const confined = await run(socket, probe)
    assert.match(confined.stdout, /^Seccomp:\s+2$/m)
    assert.match(confined.stdout, /unshare-refused/)
    assert.match(confined.stdout, /mkdir-ok/)
    const unconfined = await run(socket, probe, { HostConfig: { SecurityOpt: ['seccomp=unconfined'] } })
    assert.match(unconfined.stdout, /^Seccomp:\s+0$/m)
    assert.match(unconfined.stdout, /unshare-ok/)
    // privileged: no filter in the runtime spec (this machine's bounding set lacks a capability, so a privileged
    // container cannot start here to be looked at from inside)
    const specOf = (privileged: boolean): Record<string, unknown> => buildRuntimeSpec({
      rootfs: '/r', readonlyRootfs: false, hostname: 'h', process: { args: ['true'], env: [], cwd: '/', uid: 0, gid: 0, additionalGids: [], terminal: false },
      mounts: [], resources: {}, cgroupsPath: '/x', hostNofileHard: 1024, privileged, seccomp: { choice: { kind: 'default' }, arch: 'amd64', kernel: '6.1.0' }
    }, ['CAP_SYS_ADMIN', ...DEFAULT_CAPS])
    assert.equal((specOf(true).linux as Record<string, unknown>).seccomp, undefined)
    assert.equal(((specOf(false).linux as Record<string, unknown>).seccomp as { defaultAction: string }).defaultAction, 'SCMP_ACT_ERRNO')
    // CAP_SYS_ADMIN unlocks the namespace calls, as in Docker's profile
    const admin = await run(socket, probe, { HostConfig: { CapAdd: ['SYS_ADMIN'] } })
    assert.match(admin.stdout, /^Seccomp:\s+2$/m)
    assert.match(admin.stdout, /unshare-ok/)
    // a profile of one's own, as the CLI sends it for --security-opt seccomp=<file>: everything but mkdir
    const profile = { defaultAction: 'SCMP_ACT_ALLOW', syscalls: [{ names: ['mkdir', 'mkdirat'], action: 'SCMP_ACT_ERRNO', errnoRet: 1 }] }
    const custom = await run(socket, probe, { HostConfig: { SecurityOpt: [`seccomp=${JSON.stringify(profile)}`] } })
    assert.match(custom.stdout, /^Seccomp:\s+2$/m)
    assert.match(custom.stdout, /unshare-ok/)
    assert.match(custom.stdout, /mkdir-refused/)
    // what dockerd refuses is refused at create
    for (const [opt, message] of [['seccomp={"defaultAction":', /Decoding seccomp profile failed/], ['seccomp={"defaultAction":"SCMP_ACT_NOPE"}', /invalid defaultAction/], ['bogus', /invalid --security-opt/]] as const) {
      const r = await request(socket, 'POST', '/containers/create', { body: { Image: 'busybox', Cmd: ['true'], HostConfig: { SecurityOpt: [opt] } } })
      assert.equal(r.status, 400, r.text)
      assert.match((r.json() as { message: string }).message, message)
    }
  })

  await t.test('the docker CLI: --security-opt seccomp=<file> (the CLI sends the file\'s JSON) and seccomp=unconfined', { skip: hasDockerCli() ? false : 'the docker CLI is not installed' }, async () => {
    const file = join(dir, 'no-mkdir.json')
    writeFileSync(file, JSON.stringify({ defaultAction: 'SCMP_ACT_ALLOW', syscalls: [{ names: ['mkdir', 'mkdirat'], action: 'SCMP_ACT_ERRNO', errnoRet: 1 }] }))
    const custom = await dockerCli(socket, ['run', '--rm', '--security-opt', `seccomp=${file}`, 'busybox', 'sh', '-c', 'grep "^Seccomp:" /proc/self/status; mkdir /tmp/d && echo mkdir-ok || echo mkdir-refused'])
    assert.equal(custom.status, 0, custom.stderr)
    assert.match(custom.stdout, /^Seccomp:\s+2$/m)
    assert.match(custom.stdout, /mkdir-refused/)
    const open = await dockerCli(socket, ['run', '--rm', '--security-opt', 'seccomp=unconfined', 'busybox', 'grep', '^Seccomp:', '/proc/self/status'])
    assert.match(open.stdout, /^Seccomp:\s+0$/m)
    const info = await dockerCli(socket, ['info', '--format', '{{json .SecurityOptions}}'])
    assert.match(info.stdout, /name=seccomp,profile=builtin/)
  })

  await t.test('build COPY --chown reads /etc/passwd inside the image\'s layers, never through a link to a host directory', async () => {
    const hostEtc = join(dir, 'hostetc')
    mkdirSync(hostEtc, { recursive: true })
    writeFileSync(join(hostEtc, 'passwd'), 'evil:x:4242:4242::/:/bin/sh\n')
    writeFileSync(join(hostEtc, 'group'), 'evil:x:4242:\n')
    const layer = await collect(tarStreamOf(async (pack) => {
      await addEntry(pack, { name: 'etc', type: 'symlink', linkname: hostEtc, mode: 0o777 })
    }))
    const imported = await request(socket, 'POST', '/images/create?fromSrc=-&repo=linked&tag=latest', { raw: layer, headers: { 'Content-Type': 'application/x-tar' } })
    assert.match(imported.text, /"status":"sha256:/)
    const ctx = await collect(tarStreamOf(async (pack) => {
      await addEntry(pack, { name: 'Dockerfile', mode: 0o644 }, Buffer.from('FROM linked\nCOPY --chown=evil f /f\n'))
      await addEntry(pack, { name: 'f', mode: 0o644 }, Buffer.from('x'))
    }))
    const built = await request(socket, 'POST', '/build?t=chowned', { raw: ctx, headers: { 'Content-Type': 'application/x-tar' } })
    assert.match(built.text, /unable to find user evil|no such file: \/etc\/passwd/)
    assert.equal((await request(socket, 'GET', '/images/chowned/json')).status, 404)
  })
})
