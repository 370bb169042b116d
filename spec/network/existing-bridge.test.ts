// A default bridge that already exists on the host with an IPv4 address (no --bip): as dockerd, its address is the
// default network's gateway and subnet (no second address, no default subnet taken per fresh data root); with a
// --bip that differs, the bridge ends with exactly that address.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { startEngine, containerSkipReason, hasDockerCli, busyboxTar, uniqueNetworkOptions, dockerCli } from '../helpers/engine.js'
import { missingTool, dockerOk } from '../helpers/tools.js'

const skip = containerSkipReason() ?? (hasDockerCli() ? null : 'the docker CLI is not installed') ??
  missingTool('iptables', ['-V']) ?? missingTool('ip', ['-V'], 'iproute2')

function addrsOf (bridge: string): string[] {
  const out = spawnSync('ip', ['-o', '-4', 'addr', 'show', 'dev', bridge], { encoding: 'utf8' }).stdout ?? ''
  return [...out.matchAll(/\sinet\s+(\S+)/g)].map((m) => m[1] as string)
}

test('an existing default bridge keeps its address', { skip: skip ?? false }, async (t) => {
  const n = uniqueNetworkOptions()
  const sub = `10.${200 + Math.floor(Math.random() * 50)}.${Math.floor(Math.random() * 256)}`
  const own = `${sub}.1/24`
  t.after(() => { spawnSync('ip', ['link', 'del', 'dev', n.defaultBridge]) })
  assert.equal(spawnSync('ip', ['link', 'add', 'name', n.defaultBridge, 'type', 'bridge']).status, 0)
  assert.equal(spawnSync('ip', ['addr', 'add', own, 'dev', n.defaultBridge]).status, 0)

  await t.test('no --bip, fresh data root: the default network is the bridge\'s subnet; one address; a container in it', async (tt) => {
    const { socket, close } = await startEngine(tt, { keepNetwork: true, options: { ...n, bip: '' } })
    const ok = dockerOk(socket)
    assert.deepEqual(JSON.parse(await ok('network', 'inspect', '--format', '{{json .IPAM.Config}}', 'bridge')), [{ Subnet: `${sub}.0/24`, Gateway: `${sub}.1` }])
    assert.equal((await dockerCli(socket, ['import', busyboxTar(), 'busybox:latest'])).status, 0)
    const out = await ok('run', '--rm', 'busybox', 'ip', '-o', '-4', 'addr', 'show', 'eth0')
    assert.match(out, new RegExp(`inet ${sub.replace(/\./g, '\\.')}\\.\\d+/24 `))
    assert.deepEqual(addrsOf(n.defaultBridge), [own])
    await close()
    assert.deepEqual(addrsOf(n.defaultBridge), [own])
  })

  await t.test('a different --bip: the bridge ends with exactly that address', async (tt) => {
    const { socket } = await startEngine(tt, { options: n })
    const ok = dockerOk(socket)
    const [gw, bits] = n.bip.split('/') as [string, string]
    assert.deepEqual(JSON.parse(await ok('network', 'inspect', '--format', '{{json .IPAM.Config}}', 'bridge')), [{ Subnet: `${gw.replace(/\.1$/, '.0')}/${bits}`, Gateway: gw }])
    assert.equal((await dockerCli(socket, ['import', busyboxTar(), 'busybox:latest'])).status, 0)
    await ok('run', '--rm', 'busybox', 'true')
    assert.deepEqual(addrsOf(n.defaultBridge), [n.bip])
  })
})
