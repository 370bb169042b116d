// A published port keeps answering while the daemon is killed with -9 and after it restarts; name resolution and
// addresses are re-adopted; what a crash left that no record owns is cleaned at boot; nothing is left after rm.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawnSync, type ChildProcess } from 'node:child_process'
import { join } from 'node:path'
import { once } from 'node:events'
import { existsSync, readdirSync, writeFileSync } from 'node:fs'
import { tmpDir, containerSkipReason, hasDockerCli, busyboxTar, uniqueNetworkOptions, daemonNetworkArgs, cleanupDaemon, startDaemonProcess } from '../helpers/engine.js'
import { missingTool, dockerOk, runTool } from '../helpers/tools.js'
import { httpGet, freeTcpPort, freeUdpPort, udpAsk, udpEchoArgs } from '../helpers/net.js'

const skip = containerSkipReason() ?? (hasDockerCli() ? null : 'the docker CLI is not installed') ?? missingTool('iptables', ['-V'])

async function startDaemon (dir: string, n: ReturnType<typeof uniqueNetworkOptions>, extra: string[]): Promise<ChildProcess> {
  return await startDaemonProcess(dir, [...daemonNetworkArgs(n), ...extra])
}

for (const mode of ['iptables', 'userland forwarder'] as const) {
test(`published ports (${mode}) and networks across a daemon kill -9`, { skip: skip ?? false }, async (t) => {
  const pool = `10.${200 + Math.floor(Math.random() * 50)}.${Math.floor(Math.random() * 256)}`
  const extra = mode === 'iptables' ? [] : ['--iptables=false']
  const dir = tmpDir()
  const sock = join(dir, 'b.sock')
  // the daemon's own --default-address-pool instead of the helper's
  const n = { ...uniqueNetworkOptions(), defaultAddressPools: [{ base: `${pool}.0/24`, size: 28 }] }
  let daemon = await startDaemon(dir, n, extra)
  t.after(async () => {
    await cleanupDaemon(daemon, dir, n)
  })
  const docker = dockerOk(sock)
  await docker('import', busyboxTar(), 'busybox:latest')
  const sub = `10.${200 + Math.floor(Math.random() * 50)}.${Math.floor(Math.random() * 256)}`
  await docker('network', 'create', '--subnet', `${sub}.0/24`, 'app')
  // the daemon's --default-address-pool: a network without a subnet takes its first /28
  await docker('network', 'create', 'pooled')
  const pooled = async (): Promise<string> => (await docker('network', 'inspect', '--format', '{{(index .IPAM.Config 0).Subnet}}', 'pooled')).trim()
  assert.equal(await pooled(), `${pool}.0/28`)
  const port = await freeTcpPort()
  await docker('run', '-d', '--name', 'web', '--network', 'app', '-p', `${port}:80`, 'busybox', 'httpd', '-f', '-p', '80', '-h', '/etc')
  const id = (await docker('inspect', '--format', '{{.Id}}', 'web')).trim()
  let body = ''
  for (let i = 0; i < 50 && body === ''; i++) body = await httpGet(port, '/hostname').catch(async () => { await new Promise((resolve) => setTimeout(resolve, 50)); return '' })
  assert.equal(body, `${id.slice(0, 12)}\n`)
  // UDP too: a datagram server published on a UDP port
  const uport = await freeUdpPort()
  await docker('run', '-d', '--name', 'echo', '--network', 'app', '-p', `${uport}:81/udp`, ...udpEchoArgs(81))
  assert.equal(await udpAsk(uport, 'before'), 'pong before')

  daemon.kill('SIGKILL')
  await once(daemon, 'exit')
  // no daemon: the kernel's DNAT (or the forwarder) still serves the ports; each UDP ask is a new flow
  assert.equal(await httpGet(port, '/hostname'), `${id.slice(0, 12)}\n`)
  assert.equal(await udpAsk(uport, 'down', 20), 'pong down')
  // a crash's leftovers that no record owns: a namespace file and a veth named like ours
  const strayNs = join(dir, 'run', 'netns', 'deadbeefdead')
  writeFileSync(strayNs, '')
  const strayVeth = `${n.networkPrefix.toLowerCase()}v0dead`
  spawnSync('ip', ['link', 'add', strayVeth, 'type', 'veth', 'peer', 'name', `${strayVeth}p`])
  // and a port mapping no record owns (iptables: the chain is written again from the records)
  const strayRule = ['-p', 'tcp', '-m', 'tcp', '--dport', '1', '-j', 'DNAT', '--to-destination', '10.0.0.1:1']
  if (mode === 'iptables') assert.equal(spawnSync('iptables', ['-w', '-t', 'nat', '-A', n.networkPrefix, ...strayRule]).status, 0)

  // a container's query while no daemon runs is held by its monitor and answered once the next daemon is up
  const held = runTool('nsenter', [`--net=${join(dir, 'run', 'netns', id.slice(0, 12))}`, 'busybox', 'nslookup', '-timeout=15', 'echo', '127.0.0.11'])
  daemon = await startDaemon(dir, n, extra)
  const answered = await held
  assert.equal(answered.status, 0, answered.out)
  assert.match(answered.stdout, new RegExp(`Address: ${sub.replace(/\./g, '\\.')}\\.`))
  assert.equal(await httpGet(port, '/hostname'), `${id.slice(0, 12)}\n`)
  assert.equal(await udpAsk(uport, 'after', 20), 'pong after')
  assert.equal(spawnSync('ip', ['link', 'show', strayVeth]).status, 1, 'the stray veth is gone')
  assert.equal(existsSync(strayNs), false)
  if (mode === 'iptables') assert.equal(spawnSync('iptables', ['-w', '-t', 'nat', '-C', n.networkPrefix, ...strayRule]).status, 1, 'the stray DNAT is gone')
  assert.equal(await pooled(), `${pool}.0/28`)
  // the DNS records are back: a new container resolves the old one by name, and the old ones each other
  assert.equal(await docker('run', '--rm', '--network', 'app', 'busybox', 'wget', '-qO-', 'http://web/hostname'), `${id.slice(0, 12)}\n`)
  assert.match(await docker('exec', 'web', 'nslookup', 'echo'), new RegExp(`Address: ${sub.replace(/\./g, '\\.')}\\.`))
  // and its address is not handed out again
  const ips = [(await docker('inspect', '--format', '{{.NetworkSettings.Networks.app.IPAddress}}', 'web')).trim()]
  ips.push((await docker('run', '--rm', '--network', 'app', 'busybox', 'sh', '-c', 'ip -o -4 addr show eth0 | sed "s/.*inet \\([0-9.]*\\).*/\\1/"')).trim())
  assert.notEqual(ips[0], ips[1])

  await docker('rm', '-f', 'web', 'echo')
  await docker('network', 'rm', 'app', 'pooled')
  await assert.rejects(httpGet(port, '/hostname'))
  await assert.rejects(udpAsk(uport, 'gone', 5))
  const nat = (spawnSync('iptables', ['-w', '-t', 'nat', '-S', n.networkPrefix], { encoding: 'utf8' }).stdout ?? '').trim()
  assert.equal(nat, mode === 'iptables' ? `-N ${n.networkPrefix}` : '')
  if (mode !== 'iptables') {
    assert.equal(spawnSync('pgrep', ['-f', `port-proxy tcp 0.0.0.0 ${port} `]).status, 1, 'the TCP forwarder is gone')
    assert.equal(spawnSync('pgrep', ['-f', `port-proxy udp 0.0.0.0 ${uport} `]).status, 1, 'the UDP forwarder is gone')
  }
  assert.deepEqual(readdirSync(join(dir, 'run', 'netns')), [])
  const links = (spawnSync('ip', ['-o', 'link'], { encoding: 'utf8' }).stdout ?? '').split('\n').filter((l) => l.includes(`: ${n.networkPrefix.toLowerCase()}`))
  assert.deepEqual(links, [])
})
}
