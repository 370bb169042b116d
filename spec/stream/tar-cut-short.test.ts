// An archive that fails in the middle of an entry (its source reset, cut short, or failing verification, as a pull's
// layer whose digest does not match or a `docker cp` whose client goes away) rejects the extraction with that error
// and nothing else: tar-stream destroys the entry it was reading with the archive's error, and an entry whose
// directory was still being made had nobody listening on it, so the error was thrown as an uncaught exception (the
// daemon stopped; in a test, "asynchronous activity after the test ended"). Both extractors are cut at many points
// and moments, and the test runner fails the file on any uncaught exception: before the fix, extractTar (tar-fs)
// threw in about a third of the rounds; extractInto's loop was not seen to, and keeps the same guard.
// A failed extraction is also over when it rejects: its caller removes the half-made tree at once (as a layer's
// unpacking does), and nothing comes back afterwards. tar-fs's file calls under way used to go on making
// directories and files after the rejection (the removal failed with ENOTEMPTY, or the tree reappeared).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { tmpdir } from 'node:os'
import { PassThrough } from 'node:stream'
import { setImmediate as immediate, setTimeout as sleep } from 'node:timers/promises'
import { extractTar } from '../../lib/stream/tar.js'
import { extractInto } from '../../lib/stream/tar-tree.js'
import { ScopedRoot } from '../../lib/util/scoped-fs.js'
import { makeTar } from '../helpers/tar.js'

// files in directories of their own, so that each entry waits for its parents to be made before it is written
const body = Buffer.alloc(192 * 1024, 'x')
const archive = makeTar(Array.from({ length: 6 }, (_, i) => ({ name: `d${i}/e/f/g/file${i}`, body })))

/** Feeds the archive up to `cut` in chunks, with pauses, then fails the source at one of three moments. */
async function feedCut (src: PassThrough, cut: number, round: number): Promise<void> {
  for (let off = 0; off < cut; off += 32 * 1024) {
    src.write(archive.subarray(off, Math.min(cut, off + 32 * 1024)))
    if ((off / (32 * 1024) + round) % 3 === 0) await immediate()
  }
  const err = new Error('the source failed')
  if (round % 3 === 0) src.destroy(err)
  else if (round % 3 === 1) setImmediate(() => { src.destroy(err) })
  else setTimeout(() => { src.destroy(err) }, 1)
}

const cuts = (rounds: number): number[] => Array.from({ length: rounds }, (_, i) => 512 + Math.floor((archive.length - 1024) * ((i * 37) % rounds) / rounds))

test('extractTar (image layers): an archive failing mid-entry rejects with its error, nothing thrown elsewhere', async (t) => {
  const base = mkdtempSync(join(tmpdir(), 'berth-tarcut-'))
  t.after(() => { rmSync(base, { recursive: true, force: true }) })
  const rounds = cuts(45)
  for (const [round, cut] of rounds.entries()) {
    const src = new PassThrough()
    const done = extractTar(src, join(base, `r${round}`))
    await feedCut(src, cut, round)
    await assert.rejects(done, /the source failed|premature close/i)
    rmSync(join(base, `r${round}`), { recursive: true, force: true })
  }
  // anything the destroyed entries would have thrown or made comes within a few turns of the loop
  await sleep(50)
  assert.deepEqual(readdirSync(base), [], 'nothing made after its extraction rejected')
})

test('extractInto (docker cp into a container): an archive failing mid-entry rejects, nothing thrown elsewhere', async (t) => {
  const base = mkdtempSync(join(tmpdir(), 'berth-tarcut-'))
  t.after(() => { rmSync(base, { recursive: true, force: true }) })
  const root = await ScopedRoot.open(base)
  t.after(async () => { await root.close() })
  const rounds = cuts(45)
  for (const [round, cut] of rounds.entries()) {
    const src = new PassThrough()
    const done = extractInto(src, { root, dest: '/', noOverwriteDirNonDir: false })
    await feedCut(src, cut, round)
    await assert.rejects(done)
  }
  await sleep(50)
})
