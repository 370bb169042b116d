// `berth daemon`'s flags: dockerd's names (and daemon.json keys) where dockerd has the flag, Berth's own otherwise.
// The parser, --help and the config file (daemon-config.ts) all read this table.
import { DEFAULT_DATA_ROOT, DEFAULT_SOCKET } from '../engine/defaults.js'
import { flagHelp, type FlagSpec } from './flags.js'

export const DEFAULT_CONFIG_FILE = '/etc/berth/daemon.json'

export const DAEMON_FLAGS: readonly FlagSpec[] = [
  { name: 'host', short: 'H', kind: 'list', key: 'hosts', help: 'Daemon socket(s) to listen on: unix:///path, tcp://host:port, fd:// (systemd socket activation; fd://N or fd://NAME for one)', default: `unix://${DEFAULT_SOCKET}` },
  { name: 'group', short: 'G', kind: 'string', help: 'Group of the Unix socket(s); an empty string keeps root\'s group', default: 'docker, when that group exists' },
  { name: 'config-file', kind: 'string', flagOnly: true, help: 'Daemon configuration file (dockerd\'s daemon.json keys)', default: DEFAULT_CONFIG_FILE },
  { name: 'validate', kind: 'bool', flagOnly: true, help: 'Check the flags and the configuration file, then exit' },
  { name: 'purge-network', kind: 'bool', flagOnly: true, help: 'Remove what a stopped daemon with these settings left on the host\'s networking (bridges, veths, namespaces, iptables chains, port forwarders), then exit: for uninstalls' },
  { name: 'data-root', kind: 'string', help: 'Root directory of persistent state', default: DEFAULT_DATA_ROOT },
  { name: 'exec-root', kind: 'string', help: 'Root directory for execution state (keep it short: socket paths are limited to 107 bytes)', default: '<data-root>/run' },
  { name: 'pidfile', short: 'p', kind: 'string', help: 'Path to use for the daemon PID file' },
  { name: 'runtime', kind: 'string', help: 'The default OCI runtime: a configured runtime\'s name, or a binary (a name in PATH: runc, crun; or a path)', default: 'runc' },
  { name: 'default-runtime', kind: 'string', help: 'The runtime containers get when they name none: runc or a configured runtime (dockerd\'s; the same setting as --runtime)' },
  { name: 'add-runtime', kind: 'list', value: 'name=path', key: 'runtimes', help: 'Register an OCI runtime containers name with docker run --runtime (daemon.json: "runtimes": {"name": {"path": "…", "runtimeArgs": […]}})' },
  { name: 'registry-mirror', kind: 'list', value: 'url', key: 'registry-mirrors', help: 'Registry mirror for Docker Hub images (http:// or https:// URL; tried in order, then Docker Hub)' },
  { name: 'insecure-registry', kind: 'list', key: 'insecure-registries', help: 'Registries (host[:port] or CIDR) reachable over plain HTTP (loopback always is)' },
  { name: 'log-level', short: 'l', kind: 'string', help: 'debug|info|warn|error|fatal', default: 'info' },
  { name: 'debug', short: 'D', kind: 'bool', help: 'Same as --log-level debug' },
  { name: 'log-format', kind: 'string', help: 'text|json: the daemon log\'s format (json: one object per line)', default: 'text' },
  { name: 'log-driver', kind: 'string', help: 'Containers\' default log driver: json-file|local|none', default: 'json-file' },
  { name: 'log-opt', kind: 'list', value: 'key=value', key: 'log-opts', help: 'Options of the default log driver (max-size, max-file, …)' },
  { name: 'default-ulimit', kind: 'list', value: 'name=soft[:hard]', key: 'default-ulimits', help: 'Ulimits containers get unless they set their own' },
  { name: 'bip', kind: 'string', value: 'CIDR', help: 'The default bridge\'s gateway address and prefix (e.g. 10.88.0.1/16)' },
  { name: 'default-address-pool', kind: 'list', value: 'base=CIDR,size=N', key: 'default-address-pools', help: 'Pools for networks created without a subnet (repeatable)' },
  { name: 'bridge-name', kind: 'string', help: 'The default bridge network\'s Linux bridge', default: 'berth0' },
  { name: 'network-prefix', kind: 'string', help: 'Prefix of this daemon\'s iptables chains, bridges and veths (≤ 6 characters)', default: 'BERTH' },
  { name: 'iptables', kind: 'bool', help: 'Manage iptables rules (--iptables=false leaves the firewall alone)', default: 'true' },
  { name: 'icc', kind: 'bool', help: 'Traffic between containers on the default bridge', default: 'true' },
  { name: 'userland-proxy', kind: 'bool', help: 'A forwarder process holds each published port besides the DNAT rule (false: DNAT only; without iptables forwarders always)', default: 'true' },
  { name: 'init-path', kind: 'string', help: 'The init binary of docker run --init', default: 'docker-init or tini-static in PATH, else tini' },
  { name: 'tls', kind: 'bool', help: 'Use TLS on TCP listeners; implied by --tlsverify' },
  { name: 'tlsverify', kind: 'bool', help: 'Use TLS and require client certificates signed by --tlscacert' },
  { name: 'tlscacert', kind: 'string', help: 'Trust certs signed only by this CA', default: '$DOCKER_CERT_PATH or ~/.docker, ca.pem' },
  { name: 'tlscert', kind: 'string', help: 'Path to TLS certificate file', default: '$DOCKER_CERT_PATH or ~/.docker, cert.pem' },
  { name: 'tlskey', kind: 'string', help: 'Path to TLS key file', default: '$DOCKER_CERT_PATH or ~/.docker, key.pem' },
  { name: 'allow-insecure-tcp', kind: 'bool', help: 'Listen on a non-loopback TCP address without TLS (refused otherwise: it is root access for anyone who can reach it)' },
  { name: 'help', short: 'h', kind: 'bool', flagOnly: true, help: 'Print usage' }
]

export function daemonUsage (): string {
  return `Usage: berth daemon [OPTIONS]

Run the container engine (Docker Engine API). SIGHUP reloads the configuration file's log-level, debug,
registry-mirrors, insecure-registries, runtimes and default-runtime; SIGTERM and SIGINT stop the daemon
(containers keep running).

Options:
${flagHelp(DAEMON_FLAGS)}`
}
