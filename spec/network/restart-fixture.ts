// The first engine of a restart test: its own directory and networking (purged with the test), busybox imported, and a
// user network on a /24 of its own whose addresses the test can name (`${sub}.N`).
import assert from 'node:assert/strict'
import type { TestContext } from 'node:test'
import { startEngine, tmpDir, cleanupDir, uniqueNetworkOptions, purgeNetwork, request, importBusybox } from '../helpers/engine.js'

export async function firstEngineWithNetwork (t: TestContext, name: string): Promise<{ dir: string, n: ReturnType<typeof uniqueNetworkOptions>, first: Awaited<ReturnType<typeof startEngine>>, sub: string }> {
  const dir = tmpDir()
  const n = uniqueNetworkOptions()
  t.after(async () => { await purgeNetwork(n, dir); await cleanupDir(dir) })
  const first = await startEngine(t, { dir, keepNetwork: true, options: n })
  await importBusybox(first.socket)
  const sub = `10.${200 + Math.floor(Math.random() * 50)}.${Math.floor(Math.random() * 256)}`
  const net = await request(first.socket, 'POST', '/networks/create', { body: { Name: name, IPAM: { Config: [{ Subnet: `${sub}.0/24` }] } } })
  assert.equal(net.status, 201, net.text)
  return { dir, n, first, sub }
}
