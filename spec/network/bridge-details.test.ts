// Issue 11's remaining items with the docker CLI: --bip, a bridge container's default route and /etc files, IP
// ranges, addresses released and handed out again, the bridge named by the options, an unknown network at run, a
// gateway outside its subnet, curl from the host, and MASQUERADE out of a bridge to a namespace the test made
// (a host route beyond the gateway).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawn, spawnSync } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { once } from 'node:events'
import { startEngine, containerSkipReason, hasDockerCli, dockerCli, busyboxTar, uniqueNetworkOptions } from '../helpers/engine.js'
import { missingTool, dockerOk } from '../helpers/tools.js'
import { freeTcpPort, httpGet } from '../helpers/net.js'

const skip = containerSkipReason() ?? (hasDockerCli() ? null : 'the docker CLI is not installed') ??
  missingTool('iptables', ['-V']) ?? missingTool('ip', ['-V'], 'iproute2')

test('bridge details with the docker CLI', { skip: skip ?? false }, async (t) => {
  const n = uniqueNetworkOptions()
  const { socket, dir } = await startEngine(t, { options: n })
  const docker = async (...args: string[]): ReturnType<typeof dockerCli> => await dockerCli(socket, args)
  const ok = dockerOk(socket)
  assert.equal((await docker('import', busyboxTar(), 'busybox:latest')).status, 0)
  const sub = `10.${200 + Math.floor(Math.random() * 50)}.${Math.floor(Math.random() * 256)}`
  const tag = n.networkPrefix.slice(1).toLowerCase()

  await t.test('--bip: the default bridge\'s subnet and gateway; a container there: address, default route, /etc/hosts', async () => {
    const [gw, bits] = n.bip.split('/') as [string, string]
    const net24 = gw.replace(/\.1$/, '.0')
    assert.deepEqual(JSON.parse(await ok('network', 'inspect', '--format', '{{json .IPAM.Config}}', 'bridge')), [{ Subnet: `${net24}/${bits}`, Gateway: gw }])
    const out = await ok('run', '--rm', '--hostname', 'hb', 'busybox', 'sh', '-c', 'ip -o -4 addr show eth0; ip route; cat /etc/hosts')
    const ip = /inet (\d+\.\d+\.\d+\.\d+)\//.exec(out)?.[1] ?? ''
    assert.ok(ip.startsWith(net24.replace(/0$/, '')), out)
    assert.match(out, new RegExp(`^default via ${gw.replace(/\./g, '\\.')} dev eth0`, 'm'))
    assert.match(out, new RegExp(`^${ip.replace(/\./g, '\\.')}\\thb$`, 'm'))
    assert.match(out, /^127\.0\.0\.1\tlocalhost$/m)
    // the Linux bridge: its gateway address, up
    assert.match(spawnSync('ip', ['-o', '-4', 'addr', 'show', 'dev', n.defaultBridge], { encoding: 'utf8' }).stdout ?? '', new RegExp(`inet ${n.bip.replace(/\./g, '\\.')} `))
  })

  await t.test('--ip-range: addresses come from the range; released at disconnect and at rm, and handed out again', async () => {
    // as dockerd: three addresses, .129 to .131 (the range's first address is not handed out)
    await ok('network', 'create', '--subnet', `${sub}.0/24`, '--ip-range', `${sub}.128/30`, 'ranged')
    const id = (await ok('network', 'inspect', '--format', '{{.Id}}', 'ranged')).trim()
    const ipOf = async (name: string): Promise<string> => (await ok('inspect', '--format', '{{.NetworkSettings.Networks.ranged.IPAddress}}', name)).trim()
    const taken: string[] = []
    for (const name of ['r1', 'r2', 'holder']) {
      await ok('run', '-d', '--name', name, '--network', 'ranged', 'busybox', 'sleep', '60')
      taken.push(await ipOf(name))
    }
    assert.deepEqual([...taken].sort(), [129, 130, 131].map((x) => `${sub}.${x}`))
    const more = await docker('run', '--rm', '--network', 'ranged', 'busybox', 'true')
    assert.notEqual(more.status, 0)
    assert.match(more.stderr, new RegExp(`no available IPv4 addresses on this network's address pools: ranged \\(${id}\\)`))
    // a disconnect frees the holder's address: the only free one, so a new container gets it, and gives it back at rm
    const held = await ipOf('holder')
    await ok('network', 'disconnect', 'ranged', 'holder')
    assert.match(await ok('run', '--rm', '--network', 'ranged', 'busybox', 'ip', '-o', '-4', 'addr', 'show', 'eth0'), new RegExp(`inet ${held.replace(/\./g, '\\.')}/24`))
    await ok('network', 'connect', 'ranged', 'holder')
    assert.equal(await ipOf('holder'), held)
    // rm -f of a running container frees its address
    const r1 = await ipOf('r1')
    await ok('rm', '-f', 'r1')
    await ok('run', '-d', '--name', 'r4', '--network', 'ranged', 'busybox', 'sleep', '60')
    assert.equal(await ipOf('r4'), r1)
    await ok('rm', '-f', 'r2', 'r4', 'holder')
    await ok('network', 'rm', 'ranged')
  })

  await t.test('-o com.docker.network.bridge.name: the Linux bridge has that name, the veths are on it, it goes with the network', async () => {
    const name = `nb${tag}`
    const since = Math.floor(Date.now() / 1000) - 1
    await ok('network', 'create', '--subnet', `${sub}.0/26`, '-o', `com.docker.network.bridge.name=${name}`, 'named')
    await ok('run', '-d', '--name', 'onnamed', '--network', 'named', 'busybox', 'sleep', '60')
    const members = spawnSync('ip', ['-o', 'link', 'show', 'master', name], { encoding: 'utf8' }).stdout ?? ''
    assert.equal(members.trim().split('\n').filter((l) => l !== '').length, 1, members)
    assert.equal((await ok('network', 'inspect', '--format', '{{index .Options "com.docker.network.bridge.name"}}', 'named')).trim(), name)
    await ok('rm', '-f', 'onnamed')
    await ok('network', 'rm', 'named')
    assert.notEqual(spawnSync('ip', ['link', 'show', 'dev', name]).status, 0)
    // its events, as `docker events` shows them
    const ev = await ok('events', '--since', String(since), '--until', String(Math.floor(Date.now() / 1000) + 1), '--filter', 'type=network', '--filter', 'network=named', '--format', '{{.Action}}')
    assert.deepEqual(ev.trim().split('\n'), ['create', 'connect', 'disconnect', 'destroy'])
  })

  await t.test('NetworkingConfig at create: two --network flags, an interface on each, /etc/hosts with the first\'s address', async () => {
    await ok('network', 'create', '--subnet', `${sub}.64/28`, 'm1')
    await ok('network', 'create', '--subnet', `${sub}.80/28`, 'm2')
    const out = await ok('run', '--rm', '--name', 'multi', '--network', 'm1', '--network', 'm2', 'busybox', 'sh', '-c', 'ip -o -4 addr; cat /etc/hosts')
    assert.match(out, new RegExp(`eth0\\s+inet ${sub.replace(/\./g, '\\.')}\\.66/28`))
    assert.match(out, new RegExp(`eth1\\s+inet ${sub.replace(/\./g, '\\.')}\\.82/28`))
    assert.match(out, new RegExp(`^${sub.replace(/\./g, '\\.')}\\.66\\t`, 'm'))
    await ok('network', 'rm', 'm1', 'm2')
  })

  await t.test('bad input: an unknown network at run, a gateway outside its subnet (dockerd\'s errors)', async () => {
    const r = await docker('run', '--rm', '--network', 'nosuch', 'busybox', 'true')
    assert.notEqual(r.status, 0)
    assert.match(r.stderr, /network nosuch not found/)
    assert.equal((await ok('ps', '-aq')).trim(), '')
    // as dockerd: the create succeeds (a 404 there would send the CLI pulling the image), the start fails; a network
    // of that name created since is the one the start takes
    await ok('create', '--name', 'waits', '--network', 'latenet', 'busybox', 'true')
    assert.match((await docker('start', 'waits')).stderr, /network latenet not found/)
    await ok('network', 'create', '--subnet', `${sub}.96/28`, 'latenet')
    await ok('start', '-a', 'waits')
    await ok('rm', 'waits')
    await ok('network', 'rm', 'latenet')
    const g = await docker('network', 'create', '--subnet', `${sub}.0/26`, '--gateway', `${sub}.100`, 'badgw')
    assert.notEqual(g.status, 0)
    assert.match(g.stderr, new RegExp(`${sub.replace(/\./g, '\\.')}\\.100`))
    assert.doesNotMatch((await ok('network', 'ls', '--format', '{{.Name}}')), /badgw/)
  })

  await t.test('curl from the host reaches a published port', { skip: spawnSync('curl', ['--version']).status === 0 ? false : 'curl is not installed' }, async () => {
    const port = await freeTcpPort()
    await ok('run', '-d', '--name', 'web', '-p', `${port}:80`, 'busybox', 'httpd', '-f', '-p', '80', '-h', '/etc')
    const id = (await ok('inspect', '--format', '{{.Id}}', 'web')).trim()
    let body = ''
    for (let i = 0; i < 50 && body === ''; i++) body = await httpGet(port, '/hostname').catch(async () => { await new Promise((resolve) => setTimeout(resolve, 50)); return '' })
    const c = spawnSync('curl', ['-s', '--max-time', '5', `http://127.0.0.1:${port}/hostname`], { encoding: 'utf8' })
    assert.equal(c.stdout, `${id.slice(0, 12)}\n`)
    await ok('rm', '-f', 'web')
  })

  await t.test('outbound beyond the gateway: a host route to a namespace the test made; the far end sees the host\'s address (MASQUERADE)', async (tt) => {
    // the "outside": a namespace with a veth to the host, on 198.18.x.0/30, and a TCP server answering with the peer's address
    const nsFile = join(dir, `ext${tag}`)
    writeFileSync(nsFile, '')
    const hostIf = `xh${tag}`
    const x = Math.floor(Math.random() * 256)
    const [hostAddr, farAddr] = [`198.18.${x}.1`, `198.18.${x}.2`]
    assert.equal(spawnSync('unshare', [`--net=${nsFile}`, 'true']).status, 0)
    tt.after(() => {
      spawnSync('ip', ['link', 'del', 'dev', hostIf])
      spawnSync('umount', ['-l', nsFile])
    })
    const inNs = (args: string[]): number | null => spawnSync('nsenter', [`--net=${nsFile}`, ...args]).status
    assert.equal(inNs(['ip', 'link', 'add', 'eth9', 'type', 'veth', 'peer', 'name', hostIf, 'netns', String(process.pid)]), 0)
    assert.equal(inNs(['ip', 'addr', 'add', `${farAddr}/30`, 'dev', 'eth9']), 0)
    assert.equal(inNs(['ip', 'link', 'set', 'dev', 'eth9', 'up']), 0)
    assert.equal(inNs(['ip', 'link', 'set', 'dev', 'lo', 'up']), 0)
    assert.equal(spawnSync('ip', ['addr', 'add', `${hostAddr}/30`, 'dev', hostIf]).status, 0)
    assert.equal(spawnSync('ip', ['link', 'set', 'dev', hostIf, 'up']).status, 0)
    const server = spawn('nsenter', [`--net=${nsFile}`, process.execPath, '-e',
      `require('http').createServer((q, s) => { s.end(q.socket.remoteAddress) }).listen(8080, '${farAddr}', () => { console.log('ready') })`], { stdio: ['ignore', 'pipe', 'inherit'] })
    tt.after(async () => { if (server.exitCode === null) { server.kill('SIGKILL'); await once(server, 'exit') } })
    await once(server.stdout, 'data')
    // (busybox's static wget crashes with -T: no timeout option here)
    const seen = await ok('run', '--rm', 'busybox', 'wget', '-qO-', `http://${farAddr}:8080/`)
    assert.equal(seen, hostAddr)
  })
})
