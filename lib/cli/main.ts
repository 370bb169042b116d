#!/usr/bin/env node
// The `berth` command: dispatches to its subcommands. Exit status: 0 done, 1 failed, 2 usage error (a wrong flag,
// command or argument). Each command loads only its own module graph (dynamic imports): `berth registry` does not pay
// for the engine, nor the reverse.
import { BERTH_VERSION } from './version.js'

const USAGE = `Usage: berth COMMAND [OPTIONS]

A Docker-Engine-API container engine and an image registry.

Commands:
  daemon        Run the container engine (Docker Engine API)
  registry      Run the image registry (Hub API + OCI distribution API); passwd, gc, deprecations
  version       Print the version

Options:
  -h, --help     Print usage
  -v, --version  Print version information and quit

Run 'berth COMMAND --help' for more information on a command.
`

function versionLine (): string {
  return `Berth version ${BERTH_VERSION} (Docker Engine API 1.50, Node ${process.version})\n`
}

async function main (): Promise<number> {
  const [cmd, ...rest] = process.argv.slice(2)
  switch (cmd) {
    case 'daemon': return await (await import('./daemon-command.js')).daemonCommand(rest)
    case 'registry': return await (await import('./registry-command.js')).registryCommand(rest)
    case 'version': case '--version': case '-v':
      if (rest.includes('--help') || rest.includes('-h')) { process.stdout.write('Usage: berth version\n\nPrint the version.\n'); return 0 }
      if (rest.length > 0) { process.stderr.write(`berth version: accepts no arguments\nSee 'berth --help'.\n`); return 2 }
      process.stdout.write(versionLine())
      return 0
    case '-h': case '--help': case 'help': process.stdout.write(USAGE); return 0
    case undefined: process.stderr.write(USAGE); return 2
    default: process.stderr.write(`berth: unknown command ${JSON.stringify(cmd)}\nSee 'berth --help'.\n`); return 2
  }
}

main().then((code) => { process.exitCode = code }, (err: Error) => {
  process.stderr.write(`berth: ${err.stack ?? err.message}\n`)
  process.exitCode = 1
})
