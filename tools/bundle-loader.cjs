'use strict'
// dist/lib/cli/berth.cjs, the `berth` command as a program (the package's bin, tools/up.sh): tools/bundle.mjs writes
// this file there under the shebang that gives the daemon its memory settings. It runs the bundled command beside it,
// berth-bundle.cjs, compiled with the V8 code cache the build made for that bundle (tools/code-cache.mjs): a start
// then skips V8's parse and compile of the 1 MB script (tools/bench/README.md, "Restart, round three").
// The cache is used only when its first line names this bundle (its SHA-256), this node binary (version, V8, arch,
// size) and the cache's own SHA-256; V8 then checks its own version, flags and the source's length, and rejects a
// cache made under other flags (`node berth.cjs` without the shebang's). Anything else, or no cache at all: the
// bundle is compiled from its source, as Node's loader would. BERTH_CODE_CACHE=off skips the cache;
// BERTH_CODE_CACHE=report writes one line to stderr saying whether V8 used it.
// Required rather than run (tools/code-cache.mjs), it only exports what the cache's maker shares with it.
const { readFileSync, statSync } = require('node:fs')
const { createHash } = require('node:crypto')
const { join } = require('node:path')
const { createRequire } = require('node:module')
const vm = require('node:vm')

const NAME = 'berth-bundle.cjs'
const BUNDLE = join(__dirname, NAME)
const CACHE = join(__dirname, 'berth-bundle.code-cache')

function sha256 (data) {
  return createHash('sha256').update(data).digest('hex')
}

/** The cache's first line: what it was made from and by; a cache is used only when this line is the one expected. */
function stamp (source, payload) {
  return `berth-code-cache 1 ${sha256(source)} node ${process.version} v8 ${process.versions.v8} ${process.arch} ${statSync(process.execPath).size} ${sha256(payload)}`
}

/**
 * The bundle as the function CommonJS's loader makes of a file (the same parameters), compiled with the cache's
 * data when given, or producing that data (`produce`: the function's `cachedData`). V8 keeps the script's name in
 * the data it produces, and a start with the cache keeps that name: the cache is made under the bare file name, a
 * literal (a name sliced from the path would carry the whole path into the cache), which stack traces then show.
 */
function compile (source, cachedData, produce = false) {
  return vm.compileFunction(source, ['exports', 'require', 'module', '__filename', '__dirname'], {
    filename: produce ? NAME : BUNDLE,
    ...(cachedData !== undefined ? { cachedData } : {}),
    ...(produce ? { produceCachedData: true } : {}),
    importModuleDynamically: vm.constants.USE_MAIN_CONTEXT_DEFAULT_LOADER
  })
}

/** The cache's V8 data when it was made for this bundle by this node, else why not. */
function cacheFor (source) {
  let file
  try {
    file = readFileSync(CACHE)
  } catch {
    return { why: 'missing' }
  }
  const nl = file.indexOf(10)
  if (nl < 0 || nl > 512) return { why: 'stale' }
  const payload = file.subarray(nl + 1)
  return file.toString('latin1', 0, nl) === stamp(source, payload) ? { data: payload } : { why: 'stale' }
}

function run () {
  const source = readFileSync(BUNDLE, 'latin1')
  const mode = process.env.BERTH_CODE_CACHE
  const cache = mode === 'off' ? { why: 'off' } : cacheFor(source)
  const bundle = compile(source, cache.data)
  if (mode === 'report') {
    const used = cache.data === undefined ? `not used (${cache.why})` : bundle.cachedDataRejected === true ? 'rejected by V8' : 'used'
    process.stderr.write(`berth: code cache ${used}\n`)
  }
  const mod = { exports: {} }
  bundle.call(mod.exports, mod.exports, createRequire(BUNDLE), mod, BUNDLE, __dirname)
}

if (require.main === module) run()
else module.exports = { BUNDLE, CACHE, stamp, compile }
