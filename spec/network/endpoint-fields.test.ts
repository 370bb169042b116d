// Issue 23.3: endpoint fields kept, honoured and shown: MacAddress (the container's Config and an endpoint's, at create
// and at connect) on the interface, IPAMConfig (IPv4, link-local addresses on the interface too) and DriverOpts in
// inspect, a network name with a space, GET /networks/{id}?scope=. With the docker CLI and dockerode.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import Docker from 'dockerode'
import { startEngine, containerSkipReason, hasDockerCli, dockerCli, busyboxTar, request } from '../helpers/engine.js'
import { missingTool, dockerOk } from '../helpers/tools.js'

const skip = containerSkipReason() ?? (hasDockerCli() ? null : 'the docker CLI is not installed') ?? missingTool('iptables', ['-V'])

interface Endpoint { IPAMConfig: Record<string, unknown> | null, MacAddress: string, DriverOpts: Record<string, string> | null, IPAddress: string }

test('endpoint fields: MAC addresses, IPAMConfig, DriverOpts; a network name with a space; ?scope=', { skip: skip ?? false }, async (t) => {
  const { socket } = await startEngine(t)
  const docker = async (...args: string[]): ReturnType<typeof dockerCli> => await dockerCli(socket, args)
  const ok = dockerOk(socket)
  const api = new Docker({ socketPath: socket })
  await ok('import', busyboxTar(), 'busybox:latest')
  await ok('network', 'create', 'my net')
  const sub = (await ok('network', 'inspect', '--format', '{{(index .IPAM.Config 0).Subnet}}', 'my net')).trim()
  const ip = sub.replace(/\.0\/\d+$/, '.50')

  await t.test('the docker CLI: --mac-address, --ip, --link-local-ip and a driver option on a network whose name has a space', async () => {
    await ok('run', '-d', '--name', 'm1', '--network', 'name=my net,mac-address=02:aa:bb:cc:dd:ee,ip=' + ip + ',link-local-ip=169.254.7.7,driver-opt=com.example.k=v', 'busybox', 'sleep', '600')
    const addr = await ok('exec', 'm1', 'ip', 'addr', 'show', 'eth0')
    assert.match(addr, /link\/ether 02:aa:bb:cc:dd:ee /)
    assert.match(addr, new RegExp(`inet ${ip.replace(/\./g, '\\.')}/`))
    assert.match(addr, /inet 169\.254\.7\.7\/16 /)
    const ep = (JSON.parse(await ok('inspect', '--format', '{{json .NetworkSettings.Networks}}', 'm1')) as Record<string, Endpoint>)['my net']
    assert.deepEqual(ep?.IPAMConfig, { IPv4Address: ip, LinkLocalIPs: ['169.254.7.7'] })
    assert.equal(ep?.MacAddress, '02:aa:bb:cc:dd:ee')
    assert.deepEqual(ep?.DriverOpts, { 'com.example.k': 'v' })
    assert.match((await ok('network', 'inspect', 'my net')), /"Name": "m1"/)
    // stopped, the endpoint still shows what was asked for
    await ok('stop', '-t', '0', 'm1')
    const stopped = (JSON.parse(await ok('inspect', '--format', '{{json .NetworkSettings.Networks}}', 'm1')) as Record<string, Endpoint>)['my net']
    assert.equal(stopped?.MacAddress, '02:aa:bb:cc:dd:ee')
    assert.equal(stopped?.IPAddress, '')
    await ok('rm', 'm1')
    // dockerd's refusals
    const badMac = await request(socket, 'POST', '/containers/create', { body: { Image: 'busybox', Cmd: ['true'], HostConfig: { NetworkMode: 'my net' }, NetworkingConfig: { EndpointsConfig: { 'my net': { MacAddress: 'zz' } } } } })
    assert.equal(badMac.status, 400)
    assert.equal((badMac.json() as { message: string }).message, 'address zz: invalid MAC address')
    assert.match((await docker('run', '--rm', '--network', 'name=my net,link-local-ip=10.1.1.1', 'busybox', 'true')).stderr, /invalid link local IP address: 10\.1\.1\.1/)
    assert.match((await docker('run', '--rm', '--network', 'name=my net,ip6=fd00::5', 'busybox', 'true')).stderr, /no configured subnet contains IP address fd00::5/)
  })

  await t.test('dockerode: Config.MacAddress on the default bridge, an endpoint\'s MacAddress at network connect', async () => {
    const c = await api.createContainer({ Image: 'busybox', Cmd: ['sleep', '600'], MacAddress: '02:11:22:33:44:55' } as Docker.ContainerCreateOptions)
    await c.start()
    const info = await c.inspect()
    assert.equal((info.Config as unknown as { MacAddress?: string }).MacAddress, '02:11:22:33:44:55')
    assert.equal(info.NetworkSettings.Networks.bridge?.MacAddress, '02:11:22:33:44:55')
    // (docker-modem does not escape a path: the network by its ID)
    const netId = (await ok('network', 'inspect', '--format', '{{.Id}}', 'my net')).trim()
    await api.getNetwork(netId).connect({ Container: c.id, EndpointConfig: { MacAddress: '02:66:77:88:99:aa', IPAMConfig: { LinkLocalIPs: ['fe80::77'] } } })
    const run = async (cmd: string[]): Promise<string> => {
      const e = await c.exec({ Cmd: cmd, AttachStdout: true, AttachStderr: true })
      const s = await e.start({})
      const chunks: Buffer[] = []
      for await (const chunk of s) chunks.push(chunk as Buffer)
      return Buffer.concat(chunks).toString('latin1')
    }
    const links = await run(['ip', 'addr'])
    assert.match(links, /eth0[^]*link\/ether 02:11:22:33:44:55 /)
    assert.match(links, /eth1[^]*link\/ether 02:66:77:88:99:aa [^]*inet6 fe80::77\/64/)
    const again = await c.inspect()
    assert.deepEqual(again.NetworkSettings.Networks['my net']?.IPAMConfig, { LinkLocalIPs: ['fe80::77'] })
    await c.remove({ force: true })
  })

  await t.test('GET /networks/{id}?scope= answers only for the network\'s scope', async () => {
    assert.equal((await request(socket, 'GET', '/networks/my%20net?scope=local')).status, 200)
    const swarm = await request(socket, 'GET', '/networks/my%20net?scope=swarm')
    assert.equal(swarm.status, 404)
    assert.equal((swarm.json() as { message: string }).message, 'network my net not found')
    assert.equal((await request(socket, 'GET', '/networks/bridge?scope=global')).status, 404)
  })
  await ok('network', 'rm', 'my net')
})
