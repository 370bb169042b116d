// Issue 23.4: IPv6 networks (EnableIPv6 with an IPv6 subnet): containers get addresses (or --ip6) and reach each other
// over IPv6, by address and by name (AAAA from their resolver), published ports on ::1 (and [::] beside 0.0.0.0),
// inspect shows dockerd's fields; with the docker CLI and docker-py.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { existsSync } from 'node:fs'
import { startEngine, containerSkipReason, hasDockerCli, dockerCli, busyboxTar } from '../helpers/engine.js'
import { missingTool, dockerOk, runTool, dockerPySkipReason } from '../helpers/tools.js'
import { freeTcpPort, httpGet } from '../helpers/net.js'

const skip = containerSkipReason() ?? (hasDockerCli() ? null : 'the docker CLI is not installed') ?? missingTool('iptables', ['-V']) ??
  (existsSync('/proc/net/if_inet6') ? null : 'the kernel has no IPv6')

test('IPv6 networks: addresses, --ip6, container to container by address and by name, inspect', { skip: skip ?? false }, async (t) => {
  const { socket } = await startEngine(t)
  const docker = async (...args: string[]): ReturnType<typeof dockerCli> => await dockerCli(socket, args)
  const ok = dockerOk(socket)
  await ok('import', busyboxTar(), 'busybox:latest')
  // a unique-local /64 of this test's own
  const p = `fd${Math.floor(Math.random() * 256).toString(16).padStart(2, '0')}:${Math.floor(Math.random() * 65536).toString(16)}:${Math.floor(Math.random() * 65536).toString(16)}`
  const subnet = `${p}::/64`

  await t.test('create: EnableIPv6 with a subnet; dockerd\'s refusals', async () => {
    assert.match((await docker('network', 'create', '--ipv6', 'nosubnet')).stderr, /could not find an available, non-overlapping IPv6 address pool among the defaults to assign to the network/)
    await ok('network', 'create', '--ipv6', '--subnet', subnet, 'v6')
    const n = JSON.parse(await ok('network', 'inspect', '--format', '{{json .}}', 'v6')) as { EnableIPv6: boolean, IPAM: { Config: Array<{ Subnet: string, Gateway?: string }> } }
    assert.equal(n.EnableIPv6, true)
    assert.deepEqual(n.IPAM.Config.map((c) => c.Subnet).filter((s) => s.includes(':')), [subnet])
    assert.match((await docker('network', 'create', '--ipv6', '--subnet', `${p}:0:1::/80`, 'over')).stderr, /Pool overlaps with other one on this address space/)
  })

  await t.test('containers talk over IPv6, by address and by name (AAAA)', async () => {
    await ok('run', '-d', '--name', 'srv6', '--network', 'v6', 'busybox', 'httpd', '-f', '-p', '80', '-h', '/etc')
    const ep = JSON.parse(await ok('inspect', '--format', '{{json .NetworkSettings.Networks.v6}}', 'srv6')) as { GlobalIPv6Address: string, GlobalIPv6PrefixLen: number, IPv6Gateway: string }
    assert.equal(ep.GlobalIPv6Address, `${p}::2`)
    assert.equal(ep.GlobalIPv6PrefixLen, 64)
    assert.equal(ep.IPv6Gateway, `${p}::1`)
    const id12 = (await ok('inspect', '--format', '{{.Id}}', 'srv6')).trim().slice(0, 12)
    const out = await ok('run', '--rm', '--network', 'v6', 'busybox', 'sh', '-c',
      `for i in 1 2 3 4 5 6 7 8 9 10; do wget -qO- "http://[${p}::2]/hostname" && break; sleep 0.3; done; nslookup -type=aaaa srv6; ping6 -c 1 -W 2 srv6; ping6 -c 1 -W 2 ${p}::1`)
    assert.match(out, new RegExp(`^${id12}$`, 'm'))
    assert.match(out, new RegExp(`Address: ${p}::2`))
    assert.equal(out.match(/1 packets received/g)?.length, 2, out)
    const net = JSON.parse(await ok('network', 'inspect', '--format', '{{json .Containers}}', 'v6')) as Record<string, { Name: string, IPv6Address: string }>
    assert.deepEqual(Object.values(net).map((c) => [c.Name, c.IPv6Address]), [['srv6', `${p}::2/64`]])
  })

  await t.test('--ip6: a static address in the subnet; outside it refused as dockerd; released at rm', async () => {
    assert.match(await ok('run', '--rm', '--network', 'v6', '--ip6', `${p}::99`, 'busybox', 'ip', '-6', '-o', 'addr', 'show', 'eth0'), new RegExp(`inet6 ${p}::99/64`))
    assert.match((await docker('run', '--rm', '--network', 'v6', '--ip6', 'fd99::1', 'busybox', 'true')).stderr, /no configured subnet contains IP address fd99::1/)
    // the same address again once the first container is gone
    assert.match(await ok('run', '--rm', '--network', 'v6', '--ip6', `${p}::99`, 'busybox', 'ip', '-6', '-o', 'addr', 'show', 'eth0'), new RegExp(`inet6 ${p}::99/64`))
  })

  await t.test('published ports on ::1: -p [::1]:P:80, and a port on every address is on [::] too (dockerd\'s)', async () => {
    const [a, b] = [await freeTcpPort(), await freeTcpPort()]
    await ok('run', '-d', '--name', 'pub6', '-p', `[::1]:${a}:80`, '-p', `${b}:80`, 'busybox', 'httpd', '-f', '-p', '80', '-h', '/etc')
    const id12 = (await ok('inspect', '--format', '{{.Id}}', 'pub6')).trim().slice(0, 12)
    for (const port of [a, b]) {
      let body = ''
      for (let i = 0; i < 50 && body === ''; i++) body = await httpGet(port, '/hostname', '::1').catch(async () => { await new Promise((resolve) => setTimeout(resolve, 50)); return '' })
      assert.equal(body, `${id12}\n`, `[::1]:${port}`)
    }
    // the loopback-only one is not on IPv4, the other is
    await assert.rejects(httpGet(a, '/hostname', '127.0.0.1', 1000))
    assert.equal(await httpGet(b, '/hostname', '127.0.0.1'), `${id12}\n`)
    const ports = JSON.parse(await ok('inspect', '--format', '{{json .NetworkSettings.Ports}}', 'pub6')) as Record<string, unknown>
    assert.deepEqual(ports['80/tcp'], [{ HostIp: '::1', HostPort: String(a) }, { HostIp: '0.0.0.0', HostPort: String(b) }, { HostIp: '::', HostPort: String(b) }])
    assert.match(await ok('port', 'pub6'), new RegExp(`80/tcp -> \\[::1\\]:${a}`))
    await ok('rm', '-f', 'pub6')
  })

  await t.test('docker-py: an IPv6 network, a container connected with an IPv6 address', { skip: dockerPySkipReason() ?? false }, async () => {
    const r = await runTool('python3', ['-c', `
import docker, sys
c = docker.DockerClient(base_url="unix://" + sys.argv[1])
ipam = docker.types.IPAMConfig(pool_configs=[docker.types.IPAMPool(subnet=sys.argv[2] + ":1::/80")])
n = c.networks.create("py6", enable_ipv6=True, ipam=ipam)
ct = c.containers.run("busybox", "sleep 60", detach=True)
n.connect(ct, ipv6_address=sys.argv[2] + ":1::42")
ct.reload()
print(n.attrs["EnableIPv6"], ct.attrs["NetworkSettings"]["Networks"]["py6"]["GlobalIPv6Address"])
print(ct.exec_run("ip -6 -o addr show eth1").output.decode().split()[3])
ct.remove(force=True)
n.remove()
`, socket, p])
    assert.equal(r.status, 0, r.stderr)
    assert.equal(r.stdout, `True ${p}:1::42\n${p}:1::42/80\n`)
  })
  await ok('rm', '-f', 'srv6')
  await ok('network', 'rm', 'v6')
})
