#!/usr/bin/env node
// Compiles the container monitor (lib/runtime/shim/berth-shim.c) to dist/berth-shim with the system C compiler.
// It is rebuilt only when the source is newer than the binary.
import { existsSync, statSync, mkdirSync } from 'node:fs'
import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { join } from 'node:path'

const root = fileURLToPath(new URL('..', import.meta.url))
const src = join(root, 'lib', 'runtime', 'shim', 'berth-shim.c')
const out = join(root, 'dist', 'berth-shim')
if (!existsSync(src)) process.exit(0)
if (existsSync(out) && statSync(out).mtimeMs >= statSync(src).mtimeMs) process.exit(0)
mkdirSync(join(root, 'dist'), { recursive: true })
const cc = process.env.CC ?? 'cc'
const r = spawnSync(cc, ['-O2', '-Wall', '-Wextra', '-std=gnu11', '-o', out, src], { stdio: 'inherit' })
if (r.error) {
  process.stderr.write(`build-shim: cannot run ${cc}: ${r.error.message} (install gcc)\n`)
  process.exit(1)
}
process.exit(r.status ?? 1)
