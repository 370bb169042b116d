// The adaptive gzip of layer pushes: one valid gzip member whatever the data, stored blocks for incompressible
// windows, deflate again for compressible ones (after a probe), and the CRC-32 fallback equal to zlib's.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import zlib, { gunzipSync, inflateRawSync } from 'node:zlib'
import { AdaptiveGzip, crc32, storedBlocks } from '../../lib/stream/adaptive-gzip.js'

async function compress (data: Buffer, level = -1): Promise<{ gz: Buffer, windows: AdaptiveGzip['windows'] }> {
  const g = new AdaptiveGzip(level)
  const chunks = Array.from({ length: Math.ceil(data.length / 65536) }, (_, i) => data.subarray(i * 65536, (i + 1) * 65536))
  const out: Buffer[] = []
  await pipeline(Readable.from(chunks), g, async function * (s) { for await (const c of s) out.push(c as Buffer) })
  return { gz: Buffer.concat(out), windows: g.windows }
}

test('round trips empty, small, random, text and mixed data as one gzip member', async () => {
  const text = Buffer.from('the quick brown fox jumps over the lazy dog\n'.repeat(200_000))
  const random = randomBytes(12 * 1024 * 1024)
  for (const data of [Buffer.alloc(0), Buffer.from('x'), random, text, Buffer.concat([text, random, text])]) {
    const { gz } = await compress(data)
    assert.deepEqual(gunzipSync(gz), data)
    assert.deepEqual([...gz.subarray(0, 3)], [0x1f, 0x8b, 8])
  }
})

test('incompressible windows are stored, compressible data is deflated again after a probe', async () => {
  const random = randomBytes(16 * 1024 * 1024)
  const r = await compress(random)
  assert.ok(r.gz.length < random.length * 1.01, `${r.gz.length} for ${random.length}`)
  assert.ok(r.windows.stored >= 5, JSON.stringify(r.windows))
  const text = Buffer.from('abcdefgh'.repeat(4 * 1024 * 1024))
  const mixed = Buffer.concat([random, text])
  const m = await compress(mixed)
  // at most STORED_RUN windows (8 MiB) of the text go out stored before a probe deflates again
  assert.ok(m.gz.length < random.length + 8.5 * 1024 * 1024 + text.length / 8, `${m.gz.length} for ${mixed.length}`)
  assert.deepEqual(gunzipSync(m.gz), mixed)
})

test('level 0 stores everything; stored blocks split at 65535 bytes; the CRC-32 fallback matches zlib', async () => {
  const data = Buffer.from('hello '.repeat(50_000))
  const z = await compress(data, 0)
  assert.deepEqual(z.windows, { deflated: 0, stored: 1 })
  assert.deepEqual(gunzipSync(z.gz), data)
  const blocks = storedBlocks(Buffer.alloc(70_000, 7))
  assert.deepEqual(blocks.map((b) => b.length), [5, 65535, 5, 4465])
  assert.deepEqual(inflateRawSync(Buffer.concat([...blocks, Buffer.from([1, 0, 0, 0xff, 0xff])])), Buffer.alloc(70_000, 7))
  const native = (zlib as unknown as { crc32?: (d: Buffer, v: number) => number }).crc32
  if (native !== undefined) {
    const sample = randomBytes(100_000)
    assert.equal(crc32(sample, 0), native(sample, 0))
    assert.equal(crc32(sample.subarray(50), crc32(sample.subarray(0, 50), 0)), native(sample, 0))
  }
})
