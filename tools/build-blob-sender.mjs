#!/usr/bin/env node
// Builds the registry's blob sender (lib/registry/storage/blob-sender.c: large blob bodies with sendfile(2)) with
// the system C compiler ($CC, else cc) into dist/berth-blob-sender, only when the source or package.json is newer
// than the binary. Never fails the build or an install: without it, `berth registry` serves every blob through its
// own buffers (slower per byte, nothing else changes).
import { existsSync, statSync, mkdirSync, readFileSync, renameSync, rmSync } from 'node:fs'
import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { join } from 'node:path'

const root = fileURLToPath(new URL('..', import.meta.url))
const source = join(root, 'lib', 'registry', 'storage', 'blob-sender.c')
const out = join(root, 'dist', 'berth-blob-sender')
if (!existsSync(source)) process.exit(0)
const newest = Math.max(statSync(source).mtimeMs, statSync(join(root, 'package.json')).mtimeMs)
if (existsSync(out) && statSync(out).mtimeMs >= newest) process.exit(0)
const version = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).version
const cc = process.env.CC ?? 'cc'
mkdirSync(join(out, '..'), { recursive: true })
const tmp = `${out}.tmp-${process.pid}`
const r = spawnSync(cc, ['-O2', '-Wall', '-Wextra', '-std=gnu11', `-DBERTH_VERSION="${version}"`, '-o', tmp, source], { stdio: 'inherit' })
if (r.error !== undefined || r.status !== 0) {
  rmSync(tmp, { force: true })
  process.stderr.write(`build-blob-sender: ${r.error !== undefined ? r.error.message : `${cc} exited with status ${r.status}`}; the registry will serve blobs without sendfile\n`)
  process.exit(0)
}
renameSync(tmp, out) // a running registry never sees half a binary
