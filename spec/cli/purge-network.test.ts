// `berth daemon --purge-network` (the uninstall step): what a stopped daemon with these settings left on the host's
// networking goes (its bridge, its iptables chains); refused while a daemon holds the data root.
import { it } from 'node:test'
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { cleanupDaemon, containerSkipReason, createContainer, daemonNetworkArgs, importBusybox, request, tmpDir, uniqueNetworkOptions } from '../helpers/engine.js'
import { berth, pingable, startDaemon } from './helpers.js'

const skip = containerSkipReason()

function hostHas (bridge: string, prefix: string): { bridge: boolean, chains: boolean } {
  return {
    bridge: spawnSync('ip', ['link', 'show', bridge]).status === 0,
    chains: spawnSync('iptables-save', [], { encoding: 'utf8' }).stdout.includes(`:${prefix}`)
  }
}

it('removes a stopped daemon\'s bridge and chains, and refuses while it runs', { skip: skip ?? false }, async (t) => {
  const dir = tmpDir()
  const net = uniqueNetworkOptions()
  writeFileSync(join(dir, 'none.json'), '{}')
  const flags = ['-H', `unix://${join(dir, 'b.sock')}`, '--data-root', join(dir, 'data'), '--exec-root', join(dir, 'run'), '--config-file', join(dir, 'none.json'), ...daemonNetworkArgs(net)]
  const d = startDaemon(flags)
  t.after(async () => { await cleanupDaemon(d.child, dir, net) })
  const sock = join(dir, 'b.sock')
  await pingable(sock, d)
  // a container on the default bridge makes the bridge and the chains
  await importBusybox(sock)
  const id = await createContainer(sock, { Image: 'busybox', Cmd: ['true'] })
  assert.equal((await request(sock, 'POST', `/containers/${id}/start`)).status, 204)
  await request(sock, 'POST', `/containers/${id}/wait`)
  assert.equal((await request(sock, 'DELETE', `/containers/${id}`)).status, 204)
  assert.deepEqual(hostHas(net.defaultBridge, net.networkPrefix), { bridge: true, chains: true })
  const busy = berth(['daemon', '--purge-network', ...flags])
  assert.equal(busy.status, 1)
  assert.match(busy.stderr, /data root .* is in use by another berth daemon \(pid \d+\)/)
  d.child.kill('SIGKILL')
  await d.exited()
  const r = berth(['daemon', '--purge-network', ...flags])
  assert.equal(r.status, 0, r.stderr)
  assert.match(r.stdout, new RegExp(`removed the host networking of the daemon with data root .* \\(prefix ${net.networkPrefix}\\)`))
  assert.deepEqual(hostHas(net.defaultBridge, net.networkPrefix), { bridge: false, chains: false })
})
