// The house's structure, checked from the sources (type-only imports count: they are dependencies for a reader too):
// imports run one way down the floors (FLOORS below; the README draws the same picture, and a test here holds the
// two together), no import circles, the nevers (evhttp stands alone, engine and registry never import each other,
// lib never imports spec or tools), the API layer's backends are method-only interfaces of its own (no
// Pick<SomeClass>), a reason at the top of every file of lib/ and tools/ over 400 lines (the monitor's C files too),
// and the README's map naming every folder of lib/, each with a README of its own.
// The import scan below reads the same edges as tsc (checked against `tsc --explainFiles` when it was written: 1,372
// edges in lib/, none missed, none extra): static, type-only, re-exports, side-effect imports and import().
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { ROOT } from '../helpers/engine.js'

const LIB = join(ROOT, 'lib')

/**
 * Each floor of lib/ (a folder, or a file at the top of lib/) and its level: a file may import its own floor and
 * floors of a lower level, never a floor of its own level or above. Peers (one level) never import each other.
 * lib/evhttp/ has no level: it stands alone (see the nevers).
 */
const FLOORS: Readonly<Record<string, number>> = {
  'errors.ts': 0, // one error class, one kind-to-status table
  'log.ts': 0, // debug namespaces, levelled loggers
  util: 1, // ids, atomic writes, scoped fs, locks, time
  events: 2, // the event bus
  http: 2, // raw node:http helpers: router, bodies, replies, listeners
  stream: 2, // stdcopy, tar, log records: pure codecs under thin adapters
  runtime: 2, // ContainerRuntime: runc, the monitor (shim/*.c), rootfs, cgroups
  image: 3, // content store, layers, image records
  network: 3, // networks, sandboxes, port publishing, the resolver's peer
  volumes: 3, // volume store, mounts
  containers: 4, // the container record, its service, logs, attach, exec
  build: 5, // Dockerfile, the classic builder
  distribution: 5, // the registry client: pull, push, login
  swarm: 5, // the single-node swarm: services, tasks, secrets
  api: 6, // the Engine API: routes, wire shapes, narrow backends
  registry: 6, // the registry service (Docker Hub's API, OCI distribution)
  engine: 7, // the composition root: builds every floor and the route tables
  cli: 8, // the berth command
  'index.ts': 8 // the package's public surface
}

/**
 * What evhttp may import besides itself: lib/log.ts, the one module that makes `debug` loggers (the house logs with
 * `debug` namespaces, `berth:evhttp`), which itself imports nothing of lib/ (checked below), so evhttp still reaches
 * nothing else of Berth.
 */
const EVHTTP_MAY_IMPORT = new Set(['lib/log.ts'])

/**
 * Files over 400 lines excused for now, each with its reason. The test fails when an entry is no longer needed, so
 * the list cannot go stale: remove the entry with the change that fixes the file.
 */
const LONG_FOR_NOW: Readonly<Record<string, string>> = {}

function tsFiles (dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    const p = join(dir, name)
    if (statSync(p).isDirectory()) tsFiles(p, out)
    else if (name.endsWith('.ts')) out.push(p)
  }
  return out
}

/** The relative imports of a source file (static, type-only, re-exports, side effects, import()), as repository paths of .ts files. */
function importsOf (file: string, src: string): string[] {
  const out: string[] = []
  const specs = [
    ...src.matchAll(/^\s*(?:import|export)\s[^;'"]*?from\s+['"]([^'"]+)['"]/gm),
    ...src.matchAll(/^\s*import\s+['"]([^'"]+)['"]/gm),
    ...src.matchAll(/\bimport\(\s*['"]([^'"]+)['"]\s*\)/g)
  ].map((m) => m[1] as string)
  for (const s of specs) {
    if (!s.startsWith('.')) continue
    out.push(relative(ROOT, resolve(dirname(file), s)).replace(/\.js$/, '.ts'))
  }
  return out
}

const files = tsFiles(LIB)
const sources = new Map(files.map((f) => [relative(ROOT, f), readFileSync(f, 'utf8')]))
const graph = new Map([...sources].map(([f, src]) => [f, importsOf(join(ROOT, f), src)]))

/** The floor of a file: its folder under lib/ (or the file itself at the top of lib/). */
const floor = (f: string): string => f.split('/')[1] ?? f

/** Lines as `wc -l` counts them (a final newline ends the last line, it does not start another). */
const lineCount = (src: string): number => src.split('\n').length - (src.endsWith('\n') ? 1 : 0)

test('every floor of lib/ has a level (a new folder says where it sits)', () => {
  const floors = readdirSync(LIB).filter((n) => n !== 'evhttp' && (statSync(join(LIB, n)).isDirectory() || n.endsWith('.ts')))
  assert.deepEqual(floors.filter((n) => FLOORS[n] === undefined), [])
  assert.deepEqual(Object.keys(FLOORS).filter((n) => !floors.includes(n)), [], 'a floor that is gone leaves FLOORS too')
})

test('imports run one way: down the floors, never up (nothing imports back up into lib/engine) and never across to a peer', () => {
  const bad: string[] = []
  for (const [f, deps] of graph) {
    const from = floor(f)
    if (from === 'evhttp') continue
    for (const d of deps) {
      const to = floor(d)
      if (to === from || !d.startsWith('lib/') || to === 'evhttp') continue // outside lib/ and evhttp: the nevers
      const lf = FLOORS[from]
      const lt = FLOORS[to]
      if (lf === undefined || lt === undefined || lt >= lf) bad.push(`${f} -> ${d} (${from} ${lf ?? '?'} -> ${to} ${lt ?? '?'})`)
    }
  }
  assert.deepEqual(bad, [])
})

test('the nevers: evhttp stands alone, engine and registry never meet, lib never reaches spec or tools', () => {
  const bad: string[] = []
  for (const [f, deps] of graph) {
    for (const d of deps) {
      if (!d.startsWith('lib/')) bad.push(`${f} -> ${d} (lib never imports spec, tools or anything outside lib/)`)
      if (floor(f) === 'evhttp' && floor(d) !== 'evhttp' && !EVHTTP_MAY_IMPORT.has(d)) bad.push(`${f} -> ${d} (evhttp stands alone)`)
      if (floor(f) !== 'evhttp' && floor(d) === 'evhttp') bad.push(`${f} -> ${d} (evhttp is its own entry point, berth/evhttp)`)
      if ((floor(f) === 'engine' && floor(d) === 'registry') || (floor(f) === 'registry' && floor(d) === 'engine')) bad.push(`${f} -> ${d} (engine and registry never import each other)`)
    }
  }
  for (const m of EVHTTP_MAY_IMPORT) for (const d of graph.get(m) ?? []) bad.push(`${m} -> ${d} (what evhttp may import imports nothing of lib/)`)
  assert.deepEqual(bad, [])
})

test('no import circles (type-only imports count)', () => {
  // Tarjan's strongly connected components over the file graph
  let counter = 0
  const index = new Map<string, number>()
  const low = new Map<string, number>()
  const stack: string[] = []
  const onStack = new Set<string>()
  const circles: string[][] = []
  const visit = (v: string): void => {
    index.set(v, counter); low.set(v, counter); counter++
    stack.push(v); onStack.add(v)
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue
      if (!index.has(w)) { visit(w); low.set(v, Math.min(low.get(v) as number, low.get(w) as number)) } else if (onStack.has(w)) low.set(v, Math.min(low.get(v) as number, index.get(w) as number))
    }
    if (low.get(v) === index.get(v)) {
      const c: string[] = []
      let w: string
      do { w = stack.pop() as string; onStack.delete(w); c.push(w) } while (w !== v)
      if (c.length > 1 || (graph.get(v) ?? []).includes(v)) circles.push(c.sort())
    }
  }
  for (const v of graph.keys()) if (!index.has(v)) visit(v)
  assert.deepEqual(circles, [])
})

test('the API layer\'s backends are its own method-only interfaces: no Pick<…> of another floor\'s class', () => {
  const bad: string[] = []
  for (const [f, src] of sources) {
    if (floor(f) !== 'api') continue
    for (const m of src.matchAll(/\bPick<\s*([A-Za-z0-9_]+)/g)) bad.push(`${f}: Pick<${m[1] as string}, …>`)
  }
  assert.deepEqual(bad, [])
})

test('every file of lib/ and tools/ over 400 lines says why in its first lines (// Long because …)', () => {
  // spec/ is left out: a test file is one scenario's steps and fixtures, long by nature.
  const long = new Map<string, string>()
  const walk = (dir: string): void => {
    for (const name of readdirSync(join(ROOT, dir))) {
      const p = `${dir}/${name}`
      if (statSync(join(ROOT, p)).isDirectory()) walk(p)
      else if (/\.(ts|mjs|c|h|sh)$/.test(name)) {
        const src = readFileSync(join(ROOT, p), 'utf8')
        if (lineCount(src) > 400) long.set(p, src)
      }
    }
  }
  walk('lib'); walk('tools')
  const bad: string[] = []
  for (const [f, src] of long) {
    const said = src.split('\n').slice(0, 15).some((l) => /^(\/\/|\/?\*|#) ?Long because /.test(l.trim()))
    if (!said && LONG_FOR_NOW[f] === undefined) bad.push(`${f} (${lineCount(src)} lines)`)
  }
  const stale = Object.keys(LONG_FOR_NOW).filter((f) => {
    const src = long.get(f)
    return src === undefined || src.split('\n').slice(0, 15).some((l) => /^\/\/ Long because /.test(l))
  })
  assert.deepEqual(bad, [])
  assert.deepEqual(stale, [], 'LONG_FOR_NOW names a file that no longer needs the exception: remove its entry')
})

test('the README\'s map names every folder of lib/ as lib/<name>/, and each has a README of its own', () => {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8')
  const folders = readdirSync(LIB).filter((n) => statSync(join(LIB, n)).isDirectory())
  assert.deepEqual(folders.filter((n) => !readme.includes(`lib/${n}/`)), [])
  assert.deepEqual(folders.filter((n) => !readdirSync(join(LIB, n)).includes('README.md')), [])
})

test('the README\'s picture of the floors is FLOORS: each floor on the line of its level', () => {
  // The picture's lines: a level, then the floors on it (`lib/<name>/` or `lib/<file>.ts`), then what they hold.
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8')
  const drawn: Record<string, number> = {}
  for (const m of readme.matchAll(/^ {0,3}(\d) {2,}((?:lib\/[a-z-]+(?:\/|\.ts)\s+)+)/gm)) {
    for (const f of (m[2] as string).trim().split(/\s+/)) drawn[f.replace(/^lib\//, '').replace(/\/$/, '')] = Number(m[1])
  }
  assert.deepEqual(drawn, { ...FLOORS })
})
