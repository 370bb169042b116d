#!/usr/bin/env node
// Bundles the `berth` command (dist/lib/cli/main.js and everything it imports from lib/) into one CommonJS file,
// dist/lib/cli/berth-bundle.cjs, and writes the program that runs it, dist/lib/cli/berth.cjs (the package's bin and
// what tools/up.sh runs: tools/bundle-loader.cjs under the shebang below), then V8's code cache of the bundle for that
// program (tools/code-cache.mjs). What a daemon's memory cares about (tools/bench/README.md, "Memory"):
// - one module instead of ~250: Node's ESM loader resolves, links and keeps each module, and V8 optimises the
//   loader's own path helpers while hundreds of them resolve (about 10 MiB of a fresh daemon's RSS);
// - CommonJS rather than one ES module: no ESM loader at all (0.9 MiB), and each bundled module's Node built-ins
//   (zlib, https, crypto, dgram, worker_threads…) are required when that module is first initialised rather than
//   all imported before the first line runs, so what the engine loads on first use (the registry client) brings its
//   built-ins with it;
// - whitespace and comments dropped: V8 keeps a script's whole source on its heap for lazy compilation, and a
//   single character above U+00FF in a comment (an arrow, a dash) stored all of it as UTF-16 (2.6 MiB of a fresh
//   daemon's heap; 0.9 MiB as Latin-1 without the comments). Function names are kept (stack traces stay readable);
//   berth-bundle.cjs.map maps positions back to lib/ (`node --enable-source-maps dist/lib/cli/berth.cjs`).
// What a restart cares about (tools/bench/README.md, "Restart, round three" and "round four"): a code cache spares
// each start the parse and compile of the bundle (the build's) and of the functions a daemon's start runs (the one
// the daemon writes into its exec root); the program falls back to compiling it when the cache is missing or was
// made for another bundle, node binary or V8 flags.
// The bundle sits beside main.js so that every path the code derives from import.meta.url (the package root, the
// monitor binary, the hash thread's worker) resolves the same from either: import.meta.url becomes the bundle's own
// file URL. The runtime dependencies that lib/ loads (debug, tar-fs and its tar-stream) are bundled too (below); they
// stay dependencies of the package, for dist/lib/index.js and main.js. esbuild is a dev dependency, as tsc is (npm run
// build needs both).
import { spawnSync } from 'node:child_process'
import { chmodSync, existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { join, dirname } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const entry = join(root, 'dist/lib/cli/main.js')
const out = join(root, 'dist/lib/cli/berth-bundle.cjs')
const program = join(root, 'dist/lib/cli/berth.cjs')
const cache = join(root, 'dist/lib/cli/berth-bundle.code-cache')
const esbuild = await import('esbuild').catch(() => {
  process.stderr.write('tools/bundle.mjs: esbuild is missing: npm ci installs it (a dev dependency)\n')
  process.exit(1)
})
if (!existsSync(entry)) { process.stderr.write(`tools/bundle.mjs: ${entry} is missing: run tsc first\n`); process.exit(1) }
// a cache of the bundle being replaced must not outlive it (the program would only find it stale)
rmSync(cache, { force: true })
// lib/ loads its runtime dependencies (debug; tar-fs and tar-stream, at their first use) with
// `createRequire(import.meta.url)(name)`, which esbuild leaves to Node at run time. In the bundle they become plain
// `require(name)` calls that esbuild bundles, still evaluated at the call. Loaded by Node's own resolver, these ~25
// files cost a fresh daemon ~0.4 MiB more RSS than the same code in the bundle (Node's resolver for packages'
// `exports` maps, a Module and a separately compiled script per file, none of it in the code cache;
// tools/bench/README.md, "memory round three"). A nested createRequire (tar-stream, required from where tar-fs is)
// resolves from that package. The package's own package.json (lib/cli/version.ts) is bundled the same way: read and
// resolved by Node at every start, it cost ~1 ms of a restart's CPU before /_ping.
const fromRoot = createRequire(join(root, 'package.json'))
const nested = new Map()
const runtimeDependencies = {
  name: 'runtime-dependencies',
  setup (build) {
    build.onLoad({ filter: /[\\/]dist[\\/]lib[\\/].*\.js$/ }, (args) => {
      const text = readFileSync(args.path, 'utf8')
      if (!text.includes('createRequire(')) return undefined
      const contents = text
        .replace(/createRequire\(createRequire\(import\.meta\.url\)\.resolve\('([^']+)'\)\)\('([^']+)'\)/g, (_, from, name) => {
          nested.set(name, fromRoot.resolve(name, { paths: [dirname(fromRoot.resolve(from))] }))
          return `require('${name}')`
        })
        .replace(/createRequire\(import\.meta\.url\)\('([a-z@][^':]*|(?:\.\.\/)+package\.json)'\)/g, (_, name) => `require('${name}')`)
      return { contents, loader: 'js' }
    })
    build.onResolve({ filter: /^[a-z@][^:]*$/ }, (args) => nested.has(args.path) ? { path: nested.get(args.path) } : undefined)
  }
}
// debug's node.js, at its load: node:tty, to ask whether stderr is a terminal (its colours), and the optional
// `supports-color` package, which berth does not depend on: left to Node, its require searched every node_modules
// folder above the bundle and threw, at every start. In the bundle, node:tty is required when a logger first asks,
// and its answer kept: debug asks whether stderr is a terminal for every logger it makes (~260 at a start, made as
// the modules load, ~1 ms of a restart's CPU before /_ping in ioctls); supports-color is what an install without it
// has.
const debugAtFirstUse = {
  name: 'debug-at-first-use',
  setup (build) {
    build.onResolve({ filter: /^supports-color$/ }, () => ({ path: 'supports-color', namespace: 'berth-absent' }))
    build.onLoad({ filter: /.*/, namespace: 'berth-absent' }, () => ({ contents: 'throw Object.assign(new Error("not installed"), { code: "MODULE_NOT_FOUND" })', loader: 'js' }))
    build.onLoad({ filter: /[\\/]node_modules[\\/]debug[\\/]src[\\/]node\.js$/ }, (args) => {
      const text = readFileSync(args.path, 'utf8')
      const eager = "const tty = require('tty');"
      if (!text.includes(eager)) throw new Error(`tools/bundle.mjs: ${args.path} no longer requires tty as expected`)
      return { contents: text.replace(eager, "const ttys = new Map(); const tty = { isatty: (fd) => { if (!ttys.has(fd)) ttys.set(fd, require('tty').isatty(fd)); return ttys.get(fd) } };"), loader: 'js' }
    })
  }
}
await esbuild.build({
  entryPoints: [entry],
  plugins: [runtimeDependencies, debugAtFirstUse],
  outfile: out,
  bundle: true,
  platform: 'node',
  format: 'cjs',
  target: 'node20',
  logLevel: 'warning',
  legalComments: 'none',
  minifyWhitespace: true,
  charset: 'ascii',
  sourcemap: 'linked',
  define: { 'import.meta.url': '__berthBundleUrl', 'import.meta.berthProgram': '__berthProgram' },
  // 'use strict' first: the bundled modules are ES modules, strict throughout
  banner: { js: '"use strict";var __berthBundleUrl=require("node:url").pathToFileURL(__filename).href;' }
})
// what earlier builds wrote: the ES-module bundle, and the map of the bundle when it was berth.cjs itself; nothing
// should run stale code by its old name
rmSync(join(root, 'dist/lib/cli/berth.mjs'), { force: true })
rmSync(join(root, 'dist/lib/cli/berth.cjs.map'), { force: true })
// Run as a program (the package's bin, tools/up.sh), it starts Node with the memory settings measured for the
// daemon (tools/bench/README.md, "Memory"): young-generation semi-spaces of 2 MiB instead of 16 (V8 keeps them at
// their high-water mark, so a burst of requests held ~30 MiB for good; no cost in CPU per request was measurable; at
// 1 MiB a `_ping` cost 10-15% more CPU), and glibc's malloc giving blocks of 16 KiB and more their own mappings,
// returned at free (request bodies, header buffers, and the 16-32 KiB segments of V8's compiler zones, which in the
// heap left ~3 MiB of free but resident pages after the boot's compile) instead of raising its mmap threshold and
// keeping them in the heap; and V8's gc() for the daemon command's collection once a burst of work is over
// (lib/cli/idle-gc.ts). `node dist/lib/cli/berth.cjs` runs without them. The program puts these V8 flags back to their
// defaults once they have done their work (tools/bundle-loader.cjs, settleFlags): V8 takes a code cache, Node's for
// its built-in modules as ours for the bundle, only under the flags it was made with. A flag added here must be added
// to SETTLED there.
const SHEBANG = '#!/usr/bin/env -S MALLOC_MMAP_THRESHOLD_=16384 MALLOC_TRIM_THRESHOLD_=65536 node --max-semi-space-size=2 --expose-gc'
// The bundle is not a program (berth.cjs runs it): it is written as the function CommonJS's loader would make of
// it, one expression the program compiles as a script (vm.Script: what V8 can later make a code cache of, with
// every function compiled since: the daemon's own cache), with one parameter more, the program's hooks
// (import.meta.berthProgram in lib/cli/daemon-code-cache.ts). The function's head takes the place of main.js's `#!`
// line, which esbuild keeps, so that berth-bundle.cjs.map's line numbers still hold.
const HEAD = '(function (exports, require, module, __filename, __dirname, __berthProgram) {'
const bundled = readFileSync(out, 'utf8')
if (!bundled.startsWith('#!')) { process.stderr.write('tools/bundle.mjs: the bundle does not start with main.js\'s #! line\n'); process.exit(1) }
writeFileSync(out, `${bundled.replace(/^#!.*/, HEAD)}\n})\n`)
writeFileSync(program, `${SHEBANG}\n${readFileSync(join(root, 'tools/bundle-loader.cjs'), 'utf8')}`)
chmodSync(program, 0o755)
chmodSync(out, 0o644)
// the code cache (made under the shebang's environment and V8 flags); a build without one still runs (the program
// compiles the bundle), so its failure is reported, not fatal
const made = spawnSync(process.execPath, [join(root, 'tools/code-cache.mjs')], { stdio: 'inherit' })
if (made.status !== 0) process.stderr.write('tools/bundle.mjs: warning: no code cache: the daemon starts without it\n')
