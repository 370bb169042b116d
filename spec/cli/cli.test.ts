// The `berth` command's surface: --version and `version`, --help for every command listing every flag it takes
// (and each listed flag accepted), exit status 2 for usage errors and 1 for failures.
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { DAEMON_FLAGS } from '../../lib/cli/daemon-flags.js'
import { berth } from './helpers.js'

const PACKAGE_VERSION = (JSON.parse((await import('node:fs')).readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version: string }).version

/** The long flags a --help text lists (at the start of its option lines). */
function listedFlags (help: string): string[] {
  return [...help.matchAll(/^\s+(?:-[A-Za-z], )?--([a-z][a-z-]*)/gm)].map((m) => m[1] as string)
}

describe('berth --version and berth version', () => {
  for (const args of [['--version'], ['-v'], ['version']]) {
    it(`berth ${args.join(' ')} prints the package version and exits 0`, () => {
      const r = berth(args)
      assert.equal(r.status, 0, r.stderr)
      assert.match(r.stdout, new RegExp(`^Berth version ${PACKAGE_VERSION.replace(/\./g, '\\.')} \\(Docker Engine API 1\\.\\d+, Node v\\d+`))
    })
  }
})

describe('--help for every command', () => {
  const commands: Array<{ args: string[], usage: RegExp }> = [
    { args: [], usage: /^Usage: berth COMMAND/ },
    { args: ['daemon'], usage: /^Usage: berth daemon \[OPTIONS\]/ },
    { args: ['registry'], usage: /^Usage: berth registry \[OPTIONS\]/ },
    { args: ['registry', 'gc'], usage: /^Usage: berth registry gc \[OPTIONS\]/ },
    { args: ['registry', 'passwd'], usage: /^Usage: berth registry passwd NAME/ },
    { args: ['registry', 'deprecations'], usage: /^Usage: berth registry deprecations/ },
    { args: ['version'], usage: /^Usage: berth version/ }
  ]
  for (const c of commands) {
    for (const h of ['--help', '-h']) {
      it(`berth ${[...c.args, h].join(' ')} prints its own usage on stdout and exits 0`, () => {
        const r = berth([...c.args, h])
        assert.equal(r.status, 0, r.stderr)
        assert.match(r.stdout, c.usage)
      })
    }
  }

  it('berth daemon --help lists every flag the daemon takes', () => {
    const listed = listedFlags(berth(['daemon', '--help']).stdout)
    assert.deepEqual([...listed].sort(), DAEMON_FLAGS.map((f) => f.name).sort())
  })

  it('every flag berth daemon --help lists is accepted (checked with --validate)', (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'berth-cli-'))
    t.after(() => { rmSync(dir, { recursive: true, force: true }) })
    const conf = join(dir, 'daemon.json')
    writeFileSync(conf, '{}')
    const sample: Record<string, string[]> = {
      host: ['unix:///run/x.sock'], group: ['0'], 'data-root': ['/var/lib/x'], 'exec-root': ['/run/x'], pidfile: ['/run/x.pid'],
      runtime: ['runc'], 'add-runtime': ['crun=/usr/bin/crun'], 'registry-mirror': ['http://127.0.0.1:5000'],
      'insecure-registry': ['10.0.0.0/8'], 'log-level': ['warn'], debug: [], 'log-format': ['json'], 'log-driver': ['local'],
      'log-opt': ['max-size=10m'], 'default-ulimit': ['nofile=1024:2048'], bip: ['10.99.0.1/24'],
      'default-address-pool': ['base=10.98.0.0/16,size=24'], 'bridge-name': ['xb0'], 'network-prefix': ['XB'],
      iptables: [], icc: [], 'userland-proxy': [], 'init-path': ['/usr/bin/tini'], tls: [], tlsverify: [], tlscacert: ['/x/ca.pem'],
      tlscert: ['/x/cert.pem'], tlskey: ['/x/key.pem'], 'allow-insecure-tcp': [], 'purge-network': []
    }
    for (const name of listedFlags(berth(['daemon', '--help']).stdout)) {
      if (['help', 'validate', 'config-file', 'default-runtime'].includes(name)) continue
      const value = sample[name]
      assert.ok(value !== undefined, `a sample value for --${name}`)
      const r = berth(['daemon', '--validate', '--config-file', conf, `--${name}`, ...value])
      assert.equal(r.status, 0, `--${name}: ${r.stderr}`)
      assert.equal(r.stdout, 'configuration OK\n')
    }
  })

  it('berth registry --help and gc --help list the flags they take', () => {
    const serve = listedFlags(berth(['registry', '--help']).stdout)
    for (const f of ['config', 'listen', 'data-root', 'auth', 'users', 'realm', 'service', 'token-key', 'public-url', 'max-blob-size', 'log-level', 'log-format', 'debug', 'help']) assert.ok(serve.includes(f), `registry --${f}`)
    assert.deepEqual(listedFlags(berth(['registry', 'gc', '--help']).stdout).sort(), ['data-root', 'dry-run', 'grace', 'help'])
  })
})

describe('exit status: 2 for usage errors, 1 for failures', () => {
  const usage: Array<{ args: string[], text: RegExp }> = [
    { args: [], text: /Usage: berth COMMAND/ },
    { args: ['frobnicate'], text: /unknown command "frobnicate"/ },
    { args: ['daemon', '--no-such-flag'], text: /unknown flag: --no-such-flag\nSee 'berth daemon --help'/ },
    { args: ['daemon', '-Z'], text: /unknown shorthand flag: 'Z' in -Z/ },
    { args: ['daemon', '--data-root'], text: /flag needs an argument: --data-root/ },
    { args: ['daemon', '--iptables=maybe'], text: /invalid argument "maybe" for "--iptables" flag/ },
    { args: ['daemon', 'extra'], text: /accepts no arguments/ },
    { args: ['registry', '--no-such-flag'], text: /unknown flag: --no-such-flag/ },
    { args: ['registry', 'gc', '--grace', 'soon'], text: /invalid --grace soon/ },
    { args: ['registry', 'passwd'], text: /one NAME expected/ },
    { args: ['version', 'extra'], text: /accepts no arguments/ },
    // a bad value on the command line is a usage error too, in the daemon as in the registry
    { args: ['daemon', '--config-file', '/dev/null', '--log-level', 'loud'], text: /invalid log level: loud/ },
    { args: ['daemon', '--config-file', '/dev/null', '--log-format', 'xml', '--validate'], text: /invalid log format: xml/ },
    // published ports are the containers' monitors' (no forwarder command any more)
    { args: ['port-proxy'], text: /unknown command "port-proxy"/ }
  ]
  for (const u of usage) {
    it(`berth ${u.args.join(' ')} → 2`, () => {
      const r = berth(u.args)
      assert.equal(r.status, 2, r.stderr)
      assert.match(r.stderr, u.text)
    })
  }

  it('a bad configuration file is a failure (1), before anything starts', (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'berth-cli-'))
    t.after(() => { rmSync(dir, { recursive: true, force: true }) })
    const conf = join(dir, 'daemon.json')
    writeFileSync(conf, '{"log-level": "loud"}')
    const r = berth(['daemon', '--config-file', conf, '--data-root', join(dir, 'data')])
    assert.equal(r.status, 1)
    assert.match(r.stderr, /invalid log level: loud/)
    assert.equal(berth(['registry', 'gc', '--data-root', join(dir, 'nope')]).status, 1)
  })
})
