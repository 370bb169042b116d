// The daemon's caches keyed by what a client names stay bounded: the registry endpoint cache keeps at most its
// limit, dropping the least recently set host.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { BoundedMap } from '../../lib/util/bounded-map.js'
import { Distribution } from '../../lib/distribution/distribution.js'

test('a BoundedMap keeps at most its limit, the most recently set', () => {
  const m = new BoundedMap<string, number>(3)
  for (let i = 0; i < 10; i++) m.set(`k${i}`, i)
  assert.deepEqual([...m.keys()], ['k7', 'k8', 'k9'])
  m.set('k7', 70) // set again: the most recent now
  m.set('k10', 10)
  assert.deepEqual([...m.entries()], [['k9', 9], ['k7', 70], ['k10', 10]])
})

test('the registry endpoint cache is bounded', () => {
  // no registry is reached: the cache is filled as connect() and login() fill it
  const d = new (Distribution as unknown as new (o: unknown) => Distribution)({ images: {}, events: {}, dataRoot: '/nonexistent', insecureRegistries: [] })
  const cache = d.endpointCache
  for (let i = 0; i < 1000; i++) cache.set(`127.0.0.1:${10000 + i}`, { base: `http://127.0.0.1:${10000 + i}`, tlsVerify: false } as never)
  assert.ok(cache.size <= 64, `${cache.size} endpoints remembered`)
  d.close()
})
