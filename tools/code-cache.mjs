#!/usr/bin/env node
// Makes dist/lib/cli/berth-bundle.code-cache: V8's code cache of the bundled command, which dist/lib/cli/berth.cjs
// (tools/bundle-loader.cjs) hands to V8 when it compiles the bundle, sparing each start the parse and compile of the
// 1 MB script (tools/bench/README.md, "Restart, round three"). Run by tools/bundle.mjs (npm run build), and by the
// package's install script (`--install`: for the node binary of the machine it is installed on; it never fails the
// install). V8 accepts a cache only under the V8 flags it was made with: this script runs itself again under the
// flags of berth.cjs's first line when it was started without them, and settles them as the program does.
// The cache holds V8's bytecode and the first line the loader checks (the bundle's SHA-256, the node binary's
// version, V8 version, architecture and size, the data's SHA-256): no paths, nothing of the environment. What it
// holds is the top-level compile (every function's boundaries, preparsed); functions compiled later, when they first
// run, are not in it: compiling them all at build time made a cache ten times larger that took as long to load as it
// saved (tools/bench/README.md); those a daemon's start compiles are in the cache the daemon writes itself into its
// exec root (tools/bundle-loader.cjs). Written to a temporary name and renamed: a start never reads half a cache.
import { spawnSync } from 'node:child_process'
import { existsSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const install = process.argv.includes('--install')
const fail = (msg) => {
  process.stderr.write(`tools/code-cache.mjs: ${install ? 'berth will start without a code cache: ' : ''}${msg}\n`)
  process.exit(install ? 0 : 1)
}
const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const programFile = join(root, 'dist/lib/cli/berth.cjs')
if (!existsSync(programFile)) fail(`${programFile} is missing: run tools/bundle.mjs first`)

// the program's first line: `#!/usr/bin/env -S NAME=VALUE… node FLAG…`
const words = readFileSync(programFile, 'utf8').split('\n', 1)[0].replace(/^#!\S*env(?: -S)? /, '').split(' ')
const at = words.indexOf('node')
const flags = words.slice(at + 1)
if (at < 0 || flags.some((f) => !f.startsWith('--'))) fail(`unexpected first line in ${programFile}`)
if (process.env.BERTH_CODE_CACHE_FLAGS !== flags.join(' ')) {
  const env = Object.fromEntries(words.slice(0, at).map((w) => [w.slice(0, w.indexOf('=')), w.slice(w.indexOf('=') + 1)]))
  const r = spawnSync(process.execPath, [...flags, fileURLToPath(import.meta.url), ...process.argv.slice(2)], {
    stdio: 'inherit',
    env: { ...process.env, ...env, BERTH_CODE_CACHE_FLAGS: flags.join(' ') }
  })
  if (r.status !== 0) fail(r.error?.message ?? `status ${r.status ?? r.signal}`)
  process.exit(0)
}

const loader = createRequire(import.meta.url)(programFile)
// as the program does before it compiles: V8 stamps the cache with its flags as they are now
loader.settleFlags()
const source = readFileSync(loader.BUNDLE, 'latin1')
const data = loader.compile(source, undefined, true).createCachedData()
if (!Buffer.isBuffer(data) || data.length === 0) fail('V8 produced no code cache')
const tmp = `${loader.CACHE}.${process.pid}.tmp`
try {
  writeFileSync(tmp, Buffer.concat([Buffer.from(`${loader.stamp('build', loader.sha256(source), data)}\n`, 'latin1'), data]), { mode: 0o644 })
  renameSync(tmp, loader.CACHE)
} catch (err) {
  rmSync(tmp, { force: true })
  fail(err.message)
}
