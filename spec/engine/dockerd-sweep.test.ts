// What a side-by-side sweep against dockerd found Berth answering differently, through the docker CLI and raw HTTP:
// list filters and their refusals, and error answers. Each assertion is what dockerd (28, the API version Berth
// serves; where 20.10 answers the same, checked against it too) gives.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { dockerOk } from '../helpers/tools.js'
import { startEngine, containerSkipReason, hasDockerCli, dockerCli, importBusybox, request, busyboxTar } from '../helpers/engine.js'
import { freeTcpPort } from '../helpers/net.js'

const skip = containerSkipReason() ?? (hasDockerCli() ? null : 'the docker CLI is not installed')

test('dockerd sweep: list filters and error answers', { skip: skip ?? false }, async (t) => {
  const { socket } = await startEngine(t)
  await importBusybox(socket)
  const docker = async (...args: string[]): ReturnType<typeof dockerCli> => await dockerCli(socket, args)
  const ok = dockerOk(socket)
  const lines = (s: string): string[] => s.split('\n').filter((x) => x !== '').sort()

  await t.test('an imported image says where it came from, as dockerd: Comment and history "Imported from -"', async () => {
    assert.equal(await ok('image', 'inspect', '-f', '{{.Comment}}', 'busybox'), 'Imported from -\n')
    assert.equal(await ok('history', '--format', '{{.Comment}}', 'busybox'), 'Imported from -\n')
    const imp = await docker('import', '--message', 'from a tar', busyboxTar(), 'bbmsg:1')
    assert.equal(imp.status, 0, imp.stderr)
    assert.equal(await ok('image', 'inspect', '-f', '{{.Comment}}', 'bbmsg:1'), 'from a tar\n')
    await ok('rmi', 'bbmsg:1')
  })

  await t.test('images REPO and --filter reference= list only the matching names of an image', async () => {
    await ok('tag', 'busybox', 'sw/img:v1')
    await ok('tag', 'busybox', 'sw/img:v2')
    const rows = async (...args: string[]): Promise<string[]> => lines(await ok('images', '--format', '{{.Repository}}:{{.Tag}}', ...args))
    assert.deepEqual(await rows(), ['busybox:latest', 'sw/img:v1', 'sw/img:v2'])
    assert.deepEqual(await rows('busybox'), ['busybox:latest'])
    assert.deepEqual(await rows('sw/img:v2'), ['sw/img:v2'])
    assert.deepEqual(await rows('--filter', 'reference=sw/*'), ['sw/img:v1', 'sw/img:v2'])
    assert.deepEqual(await rows('--filter', 'reference=busy*'), ['busybox:latest'])
    assert.deepEqual(await rows('nothing-here'), [])
    const r = await request(socket, 'GET', `/images/json?filters=${encodeURIComponent(JSON.stringify({ reference: ['sw/img:v1'] }))}`)
    const list = r.json() as Array<{ RepoTags: string[], RepoDigests: string[] }>
    assert.equal(list.length, 1)
    assert.deepEqual(list[0]?.RepoTags, ['sw/img:v1'])
    assert.deepEqual(list[0]?.RepoDigests, [])
    await ok('rmi', 'sw/img:v1', 'sw/img:v2')
  })

  await t.test('ps --filter publish= matches the host port, expose= the container port', async () => {
    const hostPort = await freeTcpPort()
    await ok('run', '-d', '--name', 'pub', '-p', `127.0.0.1:${hostPort}:80`, '--expose', '7000/udp', 'busybox', 'sleep', '60')
    await ok('create', '--name', 'pub-created', '--expose', '90', 'busybox', 'true')
    const names = async (...filters: string[]): Promise<string[]> => lines(await ok('ps', '-a', ...filters.flatMap((f) => ['--filter', f]), '--format', '{{.Names}}'))
    assert.deepEqual(await names(`publish=${hostPort}`), ['pub'])
    assert.deepEqual(await names(`publish=${hostPort}/tcp`), ['pub'])
    assert.deepEqual(await names(`publish=${hostPort - 1}-${hostPort + 1}`), ['pub'])
    assert.deepEqual(await names(`publish=${hostPort}/udp`), [])
    assert.deepEqual(await names('publish=80'), [])
    assert.deepEqual(await names('expose=80'), ['pub'])
    assert.deepEqual(await names('expose=80/tcp'), ['pub'])
    assert.deepEqual(await names(`expose=${hostPort}`), [])
    assert.deepEqual(await names('expose=7000/udp'), ['pub'])
    assert.deepEqual(await names('expose=7000'), [])
    // a container that does not run lists its exposed ports with no public port: expose= sees them there too
    assert.deepEqual(await names('expose=85-95'), ['pub-created'])
    for (const [filter, message] of [['publish=127.0.0.1:80', "filter for 'publish' should not contain ':': 127.0.0.1:80"], ['expose=abc', 'error while looking up for expose abc: strconv.ParseUint: parsing "abc": invalid syntax'], ['publish=70000', 'error while looking up for publish 70000: strconv.ParseUint: parsing "70000": value out of range'], ['expose=90-80', 'error while looking up for expose 90-80: invalid range specified for port: 90-80']]) {
      const r = await request(socket, 'GET', `/containers/json?all=1&filters=${encodeURIComponent(JSON.stringify({ [filter.split('=')[0] as string]: [filter.slice(filter.indexOf('=') + 1)] }))}`)
      assert.equal(r.status, 400, filter)
      assert.equal((r.json() as { message: string }).message, message)
    }
    await ok('rm', '-f', 'pub', 'pub-created')
  })

  await t.test('filter values dockerd refuses are a 400 with its wording, not an empty or unfiltered list', async () => {
    await ok('create', '--name', 'plain', 'busybox', 'true')
    const refused = async (what: string, args: string[], message: string): Promise<void> => {
      const r = await docker(...args)
      assert.equal(r.status, 1, `${what}: ${r.stdout}`)
      assert.equal(r.stderr.trim(), `Error response from daemon: ${message}`, what)
    }
    await refused('status', ['ps', '-a', '--filter', 'status=bogus'], "invalid filter 'status=bogus': invalid value for state (bogus): must be one of created, running, paused, restarting, removing, exited, dead")
    await refused('health', ['ps', '--filter', 'health=bogus'], "invalid filter 'health=bogus': invalid value for health (bogus): must be one of none, starting, healthy, unhealthy")
    await refused('exited', ['ps', '-a', '--filter', 'exited=x'], 'invalid filter \'exited=x\': strconv.Atoi: parsing "x": invalid syntax')
    await refused('is-task', ['ps', '-a', '--filter', 'is-task=maybe'], "invalid filter 'is-task=[maybe]'")
    await refused('images dangling', ['images', '--filter', 'dangling=maybe'], "invalid filter 'dangling=[maybe]'")
    await refused('volumes dangling', ['volume', 'ls', '--filter', 'dangling=maybe'], "invalid filter 'dangling=[maybe]'")
    await refused('networks dangling', ['network', 'ls', '--filter', 'dangling=maybe'], 'invalid value for filter \'dangling\', must be "true" (or "1"), or "false" (or "0")')
    await refused('networks dangling twice', ['network', 'ls', '--filter', 'dangling=true', '--filter', 'dangling=false'], 'got more than one value for filter key "dangling"')
    // (the CLI's image prune adds dangling=true to what it is given, so only the API shows prune's refusal)
    const prune = await request(socket, 'POST', `/images/prune?filters=${encodeURIComponent(JSON.stringify({ dangling: ['maybe'] }))}`)
    assert.equal(prune.status, 400)
    assert.deepEqual(prune.json(), { message: "invalid filter 'dangling=[maybe]'" })
    // what they accept still filters
    assert.deepEqual(lines(await ok('ps', '-a', '--filter', 'status=created', '--format', '{{.Names}}')), ['plain'])
    assert.deepEqual(lines(await ok('ps', '-a', '--filter', 'is-task=false', '--format', '{{.Names}}')), ['plain'])
    assert.deepEqual(lines(await ok('ps', '-a', '--filter', 'is-task=true', '--format', '{{.Names}}')), [])
    assert.deepEqual(lines(await ok('images', '--filter', 'dangling=false', '--format', '{{.Repository}}')), ['busybox'])
    await ok('rm', 'plain')
  })

  await t.test('network ls and volume ls --filter name= (and network id=) match as dockerd: exactly or as a regexp', async () => {
    await ok('network', 'create', 'swnet')
    await ok('network', 'create', 'other-swnet')
    await ok('volume', 'create', 'swvol')
    await ok('volume', 'create', 'other-swvol')
    const nets = async (f: string): Promise<string[]> => lines(await ok('network', 'ls', '--filter', f, '--format', '{{.Name}}'))
    const vols = async (...f: string[]): Promise<string[]> => lines(await ok('volume', 'ls', ...f.flatMap((x) => ['--filter', x]), '--format', '{{.Name}}'))
    assert.deepEqual(await nets('name=swnet'), ['other-swnet', 'swnet'])
    assert.deepEqual(await nets('name=^sw'), ['swnet'])
    assert.deepEqual(await nets('name=^swnet$'), ['swnet'])
    assert.deepEqual(await nets('name=s.net$'), ['other-swnet', 'swnet'])
    const id = (await ok('network', 'inspect', '-f', '{{.Id}}', 'swnet')).trim()
    assert.deepEqual(await nets(`id=^${id.slice(0, 8)}`), ['swnet'])
    assert.deepEqual(await vols('name=swvol'), ['other-swvol', 'swvol'])
    assert.deepEqual(await vols('name=^sw'), ['swvol'])
    // several values: any of them (dockerd's Match), not all
    assert.deepEqual(await vols('name=^swvol$', 'name=^other'), ['other-swvol', 'swvol'])
    await ok('network', 'rm', 'swnet', 'other-swnet')
    await ok('volume', 'rm', 'swvol', 'other-swvol')
  })

  await t.test('create and rename refusals: an Env entry without a name, a bad port, a taken name', async () => {
    const create = async (body: Record<string, unknown>): Promise<{ status: number, message: string }> => {
      const r = await request(socket, 'POST', '/containers/create', { body: { Image: 'busybox', Cmd: ['true'], ...body } })
      return { status: r.status, message: (r.json() as { message?: string }).message ?? '' }
    }
    assert.deepEqual(await create({ Env: ['A=1', '=x'] }), { status: 400, message: 'invalid environment variable: =x' })
    for (const body of [{}, { HostConfig: {} }]) {
      const r = await request(socket, 'POST', '/containers/create', { body })
      assert.deepEqual([r.status, (r.json() as { message: string }).message], [400, 'config cannot be empty in order to create a container'], JSON.stringify(body))
    }
    assert.deepEqual(await create({ Env: [''] }), { status: 400, message: 'invalid environment variable: ' })
    const cli = await docker('run', '--rm', '-e', '=x', 'busybox', 'true')
    assert.equal(cli.status, 125)
    assert.match(cli.stderr, /invalid environment variable: =x/)
    assert.deepEqual(await create({ HostConfig: { PortBindings: { 'abc/tcp': [{ HostPort: '1' }] } } }), { status: 400, message: 'invalid port specification: "abc"' })
    assert.deepEqual(await create({ HostConfig: { PortBindings: { '8000-8001/tcp': [] } } }), { status: 400, message: 'invalid port specification: "8000-8001"' })
    await ok('create', '--name', 'first', 'busybox', 'true')
    const id = (await ok('create', '--name', 'second', 'busybox', 'true')).trim()
    const r = await docker('rename', 'first', 'second')
    assert.equal(r.status, 1)
    assert.equal(r.stderr.split('\n')[0], `Error response from daemon: Error when allocating new name: Conflict. The container name "/second" is already in use by container "${id}". You have to remove (or rename) that container to be able to reuse that name.`)
    await ok('rm', 'first', 'second')
    assert.equal(lines(await ok('ps', '-aq')).length, 0)
  })

  await t.test('exec and attach events carry the container labels (docker events --filter label= sees them), exec actions dockerd\'s text', async () => {
    const since = String(Math.floor(Date.now() / 1000) - 1)
    await ok('run', '-d', '--name', 'evl', '--label', 'com.example.project=p1', 'busybox', 'sleep', '60')
    await ok('exec', 'evl', 'true')
    await ok('exec', 'evl', 'sh', '-c', 'exit 0')
    const attach = await docker('run', '--name', 'eva', '--label', 'com.example.project=p1', 'busybox', 'true')
    assert.equal(attach.status, 0, attach.stderr)
    const until = String(Math.floor(Date.now() / 1000) + 1)
    const ev = await ok('events', '--since', since, '--until', until, '--filter', 'label=com.example.project=p1', '--format', '{{.Actor.Attributes.name}} {{.Action}}|')
    const actions = ev.split('|\n').filter((x) => x !== '')
    for (const want of ['evl exec_create: true ', 'evl exec_start: true ', 'evl exec_die', 'evl exec_create: sh -c exit 0', 'evl exec_start: sh -c exit 0', 'eva attach', 'eva start', 'eva die']) {
      assert.ok(actions.includes(want), `${want} in ${JSON.stringify(actions)}`)
    }
    await ok('rm', '-f', 'evl', 'eva')
  })

  await t.test('stop logs a kill event per signal it sends, as dockerd: the stop signal, then 9 when the time is up', async () => {
    const since = String(Math.floor(Date.now() / 1000) - 1)
    await ok('run', '-d', '--name', 'evs', 'busybox', 'sh', '-c', 'trap "exit 0" TERM; sleep 60 & wait')
    await ok('stop', '-t', '5', 'evs')
    // one that ignores its stop signal gets the stop's kill after the timeout
    await ok('run', '-d', '--name', 'evk', '--stop-signal', 'SIGUSR1', 'busybox', 'sh', '-c', 'trap "" USR1; sleep 60 & wait')
    await ok('stop', '-t', '1', 'evk')
    const until = String(Math.floor(Date.now() / 1000) + 1)
    const seq = async (name: string): Promise<string[]> => (await ok('events', '--since', since, '--until', until, '--filter', `container=${name}`, '--filter', 'event=kill', '--filter', 'event=die', '--filter', 'event=stop', '--format', '{{.Action}}{{with .Actor.Attributes.signal}} {{.}}{{end}}')).split('\n').filter((x) => x !== '')
    assert.deepEqual(await seq('evs'), ['kill 15', 'die', 'stop'])
    assert.deepEqual(await seq('evk'), ['kill 10', 'kill 9', 'die', 'stop'])
    await ok('rm', 'evs', 'evk')
  })

  await t.test('inspect HostConfig has every key Go\'s HostConfig always has, with the defaults dockerd writes at create', async () => {
    const hostConfig = async (id: string): Promise<Record<string, unknown>> => ((await request(socket, 'GET', `/containers/${id}/json`)).json() as { HostConfig: Record<string, unknown> }).HostConfig
    // a raw API create naming nothing (dockerode, docker-py)
    const raw = await request(socket, 'POST', '/containers/create?name=hc-raw', { body: { Image: 'busybox', Cmd: ['true'] } })
    assert.equal(raw.status, 201)
    const hc = await hostConfig('hc-raw')
    assert.deepEqual({ PidMode: hc.PidMode, UTSMode: hc.UTSMode, UsernsMode: hc.UsernsMode, SecurityOpt: hc.SecurityOpt, GroupAdd: hc.GroupAdd, OomScoreAdj: hc.OomScoreAdj, Ulimits: hc.Ulimits, MemorySwappiness: hc.MemorySwappiness, OomKillDisable: hc.OomKillDisable, ShmSize: hc.ShmSize, CgroupnsMode: hc.CgroupnsMode },
      { PidMode: '', UTSMode: '', UsernsMode: '', SecurityOpt: null, GroupAdd: null, OomScoreAdj: 0, Ulimits: null, MemorySwappiness: null, OomKillDisable: false, ShmSize: 67108864, CgroupnsMode: 'host' })
    assert.deepEqual(hc.MaskedPaths, ['/proc/asound', '/proc/acpi', '/proc/interrupts', '/proc/kcore', '/proc/keys', '/proc/latency_stats', '/proc/timer_list', '/proc/timer_stats', '/proc/sched_debug', '/proc/scsi', '/sys/firmware', '/sys/devices/virtual/powercap'])
    assert.deepEqual(hc.ReadonlyPaths, ['/proc/bus', '/proc/fs', '/proc/irq', '/proc/sys', '/proc/sysrq-trigger'])
    for (const [key, zero] of Object.entries({ ContainerIDFile: '', VolumeDriver: '', Links: null, PublishAllPorts: false, CgroupParent: '', BlkioWeight: 0, BlkioWeightDevice: null, CpuRealtimePeriod: 0, CpusetCpus: '', CpusetMems: '', Devices: null, DeviceCgroupRules: null, DeviceRequests: null, MemoryReservation: 0, CpuCount: 0, IOMaximumBandwidth: 0 })) {
      assert.ok(key in hc, `HostConfig.${key}`)
      assert.deepEqual(hc[key], zero, key)
    }
    for (const omitempty of ['Init', 'Tmpfs', 'Sysctls', 'KernelMemory', 'StorageOpt', 'Annotations']) assert.ok(!(omitempty in hc), omitempty)
    // the CLI sends MemorySwappiness -1 and CgroupnsMode "": no setting, shown as dockerd shows it
    await ok('create', '--name', 'hc-cli', 'busybox', 'true')
    assert.equal(await ok('inspect', '-f', '{{json .HostConfig.MemorySwappiness}} {{.HostConfig.ShmSize}} {{.HostConfig.CgroupnsMode}} {{len .HostConfig.MaskedPaths}}', 'hc-cli'), 'null 67108864 host 12\n')
    await ok('create', '--name', 'hc-priv', '--privileged', '--shm-size', '1m', '--memory-swappiness', '10', 'busybox', 'true')
    assert.equal(await ok('inspect', '-f', '{{json .HostConfig.MaskedPaths}} {{json .HostConfig.ReadonlyPaths}} {{.HostConfig.ShmSize}} {{.HostConfig.MemorySwappiness}}', 'hc-priv'), 'null null 1048576 10\n')
    // what runs is what inspect says: the masked paths and the size of /dev/shm
    const run = await docker('run', '--rm', 'busybox', 'sh', '-c', 'grep -c " /proc/bus proc ro," /proc/mounts; df -k /dev/shm | tail -1')
    assert.equal(run.status, 0, run.stderr)
    assert.match(run.stdout, /^1\n\S+\s+65536\s/)
    await ok('rm', 'hc-raw', 'hc-cli', 'hc-priv')
  })

  await t.test('an image reference that does not parse is a 400 with distribution\'s wording, not a missing image', async () => {
    for (const [ref, message] of [
      ['Bad:Ref', 'invalid reference format: repository name (library/Bad) must be lowercase'],
      ['localhost:5000/Foo', 'invalid reference format: repository name (Foo) must be lowercase'],
      ['bad::x', 'invalid reference format']
    ]) {
      const create = await request(socket, 'POST', '/v1.50/containers/create', { body: { Image: ref, Cmd: ['true'] } })
      assert.equal(create.status, 400, ref)
      assert.deepEqual(create.json(), { message }, ref)
      const inspect = await request(socket, 'GET', `/v1.50/images/${encodeURIComponent(ref)}/json`)
      assert.equal(inspect.status, 400, ref)
      assert.deepEqual(inspect.json(), { message }, ref)
      assert.match((await docker('rmi', ref)).stderr, new RegExp(message.replace(/[()]/g, '\\$&')))
    }
    // a name that parses is looked for, and a short ID still finds its image
    assert.equal((await request(socket, 'GET', '/v1.50/images/nosuch/json')).status, 404)
    const id = (await ok('image', 'inspect', '-f', '{{.Id}}', 'busybox')).trim()
    assert.equal((await request(socket, 'GET', `/v1.50/images/${id.slice(7, 19)}/json`)).status, 200)
  })
})

