// Directory locks (lib/util/dir-lock.ts): flock(2) locks on open file descriptions the process keeps, taken by the
// package's Node-API module (dist/berth-flock.node) in the process itself, or by a one-shot child, either
// util-linux's `flock` (one directory) or the monitor binary's `lock` mode (all the daemon's roots in one child).
// Checked against util-linux's flock(1) on the same files, as another daemon would see them.
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { ROOT, tmpDir } from '../helpers/engine.js'
import { builtFlock, lockDirectories, lockDirectory, LOCK_FILE } from '../../lib/util/dir-lock.js'

const SHIM = join(ROOT, 'dist', 'berth-shim')

/** Whether another open file description of dir's lock file could take the lock now (flock(1), not blocking). */
function free (dir: string): boolean {
  return spawnSync('flock', ['--nonblock', '--exclusive', join(dir, LOCK_FILE), 'true']).status === 0
}

describe('directory locks', { skip: existsSync(SHIM) ? false : 'dist/berth-shim not built (no C compiler)' }, () => {
  it('takes both roots in one child of the monitor binary, records the pid, and gives them back on release', async (t) => {
    const dir = tmpDir('berth-dir-lock-')
    t.after(() => { rmSync(dir, { recursive: true, force: true }) })
    const [a, b] = [join(dir, 'a'), join(dir, 'b')]
    mkdirSync(a)
    mkdirSync(b)
    const locks = await lockDirectories([{ dir: a, what: 'data root' }, { dir: b, what: 'exec root' }], { helper: SHIM, flock: null })
    assert.equal(locks.length, 2)
    assert.deepEqual([free(a), free(b)], [false, false])
    assert.equal(readFileSync(join(b, LOCK_FILE), 'utf8'), `${process.pid}\n`)
    // a second taker is refused, naming the holder and the busy root; the one it could take is given back
    const c = join(dir, 'c')
    mkdirSync(c)
    await assert.rejects(lockDirectories([{ dir: c, what: 'data root' }, { dir: b, what: 'exec root' }], { helper: SHIM, waitMs: 0, flock: null }),
      (err: Error) => err.message.includes(`exec root ${b} is in use by another berth daemon`))
    assert.equal(free(c), true)
    for (const l of locks) await l.release()
    assert.deepEqual([free(a), free(b)], [true, true])
  })

  it('takes one directory with util-linux flock, and refuses a busy one', async (t) => {
    const dir = tmpDir('berth-dir-lock-')
    t.after(() => { rmSync(dir, { recursive: true, force: true }) })
    const lock = await lockDirectory(dir, 'data root', { flock: null })
    assert.equal(free(dir), false)
    await assert.rejects(lockDirectories([{ dir, what: 'data root' }], { helper: SHIM, waitMs: 0, flock: null }), /data root .* is in use by another berth daemon/)
    await lock.release()
    assert.equal(free(dir), true)
  })

  it('takes both roots through the package\'s flock module, with no child, and refuses a root another holds', { skip: existsSync(join(ROOT, 'dist', 'berth-flock.node')) ? false : 'dist/berth-flock.node not built (no C compiler)' }, async (t) => {
    const flock = builtFlock()
    assert.notEqual(flock, null, 'the built module loads')
    const dir = tmpDir('berth-dir-lock-')
    t.after(() => { rmSync(dir, { recursive: true, force: true }) })
    const [a, b, c] = [join(dir, 'a'), join(dir, 'b'), join(dir, 'c')]
    for (const d of [a, b, c]) mkdirSync(d)
    // no helper given: a child would have nothing to run
    const locks = await lockDirectories([{ dir: a, what: 'data root' }, { dir: b, what: 'exec root' }])
    assert.deepEqual([free(a), free(b)], [false, false])
    assert.equal(readFileSync(join(a, LOCK_FILE), 'utf8'), `${process.pid}\n`)
    // another open file description (another daemon's) is refused, the one it could take given back
    await assert.rejects(lockDirectories([{ dir: c, what: 'data root' }, { dir: b, what: 'exec root' }], { waitMs: 0 }),
      (err: Error) => err.message.includes(`exec root ${b} is in use by another berth daemon (pid ${process.pid})`))
    assert.equal(free(c), true)
    for (const l of locks) await l.release()
    assert.deepEqual([free(a), free(b)], [true, true])
    // what is not an open descriptor: EBADF
    assert.equal((flock as NonNullable<typeof flock>).lock(-1), -9)
    assert.equal((flock as NonNullable<typeof flock>).lock(1 << 20), -9)
  })

  it('the monitor binary\'s lock mode refuses what is not a descriptor', () => {
    const r = spawnSync(SHIM, ['lock', '3x'], { encoding: 'utf8' })
    assert.equal(r.status, 1)
    assert.match(r.stderr, /not a descriptor: 3x/)
    const closed = spawnSync(SHIM, ['lock', '9'], { encoding: 'utf8' })
    assert.equal(closed.status, 1)
    assert.match(closed.stderr, /descriptor 9: Bad file descriptor/)
  })
})
