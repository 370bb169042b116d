import { test } from 'node:test'
import assert from 'node:assert/strict'
import { rm, mkdir, writeFile, readdir } from 'node:fs/promises'
import { join } from 'node:path'
import { FsDriver } from '../../lib/registry/storage/fs-driver.js'
import { driverSuite } from './storage-suite.js'
import { tmpDir } from './helpers.js'

driverSuite('filesystem', async () => {
  const dir = tmpDir()
  return { driver: new FsDriver(join(dir, 'data')), cleanup: async () => { await rm(dir, { recursive: true, force: true }) } }
})

test('filesystem driver: blobs use the content store layout; init drops leftover uploads; temp files are not listed', async (t) => {
  const dir = tmpDir()
  t.after(async () => { await rm(dir, { recursive: true, force: true }) })
  const root = join(dir, 'data')
  await mkdir(join(root, 'ingest'), { recursive: true })
  await writeFile(join(root, 'ingest', 'half-written'), 'partial upload from a crash')
  const driver = new FsDriver(root)
  await driver.init()
  assert.deepEqual(await readdir(join(root, 'ingest')), [])
  const d = await driver.putBlob(Buffer.from('x'))
  assert.deepEqual(await readdir(join(root, 'blobs', 'sha256')), [d.slice(7)])
  await driver.writeDocument('repositories/a/b/_tags/t.json', '{}')
  await writeFile(join(root, 'repositories', 'a', 'b', '_tags', '.t.json.123.tmp'), '{"half')
  assert.deepEqual(await driver.listDocuments('repositories/'), ['repositories/a/b/_tags/t.json'])
  // an offline tool's driver leaves a running registry's uploads alone
  await writeFile(join(root, 'ingest', 'in-flight'), 'x')
  await new FsDriver(root, { cleanIngest: false }).init()
  assert.deepEqual(await readdir(join(root, 'ingest')), ['in-flight'])
})
