// Issue 11's items that network-cli.test.ts does not cover, with the docker CLI against an engine whose host resolver
// is a fake DNS server on a loopback address: forwarding to the host's resolvers and to a container's own --dns,
// --dns-search/--dns-option, aliases given at connect resolving live, network events at start and stop, the
// id/dangling filters, auxiliary addresses, --default-address-pool, `docker system prune`, a host port free again
// after stop, --link errors, and --icc=false.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { startEngine, containerSkipReason, hasDockerCli, dockerCli, busyboxTar, tmpDir, cleanupDir } from '../helpers/engine.js'
import { missingTool, dockerOk } from '../helpers/tools.js'
import { httpGet, freeTcpPort, fakeDns, type FakeDns } from '../helpers/net.js'

const skip = containerSkipReason() ?? (hasDockerCli() ? null : 'the docker CLI is not installed') ??
  missingTool('iptables', ['-V']) ?? missingTool('ip', ['-V'], 'iproute2')

/** The "host's" DNS server on a free 127.x.y.z:53, answering outside.example with 10.1.2.3. */
async function fakeUpstream (): Promise<FakeDns> {
  for (let i = 0; ; i++) {
    const address = `127.${1 + Math.floor(Math.random() * 250)}.${Math.floor(Math.random() * 256)}.${1 + Math.floor(Math.random() * 250)}`
    try { return await fakeDns(address, { 'outside.example': '10.1.2.3' }) } catch (err) { if (i === 9) throw err }
  }
}

test('issue 11 checklist: DNS forwarding, resolv.conf options, live aliases, events, filters, IPAM, prune, ports, links', { skip: skip ?? false }, async (t) => {
  const upstream = await fakeUpstream()
  t.after(() => { upstream.close() })
  const etc = tmpDir('berth-resolv-')
  t.after(async () => { await cleanupDir(etc) })
  const resolvConf = join(etc, 'resolv.conf')
  writeFileSync(resolvConf, `nameserver ${upstream.address}\nsearch corp.example\n`)
  const a = 200 + Math.floor(Math.random() * 50)
  const b = Math.floor(Math.random() * 256)
  const { socket } = await startEngine(t, { options: { resolvConf, defaultAddressPools: [{ base: `10.${a}.${b}.0/24`, size: 28 }] } })
  const docker = async (...args: string[]): ReturnType<typeof dockerCli> => await dockerCli(socket, args)
  const ok = dockerOk(socket)
  assert.equal((await docker('import', busyboxTar(), 'busybox:latest')).status, 0)

  await t.test('--default-address-pool: networks without a subnet take the pools\' /28s in turn; inspect as dockerd', async () => {
    await ok('network', 'create', 'p1')
    await ok('network', 'create', 'p2')
    const cfg = async (n: string): Promise<unknown> => JSON.parse(await ok('network', 'inspect', '--format', '{{json .IPAM.Config}}', n))
    assert.deepEqual(await cfg('p1'), [{ Subnet: `10.${a}.${b}.0/28`, Gateway: `10.${a}.${b}.1` }])
    assert.deepEqual(await cfg('p2'), [{ Subnet: `10.${a}.${b}.16/28`, Gateway: `10.${a}.${b}.17` }])
    await ok('network', 'rm', 'p1', 'p2')
  })

  await t.test('auxiliary addresses and the gateway are never handed out; a static IP on one is refused', async () => {
    await ok('network', 'create', '--subnet', `10.${a}.${b}.32/29`, '--aux-address', `r=10.${a}.${b}.34`, 'aux')
    // dockerd shows a gateway in the IPAM config only when one was asked for
    assert.deepEqual(JSON.parse(await ok('network', 'inspect', '--format', '{{json .IPAM.Config}}', 'aux')), [{ Subnet: `10.${a}.${b}.32/29`, AuxiliaryAddresses: { r: `10.${a}.${b}.34` } }])
    assert.match(await ok('run', '--rm', '--network', 'aux', 'busybox', 'ip', '-o', '-4', 'addr', 'show', 'eth0'), new RegExp(`inet 10\\.${a}\\.${b}\\.35/29`))
    // a start that fails removes a --rm container at once (the client waits for the removal)
    const r = await docker('run', '--rm', '--network', 'aux', '--ip', `10.${a}.${b}.34`, 'busybox', 'true')
    assert.match(r.stderr, /Address already in use/)
    assert.equal((await ok('ps', '-aq')).trim(), '')
    await ok('network', 'rm', 'aux')
  })

  await t.test('resolv.conf: --dns-search and --dns-option on a user network and the default bridge; host mode keeps loopback servers', async () => {
    await ok('network', 'create', '--subnet', `10.${a}.${b}.64/27`, 'app')
    // the container's own resolver (dockerd's 127.0.0.11), whatever the network
    const user = await ok('run', '--rm', '--network', 'app', '--dns-search', 'foo.example', '--dns-option', 'ndots:3', 'busybox', 'cat', '/etc/resolv.conf')
    assert.deepEqual(user.trim().split('\n').sort(), ['nameserver 127.0.0.11', 'options ndots:3', 'search foo.example'])
    assert.deepEqual((await ok('run', '--rm', '--network', 'app', 'busybox', 'cat', '/etc/resolv.conf')).trim().split('\n').sort(), ['nameserver 127.0.0.11', 'options ndots:0', 'search corp.example'])
    // the host's only server is on loopback, unreachable from the bridge: dockerd's fallback servers
    const bridge = await ok('run', '--rm', '--dns-search', 'foo.example', '--dns-option', 'ndots:3', 'busybox', 'cat', '/etc/resolv.conf')
    assert.deepEqual(bridge.trim().split('\n').sort(), ['nameserver 8.8.4.4', 'nameserver 8.8.8.8', 'options ndots:3', 'search foo.example'])
    assert.match(await ok('run', '--rm', '--network', 'host', 'busybox', 'cat', '/etc/resolv.conf'), new RegExp(`^nameserver ${upstream.address.replace(/\./g, '\\.')}$`, 'm'))
  })

  await t.test('the embedded DNS server forwards other names to the host\'s resolvers (a loopback one too)', async () => {
    const out = await ok('run', '--rm', '--network', 'app', 'busybox', 'nslookup', 'outside.example')
    assert.match(out, /Address(?: 1)?:\s+10\.1\.2\.3/)
    assert.ok(upstream.queries.some((q) => q.replace(/\.$/, '') === 'outside.example'))
    const nx = await docker('run', '--rm', '--network', 'app', 'busybox', 'nslookup', 'nothing.example')
    assert.notEqual(nx.status, 0)
    // an Internal network's server does not forward (no way out), but answers its own names
    await ok('network', 'create', '--internal', '--subnet', `10.${a}.${b}.96/28`, 'inner')
    const before = upstream.queries.length
    assert.notEqual((await docker('run', '--rm', '--network', 'inner', 'busybox', 'nslookup', 'outside.example')).status, 0)
    assert.equal(upstream.queries.length, before)
    assert.match(await ok('run', '--rm', '--name', 'self', '--network', 'inner', 'busybox', 'ping', '-c', '1', '-W', '1', 'self'), /PING self \(10\./)
    await ok('network', 'rm', 'inner')
  })

  await t.test('a container\'s own --dns servers: the embedded DNS server forwards its other names there, not to the host\'s', async () => {
    // a responder on the default bridge's gateway (a host address the containers reach), port 53
    const bridgeGw = (await ok('network', 'inspect', '--format', '{{(index .IPAM.Config 0).Gateway}}', 'bridge')).trim()
    const own = await fakeDns(bridgeGw, { 'mine.example': '10.4.5.6' })
    try {
      const before = upstream.queries.length
      const out = await ok('run', '--rm', '--name', 'asker', '--network', 'app', '--dns', bridgeGw, 'busybox', 'sh', '-c',
        'cat /etc/resolv.conf; nslookup mine.example; ping -c 1 -W 1 asker')
      // as dockerd: resolv.conf names the embedded server only; --dns becomes its upstream for this container
      assert.match(out, /^nameserver 127\.0\.0\.11$/m)
      assert.doesNotMatch(out, new RegExp(`nameserver ${bridgeGw.replace(/\./g, '\\.')}`))
      assert.match(out, /Address(?: 1)?:\s+10\.4\.5\.6/)
      // the network's own names are still answered by the embedded server
      assert.match(out, /PING asker \(10\./)
      assert.ok(own.queries.includes('mine.example'), `queries: ${own.queries.join(' ')}`)
      // names the container's server does not know are its answer (NXDOMAIN), never asked of the host's resolvers
      assert.notEqual((await docker('run', '--rm', '--network', 'app', '--dns', bridgeGw, 'busybox', 'nslookup', 'outside.example')).status, 0)
      assert.ok(own.queries.includes('outside.example'))
      assert.equal(upstream.queries.slice(before).filter((q) => q === 'mine.example' || q === 'outside.example').length, 0)
      // a container without --dns on the same network still goes to the host's resolvers
      assert.notEqual((await docker('run', '--rm', '--network', 'app', 'busybox', 'nslookup', 'mine.example')).status, 0)
      assert.ok(upstream.queries.slice(before).includes('mine.example'))
    } finally { own.close() }
  })

  await t.test('an alias given at connect resolves at once on that network, and no longer after disconnect; events at start, connect, disconnect, stop', async () => {
    const since = Math.floor(Date.now() / 1000) - 1
    await ok('run', '-d', '--name', 'late', 'busybox', 'sleep', '60')
    const id = (await ok('inspect', '--format', '{{.Id}}', 'late')).trim()
    await ok('network', 'connect', '--alias', 'lateal', '--ip', `10.${a}.${b}.90`, 'app', 'late')
    // ping resolves through libc (busybox nslookup would try the search domain first); name.network as dockerd
    for (const name of ['lateal', 'late', 'late.app']) {
      assert.match(await ok('run', '--rm', '--network', 'app', 'busybox', 'ping', '-c', '1', '-W', '2', name), new RegExp(`PING ${name} \\(10\\.${a}\\.${b}\\.90\\)`))
    }
    await ok('network', 'disconnect', 'app', 'late')
    assert.match((await docker('run', '--rm', '--network', 'app', 'busybox', 'ping', '-c', '1', '-W', '1', 'lateal')).stderr, /bad address/)
    await ok('stop', '-t', '0', 'late')
    const until = Math.floor(Date.now() / 1000) + 1
    const ev = await ok('events', '--since', String(since), '--until', String(until), '--filter', 'type=network', '--format', '{{.Action}} {{.Actor.Attributes.name}} {{.Actor.Attributes.container}}')
    const mine = ev.trim().split('\n').filter((l) => l.endsWith(` ${id}`)).map((l) => l.slice(0, -id.length - 1))
    assert.deepEqual(mine, ['connect bridge', 'connect app', 'disconnect app', 'disconnect bridge'])
    await ok('rm', 'late')
  })

  await t.test('filters: id, dangling=false; `docker system prune` removes unused networks', async () => {
    const full = (await ok('network', 'inspect', '--format', '{{.Id}}', 'app')).trim()
    assert.equal((await ok('network', 'ls', '--filter', `id=${full.slice(0, 20)}`, '--format', '{{.Name}}')).trim(), 'app')
    await ok('run', '-d', '--name', 'holder', '--network', 'app', 'busybox', 'sleep', '60')
    await ok('network', 'create', '--label', 'junk=1', 'unused')
    assert.deepEqual((await ok('network', 'ls', '--filter', 'dangling=false', '--filter', 'type=custom', '--format', '{{.Name}}')).trim().split('\n'), ['app'])
    const pruned = await ok('system', 'prune', '-f')
    assert.match(pruned, /Deleted Networks:\n(?:.+\n)*unused\n/)
    assert.deepEqual((await ok('network', 'ls', '--filter', 'type=custom', '--format', '{{.Name}}')).trim().split('\n'), ['app'])
    await ok('rm', '-f', 'holder')
    await ok('network', 'rm', 'app')
  })

  await t.test('a published host port is free again once its container stops', async () => {
    const port = await freeTcpPort()
    await ok('run', '-d', '--name', 'first', '-p', `${port}:80`, 'busybox', 'httpd', '-f', '-p', '80', '-h', '/etc')
    await ok('stop', '-t', '0', 'first')
    await ok('run', '-d', '--name', 'second', '-p', `${port}:80`, 'busybox', 'httpd', '-f', '-p', '80', '-h', '/etc')
    const id = (await ok('inspect', '--format', '{{.Id}}', 'second')).trim()
    let body = ''
    for (let i = 0; i < 50 && body === ''; i++) body = await httpGet(port, '/hostname').catch(async () => { await new Promise((resolve) => setTimeout(resolve, 50)); return '' })
    assert.equal(body, `${id.slice(0, 12)}\n`)
    // the host's other addresses: the default bridge's gateway, from the host and from a container of another network
    const gw = (await ok('network', 'inspect', '--format', '{{(index .IPAM.Config 0).Gateway}}', 'bridge')).trim()
    assert.equal(await httpGet(port, '/hostname', gw), `${id.slice(0, 12)}\n`)
    await ok('network', 'create', '--subnet', `10.${a}.${b}.160/28`, 'far')
    const far = await ok('run', '--rm', '--network', 'far', 'busybox', 'sh', '-c', `printf 'GET /hostname HTTP/1.0\\r\\n\\r\\n' | nc -w 5 ${gw} ${port} | tail -n 1`)
    assert.equal(far, `${id.slice(0, 12)}\n`)
    await ok('network', 'rm', 'far')
    // the stopped one cannot take it back while the other holds it
    assert.match((await docker('start', 'first')).stderr, /port is already allocated/)
    await ok('rm', '-f', 'first', 'second')
  })

  await t.test('--link: an unknown container at create, a stopped one at start (dockerd\'s errors); /etc/hosts in dockerd\'s order', async () => {
    assert.match((await docker('create', '--link', 'nosuch:db', 'busybox', 'true')).stderr, /could not get container for nosuch: No such container: nosuch/)
    await ok('create', '--name', 'target', 'busybox', 'sleep', '60')
    await ok('create', '--name', 'linker', '--link', 'target:db', 'busybox', 'true')
    assert.match((await docker('start', 'linker')).stderr, /Cannot link to a non running container: \/target AS \/linker\/db/)
    await ok('start', 'target')
    const hosts = await ok('run', '--rm', '--link', 'target:db', '--add-host', 'h:10.9.9.9', '--hostname', 'hh', 'busybox', 'cat', '/etc/hosts')
    const lines = hosts.trim().split('\n').slice(6).map((l) => l.split('\t')[1]?.split(' ')[0])
    assert.deepEqual(lines, ['h', 'db', 'hh'])
    await ok('rm', '-f', 'target', 'linker')
  })

  await t.test('connect and container: errors in dockerd\'s wording', async () => {
    await ok('network', 'create', '--subnet', `10.${a}.${b}.128/27`, 'c1')
    await ok('run', '-d', '--name', 'hst', '--network', 'host', 'busybox', 'sleep', '60')
    await ok('run', '-d', '--name', 'nn', '--network', 'none', 'busybox', 'sleep', '60')
    await ok('run', '-d', '--name', 'bb', 'busybox', 'sleep', '60')
    assert.match((await docker('network', 'connect', 'c1', 'hst')).stderr, /container sharing network namespace with another container or host cannot be connected to any other network/)
    assert.match((await docker('network', 'connect', 'c1', 'nn')).stderr, /container cannot be connected to multiple networks with one of the networks in private \(none\) mode/)
    assert.match((await docker('network', 'connect', 'host', 'bb')).stderr, /container cannot be disconnected from host network or connected to host network/)
    assert.match((await docker('network', 'disconnect', 'host', 'bb')).stderr, /container [0-9a-f]{64} is not connected to network host/)
    assert.match((await docker('network', 'connect', '--ip', `10.${a}.${b}.1`, 'bridge', 'bb')).stderr, /user specified IP address is supported on user defined networks only/)
    await ok('create', '--name', 'idle', 'busybox', 'true')
    const idle = (await ok('inspect', '--format', '{{.Id}}', 'idle')).trim()
    assert.match((await docker('run', '--rm', '--network', 'container:idle', 'busybox', 'true')).stderr, new RegExp(`cannot join network of a non running container: ${idle}`))
    assert.match((await docker('run', '--rm', '--network', 'container:nosuch', 'busybox', 'true')).stderr, /No such container: nosuch/)
    await ok('rm', '-f', 'hst', 'nn', 'bb', 'idle')
    await ok('network', 'rm', 'c1')
  })
})

test('--icc=false: containers on the default bridge do not reach each other; the gateway still answers', { skip: skip ?? false }, async (t) => {
  const { socket } = await startEngine(t, { options: { icc: false } })
  const ok = dockerOk(socket)
  assert.equal((await dockerCli(socket, ['import', busyboxTar(), 'busybox:latest'])).status, 0)
  assert.equal((await ok('network', 'inspect', '--format', '{{index .Options "com.docker.network.bridge.enable_icc"}}', 'bridge')).trim(), 'false')
  await ok('run', '-d', '--name', 'one', 'busybox', 'sleep', '60')
  const ip = (await ok('inspect', '--format', '{{.NetworkSettings.IPAddress}}', 'one')).trim()
  const gw = (await ok('inspect', '--format', '{{.NetworkSettings.Gateway}}', 'one')).trim()
  assert.notEqual((await dockerCli(socket, ['run', '--rm', 'busybox', 'ping', '-c', '1', '-W', '1', ip])).status, 0)
  assert.equal((await dockerCli(socket, ['run', '--rm', 'busybox', 'ping', '-c', '1', '-W', '2', gw])).status, 0)
  await ok('rm', '-f', 'one')
})
