// A daemon starting after a crash removes, at start, what no record owns: a bridge named by the
// com.docker.network.bridge.name option whose network record was lost, rules in its own iptables chains, veths and
// namespace mounts; and leaves alone what is not its own (another engine's bridges and chains, any other link).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { startEngine, containerSkipReason, tmpDir, cleanupDir, uniqueNetworkOptions, purgeNetwork, request } from '../helpers/engine.js'

const skip = containerSkipReason() ??
  (spawnSync('iptables', ['-V']).status === 0 ? null : 'iptables is not installed') ??
  (spawnSync('ip', ['-V']).status === 0 ? null : 'iproute2 is not installed') ??
  (spawnSync('unshare', ['--version']).status === 0 ? null : 'unshare is not installed')

function sh (cmd: string, args: string[]): { status: number | null, stdout: string } {
  const r = spawnSync(cmd, args, { encoding: 'utf8' })
  return { status: r.status, stdout: r.stdout ?? '' }
}

const linkExists = (name: string): boolean => sh('ip', ['link', 'show', 'dev', name]).status === 0
const ruleExists = (table: string, chain: string, rule: string[]): boolean => sh('iptables', ['-w', '-t', table, '-C', chain, ...rule]).status === 0

test('a daemon starting after a crash cleans what no record owns, and nothing else', { skip: skip ?? false }, async (t) => {
  const dir = tmpDir()
  const n = uniqueNetworkOptions()
  const tag = n.networkPrefix.slice(1).toLowerCase()
  const P = n.networkPrefix
  const custom = `cb${tag}1`
  // another engine's: a bridge with its mark, a bridge without one (a docker0), a chain with a rule
  const otherMarked = `xf${tag}0`
  const plain = `xp${tag}0`
  const otherChain = `F${tag}`
  const strayRule = ['-p', 'tcp', '-m', 'tcp', '--dport', '1', '-j', 'DNAT', '--to-destination', '10.0.0.1:1']
  t.after(async () => {
    for (const l of [otherMarked, plain, custom]) sh('ip', ['link', 'del', 'dev', l])
    sh('iptables', ['-w', '-t', 'nat', '-F', otherChain])
    sh('iptables', ['-w', '-t', 'nat', '-X', otherChain])
    await purgeNetwork(n, dir)
    await cleanupDir(dir)
  })

  const first = await startEngine(t, { dir, keepNetwork: true, options: n })
  const sub = `10.${200 + Math.floor(Math.random() * 50)}.${Math.floor(Math.random() * 256)}`
  const created = await request(first.socket, 'POST', '/networks/create', { body: { Name: 'lost', IPAM: { Config: [{ Subnet: `${sub}.0/24` }] }, Options: { 'com.docker.network.bridge.name': custom } } })
  assert.equal(created.status, 201, created.text)
  const id = (created.json() as { Id: string }).Id
  assert.ok(linkExists(custom))
  assert.equal(readFileSync(`/sys/class/net/${custom}/ifalias`, 'utf8').trim(), `berth:${P}:${id.slice(0, 12)}`)
  // the daemon goes away leaving the host's networking as it was (a kill -9 does the same), and the record is lost
  await first.close()
  rmSync(join(first.dataRoot, 'network', 'networks', `${id}.json`))

  // leftovers of ours: rules in our chains, a veth pair, a mounted namespace
  assert.ok(sh('iptables', ['-w', '-t', 'nat', '-A', P, ...strayRule]).status === 0)
  assert.ok(sh('iptables', ['-w', '-t', 'filter', '-A', `${P}-FWD`, '-i', custom, '-j', 'ACCEPT']).status === 0)
  const strayVeth = `${P.toLowerCase()}v0dead`
  assert.equal(sh('ip', ['link', 'add', strayVeth, 'type', 'veth', 'peer', 'name', `${strayVeth}p`]).status, 0)
  const strayNs = join(dir, 'run', 'netns', 'deadbeefdead')
  writeFileSync(strayNs, '')
  assert.equal(sh('unshare', [`--net=${strayNs}`, 'true']).status, 0)
  assert.ok(readFileSync('/proc/self/mountinfo', 'utf8').includes(` ${strayNs} `))
  // not ours
  assert.equal(sh('ip', ['link', 'add', otherMarked, 'type', 'bridge']).status, 0)
  assert.equal(sh('ip', ['link', 'set', 'dev', otherMarked, 'alias', `berth:O${tag}:000000000000`]).status, 0)
  assert.equal(sh('ip', ['link', 'add', plain, 'type', 'bridge']).status, 0)
  assert.equal(sh('iptables', ['-w', '-t', 'nat', '-N', otherChain]).status, 0)
  assert.equal(sh('iptables', ['-w', '-t', 'nat', '-A', otherChain, ...strayRule]).status, 0)

  // a start with no container and no network of its own: the cleaning happens now, not at first use
  const second = await startEngine(t, { dir, options: n })
  assert.equal(linkExists(custom), false, 'the bridge of the lost network is gone')
  assert.equal(linkExists(strayVeth), false, 'the stray veth is gone')
  assert.deepEqual(readdirSync(join(dir, 'run', 'netns')), [])
  assert.equal(readFileSync('/proc/self/mountinfo', 'utf8').includes(` ${strayNs} `), false, 'the namespace mount is gone')
  assert.equal(ruleExists('nat', P, strayRule), false, 'the stray DNAT is gone')
  assert.equal(sh('iptables', ['-w', '-S', `${P}-FWD`]).stdout.includes(custom), false, 'the stray FORWARD rule is gone')
  assert.ok(linkExists(otherMarked) && linkExists(plain), 'other links stay')
  assert.ok(ruleExists('nat', otherChain, strayRule), 'another chain keeps its rule')

  // the name is free again: the same option makes a new bridge
  const again = await request(second.socket, 'POST', '/networks/create', { body: { Name: 'lost', IPAM: { Config: [{ Subnet: `${sub}.0/24` }] }, Options: { 'com.docker.network.bridge.name': custom } } })
  assert.equal(again.status, 201, again.text)
  assert.ok(linkExists(custom))
  assert.equal(existsSync(join(second.dataRoot, 'network', 'networks', `${(again.json() as { Id: string }).Id}.json`)), true)
})
