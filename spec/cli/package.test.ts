// The npm package as a user gets it: `npm pack`, installed into a fresh directory (its `install` script builds the
// monitor with the C compiler, or falls back to the prebuilt one the package ships), then started from there; the
// systemd units it ships verify against the installed command.
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createHash } from 'node:crypto'
import { basename, join } from 'node:path'
import { ROOT, cleanupDaemon, containerSkipReason, createContainer, daemonNetworkArgs, importBusybox, request, tmpDir, uniqueNetworkOptions } from '../helpers/engine.js'
import { pingable, startProc } from './helpers.js'

const npm = spawnSync('npm', ['--version'], { encoding: 'utf8' })
const skip = containerSkipReason() ?? (npm.status === 0 ? null : 'npm is not installed')

function run (cmd: string, args: string[], o: { cwd?: string, env?: NodeJS.ProcessEnv } = {}): { status: number | null, stdout: string, stderr: string } {
  const r = spawnSync(cmd, args, { encoding: 'utf8', timeout: 300_000, ...o })
  return { status: r.status, stdout: r.stdout, stderr: r.stderr }
}

/**
 * A fresh project with the tarball installed. Offline (tests reach no registry): its lockfile names the tarball
 * and, for the dependencies, the entries of this checkout's lockfile, whose tarballs `npm ci` left in npm's cache.
 */
function installInto (dir: string, tarball: string, env: NodeJS.ProcessEnv = process.env): { status: number | null, stderr: string } {
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as Record<string, unknown> & { version: string, dependencies: Record<string, string> }
  const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as { packages: Record<string, { dev?: boolean }> }
  copyFileSync(tarball, join(dir, basename(tarball)))
  const spec = `file:${basename(tarball)}`
  const integrity = `sha512-${createHash('sha512').update(readFileSync(tarball)).digest('base64')}`
  const packages: Record<string, unknown> = {
    '': { name: 'fresh', version: '1.0.0', dependencies: { berth: spec } },
    'node_modules/berth': { version: pkg.version, resolved: spec, integrity, hasInstallScript: true, license: pkg.license, dependencies: pkg.dependencies, os: pkg.os, cpu: pkg.cpu, engines: pkg.engines, bin: pkg.bin }
  }
  for (const [k, v] of Object.entries(lock.packages)) if (k.startsWith('node_modules/') && v.dev !== true) packages[k] = v
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'fresh', version: '1.0.0', private: true, dependencies: { berth: spec } }))
  writeFileSync(join(dir, 'package-lock.json'), JSON.stringify({ name: 'fresh', version: '1.0.0', lockfileVersion: 3, requires: true, packages }))
  return run('npm', ['ci', '--offline', '--no-audit', '--no-fund', '--foreground-scripts'], { cwd: dir, env })
}

describe('npm pack, install into a fresh directory, start from there', { skip: skip ?? false }, () => {
  it('packs what a user needs, builds the monitor at install, and runs containers', async (t) => {
    const work = tmpDir()
    const net = uniqueNetworkOptions()
    t.after(async () => { await cleanupDaemon(undefined, join(work, 'd'), net); rmSync(work, { recursive: true, force: true }) })
    // what `prepack` adds to the build: the static monitor for this architecture
    const pre = run(process.execPath, [join(ROOT, 'tools', 'build-shim.mjs'), '--prebuilt'])
    assert.equal(pre.status, 0, pre.stderr)
    const packed = run('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', work], { cwd: ROOT })
    assert.equal(packed.status, 0, packed.stderr)
    const [info] = JSON.parse(packed.stdout) as Array<{ filename: string, files: Array<{ path: string }> }>
    const files = new Set(info?.files.map((f) => f.path))
    for (const f of ['package.json', 'README.md', 'LICENSE', 'dist/lib/cli/main.js', 'dist/lib/cli/berth.cjs', 'dist/lib/cli/berth-bundle.cjs', 'dist/lib/index.js', 'dist/lib/index.d.ts', `dist/prebuilt/berth-shim-linux-${process.arch}`,
      'lib/runtime/shim/berth-shim.c', 'lib/runtime/shim/service-modes.c', 'lib/util/flock-addon.c', 'tools/build-shim.mjs', 'tools/build-flock.mjs', 'tools/code-cache.mjs', 'tools/systemd/berth.service', 'tools/systemd/berth.socket']) {
      assert.ok(files.has(f), `the package has ${f}`)
    }
    assert.ok(![...files].some((f) => f.startsWith('dist/spec/') || f === 'dist/berth-shim' || f === 'dist/berth-flock.node' || f.startsWith('node_modules/')), 'no tests, no machine-built monitor, no node_modules')
    const tarball = join(work, info?.filename ?? '')

    // 1. with a C compiler: the install script builds the monitor
    const app = join(work, 'app')
    mkdirSync(app)
    const inst = installInto(app, tarball)
    assert.equal(inst.status, 0, inst.stderr)
    const pkg = join(app, 'node_modules', 'berth')
    const shim = join(pkg, 'dist', 'berth-shim')
    assert.ok(existsSync(shim), 'dist/berth-shim built at install')
    assert.match(run(shim, ['--version']).stdout, /^berth-shim \d+\.\d+\.\d+/)
    assert.ok(existsSync(join(pkg, 'dist', 'berth-flock.node')), 'dist/berth-flock.node built at install (the daemon\'s locks without a child)')
    const bin = join(app, 'node_modules', '.bin', 'berth')
    assert.match(run(bin, ['--version']).stdout, /^Berth version /)
    // the install made the bundle's code cache for this machine's node: the installed program uses it
    assert.equal(run(bin, ['--version'], { env: { ...process.env, BERTH_CODE_CACHE: 'report' } }).stderr.trim(), 'berth: code cache used (build)')

    // started from the installed package: a container runs under the installed monitor
    const d = join(work, 'd')
    mkdirSync(d)
    writeFileSync(join(d, 'none.json'), '{}')
    const sock = join(d, 'b.sock')
    const daemon = startProc(bin, ['daemon', '-H', `unix://${sock}`, '--data-root', join(d, 'data'), '--exec-root', join(d, 'run'), '--config-file', join(d, 'none.json'), ...daemonNetworkArgs(net)])
    t.after(async () => { await cleanupDaemon(daemon.child, d, net) })
    await pingable(sock, daemon)
    // the bin is the bundled command run as a program: its first line gives the daemon its memory settings
    const pid = daemon.child.pid ?? 0
    assert.match(readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' '), /node --max-semi-space-size=2 --expose-gc \S*berth\S* daemon /)
    const environ = readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0')
    for (const e of ['MALLOC_MMAP_THRESHOLD_=16384', 'MALLOC_TRIM_THRESHOLD_=65536']) assert.ok(environ.includes(e), e)
    await importBusybox(sock)
    const id = await createContainer(sock, { Image: 'busybox', Cmd: ['echo', 'hello from the package'] })
    assert.equal((await request(sock, 'POST', `/containers/${id}/start`)).status, 204)
    assert.equal(((await request(sock, 'POST', `/containers/${id}/wait`)).json() as { StatusCode: number }).StatusCode, 0)
    assert.match((await request(sock, 'GET', `/containers/${id}/logs?stdout=1`)).text, /hello from the package/)
    daemon.child.kill('SIGTERM')
    assert.equal(await daemon.exited(), 0)
    assert.match(daemon.stderr(), new RegExp(`started: .*, monitor ${shim.replace(/[/.]/g, '\\$&')}, `), 'the installed package\'s monitor')

    // the systemd units it ships verify against the installed command
    if (run('systemd-analyze', ['--version']).status === 0) {
      const units = join(work, 'units')
      mkdirSync(units)
      for (const u of readdirSync(join(pkg, 'tools', 'systemd'))) {
        writeFileSync(join(units, u), readFileSync(join(pkg, 'tools', 'systemd', u), 'utf8').replace('/usr/local/bin/berth', bin))
      }
      const v = run('systemd-analyze', ['verify', join(units, 'berth.service'), join(units, 'berth.socket')])
      assert.equal(v.status, 0, v.stderr)
      assert.doesNotMatch(v.stderr, /Unknown key|Unknown section|not executable/)
    }

    // 2. without a working compiler: the prebuilt monitor for this architecture is used
    const app2 = join(work, 'app2')
    mkdirSync(app2)
    const inst2 = installInto(app2, tarball, { ...process.env, CC: '/bin/false' })
    assert.equal(inst2.status, 0, inst2.stderr)
    assert.match(inst2.stderr, new RegExp(`using the prebuilt one for linux-${process.arch}`))
    assert.match(run(join(app2, 'node_modules', 'berth', 'dist', 'berth-shim'), ['--version']).stdout, /^berth-shim /)
    assert.ok(!existsSync(join(app2, 'node_modules', 'berth', 'dist', 'berth-flock.node')), 'no flock module without a compiler (the locks are taken by a child)')
  })
})
