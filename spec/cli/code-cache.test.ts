// The `berth` program (dist/lib/cli/berth.cjs, tools/bundle-loader.cjs) and its V8 code caches: the one the build
// makes for its bundle (tools/code-cache.mjs), and the one a daemon writes into its exec root when its listeners are up
// (lib/cli/daemon-code-cache.ts). Used when run as the program, and never a reason to fail: a cache made for another
// bundle, another node binary or other V8 flags, a damaged one, one that is not the daemon's own (another owner, a
// mode others may write, a link) or none at all, and the bundle is compiled with the next one or from source; a
// daemon replaces its own when it could not use it, and writes nowhere else. The build's holds no path of the machine
// that built it.
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { appendFileSync, chmodSync, chownSync, copyFileSync, existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { join, resolve } from 'node:path'
import { ROOT, cleanupDaemon, containerSkipReason, daemonNetworkArgs, tmpDir, uniqueNetworkOptions } from '../helpers/engine.js'
import { startProc, type Proc } from './helpers.js'
import { DEFAULT_CONFIG_FILE } from '../../lib/cli/daemon-flags.js'
import { DEFAULT_DATA_ROOT } from '../../lib/engine/defaults.js'

const CLI = join(ROOT, 'dist', 'lib', 'cli')

/** What the program exports when required (tools/bundle-loader.cjs). */
interface Loader {
  sha256: (data: string | Buffer) => string
  stamp: (kind: string, source: string, payload: Buffer) => string
  readBundle: (path: string) => { text: string, id: string }
  daemonCacheFile: (argv: string[]) => string | null
  DAEMON_CACHE: string
  DEFAULT_CONFIG_FILE: string
  DEFAULT_DATA_ROOT: string
}
const loaderOf = (program: string): Loader => createRequire(import.meta.url)(program) as Loader

/**
 * `PROGRAM version` run as a program (its shebang's flags), or by `node` with these flags when `node` is given; with
 * the loader's report.
 */
function version (program: string, node?: string[]): { status: number | null, stdout: string, report: string } {
  const env = { ...process.env, BERTH_CODE_CACHE: 'report' }
  const r = node !== undefined
    ? spawnSync(process.execPath, [...node, program, 'version'], { encoding: 'utf8', env })
    : spawnSync(program, ['version'], { encoding: 'utf8', env })
  return { status: r.status, stdout: r.stdout, report: r.stderr.trim() }
}

/** A copy of the built program, its bundle and its cache in a package layout of its own (package.json beside). */
function copyOfProgram (): { dir: string, program: string, bundle: string, cache: string } {
  const dir = tmpDir('berth-code-cache-')
  const cli = join(dir, 'dist', 'lib', 'cli')
  mkdirSync(cli, { recursive: true })
  for (const f of ['berth.cjs', 'berth-bundle.cjs', 'berth-bundle.code-cache']) copyFileSync(join(CLI, f), join(cli, f))
  copyFileSync(join(ROOT, 'package.json'), join(dir, 'package.json'))
  return { dir, program: join(cli, 'berth.cjs'), bundle: join(cli, 'berth-bundle.cjs'), cache: join(cli, 'berth-bundle.code-cache') }
}

function assertVersion (r: { status: number | null, stdout: string, report: string }): void {
  assert.equal(r.status, 0, r.report)
  assert.match(r.stdout, /^Berth version \S+ \(Docker Engine API/)
}

describe('the berth program and its code cache', () => {
  it('runs the bundle with the cache the build made, as a program or by plain `node`; other V8 flags compile it instead', () => {
    const asProgram = version(join(CLI, 'berth.cjs'))
    assertVersion(asProgram)
    assert.equal(asProgram.report, 'berth: code cache used (build)')
    // the program puts the first line's V8 flags back to their defaults before it compiles (settleFlags): the same
    // flags as plain `node`'s, and the same hash V8 checks Node's built-in modules' caches against
    const plain = version(join(CLI, 'berth.cjs'), [])
    assertVersion(plain)
    assert.equal(plain.report, 'berth: code cache used (build)')
    const other = version(join(CLI, 'berth.cjs'), ['--no-turbofan'])
    assertVersion(other)
    assert.equal(other.report, 'berth: code cache rejected by V8 (build)')
  })

  it('compiles the bundle from source when the cache is missing, stale, damaged or refused by V8', (t) => {
    const c = copyOfProgram()
    t.after(() => { rmSync(c.dir, { recursive: true, force: true }) })
    assert.equal(version(c.program).report, 'berth: code cache used (build)', 'the copy uses the copied cache')
    const good = readFileSync(c.cache)
    const nl = good.indexOf(10)
    const header = good.toString('latin1', 0, nl)

    // made by another node binary: the first line names it
    writeFileSync(c.cache, Buffer.concat([Buffer.from(header.replace(/ node v\S+ /, ' node v0.0.1 ')), good.subarray(nl)]))
    let r = version(c.program)
    assertVersion(r)
    assert.equal(r.report, 'berth: code cache not used (stale)')

    // damaged data under a right first line
    const damaged = Buffer.from(good)
    damaged[nl + 100] = (damaged[nl + 100] as number) ^ 0xff
    writeFileSync(c.cache, damaged)
    r = version(c.program)
    assertVersion(r)
    assert.equal(r.report, 'berth: code cache not used (stale)')

    // a first line that matches but data V8 refuses: the bundle is still compiled and run
    const loader = loaderOf(c.program)
    const source = readFileSync(c.bundle, 'latin1')
    const junk = Buffer.alloc(4096, 7)
    writeFileSync(c.cache, Buffer.concat([Buffer.from(`${loader.stamp('build', loader.sha256(source), junk)}\n`, 'latin1'), junk]))
    r = version(c.program)
    assertVersion(r)
    assert.equal(r.report, 'berth: code cache rejected by V8 (build)')

    // the cache of another bundle (a rebuilt one): never applied to this one
    writeFileSync(c.cache, good)
    appendFileSync(c.bundle, '\n// rebuilt\n')
    r = version(c.program)
    assertVersion(r)
    assert.equal(r.report, 'berth: code cache not used (stale)')

    // none at all
    rmSync(c.cache)
    r = version(c.program)
    assertVersion(r)
    assert.equal(r.report, 'berth: code cache not used (missing)')
  })

  it('puts the first line\'s V8 flags back to their defaults once they have done their work', () => {
    // what they did stays done: the young generation set up at 2 MiB a semi-space, the `gc` global made
    const script = `
      const loader = require(${JSON.stringify(join(CLI, 'berth.cjs'))})
      loader.settleFlags()
      // enough surviving objects that V8 grows the young generation as far as it may (32 MiB with no flag)
      const keep = []
      let most = 0
      for (let r = 0; r < 20; r++) {
        for (let i = 0; i < 200000; i++) keep.push({ i })
        most = Math.max(most, require('node:v8').getHeapSpaceStatistics().find((s) => s.space_name === 'new_space').space_size)
      }
      process.stdout.write(JSON.stringify({ gc: typeof gc, young: most }))`
    const first = readFileSync(join(CLI, 'berth.cjs'), 'latin1').split('\n', 1)[0] ?? ''
    const flags = first.slice(first.indexOf(' node ') + 6).split(' ')
    assert.deepEqual(flags, ['--max-semi-space-size=2', '--expose-gc'], 'the flags settleFlags knows')
    const r = spawnSync(process.execPath, [...flags, '-e', script], { encoding: 'utf8' })
    assert.equal(r.status, 0, r.stderr)
    const out = JSON.parse(r.stdout) as { gc: string, young: number }
    assert.equal(out.gc, 'function')
    assert.ok(out.young <= 2 * 2 * 1024 * 1024, `a young generation of ${out.young} bytes: two semi-spaces of 2 MiB at most`)
  })

  it('holds no path of the machine that built it', () => {
    const cache = readFileSync(join(CLI, 'berth-bundle.code-cache')).toString('latin1')
    for (const s of [ROOT.replace(/\/$/, ''), CLI]) assert.ok(!cache.includes(s), `the cache does not hold ${s}`)
    assert.match(cache.slice(0, cache.indexOf('\n')), /^berth-code-cache 2 build [0-9a-f]{64} node v\S+ v8 \S+ \S+ \d+ [0-9a-f]{64}$/)
  })
})

describe('the daemon\'s own code cache', () => {
  it('names the bundle by its file: a bundle written again, even to the same size and modification time, is another', (t) => {
    const loader = loaderOf(join(CLI, 'berth.cjs'))
    const dir = tmpDir('berth-code-cache-')
    t.after(() => { rmSync(dir, { recursive: true, force: true }) })
    const f = join(dir, 'bundle.cjs')
    writeFileSync(f, 'module.exports = 1\n')
    const first = loader.readBundle(f)
    assert.equal(first.text, 'module.exports = 1\n')
    assert.match(first.id, /^file:\d+:\d+:19:\d+:\d+$/)
    assert.equal(loader.readBundle(f).id, first.id, 'the same file, untouched')
    const { mtime } = statSync(f)
    // the same length written in place, its modification time put back: the change time moved
    writeFileSync(f, 'module.exports = 2\n')
    utimesSync(f, mtime, mtime)
    const again = loader.readBundle(f)
    assert.equal(again.text, 'module.exports = 2\n')
    assert.notEqual(again.id, first.id)
    // replaced by another file (a rebuilt or reinstalled bundle)
    writeFileSync(`${f}.new`, 'module.exports = 2\n')
    utimesSync(`${f}.new`, mtime, mtime)
    renameSync(`${f}.new`, f)
    assert.notEqual(loader.readBundle(f).id, again.id)
  })

  it('is read from the exec root the daemon\'s flags and configuration file name, as the daemon settles it', (t) => {
    const loader = loaderOf(join(CLI, 'berth.cjs'))
    // the program's copies of the defaults are the daemon's
    assert.equal(loader.DEFAULT_CONFIG_FILE, DEFAULT_CONFIG_FILE)
    assert.equal(loader.DEFAULT_DATA_ROOT, DEFAULT_DATA_ROOT)
    const dir = tmpDir('berth-code-cache-')
    t.after(() => { rmSync(dir, { recursive: true, force: true }) })
    const f = (root: string): string => join(root, loader.DAEMON_CACHE)
    assert.equal(loader.daemonCacheFile(['version']), null)
    assert.equal(loader.daemonCacheFile(['registry', '--exec-root', '/x']), null)
    assert.equal(loader.daemonCacheFile(['daemon', '--exec-root', '/x/run', '-D']), f('/x/run'))
    assert.equal(loader.daemonCacheFile(['daemon', '--exec-root=/x/r2']), f('/x/r2'))
    assert.equal(loader.daemonCacheFile(['daemon', '--exec-root', 'rel']), f(resolve('rel')))
    assert.equal(loader.daemonCacheFile(['daemon', '--config-file', '/dev/null', '--data-root', '/d']), f('/d/run'))
    assert.equal(loader.daemonCacheFile(['daemon', '--exec-root']), null, 'a flag without its value')
    const conf = join(dir, 'daemon.json')
    writeFileSync(conf, JSON.stringify({ 'exec-root': '/e', debug: true }))
    assert.equal(loader.daemonCacheFile(['daemon', '--config-file', conf]), f('/e'))
    assert.equal(loader.daemonCacheFile(['daemon', '--config-file', conf, '--data-root', '/d']), f('/e'))
    assert.equal(loader.daemonCacheFile(['daemon', '--config-file', conf, '--exec-root', '/x']), f('/x'))
    writeFileSync(conf, JSON.stringify({ 'data-root': '/dd' }))
    assert.equal(loader.daemonCacheFile(['daemon', `--config-file=${conf}`]), f('/dd/run'))
    writeFileSync(conf, '{ not json')
    assert.equal(loader.daemonCacheFile(['daemon', '--config-file', conf]), null)
    assert.equal(loader.daemonCacheFile(['daemon', '--config-file', join(dir, 'missing.json')]), null)
    if (!existsSync(DEFAULT_CONFIG_FILE)) assert.equal(loader.daemonCacheFile(['daemon']), f(join(DEFAULT_DATA_ROOT, 'run')))
  })

  it('is written 0600 into the exec root by a start that had none, used by the next start, and replaced when damaged, foreign, linked or stale', { skip: containerSkipReason() ?? undefined }, async (t) => {
    const dir = tmpDir('berth-code-cache-')
    const net = uniqueNetworkOptions()
    let proc: Proc | undefined
    t.after(async () => { await cleanupDaemon(proc?.child, dir, net) })
    const run = join(dir, 'run')
    const cache = join(run, 'berth.code-cache')
    const cliBefore = readdirSync(CLI).sort()
    /** kill -9 of the running daemon (if any), a new start; resolves with the program's report and the daemon's word. */
    const restart = async (): Promise<{ report: string, saved: string }> => {
      if (proc !== undefined && proc.child.exitCode === null && proc.child.signalCode === null) {
        proc.child.kill('SIGKILL')
        await proc.exited()
      }
      proc = startProc(join(CLI, 'berth.cjs'), ['daemon', '--config-file', '/dev/null', '-H', `unix://${join(dir, 'b.sock')}`, '--data-root', join(dir, 'data'), '--exec-root', run, '-D', ...daemonNetworkArgs(net)], { env: { ...process.env, BERTH_CODE_CACHE: 'report' } })
      // the cache is made when the listeners are up, before the start is over
      const text = await proc.waitFor(/msg="Berth \S+ started/, 90_000)
      return { report: /berth: code cache ([^\n]*)/.exec(text)?.[1] ?? '', saved: /msg="code cache ((not )?written)/.exec(text)?.[1] ?? '' }
    }
    const assertOwn = (): void => {
      const st = lstatSync(cache)
      assert.ok(st.isFile(), 'a regular file')
      assert.equal(st.mode & 0o777, 0o600)
      assert.equal(st.uid, process.getuid?.())
      assert.deepEqual(readdirSync(run).filter((n) => n.includes('code-cache')), ['berth.code-cache'], 'no temporary file left')
    }

    // a first start: the build's cache, then its own, written when its listeners were up
    let r = await restart()
    assert.deepEqual(r, { report: 'used (build)', saved: 'written' })
    assertOwn()
    // the next start uses it, and writes nothing
    const first = statSync(cache)
    r = await restart()
    assert.deepEqual(r, { report: 'used (daemon)', saved: '' })
    assert.equal(statSync(cache).mtimeMs, first.mtimeMs, 'not rewritten')

    // damaged: a byte of V8's data changed (V8 itself would take it)
    const good = readFileSync(cache)
    const damaged = Buffer.from(good)
    const at = good.indexOf(10) + 1000
    damaged[at] = (damaged[at] as number) ^ 0xff
    writeFileSync(cache, damaged, { mode: 0o600 })
    assert.deepEqual(await restart(), { report: 'used (build)', saved: 'written' })
    assertOwn()
    assert.deepEqual(await restart(), { report: 'used (daemon)', saved: '' })

    // readable and writable by others, or another user's: refused, replaced
    chmodSync(cache, 0o666)
    assert.deepEqual(await restart(), { report: 'used (build)', saved: 'written' })
    assertOwn()
    chownSync(cache, 65534, 65534)
    assert.deepEqual(await restart(), { report: 'used (build)', saved: 'written' })
    assertOwn()

    // a link to a file elsewhere: not followed when read, replaced (not written through) when saved
    const elsewhere = join(dir, 'elsewhere')
    writeFileSync(elsewhere, readFileSync(cache), { mode: 0o600 })
    const before = readFileSync(elsewhere)
    rmSync(cache)
    symlinkSync(elsewhere, cache)
    assert.deepEqual(await restart(), { report: 'used (build)', saved: 'written' })
    assertOwn()
    assert.deepEqual(readFileSync(elsewhere), before, 'the link\'s target is untouched')

    // made for another bundle (a rebuilt one): stale, replaced
    const now = readFileSync(cache)
    const nl = now.indexOf(10)
    const header = now.toString('latin1', 0, nl).replace(/^(berth-code-cache 2 daemon )file:\S+/, '$1file:1:2:3:4:5')
    assert.notEqual(header, now.toString('latin1', 0, nl))
    writeFileSync(cache, Buffer.concat([Buffer.from(header, 'latin1'), now.subarray(nl)]), { mode: 0o600 })
    assert.deepEqual(await restart(), { report: 'used (build)', saved: 'written' })
    assertOwn()
    assert.deepEqual(await restart(), { report: 'used (daemon)', saved: '' })

    // nothing written anywhere else: the program's folder and the data root hold no cache of the daemon's
    assert.deepEqual(readdirSync(CLI).sort(), cliBefore)
    assert.ok(!readdirSync(join(dir, 'data')).some((n) => n.includes('code-cache')))
  })
})
