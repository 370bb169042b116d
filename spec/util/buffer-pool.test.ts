// The buffer pool behind the registry's blob serving stays bounded and lets its spare buffers go when idle.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { setTimeout as delay } from 'node:timers/promises'
import { BufferPool } from '../../lib/util/buffer-pool.js'

test('a BufferPool hands its buffers out again and keeps at most `keep` spare', () => {
  const pool = new BufferPool(1024, { keep: 2 })
  const a = pool.take()
  const b = pool.take()
  const c = pool.take()
  assert.equal(a.length, 1024)
  pool.give(a)
  pool.give(b)
  pool.give(c)
  assert.equal(pool.held, 2)
  const again = pool.take()
  assert.ok(again === a || again === b, 'a spare buffer is handed out again')
  pool.give(Buffer.alloc(10)) // not one of its size: ignored
  assert.equal(pool.held, 1)
  pool.clear()
  assert.equal(pool.held, 0)
})

test('a BufferPool drops its spare buffers once idle', async () => {
  const pool = new BufferPool(64, { idleMs: 50 })
  pool.give(pool.take())
  assert.equal(pool.held, 1)
  for (let i = 0; i < 100 && pool.held > 0; i++) await delay(20)
  assert.equal(pool.held, 0)
  pool.clear()
})
