// The swarm's code is loaded at the first swarm request, or at start when the data root has a swarm's state: an engine
// that never joins a swarm does not carry it. Before the load, /info and networking answer as an inactive swarm's; the
// first request of each kind answers as a loaded swarm would (dockerd's 503 before init), and init works from there.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { cleanupDir, purgeNetwork, request, startEngine, tmpDir, uniqueNetworkOptions } from '../helpers/engine.js'

const NOT_MANAGER = 'This node is not a swarm manager. Use "docker swarm init" or "docker swarm join" to connect this node to swarm and try again.'

test('a fresh engine loads the swarm at the first swarm request; a restarted one at start', async (t) => {
  // both engines on one data root and one set of network options, whose host state goes at the end
  const dir = tmpDir()
  const n = uniqueNetworkOptions()
  t.after(async () => { await purgeNetwork(n, dir); await cleanupDir(dir) })
  const e = await startEngine(t, { dir, keepNetwork: true, options: n })
  const swarmDir = join(e.dataRoot, 'swarm')
  const info = (await request(e.socket, 'GET', '/info')).json() as { Swarm: { LocalNodeState: string, NodeID: string } }
  assert.equal(info.Swarm.LocalNodeState, 'inactive')
  assert.equal(info.Swarm.NodeID, '')
  assert.equal((await request(e.socket, 'GET', '/networks')).status, 200)
  assert.equal((await request(e.socket, 'GET', '/_ping')).headers.swarm, 'inactive')
  assert.equal(e.engine.swarm, undefined, 'not loaded by /_ping, /info nor the network routes')

  // the first swarm requests, at once: one load, each answered as by a loaded inactive swarm
  const first = await Promise.all(['/nodes', '/services', '/swarm', '/secrets'].map(async (p) => await request(e.socket, 'GET', p)))
  for (const r of first) {
    assert.equal(r.status, 503, r.text)
    assert.equal((r.json() as { message: string }).message, NOT_MANAGER)
  }
  assert.notEqual(e.engine.swarm, undefined)
  const leave = await request(e.socket, 'POST', '/swarm/leave')
  assert.equal(leave.status, 503)
  assert.equal((leave.json() as { message: string }).message, 'This node is not part of a swarm')

  const init = await request(e.socket, 'POST', '/swarm/init', { body: { ListenAddr: '127.0.0.1:2377', AdvertiseAddr: '127.0.0.1' } })
  assert.equal(init.status, 200, init.text)
  const nodeId = init.json() as string
  assert.equal(((await request(e.socket, 'GET', '/info')).json() as { Swarm: { NodeID: string } }).Swarm.NodeID, nodeId)
  assert.ok(existsSync(join(swarmDir, 'state.json')))
  await e.close()

  // the data root has a swarm's state now: a new engine on it loads the swarm at start
  const again = await startEngine(t, { dir, options: n })
  assert.notEqual(again.engine.swarm, undefined)
  assert.equal(again.engine.swarm?.active, true)
  const nodes = await request(again.socket, 'GET', '/nodes')
  assert.equal(nodes.status, 200, nodes.text)
  assert.deepEqual((nodes.json() as Array<{ ID: string }>).map((n) => n.ID), [nodeId])
  assert.equal((await request(again.socket, 'POST', '/swarm/leave?force=1')).status, 200)
})
