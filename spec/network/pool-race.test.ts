// Two engines on one host sharing a default address pool and creating networks at the same moment: each picks the
// first subnet free on the host, and both can pick it before either bridge has its address. The later one to see the
// clash picks again, so no two networks on the host ever share a subnet (a shared one misroutes their traffic).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { startEngine, containerSkipReason, request, uniqueNetworkOptions } from '../helpers/engine.js'
import { missingTool } from '../helpers/tools.js'

const skip = containerSkipReason() ?? missingTool('ip', ['-V'], 'iproute2')

test('two engines creating networks from one pool at the same time never share a subnet', { skip: skip ?? false }, async (t) => {
  const pools = uniqueNetworkOptions().defaultAddressPools
  const engines = [await startEngine(t, { options: { defaultAddressPools: pools } }), await startEngine(t, { options: { defaultAddressPools: pools } })]
  const subnets: string[] = []
  for (let round = 0; round < 4; round++) {
    const made = await Promise.all(engines.map(async ({ socket }, i) => {
      const r = await request(socket, 'POST', '/networks/create', { body: { Name: `race${round}-${i}`, Driver: 'bridge' } })
      assert.equal(r.status, 201, r.text)
      const insp = (await request(socket, 'GET', `/networks/race${round}-${i}`)).json() as { IPAM: { Config: Array<{ Subnet: string }> } }
      return insp.IPAM.Config[0]?.Subnet as string
    }))
    subnets.push(...made)
  }
  assert.equal(new Set(subnets).size, subnets.length, `shared subnets: ${subnets.join(' ')}`)
  // and on the host: one interface per subnet of the pool
  const base = (pools[0]?.base ?? '').split('.').slice(0, 2).join('.') + '.'
  const held = (spawnSync('ip', ['-4', '-o', 'addr', 'show'], { encoding: 'utf8' }).stdout ?? '').split('\n')
    .map((l) => /\sinet\s+(\S+)/.exec(l)?.[1] ?? '').filter((a) => a.startsWith(base))
  assert.equal(held.length, subnets.length, held.join(' '))
})
