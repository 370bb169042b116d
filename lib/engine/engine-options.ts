// What an embedder (or the berth daemon command) configures an Engine with.
import type { ConnectionLimits } from '../http/limits.js'

export interface EngineOptions {
  /** Connection caps and request timeouts of the API listeners (lib/http/limits.ts has the defaults). */
  connectionLimits?: ConnectionLimits
  /** Where images, containers and volumes live (default /var/lib/berth). */
  dataRoot?: string
  /** Runtime state: shim sockets, runc state (default <dataRoot>/run). Keep it short: Unix socket paths are limited. */
  execRoot?: string
  /**
   * -H values: unix:///path, tcp://host:port, or fd:// (every socket in `listenFds`), fd://N or fd://NAME (one of
   * them) (default unix:///var/run/berth.sock).
   */
  hosts?: string[]
  /** Listening sockets the service manager passed (systemd's LISTEN_FDS, LISTEN_FDNAMES), for fd:// hosts. */
  listenFds?: ReadonlyArray<{ fd: number, name: string }>
  /** Called once at start when the listeners are up and /_ping answers, before the boot (synchronous; not awaited). */
  onListening?: () => void
  /** Group (gid) of the Unix sockets the engine creates (mode 0660); default: the daemon's own group. */
  socketGroup?: number
  /**
   * The default OCI runtime's binary: a name in PATH or a path (default runc); checked at start (it must run). With
   * `runtimeName` naming one of `runtimes`, that runtime's path.
   */
  runtime?: string
  /** The default runtime's name: what containers that name none get (default: the runtime's file name). */
  runtimeName?: string
  /**
   * More runtimes containers may name (HostConfig.Runtime, docker run --runtime), as daemon.json's "runtimes": a
   * binary and the options it gets before each command. `runc` (the stock runtime) is reserved.
   */
  runtimes?: Record<string, { path: string, runtimeArgs?: string[] }>
  /** The container monitor binary (default: the one built next to this package, else its prebuilt one). */
  shimPath?: string
  /** --insecure-registry: registries (host, host:port or CIDR) reached over plain HTTP; loopback ones always are. */
  insecureRegistries?: string[]
  /** --registry-mirror: http(s)://host[:port] tried in order for Docker Hub images before Docker Hub. */
  registryMirrors?: string[]
  /** Containers' log driver and options when their create names none (daemon.json's log-driver, log-opts). */
  defaultLogConfig?: { type: string, config: Record<string, string> }
  /** Ulimits containers get unless they set their own (daemon.json's default-ulimits). */
  defaultUlimits?: Array<{ name: string, soft: number, hard: number }>
  /** The default bridge network's Linux bridge (default berth0; never docker0). */
  defaultBridge?: string
  /** --bip: the default bridge's gateway address and prefix, e.g. 10.88.0.1/16. */
  bip?: string
  /** --default-address-pool: base/size pairs for networks created without a subnet. */
  defaultAddressPools?: Array<{ base: string, size: number }>
  /** Prefix of this engine's iptables chains, bridges and veths (≤ 6 characters; default BERTH). */
  networkPrefix?: string
  /** --iptables=false: leave the firewall alone. */
  iptables?: boolean
  /** --icc=false: no traffic between containers on the default bridge. */
  icc?: boolean
  /** --userland-proxy (default true): a forwarder holds each published port besides DNAT; false: DNAT only. */
  userlandProxy?: boolean
  /** --init-path: the init binary `docker run --init` runs (default: docker-init, else tini-static, found in PATH). */
  initPath?: string
  /** The host's resolver configuration containers' DNS derives from (default /etc/resolv.conf). */
  resolvConf?: string
  /** Limit on a build context (uncompressed tar bytes; default 8 GiB). */
  buildContextLimit?: number
  /**
   * TLS for the TCP listeners (PEM file paths): --tlscert/--tlskey, --tlscacert; `verify` (--tlsverify, the
   * default when a CA is given) requires client certificates signed by that CA.
   */
  tls?: { cert: string, key: string, ca?: string, verify?: boolean }
  /** Listen on a non-loopback TCP address without TLS (refused otherwise). */
  allowInsecureTcp?: boolean
}
