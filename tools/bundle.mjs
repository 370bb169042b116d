#!/usr/bin/env node
// Bundles the `berth` command (dist/lib/cli/main.js and everything it imports from lib/) into one module,
// dist/lib/cli/berth.mjs, the package's bin and what tools/up.sh runs. One module instead of ~250 is what a daemon's
// memory cares about: Node's ESM loader resolves, links and keeps each module, and V8 optimises the loader's own
// path helpers while hundreds of them resolve (measured in tools/bench/README.md: about 10 MiB of a fresh daemon's
// RSS). The bundle sits beside main.js so that every path the code derives from import.meta.url (the package root,
// the monitor binary, the forwarder's entry point, the hash thread's worker) resolves the same from either. The
// runtime dependencies (tar-fs, split2, debug) stay packages; esbuild is a dev dependency, as tsc is (npm run build
// needs both).
import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join, dirname } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const entry = join(root, 'dist/lib/cli/main.js')
const out = join(root, 'dist/lib/cli/berth.mjs')
const esbuild = await import('esbuild').catch(() => {
  process.stderr.write('tools/bundle.mjs: esbuild is missing: npm ci installs it (a dev dependency)\n')
  process.exit(1)
})
if (!existsSync(entry)) { process.stderr.write(`tools/bundle.mjs: ${entry} is missing: run tsc first\n`); process.exit(1) }
await esbuild.build({
  entryPoints: [entry],
  outfile: out,
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  packages: 'external',
  logLevel: 'warning',
  legalComments: 'none'
})
// Run as a program (the package's bin, tools/up.sh), it starts Node with the memory settings measured for the
// daemon (tools/bench/README.md, "Memory"): young-generation semi-spaces of 2 MiB instead of 16 (V8 keeps them at
// their high-water mark, so a burst of requests held ~30 MiB for good; no cost in CPU per request was measurable),
// and glibc's malloc returning freed blocks over 64 KiB (request bodies, header buffers) at once instead of raising
// its mmap threshold and keeping them in the heap. `node dist/lib/cli/berth.mjs` runs without them.
const SHEBANG = '#!/usr/bin/env -S MALLOC_MMAP_THRESHOLD_=65536 MALLOC_TRIM_THRESHOLD_=65536 node --max-semi-space-size=2'
const code = readFileSync(out, 'utf8').replace(/^#!.*\n/, '')
writeFileSync(out, `${SHEBANG}\n${code}`)
chmodSync(out, 0o755)
