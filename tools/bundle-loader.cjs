'use strict'
// dist/lib/cli/berth.cjs, the `berth` command as a program (the package's bin, tools/up.sh): tools/bundle.mjs writes
// this file there under the shebang that gives the daemon its memory settings. It runs the bundled command beside it,
// berth-bundle.cjs (the CommonJS function itself: tools/bundle.mjs wraps it), compiled with a V8 code cache: a start
// then skips V8's parse and compile of the 1 MB script and of the functions the cache holds (tools/bench/README.md,
// "Restart, round three" and "round four"). Two caches, tried in this order:
// - the daemon's: `berth daemon`, when its listeners are up (lib/cli/daemon-code-cache.ts), has V8 make a cache of
//   every function compiled so far (what a start runs before /_ping can answer) and saveCodeCache below writes it
//   into the exec root (`berth.code-cache`, 0600), once, when this start found none it could use. A start of the
//   daemon reads it from the exec root its flags and configuration file name (daemonCacheFile), only when the file
//   and that directory belong to this user and nobody else may write them, never through a link;
// - the build's (dist/lib/cli/berth-bundle.code-cache, tools/code-cache.mjs): the top-level compile only.
// Either is used only when its first line names this bundle (the build's by its SHA-256, the daemon's by its file:
// sourceId), this node binary (version, V8, arch, size) and the data's own SHA-256 (V8 does not check its data: a
// changed byte is taken); V8 then checks its own version, its flags (as they were when the cache was made: `node
// berth.cjs` without the shebang's flags has both refused) and the source's length. Anything else, or no cache at
// all: the next one, then the source, as Node's loader would compile it; never a failure. BERTH_CODE_CACHE=off skips
// both, BERTH_CODE_CACHE=build the daemon's (neither read nor written); BERTH_CODE_CACHE=report writes one line to
// stderr saying which cache V8 used.
// Required rather than run (tools/code-cache.mjs, the tests), it only exports what the cache's makers share with it.

// The first line's V8 flags that V8 reads once, as the process starts (the young generation's size when the heap is
// set up, the `gc` global when the main context is made), put back to their defaults before anything else loads:
// V8 takes a code cache only under the flags it was made with (a hash of every flag not at its default), and Node's
// built-in modules come with caches made under the defaults, so under the first line's flags every built-in module
// the daemon loads was compiled from its source (node:stream, crypto, net and http: ~15 ms of CPU against ~4.5 with
// their caches; tools/bench/README.md, "Restart, round five"). What the flags did stays done. The caches of the
// bundle (below) are made and used under the same settled flags (tools/code-cache.mjs calls settleFlags too).
const SETTLED = [['--max-semi-space-size', '--max-semi-space-size=0'], ['--expose-gc', '--no-expose-gc']]
function settleFlags () {
  const given = SETTLED.filter(([flag]) => process.execArgv.some((a) => a === flag || a.startsWith(`${flag}=`)))
  if (given.length === 0) return
  const set = flagSetter()
  for (const [, reset] of given) set(reset)
}

/**
 * V8's setFlagsFromString. node:v8's calls its binding, but node:v8 loads node:stream and ~20 other modules first,
 * which would be compiled here under the flags not yet settled, without their cache (~4 ms of a start's CPU): the
 * binding itself, then, which Node still hands out through process.binding('v8'). Node warns at its first access
 * (DEP0111, a runtime deprecation): deprecation warnings are off for that one synchronous access. A Node without it
 * gets node:v8's.
 */
function flagSetter () {
  // (`node --no-deprecation` makes it true and read-only)
  const quiet = process.noDeprecation === true
  const own = Object.prototype.hasOwnProperty.call(process, 'noDeprecation')
  const was = process.noDeprecation
  let binding
  try {
    if (!quiet) process.noDeprecation = true
    binding = process.binding('v8')
  } catch {
    // no such binding any more
  } finally {
    if (!quiet) {
      if (own) process.noDeprecation = was
      else delete process.noDeprecation
    }
  }
  if (typeof binding?.setFlagsFromString === 'function') return (flags) => { binding.setFlagsFromString(flags) }
  return require('node:v8').setFlagsFromString
}
if (require.main === module) settleFlags()

const { closeSync, fstatSync, fsyncSync, lstatSync, openSync, readFileSync, readSync, renameSync, statSync, unlinkSync, writeSync, constants } = require('node:fs')
const { createHash } = require('node:crypto')
const { dirname, join, resolve } = require('node:path')
const { createRequire } = require('node:module')
const vm = require('node:vm')

const NAME = 'berth-bundle.cjs'
const BUNDLE = join(__dirname, NAME)
const CACHE = join(__dirname, 'berth-bundle.code-cache')
/** The daemon's cache, in its exec root. */
const DAEMON_CACHE = 'berth.code-cache'
/** What a cache may weigh: the daemon's (a start until it listens) is ~0.55 MB, the build's ~0.25. */
const MAX_CACHE = 4 * 1024 * 1024
// lib/cli/daemon-flags.ts and lib/engine/defaults.ts (spec/cli/code-cache.test.ts checks that they agree)
const DEFAULT_CONFIG_FILE = '/etc/berth/daemon.json'
const DEFAULT_DATA_ROOT = '/var/lib/berth'

function sha256 (data) {
  return createHash('sha256').update(data).digest('hex')
}

/**
 * A cache's first line (`source`: which bundle, below): what it was made from and by; a cache is used only when this
 * line is the one expected.
 */
function stamp (kind, source, payload) {
  return `berth-code-cache 2 ${kind} ${source} node ${process.version} v8 ${process.versions.v8} ${process.arch} ` +
    `${statSync(process.execPath).size} ${sha256(payload)}`
}

/**
 * The bundle file as the daemon's cache names it: its device, inode, size and modification and change times in
 * nanoseconds, from the descriptor it is read through. The build's cache travels with the package (copied, unpacked:
 * new inode and times), so it names the bundle by its SHA-256; the daemon's stays on this machine beside a bundle
 * that does not move, and naming it by its file spares each start hashing 1 MB (2.3 ms of CPU before /_ping). A
 * rebuilt or replaced bundle is a new file or a written one: its change time moves, which no one can set back
 * (utimes sets the modification time, and changes the change time doing so).
 */
function sourceId (st) {
  return `file:${st.dev}:${st.ino}:${st.size}:${st.mtimeNs}:${st.ctimeNs}`
}

/** The bundle's text and its file's sourceId, read through one descriptor. */
function readBundle (path) {
  const fd = openSync(path, constants.O_RDONLY)
  try {
    const st = fstatSync(fd, { bigint: true })
    const size = Number(st.size)
    const buf = Buffer.allocUnsafe(size)
    let got = 0
    while (got < size) {
      const n = readSync(fd, buf, got, size - got, got)
      if (n === 0) break
      got += n
    }
    return { text: buf.toString('latin1', 0, got), id: sourceId(st) }
  } finally {
    closeSync(fd)
  }
}

/**
 * The bundle (the function CommonJS's loader makes of a file: tools/bundle.mjs wrote it so) compiled as a script,
 * with a cache's data when given. V8 keeps the script's name in the data it produces: the build's cache is made
 * under the bare file name (`produce`), a literal, which stack traces then show (a name sliced from the path would
 * carry the whole path into the cache); a daemon's cache stays on the machine and names the file's path.
 */
function compile (source, cachedData, produce = false) {
  return new vm.Script(source, {
    filename: produce ? NAME : BUNDLE,
    ...(cachedData !== undefined ? { cachedData } : {}),
    importModuleDynamically: vm.constants.USE_MAIN_CONTEXT_DEFAULT_LOADER
  })
}

/** A cache file's data when its first line is the one expected; else why not. */
function parseCache (file, kind, sourceSha) {
  const nl = file.indexOf(10)
  if (nl < 0 || nl > 512) return { why: 'stale' }
  const payload = file.subarray(nl + 1)
  return file.toString('latin1', 0, nl) === stamp(kind, sourceSha, payload) ? { data: payload } : { why: 'stale' }
}

/** The build's cache (`sourceSha`: the bundle's SHA-256). */
function buildCache (sourceSha) {
  let file
  try {
    file = readFileSync(CACHE)
  } catch {
    return { why: 'missing' }
  }
  return parseCache(file, 'build', sourceSha)
}

/** A file or directory only this user (the one running the daemon) can write to, and that this user owns. */
function privateTo (st) {
  return st.uid === process.geteuid() && (st.mode & 0o022) === 0
}

/**
 * The daemon's cache at `path` (`source`: the bundle's sourceId): a regular file, 0600 or stricter, in a directory
 * nobody else may write to.
 */
function daemonCache (path, source) {
  let fd
  try {
    if (!privateTo(lstatSync(dirname(path)))) return { why: 'not private' }
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK)
  } catch {
    return { why: 'missing' }
  }
  try {
    const st = fstatSync(fd)
    if (!st.isFile() || !privateTo(st) || (st.mode & 0o077) !== 0) return { why: 'not private' }
    if (st.size > MAX_CACHE) return { why: 'stale' }
    const file = Buffer.allocUnsafe(st.size)
    let got = 0
    while (got < st.size) {
      const n = readSync(fd, file, got, st.size - got, got)
      if (n === 0) break
      got += n
    }
    return parseCache(file.subarray(0, got), 'daemon', source)
  } catch {
    return { why: 'stale' }
  } finally {
    closeSync(fd)
  }
}

/**
 * Where `berth daemon ARGS` keeps its cache: its exec root as lib/cli/daemon-config.ts settles it, from the flags
 * (`--exec-root`, `--data-root`, `--config-file`, as `--flag value` or `--flag=value`) or else the configuration
 * file's `exec-root` and `data-root` keys (default: <data root>/run). Null for another command, or when the file
 * cannot be read as JSON (the daemon then refuses to start anyway). A wrong answer costs only the cache: the daemon
 * writes its cache only where this says (saveCodeCache).
 */
function daemonCacheFile (argv) {
  if (argv[0] !== 'daemon') return null
  const flags = {}
  for (let i = 1; i < argv.length; i++) {
    const m = /^--(exec-root|data-root|config-file)(?:=(.*))?$/s.exec(argv[i])
    if (m === null) continue
    flags[m[1]] = m[2] !== undefined ? m[2] : argv[++i]
    if (flags[m[1]] === undefined) return null
  }
  let file = {}
  if (flags['exec-root'] === undefined) {
    try {
      const text = readFileSync(flags['config-file'] ?? DEFAULT_CONFIG_FILE, 'utf8')
      file = text.trim() === '' ? {} : JSON.parse(text)
    } catch (err) {
      if (err.code !== 'ENOENT' || flags['config-file'] !== undefined) return null
    }
    if (file === null || typeof file !== 'object') return null
  }
  const str = (v) => typeof v === 'string' && v !== '' ? v : undefined
  const execRoot = flags['exec-root'] ?? str(file['exec-root'])
  const root = execRoot !== undefined ? resolve(execRoot) : join(resolve(flags['data-root'] ?? str(file['data-root']) ?? DEFAULT_DATA_ROOT), 'run')
  return join(root, DAEMON_CACHE)
}

/**
 * The daemon's cache written from the running bundle's script (`createCachedData`: the top-level compile and every
 * function compiled since, as V8 holds them now) into `execRoot`, when that is where the next start will read it:
 * to a temporary name (created, never opened through a link), 0600, synced, then renamed. Returns what happened, in words.
 * V8 stamps the data with its flags as they are at this call: the caller puts back any it changed since the start.
 */
function saveCodeCache (state, execRoot) {
  if (state.daemonFile === null || join(resolve(execRoot), DAEMON_CACHE) !== state.daemonFile) return 'not written: this start reads no cache from its exec root'
  const t0 = process.hrtime.bigint()
  const data = state.script.createCachedData()
  const ms = (Number(process.hrtime.bigint() - t0) / 1e6).toFixed(1)
  if (data.length > MAX_CACHE) return `not written: ${data.length} bytes, over the bound of ${MAX_CACHE}`
  const file = Buffer.concat([Buffer.from(`${stamp('daemon', state.id, data)}\n`, 'latin1'), data])
  // one name: the exec root's lock admits one daemon, and what a killed one left is replaced
  const tmp = `${state.daemonFile}.tmp`
  let fd
  try {
    try { unlinkSync(tmp) } catch {}
    fd = openSync(tmp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600)
    let put = 0
    while (put < file.length) put += writeSync(fd, file, put)
    fsyncSync(fd)
    closeSync(fd)
    fd = undefined
    renameSync(tmp, state.daemonFile)
  } catch (err) {
    if (fd !== undefined) closeSync(fd)
    try { unlinkSync(tmp) } catch {}
    return `not written: ${err.message}`
  }
  return `written: ${state.daemonFile}, ${file.length} bytes (made in ${ms} ms)`
}

function run () {
  const { text, id } = readBundle(BUNDLE)
  const mode = process.env.BERTH_CODE_CACHE
  const args = process.argv.slice(2)
  const daemonFile = mode === 'off' || mode === 'build' ? null : daemonCacheFile(args)
  let cache = mode === 'off' ? { why: 'off' } : { why: 'missing' }
  let used = 'none'
  if (daemonFile !== null) {
    cache = daemonCache(daemonFile, id)
    if (cache.data !== undefined) used = 'daemon'
  }
  if (used === 'none' && mode !== 'off') {
    // the source's hash only for the build's cache
    const build = buildCache(sha256(text))
    if (build.data !== undefined) { cache = build; used = 'build' } else if (daemonFile === null) cache = build
  }
  const script = compile(text, cache.data)
  let report = used === 'none' ? `not used (${cache.why})` : `used (${used})`
  if (cache.data !== undefined && script.cachedDataRejected === true) { report = `rejected by V8 (${used})`; used = 'none' }
  if (mode === 'report') process.stderr.write(`berth: code cache ${report}\n`)
  const bundle = script.runInThisContext()
  // what the daemon command asks for when its listeners are up (lib/cli/daemon-code-cache.ts)
  const state = { script, id, daemonFile }
  const program = {
    codeCache: used,
    saveCodeCache: (execRoot) => saveCodeCache(state, execRoot)
  }
  const mod = { exports: {} }
  bundle.call(mod.exports, mod.exports, createRequire(BUNDLE), mod, BUNDLE, __dirname, program)
}

if (require.main === module) run()
else module.exports = { settleFlags, sha256, sourceId, readBundle, BUNDLE, CACHE, DAEMON_CACHE, MAX_CACHE, DEFAULT_CONFIG_FILE, DEFAULT_DATA_ROOT, stamp, compile, daemonCacheFile }
