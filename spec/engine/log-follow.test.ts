// A log follower and the output signal that comes while it reads: the shim's tick for new output can arrive after
// the reader found nothing new and before it waits; the reader must look again rather than sleep until a later tick
// (a RUN step printing one line then sleeping lost that line until its exit; `docker logs -f` the same).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { EventEmitter, once } from 'node:events'
import { appendFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { PassThrough } from 'node:stream'
import { streamLog, countedWaiter } from '../../lib/containers/log-reader.js'
import { encodeRecord } from '../../lib/stream/log-record.js'
import { tmpDir, cleanupDir } from '../helpers/engine.js'

test('a follower sees output whose signal came between its read and its wait', async (t) => {
  const dir = tmpDir()
  t.after(async () => { await cleanupDir(dir) })
  const path = join(dir, 'container.log')
  writeFileSync(path, encodeRecord(1, 1n, Buffer.from('first\n')))
  const ticks = new EventEmitter()
  let count = 0
  const tick = (): void => { count++; ticks.emit('output') }
  let wrote = false
  let over = false
  const out = new PassThrough()
  const got: Buffer[] = []
  out.on('data', (d: Buffer) => { got.push(d) })
  const ac = new AbortController()
  const reading = streamLog(out, {
    path,
    unit: 'pieces',
    startOffset: 0,
    stdout: true,
    stderr: true,
    tty: true,
    timestamps: false,
    follow: true,
    // called right after a read found nothing new, right before the wait: the shim writes and ticks just then
    done: () => {
      if (!wrote) { wrote = true; appendFileSync(path, encodeRecord(1, 2n, Buffer.from('second\n'))); tick() }
      return over
    },
    waitMore: countedWaiter(() => count, async () => { await once(ticks, 'output') }),
    signal: ac.signal
  })
  const deadline = Date.now() + 5000
  while (!Buffer.concat(got).toString().includes('second') && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10))
  assert.equal(Buffer.concat(got).toString(), 'first\nsecond\n')
  over = true
  tick()
  await reading
})

test('countedWaiter: at once after a signal it has not returned for, else at the next one', async () => {
  let count = 0
  const ticks = new EventEmitter()
  const wait = countedWaiter(() => count, async () => { await once(ticks, 'tick') })
  count++
  await wait()
  let woke = false
  const p = wait().then(() => { woke = true })
  await new Promise((resolve) => setImmediate(resolve))
  assert.equal(woke, false)
  count++
  ticks.emit('tick')
  await p
  assert.equal(woke, true)
})
