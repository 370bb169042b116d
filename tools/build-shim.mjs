#!/usr/bin/env node
// Builds the container monitor (lib/runtime/shim/*.c, one program) with the system C compiler ($CC, else cc).
//   node tools/build-shim.mjs              dist/berth-shim, rebuilt only when a source, header or package.json is
//                                          newer than the binary (npm run build)
//   node tools/build-shim.mjs --install    the npm `install` script: compiles dist/berth-shim when a compiler runs,
//                                          else copies the prebuilt binary for this architecture when the package
//                                          ships one; never fails the install (the daemon says at start what is
//                                          missing)
//   node tools/build-shim.mjs --prebuilt   the npm `prepack` step: a static dist/prebuilt/berth-shim-linux-<arch>
//                                          for this machine, and for arm64 too when aarch64-linux-gnu-gcc is here
import { existsSync, statSync, mkdirSync, readdirSync, readFileSync, renameSync, copyFileSync, chmodSync, rmSync } from 'node:fs'
import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { join } from 'node:path'

const root = fileURLToPath(new URL('..', import.meta.url))
const dir = join(root, 'lib', 'runtime', 'shim')
const out = join(root, 'dist', 'berth-shim')
const mode = process.argv[2] ?? ''
const version = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).version
const files = existsSync(dir) ? readdirSync(dir).filter((f) => f.endsWith('.c') || f.endsWith('.h')).sort() : []
const sources = files.filter((f) => f.endsWith('.c')).map((f) => join(dir, f))

/** Compiles the sources to `target` (through a temporary file, renamed: a running daemon never sees half a binary). */
function compile (cc, target, extra = []) {
  mkdirSync(join(target, '..'), { recursive: true })
  const tmp = `${target}.tmp-${process.pid}`
  const r = spawnSync(cc, ['-O2', '-Wall', '-Wextra', '-std=gnu11', `-DBERTH_VERSION="${version}"`, ...extra, '-o', tmp, ...sources], { stdio: 'inherit' })
  if (r.error !== undefined || r.status !== 0) {
    rmSync(tmp, { force: true })
    return r.error !== undefined ? `cannot run ${cc}: ${r.error.message}` : `${cc} exited with status ${r.status}`
  }
  renameSync(tmp, target)
  return null
}

/** Whether a monitor binary runs on this machine. */
function runs (bin) {
  const r = spawnSync(bin, ['--version'], { encoding: 'utf8', timeout: 5000 })
  return r.status === 0 && r.stdout.startsWith('berth-shim ')
}

const cc = process.env.CC ?? 'cc'
const arch = process.arch

if (mode === '--install') {
  const err = sources.length === 0 ? 'no monitor sources in this package' : compile(cc, out)
  if (err === null && runs(out)) process.exit(0)
  const prebuilt = join(root, 'dist', 'prebuilt', `berth-shim-linux-${arch}`)
  if (existsSync(prebuilt) && runs(prebuilt)) {
    copyFileSync(prebuilt, `${out}.tmp`)
    chmodSync(`${out}.tmp`, 0o755)
    renameSync(`${out}.tmp`, out)
    process.stderr.write(`berth: built no container monitor (${err ?? 'it does not run'}); using the prebuilt one for linux-${arch}\n`)
    process.exit(0)
  }
  process.stderr.write(`berth: WARNING: no container monitor for linux-${arch}: ${err ?? 'the built one does not run'}, and this package ships no prebuilt one for ${arch}. ` +
    'Containers cannot run until it is built: install a C compiler (apt-get install gcc) and run `npm rebuild berth`.\n')
  process.exit(0)
}

if (mode === '--prebuilt') {
  const targets = [{ arch, cc, flags: ['-static'] }]
  const cross = { x64: 'aarch64-linux-gnu-gcc' }[arch]
  if (cross !== undefined && spawnSync(cross, ['--version']).status === 0) targets.push({ arch: 'arm64', cc: cross, flags: ['-static'] })
  for (const t of targets) {
    const target = join(root, 'dist', 'prebuilt', `berth-shim-linux-${t.arch}`)
    const err = compile(t.cc, target, [...t.flags, '-s'])
    if (err !== null) { process.stderr.write(`build-shim: prebuilt ${t.arch}: ${err}\n`); process.exit(1) }
    process.stderr.write(`build-shim: ${target}\n`)
  }
  process.exit(0)
}

if (sources.length === 0) process.exit(0)
const newest = Math.max(...[...files.map((f) => join(dir, f)), join(root, 'package.json')].map((p) => statSync(p).mtimeMs))
if (existsSync(out) && statSync(out).mtimeMs >= newest) process.exit(0)
const err = compile(cc, out)
if (err !== null) {
  process.stderr.write(`build-shim: ${err} (install gcc)\n`)
  process.exit(1)
}
