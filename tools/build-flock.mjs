#!/usr/bin/env node
// Builds the daemon's flock(2) module (lib/util/flock-addon.c, a Node-API module) with the system C compiler ($CC,
// else cc) into dist/berth-flock.node, only when its source or package.json is newer than the module. Run by
// `npm run build` and the package's install script. Never fails the build or an install: without the module the
// daemon takes its roots' locks through one child of the monitor binary, as before (lib/util/dir-lock.ts).
import { existsSync, statSync, mkdirSync, renameSync, rmSync } from 'node:fs'
import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { join } from 'node:path'

const root = fileURLToPath(new URL('..', import.meta.url))
const source = join(root, 'lib', 'util', 'flock-addon.c')
const out = join(root, 'dist', 'berth-flock.node')
if (!existsSync(source)) process.exit(0)
const newest = Math.max(...[source, join(root, 'package.json')].map((f) => statSync(f).mtimeMs))
if (existsSync(out) && statSync(out).mtimeMs >= newest) process.exit(0)
const cc = process.env.CC ?? 'cc'
mkdirSync(join(out, '..'), { recursive: true })
const tmp = `${out}.tmp-${process.pid}`
// Node-API's functions stay undefined here: node provides them to the modules it loads
const r = spawnSync(cc, ['-O2', '-Wall', '-Wextra', '-std=gnu11', '-shared', '-fPIC', '-o', tmp, source], { stdio: ['ignore', 'inherit', 'pipe'] })
if (r.error !== undefined || r.status !== 0) {
  if (r.stderr !== null) process.stderr.write(r.stderr)
  rmSync(tmp, { force: true })
  process.stderr.write(`build-flock: ${r.error !== undefined ? r.error.message : `${cc} exited with status ${r.status}`}; the daemon will take its locks through a child\n`)
  process.exit(0)
}
if (r.stderr !== null && r.stderr.length > 0) process.stderr.write(r.stderr) // warnings
renameSync(tmp, out) // a running daemon never sees half a module
