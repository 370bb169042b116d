// One test suite for every storage driver (fs-driver.test.ts, memory-driver.test.ts run it), as distribution's
// driver testsuites and containerd's content testsuite do.
import { describe, it, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { Writable } from 'node:stream'
import { once } from 'node:events'
import { text } from 'node:stream/consumers'
import { isEngineError } from '../../lib/errors.js'
import type { StorageDriver } from '../../lib/registry/storage/driver.js'
import { isDigestMismatch } from '../../lib/image/digest.js'
import { sha256 } from './helpers.js'

async function kindOf (p: Promise<unknown>): Promise<string> {
  try { await p } catch (err) { return isEngineError(err) ? err.kind : `not an EngineError: ${String(err)}` }
  return 'no error'
}

export function driverSuite (name: string, make: () => Promise<{ driver: StorageDriver, cleanup: () => Promise<void> }>): void {
  describe(`storage driver: ${name}`, () => {
    let driver: StorageDriver
    let cleanup: () => Promise<void>
    before(async () => {
      ({ driver, cleanup } = await make())
      await driver.init()
    })
    after(async () => { await cleanup() })

    it('putBlob stores under the sha256 and is idempotent', async () => {
      const data = Buffer.from('hello blob')
      const d = await driver.putBlob(data)
      assert.equal(d, sha256(data))
      assert.equal(await driver.putBlob(data), d)
      assert.equal((await driver.statBlob(d))?.size, data.length)
      assert.deepEqual(await driver.readBlob(d), data)
      assert.ok((await driver.listBlobs()).includes(d))
    })
    it('blobStream serves the whole blob or an inclusive range', async () => {
      const d = await driver.putBlob(Buffer.from('0123456789'))
      assert.equal(await text(driver.blobStream(d)), '0123456789')
      assert.equal(await text(driver.blobStream(d, { start: 2, end: 5 })), '2345')
    })
    it('sendBlob writes the blob or an inclusive range to a writable and ends it', async () => {
      const data = randomBytes(3 * 1024 * 1024 + 17) // past the fs driver's send buffers: several rounds of two
      const d = await driver.putBlob(data)
      const sink = async (range: { start: number, end: number }): Promise<Buffer> => {
        // done with each chunk once its write calls back, as a socket is (sendBlob's contract)
        const parts: Buffer[] = []
        const out = new Writable({ write (chunk: Buffer, _enc, cb) { parts.push(Buffer.from(chunk)); setImmediate(cb) } })
        const finished = once(out, 'finish')
        await driver.sendBlob(d, range, out)
        await finished
        return Buffer.concat(parts)
      }
      assert.ok((await sink({ start: 0, end: data.length - 1 })).equals(data))
      assert.ok((await sink({ start: 1_048_570, end: 2_200_000 })).equals(data.subarray(1_048_570, 2_200_001)))
      assert.ok((await sink({ start: 5, end: 5 })).equals(data.subarray(5, 6)))
    })
    it('an upload written as lists of chunks is the chunks in order', async () => {
      const parts = [randomBytes(10), randomBytes(70_000), randomBytes(3)]
      const w = await driver.createUpload()
      await w.write(parts.slice(0, 2))
      await w.write([])
      await w.write(parts.slice(2))
      const whole = Buffer.concat(parts)
      assert.equal(w.size, whole.length)
      assert.equal(await w.commit({ digest: sha256(whole) }), sha256(whole))
      assert.deepEqual(await driver.readBlob(sha256(whole)), whole)
    })
    it('an upload hashes while written and commits under its digest', async () => {
      const parts = [randomBytes(1000), randomBytes(5), randomBytes(70_000)]
      const w = await driver.createUpload()
      for (const p of parts) await w.write(p)
      assert.equal(w.size, 71_005)
      const whole = Buffer.concat(parts)
      assert.equal(await driver.statBlob(sha256(whole)), null, 'invisible before commit')
      assert.equal(await w.commit({ digest: sha256(whole) }), sha256(whole))
      assert.deepEqual(await driver.readBlob(sha256(whole)), whole)
    })
    it('a commit with the wrong digest is invalid-argument, coded as a digest mismatch, and publishes nothing', async () => {
      const data = randomBytes(64)
      const w = await driver.createUpload()
      await w.write(data)
      const failed = w.commit({ digest: sha256('something else') })
      await assert.rejects(failed, (err: unknown) => isDigestMismatch(err))
      assert.equal(await kindOf(failed), 'invalid-argument')
      assert.equal(await driver.statBlob(sha256(data)), null)
      assert.equal(await driver.statBlob(sha256('something else')), null)
    })
    it('an aborted upload leaves nothing', async () => {
      const data = randomBytes(64)
      const w = await driver.createUpload()
      await w.write(data)
      await w.abort()
      assert.equal(await driver.statBlob(sha256(data)), null)
    })
    it('deleteBlob removes; absent blobs stat as null and read as not-found', async () => {
      const d = await driver.putBlob(randomBytes(10))
      await driver.deleteBlob(d)
      assert.equal(await driver.statBlob(d), null)
      assert.equal(await kindOf(driver.readBlob(d)), 'not-found')
      assert.ok(!(await driver.listBlobs()).includes(d))
    })
    it('touchBlob makes a blob as recent as a fresh commit; an absent blob is no error', async () => {
      const d = await driver.putBlob(randomBytes(10))
      const before = Date.now()
      await driver.touchBlob(d)
      assert.ok(((await driver.statBlob(d))?.modified ?? 0) >= before - 1000)
      await driver.deleteBlob(d)
      await driver.touchBlob(d)
      assert.equal(await driver.statBlob(d), null)
    })
    it('malformed digests are invalid-argument', async () => {
      assert.equal(await kindOf(driver.statBlob('sha256:../../etc/passwd')), 'invalid-argument')
      assert.equal(await kindOf(driver.deleteBlob('md5:abc')), 'invalid-argument')
    })
    it('documents: write, overwrite, read, list recursively, delete', async () => {
      await driver.writeDocument('repositories/a/b/_tags/v1.json', '{"v":1}')
      await driver.writeDocument('repositories/a/b/_tags/v1.json', '{"v":2}')
      await driver.writeDocument('repositories/a/b/c/_repository.json', '{}')
      await driver.writeDocument('repositories/z/_layers/x', '')
      assert.equal((await driver.readDocument('repositories/a/b/_tags/v1.json'))?.toString(), '{"v":2}')
      assert.equal((await driver.readDocument('repositories/z/_layers/x'))?.length, 0)
      assert.deepEqual((await driver.listDocuments('repositories/a/')).sort(), ['repositories/a/b/_tags/v1.json', 'repositories/a/b/c/_repository.json'])
      await driver.deleteDocument('repositories/a/b/_tags/v1.json')
      assert.equal(await driver.readDocument('repositories/a/b/_tags/v1.json'), null)
      await driver.deleteDocument('repositories/a/b/_tags/absent.json')
      assert.deepEqual(await driver.listDocuments('repositories/nothing/'), [])
    })
    it('keys with empty, dot or dot-dot segments are invalid-argument', async () => {
      for (const key of ['../escape', 'repositories/../../x', '/abs/path', '', 'a//b', 'repositories/.hidden', 'a/./b', 'a/b/']) {
        assert.equal(await kindOf(driver.writeDocument(key, 'x')), 'invalid-argument', key)
        assert.equal(await kindOf(driver.readDocument(key)), 'invalid-argument', key)
      }
    })
  })
}
