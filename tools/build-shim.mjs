#!/usr/bin/env node
// Compiles the container monitor (lib/runtime/shim/*.c, one program) to dist/berth-shim with the system C compiler.
// It is rebuilt only when a source or header there is newer than the binary.
import { existsSync, statSync, mkdirSync, readdirSync } from 'node:fs'
import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { join } from 'node:path'

const root = fileURLToPath(new URL('..', import.meta.url))
const dir = join(root, 'lib', 'runtime', 'shim')
const out = join(root, 'dist', 'berth-shim')
if (!existsSync(dir)) process.exit(0)
const files = readdirSync(dir).filter((f) => f.endsWith('.c') || f.endsWith('.h')).sort()
const sources = files.filter((f) => f.endsWith('.c')).map((f) => join(dir, f))
if (sources.length === 0) process.exit(0)
const newest = Math.max(...files.map((f) => statSync(join(dir, f)).mtimeMs))
if (existsSync(out) && statSync(out).mtimeMs >= newest) process.exit(0)
mkdirSync(join(root, 'dist'), { recursive: true })
const cc = process.env.CC ?? 'cc'
const r = spawnSync(cc, ['-O2', '-Wall', '-Wextra', '-std=gnu11', '-o', out, ...sources], { stdio: 'inherit' })
if (r.error) {
  process.stderr.write(`build-shim: cannot run ${cc}: ${r.error.message} (install gcc)\n`)
  process.exit(1)
}
process.exit(r.status ?? 1)
