#!/usr/bin/env node
// The `berth` command: `berth daemon [flags]` (dockerd's flag names where they exist).
import { parseArgs } from 'node:util'
import { join } from 'node:path'
import { homedir } from 'node:os'
import { writeFile, rm, readFile } from 'node:fs/promises'

import { DEFAULT_DATA_ROOT, DEFAULT_SOCKET } from '../engine/defaults.js'
// Each command loads only its own module graph (dynamic imports below): `berth registry` does not pay for the
// engine, nor the reverse, and a `berth port-proxy` (one per published port) loads only the forwarder.

const USAGE = `Usage: berth COMMAND

Commands:
  daemon     Run the container engine (Docker Engine API)
  registry   Run the image registry (Hub API + OCI distribution API); see berth registry --help

berth daemon flags:
  -H, --host list         Daemon socket(s) to connect to (default unix://${DEFAULT_SOCKET}); tcp://host:port only when given
      --data-root string  Root directory of persistent state (default ${DEFAULT_DATA_ROOT})
      --exec-root string  Root directory for execution state (default <data-root>/run)
  -p, --pidfile string    Path to use for the daemon PID file
      --runtime string    OCI runtime binary (default runc; crun accepted)
      --insecure-registry list  Registries (host[:port] or CIDR) reachable over plain HTTP (loopback always is)
  -l, --log-level string  debug|info|warn|error|fatal (default info)
      --bip string        The default bridge's gateway address and prefix (e.g. 10.88.0.1/16)
      --default-address-pool base=CIDR,size=N   Pools for networks created without a subnet (repeatable)
      --bridge-name string  The default bridge network's Linux bridge (default berth0)
      --network-prefix string  Prefix of this daemon's iptables chains, bridges and veths (default BERTH, ≤ 6)
      --iptables          Manage iptables rules (default true; --iptables=false leaves the firewall alone)
      --icc               Traffic between containers on the default bridge (default true)
      --userland-proxy    A forwarder process holds each published port besides the DNAT rule (default true;
                          --userland-proxy=false: DNAT only, as before; without iptables forwarders always)
      --init-path string  The init binary of docker run --init (default: docker-init or tini-static in PATH, else tini)
      --tls               Use TLS on TCP listeners; implied by --tlsverify
      --tlsverify         Use TLS and require client certificates signed by --tlscacert
      --tlscacert string  Trust certs signed only by this CA (default $DOCKER_CERT_PATH or ~/.docker, ca.pem)
      --tlscert string    Path to TLS certificate file (default $DOCKER_CERT_PATH or ~/.docker, cert.pem)
      --tlskey string     Path to TLS key file (default $DOCKER_CERT_PATH or ~/.docker, key.pem)
      --allow-insecure-tcp  Listen on a non-loopback TCP address without TLS (refused otherwise: it is root access
                          for anyone who can reach it)
`

function out (s: string): void { process.stderr.write(s + '\n') }

async function daemon (rawArgv: string[]): Promise<number> {
  // dockerd's boolean flags take an optional value (--iptables=false): a bare flag means true
  const argv = rawArgv.map((a) => ['--iptables', '--icc', '--userland-proxy', '--tls', '--tlsverify'].includes(a) ? `${a}=true` : a)
  const { values } = parseArgs({
    args: argv,
    options: {
      host: { type: 'string', short: 'H', multiple: true },
      'data-root': { type: 'string' },
      'exec-root': { type: 'string' },
      pidfile: { type: 'string', short: 'p' },
      runtime: { type: 'string' },
      'default-runtime': { type: 'string' },
      'insecure-registry': { type: 'string', multiple: true },
      'log-level': { type: 'string', short: 'l' },
      debug: { type: 'boolean', short: 'D' },
      help: { type: 'boolean', short: 'h' },
      bip: { type: 'string' },
      'default-address-pool': { type: 'string', multiple: true },
      'bridge-name': { type: 'string' },
      'network-prefix': { type: 'string' },
      iptables: { type: 'string' },
      icc: { type: 'string' },
      'userland-proxy': { type: 'string' },
      'init-path': { type: 'string' },
      tls: { type: 'string' },
      tlsverify: { type: 'string' },
      tlscacert: { type: 'string' },
      tlscert: { type: 'string' },
      tlskey: { type: 'string' },
      'allow-insecure-tcp': { type: 'boolean' }
    },
    strict: true
  })
  const { parsePrefix } = await import('../network/cidr.js')
  const pools: Array<{ base: string, size: number }> = []
  for (const p of values['default-address-pool'] ?? []) {
    const kv = Object.fromEntries(p.split(',').map((x) => x.split('=')))
    const base = typeof kv.base === 'string' ? parsePrefix(kv.base) : null
    const size = /^\d+$/.test(kv.size ?? '') ? Number(kv.size) : -1
    if (base === null || size < base.bits || size > 30) { out(`invalid default address pool: ${p} (base=CIDR,size=N with N between the base's prefix length and 30)`); return 1 }
    pools.push({ base: kv.base, size: Number(kv.size) })
  }
  if (values.help === true) { process.stdout.write(USAGE); return 0 }
  const level = values['log-level'] ?? (values.debug === true ? 'debug' : 'info')
  if (!['debug', 'info', 'warn', 'error', 'fatal'].includes(level)) { out(`invalid log level: ${level}`); return 1 }
  if (level === 'debug') (await import('../log.js')).enableLogs(process.env.DEBUG ?? 'berth:*')
  const hosts = values.host ?? [`unix://${DEFAULT_SOCKET}`]
  // dockerd's TLS flags: --tlsverify implies --tls; certificate paths default to DOCKER_CERT_PATH or ~/.docker
  const tlsVerify = values.tlsverify !== undefined && values.tlsverify !== 'false'
  const useTls = tlsVerify || (values.tls !== undefined && values.tls !== 'false')
  const certDir = process.env.DOCKER_CERT_PATH ?? join(homedir(), '.docker')
  const tls = useTls
    ? {
        cert: values.tlscert ?? join(certDir, 'cert.pem'),
        key: values.tlskey ?? join(certDir, 'key.pem'),
        ...(tlsVerify || values.tlscacert !== undefined ? { ca: values.tlscacert ?? join(certDir, 'ca.pem') } : {}),
        verify: tlsVerify
      }
    : undefined
  for (const h of hosts) {
    if (h.startsWith('tcp://') && !useTls) out(`WARNING: API is accessible on ${h} without encryption or authentication: anyone who can reach it has root on this host`)
    else if (h.startsWith('tcp://') && !tlsVerify) out(`WARNING: API is accessible on ${h} without client authentication (--tls without --tlsverify): anyone who can reach it has root on this host`)
  }
  const pidfile = values.pidfile
  // dockerd's pidfile check: a file naming a live process means a daemon is running
  if (pidfile !== undefined) {
    const running = await pidInFile(pidfile)
    if (running !== null) { out(`pid file found, ensure berth is not running or delete ${pidfile} (pid ${running} is alive)`); return 1 }
  }
  const { createEngine } = await import('../engine/engine.js')
  let engine
  try {
    engine = await createEngine({
      insecureRegistries: values['insecure-registry'] ?? [],
      dataRoot: values['data-root'] ?? DEFAULT_DATA_ROOT,
      ...(values['exec-root'] !== undefined ? { execRoot: values['exec-root'] } : {}),
      hosts,
      runtime: values.runtime ?? values['default-runtime'] ?? 'runc',
      ...(values.bip !== undefined ? { bip: values.bip } : {}),
      ...(pools.length > 0 ? { defaultAddressPools: pools } : {}),
      ...(values['bridge-name'] !== undefined ? { defaultBridge: values['bridge-name'] } : {}),
      ...(values['network-prefix'] !== undefined ? { networkPrefix: values['network-prefix'] } : {}),
      ...(values.iptables !== undefined ? { iptables: values.iptables !== 'false' } : {}),
      ...(values.icc !== undefined ? { icc: values.icc !== 'false' } : {}),
      ...(values['userland-proxy'] !== undefined ? { userlandProxy: values['userland-proxy'] !== 'false' } : {}),
      ...(values['init-path'] !== undefined ? { initPath: values['init-path'] } : {}),
      ...(tls !== undefined ? { tls } : {}),
      ...(values['allow-insecure-tcp'] === true ? { allowInsecureTcp: true } : {})
    })
  } catch (err) {
    out(`berth: failed to start daemon: ${(err as Error).message}`)
    return 1
  }
  if (pidfile !== undefined) await writeFile(pidfile, `${process.pid}\n`)
  if (level !== 'error' && level !== 'fatal') {
    const { formatAddress } = await import('../http/listen.js')
    for (const a of engine.addresses) out(`berth: API listening on ${formatAddress(a)}`)
  }
  await new Promise<void>((resolve) => {
    const stop = (sig: string): void => {
      if (level !== 'error' && level !== 'fatal') out(`berth: ${sig} received, shutting down (containers keep running)`)
      resolve()
    }
    process.once('SIGTERM', () => { stop('SIGTERM') })
    process.once('SIGINT', () => { stop('SIGINT') })
  })
  await engine.close()
  // only our own: never a file another daemon wrote meanwhile
  if (pidfile !== undefined && (await readFile(pidfile, 'utf8').catch(() => '')).trim() === String(process.pid)) await rm(pidfile, { force: true })
  return 0
}

/** The pid a pidfile names when that process is alive (and is not us), else null. */
async function pidInFile (path: string): Promise<number | null> {
  const pid = Number.parseInt((await readFile(path, 'utf8').catch(() => '')).trim(), 10)
  if (!Number.isInteger(pid) || pid <= 0 || pid === process.pid) return null
  try { process.kill(pid, 0); return pid } catch (err) { return (err as NodeJS.ErrnoException).code === 'EPERM' ? pid : null }
}

/**
 * `berth port-proxy PROTO HOST_IP HOST_PORT CONTAINER_IP CONTAINER_PORT [OWNER]`: a published port's forwarder
 * (dockerd's docker-proxy), started by the daemon, detached from it; OWNER (the engine's network prefix) only names the
 * engine on the command line. Writes "ready" once listening; exits on SIGTERM.
 */
async function portProxy (argv: string[]): Promise<number> {
  const [proto, hostIp = '', hostPort = '', containerIp = '', containerPort = ''] = argv
  if ((proto !== 'tcp' && proto !== 'udp') || !/^\d+$/.test(hostPort) || !/^\d+$/.test(containerPort)) {
    out('usage: berth port-proxy tcp|udp HOST_IP HOST_PORT CONTAINER_IP CONTAINER_PORT [OWNER]')
    return 2
  }
  const { startProxy } = await import('../network/proxy.js')
  let proxy
  try {
    proxy = await startProxy({ proto, hostIp, hostPort: Number(hostPort), containerIp, containerPort: Number(containerPort) })
  } catch (err) {
    process.stdout.write(`error ${(err as Error).message}\n`)
    return 1
  }
  process.stdout.write('ready\n')
  await new Promise<void>((resolve) => { process.once('SIGTERM', () => { resolve() }); process.once('SIGINT', () => { resolve() }) })
  proxy.close()
  return 0
}

async function main (): Promise<number> {
  const [cmd, ...rest] = process.argv.slice(2)
  switch (cmd) {
    case 'daemon': return await daemon(rest)
    case 'registry': return await (await import('../registry/cli.js')).registryCommand(rest)
    case 'port-proxy': return await portProxy(rest)
    case undefined: case '-h': case '--help': case 'help': process.stdout.write(USAGE); return cmd === undefined ? 1 : 0
    default: out(`berth: unknown command ${cmd}\n\n${USAGE}`); return 1
  }
}

main().then((code) => { process.exitCode = code }, (err: Error) => {
  out(`berth: ${err.message}`)
  process.exitCode = 1
})
