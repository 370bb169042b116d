// Isolation between bridge networks, as dockerd's DOCKER-ISOLATION-STAGE-1/2: a container on one user network does not
// reach a container of another network by its address (ping, TCP), while a container connected to both reaches both
// through its own interfaces, containers of one network still reach each other, and a published port stays reachable
// from any network through a host address (as with dockerd). The rules live in the engine's <P>-ISO1/<P>-ISO2 chains,
// go with the networks, and are never made with --iptables=false.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { startEngine, containerSkipReason, hasDockerCli, dockerCli, busyboxTar } from '../helpers/engine.js'
import { missingTool, dockerOk } from '../helpers/tools.js'
import { freeTcpPort } from '../helpers/net.js'

const skip = containerSkipReason() ?? (hasDockerCli() ? null : 'the docker CLI is not installed') ??
  missingTool('iptables', ['-V']) ?? missingTool('ip', ['-V'], 'iproute2')

const rulesOf = (chain: string): string[] =>
  (spawnSync('iptables', ['-w', '-S', chain], { encoding: 'utf8' }).stdout ?? '').split('\n').filter((l) => l.startsWith('-A '))

/** The Linux bridge carrying a subnet's gateway address. */
const bridgeOf = (gateway: string): string => {
  const out = spawnSync('ip', ['-o', '-4', 'addr', 'show'], { encoding: 'utf8' }).stdout ?? ''
  return out.split('\n').find((l) => l.includes(` inet ${gateway}/`))?.split(/\s+/)[1] ?? ''
}

test('isolation between bridge networks', { skip: skip ?? false }, async (t) => {
  const { socket, engine } = await startEngine(t)
  const P = engine.network.prefix
  const docker = async (...args: string[]): ReturnType<typeof dockerCli> => await dockerCli(socket, args)
  const ok = dockerOk(socket)
  assert.equal((await docker('import', busyboxTar(), 'busybox:latest')).status, 0)
  const a = 200 + Math.floor(Math.random() * 50)
  const b = Math.floor(Math.random() * 256)
  await ok('network', 'create', '--subnet', `10.${a}.${b}.0/28`, 'isoa')
  await ok('network', 'create', '--subnet', `10.${a}.${b}.16/28`, 'isob')
  const brA = bridgeOf(`10.${a}.${b}.1`)
  const brB = bridgeOf(`10.${a}.${b}.17`)
  assert.ok(brA !== '' && brB !== '', 'both bridges are up')
  const port = await freeTcpPort()
  await ok('run', '-d', '--name', 'srv', '--network', 'isob', '-p', `${port}:80`, 'busybox', 'httpd', '-f', '-p', '80', '-h', '/etc')
  await ok('run', '-d', '--name', 'ca', '--network', 'isoa', 'busybox', 'sleep', '120')
  await ok('run', '-d', '--name', 'ca2', '--network', 'isoa', 'busybox', 'sleep', '120')
  await ok('run', '-d', '--name', 'both', '--network', 'isoa', 'busybox', 'sleep', '120')
  await ok('network', 'connect', 'isob', 'both')
  const ipOf = async (name: string, net: string): Promise<string> => (await ok('inspect', '--format', `{{.NetworkSettings.Networks.${net}.IPAddress}}`, name)).trim()
  const srvIp = await ipOf('srv', 'isob')
  const caIp = await ipOf('ca', 'isoa')
  const get = (ip: string, p = 80): string => `printf 'GET /hostname HTTP/1.0\\r\\n\\r\\n' | nc -w 3 ${ip} ${p} | tail -n 1`
  const srvId = (await ok('inspect', '--format', '{{.Id}}', 'srv')).trim().slice(0, 12)

  await t.test('the rules: each bridge in <P>-ISO1 and <P>-ISO2, jumped to from <P>-FWD ahead of its ACCEPTs', () => {
    const iso1 = rulesOf(`${P}-ISO1`)
    const iso2 = rulesOf(`${P}-ISO2`)
    for (const br of [brA, brB]) {
      assert.ok(iso1.includes(`-A ${P}-ISO1 -i ${br} ! -o ${br} -j ${P}-ISO2`), iso1.join('\n'))
      assert.ok(iso2.includes(`-A ${P}-ISO2 -o ${br} -j DROP`), iso2.join('\n'))
    }
    const fwd = rulesOf(`${P}-FWD`)
    const jump = fwd.findIndex((l) => l.endsWith(`-j ${P}-ISO1`))
    const accept = fwd.findIndex((l) => l.endsWith('-j ACCEPT'))
    assert.ok(jump >= 0 && jump < accept, fwd.join('\n'))
  })

  await t.test('from network A, B\'s container does not answer by its address (ping, TCP); nor A\'s from B', async () => {
    const r = await docker('exec', 'ca', 'ping', '-c', '1', '-W', '2', srvIp)
    assert.notEqual(r.status, 0, r.stdout)
    assert.equal((await ok('exec', 'ca', 'sh', '-c', get(srvIp))).trim(), '')
    assert.notEqual((await docker('exec', 'srv', 'ping', '-c', '1', '-W', '2', caIp)).status, 0)
  })

  await t.test('a container on both networks reaches both; containers of one network reach each other', async () => {
    assert.equal(await ok('exec', 'both', 'sh', '-c', get(srvIp)), `${srvId}\n`)
    assert.equal((await docker('exec', 'both', 'ping', '-c', '1', '-W', '2', caIp)).status, 0)
    assert.equal((await docker('exec', 'ca2', 'ping', '-c', '1', '-W', '2', caIp)).status, 0)
  })

  await t.test('B\'s published port answers from network A through a host address (as dockerd\'s)', async () => {
    assert.equal(await ok('exec', 'ca', 'sh', '-c', get(`10.${a}.${b}.1`, port)), `${srvId}\n`)
  })

  await t.test('after the networks are removed no rule of theirs is left', async () => {
    await ok('rm', '-f', 'srv', 'ca', 'ca2', 'both')
    await ok('network', 'rm', 'isoa', 'isob')
    const left = [...rulesOf(`${P}-ISO1`), ...rulesOf(`${P}-ISO2`), ...rulesOf(`${P}-FWD`)].filter((l) => l.includes(brA) || l.includes(brB))
    assert.deepEqual(left, [])
  })
})

test('--iptables=false: no isolation chains are made', { skip: skip ?? false }, async (t) => {
  const { socket, engine } = await startEngine(t, { options: { iptables: false } })
  const ok = dockerOk(socket)
  const a = 200 + Math.floor(Math.random() * 50)
  await ok('network', 'create', '--subnet', `10.${a}.${Math.floor(Math.random() * 256)}.0/28`, 'noipt')
  for (const chain of ['ISO1', 'ISO2', 'FWD']) assert.notEqual(spawnSync('iptables', ['-w', '-S', `${engine.network.prefix}-${chain}`]).status, 0, chain)
  await ok('network', 'rm', 'noipt')
})
