// Networking with the real docker CLI: the network API, published ports (TCP, UDP, -P), name resolution on a user
// network, live connect/disconnect, host/none/container modes, and nothing left on the host afterwards.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import net from 'node:net'
import { spawnSync } from 'node:child_process'
import { readdirSync, existsSync } from 'node:fs'
import { join } from 'node:path'
import { startEngine, containerSkipReason, hasDockerCli, dockerCli, busyboxTar } from '../helpers/engine.js'
import { missingTool, dockerOk } from '../helpers/tools.js'
import { freeTcpPort, httpGet, udpAsk, udpEchoArgs } from '../helpers/net.js'

const skip = containerSkipReason() ?? (hasDockerCli() ? null : 'the docker CLI is not installed') ??
  missingTool('iptables', ['-V']) ?? missingTool('ip', ['-V'], 'iproute2')

function hostState (prefix: string, bridge: string): { links: string[], nat: string[], filter: string[] } {
  const links = (spawnSync('ip', ['-o', 'link', 'show'], { encoding: 'utf8' }).stdout ?? '').split('\n')
    .map((l) => /^\d+:\s+([^:@\s]+)/.exec(l)?.[1] ?? '').filter((n) => n !== '' && (n.startsWith(prefix.toLowerCase()) || n === bridge))
  const nat = (spawnSync('iptables', ['-w', '-t', 'nat', '-S'], { encoding: 'utf8' }).stdout ?? '').split('\n').filter((l) => l.includes(prefix))
  const filter = (spawnSync('iptables', ['-w', '-S'], { encoding: 'utf8' }).stdout ?? '').split('\n').filter((l) => l.includes(prefix))
  return { links, nat, filter }
}

test('networking with the docker CLI', { skip: skip ?? false }, async (t) => {
  const te = await startEngine(t)
  const { socket, engine } = te
  const prefix = engine.network.prefix
  const docker = async (...args: string[]): ReturnType<typeof dockerCli> => await dockerCli(socket, args)
  const ok = dockerOk(socket)
  assert.equal((await docker('import', '-c', 'EXPOSE 80', busyboxTar(), 'busybox:latest')).status, 0)
  const sub = `10.${200 + Math.floor(Math.random() * 50)}.${Math.floor(Math.random() * 256)}`

  await t.test('network API: predefined networks, create, errors in dockerd wording, filters, inspect, rm', async () => {
    const ls = await ok('network', 'ls', '--format', '{{.Name}} {{.Driver}}')
    assert.deepEqual(ls.trim().split('\n').sort(), ['bridge bridge', 'host host', 'none null'])
    await ok('network', 'create', '--subnet', `${sub}.0/26`, '--gateway', `${sub}.62`, '--label', 'k=v', 'n1')
    const over = await docker('network', 'create', '--subnet', `${sub}.0/27`, 'n2')
    assert.match(over.stderr, /invalid pool request: Pool overlaps with other one on this address space/)
    assert.match((await docker('network', 'create', '--subnet', '10.1.0.0/33', 'n3')).stderr, /invalid CIDR address: 10.1.0.0\/33/)
    assert.match((await docker('network', 'create', 'n1')).stderr, /network with name n1 already exists/)
    assert.match((await docker('network', 'create', '-d', 'nosuch', 'n4')).stderr, /plugin "nosuch" not found/)
    assert.match((await docker('network', 'create', '--ipv6', 'n5')).stderr, /IPv6/)
    // what Berth's networks do not do is refused out loud, never a network made without it
    assert.match((await docker('network', 'create', '--config-only', 'n6')).stderr, /Berth does not support configuration-only networks/)
    assert.match((await docker('network', 'create', '--config-from', 'n1', 'n7')).stderr, /Berth does not support configuration-only networks/)
    assert.match((await docker('network', 'create', '--ipv4=false', '--ipv6', 'n8')).stderr, /Berth does not support networks without IPv4/)
    assert.match((await docker('network', 'create', '--scope', 'swarm', 'n9')).stderr, /Berth does not support the "swarm" scope for a bridge network/)
    assert.equal((await ok('network', 'ls', '-q', '--filter', 'name=^n[6-9]$')).trim(), '')
    assert.match((await docker('network', 'rm', 'nope')).stderr, /network nope not found/)
    assert.match((await docker('network', 'rm', 'bridge')).stderr, /bridge is a pre-defined network and cannot be removed/)
    assert.equal((await ok('network', 'ls', '-q', '--filter', 'label=k=v')).trim().length, 12)
    assert.equal((await ok('network', 'ls', '--filter', 'type=custom', '--format', '{{.Name}}')).trim(), 'n1')
    assert.equal((await ok('network', 'ls', '--filter', 'dangling=true', '--format', '{{.Name}}')).trim(), 'n1')
    const insp = JSON.parse(await ok('network', 'inspect', 'n1')) as Array<{ IPAM: { Config: Array<{ Subnet: string, Gateway: string }> }, Labels: Record<string, string> }>
    assert.deepEqual(insp[0]?.IPAM.Config, [{ Subnet: `${sub}.0/26`, Gateway: `${sub}.62` }])
    assert.deepEqual(insp[0]?.Labels, { k: 'v' })
    const static1 = await docker('run', '--rm', '--network', 'n1', '--ip', '10.99.0.5', 'busybox', 'true')
    assert.match(static1.stderr, /Invalid address 10.99.0.5: It does not belong to any of this network's subnets/)
    const r = await ok('run', '--rm', '--network', 'n1', '--ip', `${sub}.9`, 'busybox', 'ip', '-o', '-4', 'addr', 'show', 'eth0')
    assert.match(r, new RegExp(`inet ${sub.replace(/\./g, '\\.')}\\.9/26`))
    await ok('network', 'rm', 'n1')
    assert.match(await ok('network', 'prune', '-f'), /^$|Deleted/)
  })

  await t.test('-p from the host on 127.0.0.1 (TCP), UDP, -P, docker port, a port in use', async () => {
    const port = await freeTcpPort()
    await ok('run', '-d', '--name', 'web', '-p', `${port}:80`, 'busybox', 'sh', '-c', 'echo hello > /tmp/index.html; httpd -f -p 80 -h /tmp')
    // busybox has no UDP server: node from the host's /usr answers datagrams in the container
    await ok('run', '-d', '--name', 'udp', '-p', `${port}:81/udp`, ...udpEchoArgs(81))
    let body = ''
    for (let i = 0; i < 50 && body === ''; i++) body = await httpGet(port, '/index.html').catch(async () => { await new Promise((resolve) => setTimeout(resolve, 50)); return '' })
    assert.equal(body, 'hello\n')
    assert.match(await ok('port', 'web'), new RegExp(`80/tcp -> 0.0.0.0:${port}`))
    assert.match(await ok('ps', '--format', '{{.Ports}}'), new RegExp(`0.0.0.0:${port}->80/tcp`))
    const ports = JSON.parse(await ok('inspect', '--format', '{{json .NetworkSettings.Ports}}', 'web')) as Record<string, unknown>
    // every address: [::] too where the host has IPv6 (dockerd's two bindings)
    assert.deepEqual(ports['80/tcp'], [{ HostIp: '0.0.0.0', HostPort: String(port) }, ...(existsSync('/proc/net/if_inet6') ? [{ HostIp: '::', HostPort: String(port) }] : [])])
    // UDP: a datagram to the published port gets the container's answer
    assert.equal(await udpAsk(port, 'ping\n'), 'pong ping\n')
    const busy = await docker('run', '-d', '--name', 'web2', '-p', `${port}:80`, 'busybox', 'httpd', '-f')
    assert.match(busy.stderr, /port is already allocated/)
    await ok('rm', '-f', 'web2')
    const blocker = net.createServer()
    const taken = await new Promise<number>((resolve) => { blocker.listen(0, '0.0.0.0', () => { resolve((blocker.address() as net.AddressInfo).port) }) })
    const inUse = await docker('run', '-d', '--name', 'web3', '-p', `${taken}:80`, 'busybox', 'httpd', '-f')
    blocker.close()
    assert.match(inUse.stderr, /address already in use/)
    await ok('rm', '-f', 'web3')
    await ok('run', '-d', '--name', 'webp', '-P', 'busybox', 'httpd', '-f', '-p', '80', '-h', '/etc')
    const m = /80\/tcp -> 0\.0\.0\.0:(\d+)/.exec(await ok('port', 'webp'))
    assert.ok(m !== null)
    let hn = ''
    for (let i = 0; i < 50 && hn === ''; i++) hn = await httpGet(Number(m[1]), '/hostname').catch(async () => { await new Promise((resolve) => setTimeout(resolve, 50)); return '' })
    assert.match(hn, /^[0-9a-f]{12}\n$/)
    // a host address and a host port range
    const p2 = await freeTcpPort()
    await ok('run', '-d', '--name', 'webr', '-p', `127.0.0.1:${p2}-${p2 + 1}:80`, 'busybox', 'httpd', '-f', '-p', '80', '-h', '/etc')
    const mr = /80\/tcp -> 127\.0\.0\.1:(\d+)/.exec(await ok('port', 'webr'))
    assert.ok(mr !== null && [p2, p2 + 1].includes(Number(mr[1])))
    let hr = ''
    for (let i = 0; i < 50 && hr === ''; i++) hr = await httpGet(Number(mr[1]), '/hostname').catch(async () => { await new Promise((resolve) => setTimeout(resolve, 50)); return '' })
    assert.match(hr, /^[0-9a-f]{12}\n$/)
    await ok('rm', '-f', 'webr')
    await ok('stop', '-t', '0', 'web')
    await assert.rejects(httpGet(port, '/index.html'))
    await ok('rm', '-f', 'web', 'webp', 'udp')
  })

  await t.test('name resolution on a user network, aliases, live connect and disconnect, outbound to the gateway', async () => {
    await ok('network', 'create', '--subnet', `${sub}.64/26`, 'app')
    await ok('run', '-d', '--name', 'srv', '--network', 'app', '--network-alias', 'www', 'busybox', 'httpd', '-f', '-p', '80', '-h', '/etc')
    const byName = await ok('run', '--rm', '--network', 'app', 'busybox', 'sh', '-c', 'for i in 1 2 3 4 5; do wget -qO- http://srv/hostname && break; sleep 0.2; done; wget -qO- http://www/hostname')
    const id = (await ok('inspect', '--format', '{{.Id}}', 'srv')).trim()
    assert.equal(byName, `${id.slice(0, 12)}\n${id.slice(0, 12)}\n`)
    assert.equal(await ok('run', '--rm', '--network', 'app', 'busybox', 'wget', '-qO-', `http://${id.slice(0, 12)}/hostname`), `${id.slice(0, 12)}\n`)
    // the default bridge has no name resolution, and a container there is not on app
    await ok('run', '-d', '--name', 'other', 'busybox', 'sleep', '60')
    // (not wget -T: busybox's static wget crashes with it, which would pass for a failed lookup)
    assert.match((await docker('exec', 'other', 'ping', '-c', '1', '-W', '1', 'srv')).stderr, /bad address 'srv'/)
    await ok('network', 'connect', '--alias', 'late', 'app', 'other')
    assert.match(await ok('exec', 'other', 'ip', '-o', '-4', 'addr'), /eth1\s+inet /)
    // joining a user network switches it to its own resolver (as dockerd does): the new network's names resolve
    const srvIp = (await ok('inspect', '--format', '{{.NetworkSettings.Networks.app.IPAddress}}', 'srv')).trim()
    assert.equal(await ok('exec', 'other', 'wget', '-qO-', `http://${srvIp}/hostname`), `${id.slice(0, 12)}\n`)
    assert.match(await ok('exec', 'other', 'cat', '/etc/resolv.conf'), /^nameserver 127\.0\.0\.11$/m)
    assert.equal(await ok('exec', 'other', 'wget', '-qO-', 'http://srv/hostname'), `${id.slice(0, 12)}\n`)
    const nets = JSON.parse(await ok('inspect', '--format', '{{json .NetworkSettings.Networks}}', 'other')) as Record<string, { Aliases: string[], IPAddress: string }>
    assert.deepEqual(Object.keys(nets).sort(), ['app', 'bridge'])
    assert.deepEqual(nets.app?.Aliases, ['late'])
    const appInspect = JSON.parse(await ok('network', 'inspect', 'app')) as Array<{ Containers: Record<string, { Name: string }> }>
    assert.deepEqual(Object.values(appInspect[0]?.Containers ?? {}).map((c) => c.Name).sort(), ['other', 'srv'])
    assert.match((await docker('network', 'rm', 'app')).stderr, /has active endpoints/)
    await ok('network', 'disconnect', 'app', 'other')
    assert.doesNotMatch(await ok('exec', 'other', 'ip', '-o', '-4', 'addr'), /eth1/)
    // outbound: the gateway (the host side of the bridge) answers
    const gw = (await ok('inspect', '--format', '{{.NetworkSettings.Networks.bridge.Gateway}}', 'other')).trim()
    assert.equal((await docker('exec', 'other', 'ping', '-c', '1', '-W', '2', gw)).status, 0)
    await ok('rm', '-f', 'srv', 'other')
    await ok('network', 'rm', 'app')
  })

  await t.test('--network host, none, container:X; --link, --add-host, --dns', async () => {
    // the host's namespace: its default route's interface is there (other tests add and remove links meanwhile)
    const host = await ok('run', '--rm', '--network', 'host', 'busybox', 'ip', '-o', 'link')
    const dev = /dev (\S+)/.exec(spawnSync('ip', ['route', 'show', 'default'], { encoding: 'utf8' }).stdout ?? '')?.[1] ?? 'lo'
    assert.match(host, new RegExp(`^\\d+: ${dev}[:@]`, 'm'))
    const none = await ok('run', '--rm', '--network', 'none', 'busybox', 'ip', '-o', 'link')
    assert.deepEqual(none.trim().split('\n').map((l) => /^\d+: ([^:@]+)/.exec(l)?.[1]), ['lo'])
    await ok('run', '-d', '--name', 'base', 'busybox', 'sleep', '60')
    const baseIp = (await ok('inspect', '--format', '{{.NetworkSettings.IPAddress}}', 'base')).trim()
    assert.match(baseIp, /^10\./)
    assert.match(await ok('run', '--rm', '--network', 'container:base', 'busybox', 'ip', '-o', '-4', 'addr'), new RegExp(`inet ${baseIp}/`))
    const hosts = await ok('run', '--rm', '--link', 'base:db', '--add-host', 'extra.example:10.9.9.9', '--dns', '10.8.8.8', 'busybox', 'sh', '-c', 'cat /etc/hosts /etc/resolv.conf; ping -c1 -W2 db >/dev/null && echo reached')
    assert.match(hosts, new RegExp(`${baseIp.replace(/\./g, '\\.')}\\tdb [0-9a-f]{12} base`))
    assert.match(hosts, /10\.9\.9\.9\textra\.example/)
    const gw = (await ok('network', 'inspect', '--format', '{{(index .IPAM.Config 0).Gateway}}', 'bridge')).trim()
    assert.match(await ok('run', '--rm', '--add-host', 'hostgw:host-gateway', 'busybox', 'cat', '/etc/hosts'), new RegExp(`${gw.replace(/\./g, '\\.')}\thostgw`))
    assert.match(hosts, /nameserver 10\.8\.8\.8/)
    assert.match(hosts, /reached/)
    await ok('rm', '-f', 'base')
  })

  await t.test('Internal networks have no outbound route; enable_icc=false isolates containers of a network', async () => {
    await ok('network', 'create', '--internal', '--subnet', `${sub}.128/27`, '-o', 'com.docker.network.driver.mtu=1400', 'int')
    const routes = await ok('run', '--rm', '--network', 'int', 'busybox', 'ip', 'route')
    assert.doesNotMatch(routes, /default/)
    assert.match(await ok('run', '--rm', '--network', 'int', 'busybox', 'ip', '-o', 'link', 'show', 'eth0'), /mtu 1400/)
    await ok('network', 'create', '-o', 'com.docker.network.bridge.enable_icc=false', '--subnet', `${sub}.160/27`, 'iso')
    await ok('run', '-d', '--name', 'iso1', '--network', 'iso', 'busybox', 'sleep', '60')
    const ip1 = (await ok('inspect', '--format', '{{.NetworkSettings.Networks.iso.IPAddress}}', 'iso1')).trim()
    assert.notEqual((await docker('run', '--rm', '--network', 'iso', 'busybox', 'ping', '-c', '1', '-W', '1', ip1)).status, 0)
    await ok('run', '-d', '--name', 'app1', '--network', 'int', 'busybox', 'sleep', '60')
    const ip2 = (await ok('inspect', '--format', '{{.NetworkSettings.Networks.int.IPAddress}}', 'app1')).trim()
    assert.equal((await docker('run', '--rm', '--network', 'int', 'busybox', 'ping', '-c', '1', '-W', '2', ip2)).status, 0)
    await ok('rm', '-f', 'iso1', 'app1')
    await ok('network', 'rm', 'int', 'iso')
  })

  await t.test('nothing left: veths, namespaces, rules of removed containers and networks', async () => {
    await engine.network.settled() // veth deletions run behind the removals
    const s = hostState(prefix, engine.network.all().find((n) => n.name === 'bridge')?.bridge ?? '')
    // only the default bridge and the chains' scaffolding remain while the engine runs
    assert.deepEqual(s.links.filter((l) => !l.startsWith('bt')), [])
    assert.equal(s.nat.filter((l) => l.includes('DNAT')).length, 0)
    const nsDir = engine.network.paths.netns
    assert.deepEqual(existsSync(nsDir) ? readdirSync(nsDir) : [], [])
    await te.close()
    const after = hostState(prefix, engine.network.all().find((n) => n.name === 'bridge')?.bridge ?? '')
    assert.deepEqual(after, { links: [], nat: [], filter: [] })
    void join
  })
})
