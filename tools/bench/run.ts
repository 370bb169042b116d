// `npm run bench -- <name> [options]`: runs one benchmark of tools/bench (engine, network, volumes, swarm, build,
// images, registry, evhttp) with its options; with no name, lists them. Benchmarks are never part of `npm test`.
import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const NAMES = ['lightness', 'engine', 'network', 'volumes', 'swarm', 'build', 'images', 'registry', 'evhttp']
const here = dirname(fileURLToPath(import.meta.url))
const [name, ...rest] = process.argv.slice(2)
if (name === undefined || !NAMES.includes(name)) {
  process.stderr.write(`usage: npm run bench -- <${NAMES.join('|')}> [options] (see README, "Benchmarks")\n`)
  process.exitCode = name === undefined ? 0 : 2
} else {
  const script = join(here, `${name}.js`)
  if (!existsSync(script)) { process.stderr.write(`${script} is missing: run npm run build first\n`); process.exitCode = 2 } else {
    const r = spawnSync(process.execPath, [script, ...rest], { stdio: 'inherit' })
    process.exitCode = r.status ?? 1
  }
}
