#!/usr/bin/env node
// Runs the compiled node:test files under dist/spec with an explicit file list
// (Node 20 recurses into directory arguments, later versions expect globs).
// Usage: node tools/run-tests.mjs [substring ...]   — only files whose path contains one of the substrings.
import { existsSync, readdirSync, statSync } from 'node:fs'
import { join, relative } from 'node:path'
import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'

const root = fileURLToPath(new URL('..', import.meta.url))
const specDir = join(root, 'dist', 'spec')

function walk (dir, out) {
  for (const name of readdirSync(dir)) {
    const p = join(dir, name)
    if (statSync(p).isDirectory()) walk(p, out)
    // only tests whose source still exists: a deleted spec's compiled file may linger in dist
    else if (name.endsWith('.test.js') && existsSync(join(root, relative(join(root, 'dist'), p)).replace(/\.js$/, '.ts'))) out.push(p)
  }
  return out
}

const filters = process.argv.slice(2)
const files = walk(specDir, []).sort().filter((f) => filters.length === 0 || filters.some((s) => relative(root, f).includes(s)))
if (files.length === 0) {
  process.stderr.write('no test files matched\n')
  process.exit(1)
}
const concurrency = process.env.BERTH_TEST_CONCURRENCY ?? '2'
const child = spawn(process.execPath, ['--test', `--test-concurrency=${concurrency}`, ...files], { stdio: 'inherit', cwd: root })
child.on('exit', (code, signal) => process.exit(signal ? 1 : code ?? 1))
