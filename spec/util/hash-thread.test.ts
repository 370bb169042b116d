// The hash thread: digests equal node:crypto's for short (local, up to 4 MiB) and long (threaded) streams, chunked anyhow;
// back-pressure promises resolve; dropped hashes and close() leave nothing running.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createHash, randomBytes } from 'node:crypto'
import { HashThread } from '../../lib/util/hash-thread.js'
import { Coalesce } from '../../lib/stream/coalesce.js'

const sha = (b: Buffer): string => createHash('sha256').update(b).digest('hex')

test('digests match node:crypto for empty, short, exactly-one-stage and long inputs, in any chunking', async (t) => {
  const ht = new HashThread()
  t.after(async () => { await ht.close() })
  for (const size of [0, 1, 1000, 1024 * 1024 - 1, 1024 * 1024, 1024 * 1024 + 1, 4 * 1024 * 1024, 4 * 1024 * 1024 + 1, 5 * 1024 * 1024, 13 * 1024 * 1024 + 7]) {
    const data = randomBytes(size)
    for (const chunk of [1 << 16, 3 * 1024 * 1024 + 5]) {
      const h = ht.create()
      for (let off = 0; off < size; off += chunk) {
        const room = h.update(data.subarray(off, off + chunk))
        if (room !== null) await room
      }
      assert.equal(await h.digest(), sha(data), `size ${size}, chunks of ${chunk}`)
    }
  }
})

test('many hashes at once keep their own states', async (t) => {
  const ht = new HashThread()
  t.after(async () => { await ht.close() })
  const inputs = Array.from({ length: 6 }, (_, i) => randomBytes(3 * 1024 * 1024 + i * 1024 * 1024 + i * 4099))
  const hashes = inputs.map(() => ht.create())
  // interleaved updates, without waiting for room: the in-flight bound only asks callers to wait
  for (let off = 0; off < inputs[5]!.length; off += 65536) {
    for (let i = 0; i < inputs.length; i++) hashes[i]!.update(inputs[i]!.subarray(off, off + 65536))?.catch(() => {})
  }
  assert.deepEqual(await Promise.all(hashes.map(async (h) => await h.digest())), inputs.map(sha))
})

test('a dropped hash and close(): digests after close fail clearly, and the process can exit', async () => {
  const ht = new HashThread()
  const dropped = ht.create()
  dropped.update(randomBytes(7 * 1024 * 1024))
  dropped.drop()
  const h = ht.create()
  h.update(randomBytes(6 * 1024 * 1024))
  await ht.close()
  await assert.rejects(h.digest(), /hash thread/)
  // short hashes never need the thread
  const short = ht.create()
  short.update(Buffer.from('abc'))
  assert.equal(await short.digest(), sha(Buffer.from('abc')))
})

test('Coalesce gathers chunks to the size, passes the rest at the end, and keeps bytes in order', async () => {
  const c = new Coalesce(1000)
  const out: Buffer[] = []
  c.on('data', (b: Buffer) => out.push(b))
  const ended = new Promise((resolve) => c.on('end', resolve))
  const data = randomBytes(4321)
  for (let off = 0; off < data.length; off += 300) c.write(data.subarray(off, off + 300))
  c.end()
  await ended
  assert.deepEqual(out.map((b) => b.length), [1200, 1200, 1200, 721])
  assert.deepEqual(Buffer.concat(out), data)
})
