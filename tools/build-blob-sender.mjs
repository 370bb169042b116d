#!/usr/bin/env node
// Builds the registry's blob helper (lib/registry/storage/blob-sender.c: large blob bodies with sendfile(2), and
// blob-receiver.c: large upload bodies received, hashed and written from their connection) with the system C
// compiler ($CC, else cc) into dist/berth-blob-sender, only when a source or package.json is newer than the binary.
// The receiver needs OpenSSL's libcrypto (libssl-dev); without it the helper is built to send only. Never fails the
// build or an install: without any helper, `berth registry` serves and receives every blob through its own buffers
// (more CPU per byte, nothing else changes).
import { existsSync, statSync, mkdirSync, readFileSync, renameSync, rmSync } from 'node:fs'
import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { join } from 'node:path'

const root = fileURLToPath(new URL('..', import.meta.url))
const dir = join(root, 'lib', 'registry', 'storage')
const sources = ['blob-sender.c', 'blob-receiver.c'].map((f) => join(dir, f))
const out = join(root, 'dist', 'berth-blob-sender')
if (!sources.every((f) => existsSync(f))) process.exit(0)
const newest = Math.max(...[...sources, join(dir, 'blob-helper.h'), join(root, 'package.json')].map((f) => statSync(f).mtimeMs))
if (existsSync(out) && statSync(out).mtimeMs >= newest) process.exit(0)
const version = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).version
const cc = process.env.CC ?? 'cc'
mkdirSync(join(out, '..'), { recursive: true })
const tmp = `${out}.tmp-${process.pid}`
const compile = (extra, libs) => spawnSync(cc, ['-O2', '-Wall', '-Wextra', '-std=gnu11', `-DBERTH_VERSION="${version}"`, ...extra, '-o', tmp, ...sources, ...libs], { stdio: ['ignore', 'inherit', 'pipe'] })
let r = compile([], ['-lcrypto'])
if (r.error === undefined && r.status !== 0 && /openssl|lcrypto|SHA256/.test(String(r.stderr))) {
  process.stderr.write('build-blob-sender: no libcrypto (libssl-dev): the registry receives upload bodies itself\n')
  r = compile(['-DBERTH_NO_RECEIVE'], [])
}
if (r.error !== undefined || r.status !== 0) {
  if (r.stderr !== null) process.stderr.write(r.stderr)
  rmSync(tmp, { force: true })
  process.stderr.write(`build-blob-sender: ${r.error !== undefined ? r.error.message : `${cc} exited with status ${r.status}`}; the registry will serve blobs without sendfile\n`)
  process.exit(0)
}
if (r.stderr !== null && r.stderr.length > 0) process.stderr.write(r.stderr) // warnings
renameSync(tmp, out) // a running registry never sees half a binary
