// The `berth` program (dist/lib/cli/berth.cjs, tools/bundle-loader.cjs) and the V8 code cache the build makes for
// its bundle (tools/code-cache.mjs): used when run as the program, and never a reason to fail: a cache made for
// another bundle, another node binary or other V8 flags, a damaged one or none at all, and the bundle is compiled
// from source. The cache holds no path of the machine that built it.
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { appendFileSync, copyFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import { ROOT, tmpDir } from '../helpers/engine.js'

const CLI = join(ROOT, 'dist', 'lib', 'cli')

/** `PROGRAM version` run as a program (its shebang's flags), or by `node` when plain; with the loader's report. */
function version (program: string, plain = false): { status: number | null, stdout: string, report: string } {
  const env = { ...process.env, BERTH_CODE_CACHE: 'report' }
  const r = plain
    ? spawnSync(process.execPath, [program, 'version'], { encoding: 'utf8', env })
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
  it('runs the bundle with the cache the build made, as a program; plain `node` (other V8 flags) compiles it instead', () => {
    const asProgram = version(join(CLI, 'berth.cjs'))
    assertVersion(asProgram)
    assert.equal(asProgram.report, 'berth: code cache used')
    const plain = version(join(CLI, 'berth.cjs'), true)
    assertVersion(plain)
    assert.equal(plain.report, 'berth: code cache rejected by V8')
  })

  it('compiles the bundle from source when the cache is missing, stale, damaged or refused by V8', (t) => {
    const c = copyOfProgram()
    t.after(() => { rmSync(c.dir, { recursive: true, force: true }) })
    assert.equal(version(c.program).report, 'berth: code cache used', 'the copy uses the copied cache')
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
    const loader = createRequire(import.meta.url)(c.program) as { stamp: (source: string, payload: Buffer) => string }
    const source = readFileSync(c.bundle, 'latin1')
    const junk = Buffer.alloc(4096, 7)
    writeFileSync(c.cache, Buffer.concat([Buffer.from(`${loader.stamp(source, junk)}\n`, 'latin1'), junk]))
    r = version(c.program)
    assertVersion(r)
    assert.equal(r.report, 'berth: code cache rejected by V8')

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

  it('holds no path of the machine that built it', () => {
    const cache = readFileSync(join(CLI, 'berth-bundle.code-cache')).toString('latin1')
    for (const s of [ROOT.replace(/\/$/, ''), CLI]) assert.ok(!cache.includes(s), `the cache does not hold ${s}`)
    assert.match(cache.slice(0, cache.indexOf('\n')), /^berth-code-cache 1 [0-9a-f]{64} node v\S+ v8 \S+ \S+ \d+ [0-9a-f]{64}$/)
  })
})
