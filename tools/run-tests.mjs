#!/usr/bin/env node
// Runs the compiled node:test files under dist/spec with an explicit file list
// (Node 20 recurses into directory arguments, later versions expect globs).
// Usage: node tools/run-tests.mjs [substring ...]   — only files whose path contains one of the substrings.
import { existsSync, readdirSync, statSync, readFileSync, writeFileSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, relative } from 'node:path'
import { spawn, spawnSync } from 'node:child_process'
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
// What test engines put on the host (iptables chains T?????-*, bridges bt??????0, links t?????*, port forwarders
// owned by T?????), before and after the run; each engine's prefix and the file that made it are logged by
// uniqueNetworkOptions (spec/helpers/engine.ts) to BERTH_TEST_NETLOG.
function hostNetworking () {
  const items = new Map()
  const ipt = spawnSync('iptables-save', [], { encoding: 'utf8' })
  for (const m of (ipt.stdout ?? '').matchAll(/^:(T[0-9a-f]{5})((?:-[A-Z0-9]+)?) /gm)) items.set(`chain ${m[1]}${m[2]}`, m[1])
  const ip = spawnSync('ip', ['-o', 'link', 'show'], { encoding: 'utf8' })
  for (const m of (ip.stdout ?? '').matchAll(/^\d+:\s+([^:@\s]+)/gm)) {
    const name = m[1]
    if (/^bt[0-9a-f]{6}0$/.test(name)) items.set(`bridge ${name}`, name)
    else if (/^t[0-9a-f]{5}/.test(name)) items.set(`link ${name}`, `T${name.slice(1, 6)}`)
  }
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue
    let argv
    try { argv = readFileSync(`/proc/${d}/cmdline`, 'utf8').split('\0') } catch { continue }
    const i = argv.indexOf('port-proxy')
    if (i !== -1 && /^T[0-9a-f]{5}$/.test(argv[i + 6] ?? '')) items.set(`forwarder pid ${d} (${argv.slice(i + 1, i + 6).join(' ')})`, argv[i + 6])
  }
  return items
}

const netlogDir = mkdtempSync(join(tmpdir(), 'berth-netlog-'))
const netlog = join(netlogDir, 'engines')
writeFileSync(netlog, '')
// the temporary directories of the run's tests (spec/helpers/engine.ts tmpDir): each one there at the end is named
const dirlog = join(netlogDir, 'dirs')
writeFileSync(dirlog, '')
const before = hostNetworking()
const concurrency = process.env.BERTH_TEST_CONCURRENCY ?? '2'
const child = spawn(process.execPath, ['--test', `--test-concurrency=${concurrency}`, ...files], { stdio: 'inherit', cwd: root, env: { ...process.env, BERTH_TEST_NETLOG: netlog, BERTH_TEST_DIRLOG: dirlog } })
child.on('exit', (code, signal) => {
  reportLeftovers()
  process.exit(signal ? 1 : code ?? 1)
})

/** Warns of what this run's engines left on the host, with the test file that made each engine. */
function reportLeftovers () {
  reportLeftDirs()
  const owners = new Map()
  for (const line of readFileSync(netlog, 'utf8').split('\n')) {
    const [prefix, bridge, file] = line.split(' ')
    if (file === undefined) continue
    owners.set(prefix, file)
    owners.set(bridge, file)
  }
  rmSync(netlogDir, { recursive: true, force: true })
  const left = [...hostNetworking()].filter(([item, owner]) => !before.has(item) && owners.has(owner))
  if (left.length === 0) return
  const byFile = new Map()
  for (const [item, owner] of left) byFile.set(owners.get(owner), [...(byFile.get(owners.get(owner)) ?? []), item])
  process.stderr.write(`\nWARNING: this run's test engines left ${left.length} item(s) of host networking behind:\n`)
  for (const [file, items] of byFile) process.stderr.write(`  ${file}:\n${items.map((i) => `    ${i}\n`).join('')}`)
}

/**
 * Warns of the run's temporary directories still there, with the test file that made each (one removed and made
 * again later, by a process the test left behind, counts: e.g. an empty <dir>/run/runtime, which runc makes for its
 * --root at any command).
 */
function reportLeftDirs () {
  const byFile = new Map()
  for (const line of readFileSync(dirlog, 'utf8').split('\n')) {
    const sp = line.indexOf(' ')
    if (sp === -1 || !existsSync(line.slice(0, sp))) continue
    const file = line.slice(sp + 1)
    byFile.set(file, [...(byFile.get(file) ?? []), line.slice(0, sp)])
  }
  if (byFile.size === 0) return
  process.stderr.write(`\nWARNING: this run's tests left ${[...byFile.values()].flat().length} temporary director(ies) behind:\n`)
  for (const [file, dirs] of byFile) process.stderr.write(`  ${file}:\n${dirs.map((d) => `    ${d}\n`).join('')}`)
}
