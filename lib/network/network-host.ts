// What every part of the network service shares: the options, the on-disk paths, this engine's names on the host
// (chain prefix, link prefix, bridge mark), the host's resolver configuration, and the Linux tools found at boot
// (none without ip/nsenter or without root: containers then get loopback only).
import { access, readFile } from 'node:fs/promises'
import { findTools, type Tools } from './commands.js'
import { Links } from './links.js'
import { Firewall } from './firewall.js'
import { networkPaths, type NetworkPaths } from './paths.js'
import { bridgeMarkOf, enginePrefix } from './purge.js'
import type { ContainerMonitors } from './container-resolvers.js'

export interface NetworkEvents { emit (type: 'network', action: string, id: string, attrs: Record<string, string>, scope?: 'swarm'): void }

/** What the network service needs to know of containers. */
export interface ContainerLookup {
  /** Full ID, name and PID of a container by reference, or undefined. */
  find (ref: string): { id: string, name: string, pid: number, running: boolean } | undefined
}

export interface NetworkOptions {
  dataRoot: string
  execRoot: string
  events: NetworkEvents
  containers: ContainerLookup
  /** The running containers' monitors, where their embedded DNS resolvers live; absent: no resolvers are served. */
  monitors?: ContainerMonitors
  /** The default bridge's Linux name (default berth0). */
  defaultBridge?: string
  /** --bip: the default bridge's gateway address and prefix, e.g. 10.88.0.1/16. */
  bip?: string
  /** --default-address-pool: base/size pairs for networks created without a subnet. */
  defaultAddressPools?: Array<{ base: string, size: number }>
  /** Prefix of this engine's iptables chains and of its bridges' and veths' names (≤ 6 characters). */
  prefix?: string
  /** --iptables=false: leave the firewall alone (no DNAT, no MASQUERADE). */
  iptables?: boolean
  /** --icc=false on the default bridge. */
  icc?: boolean
  /**
   * --userland-proxy (default true): each container's monitor holds its published host ports and serves them
   * (dockerd's docker-proxy, without a process per port), DNAT rules besides with iptables; false: DNAT only.
   * Without iptables the monitors always serve.
   */
  userlandProxy?: boolean
  /** The host's resolver configuration (default /etc/resolv.conf): containers' servers and their resolvers' upstreams. */
  resolvConf?: string
  /**
   * Whether this node is in a swarm. The `overlay` driver is accepted only then; on a single node an overlay network is
   * served as a bridge network (driver reported as overlay). For the swarm subsystem to pass in.
   */
  swarmActive?: () => boolean
  /** What the swarm knows of a swarm-scoped network's users (its removal follows swarmkit's rules). */
  swarmNetworkUse?: SwarmNetworkUse
}

export interface SwarmNetworkUse {
  /** Why a swarm-scoped network cannot go (a service names it, or needs the ingress network), undefined when it can. */
  blocksRemoval (n: { id: string, ingress: boolean }): string | undefined
  /** Where overlay networks created without a subnet take theirs (init's DefaultAddrPool and SubnetSize). */
  pools (): ReadonlyArray<{ base: string, size: number }> | undefined
  /** Whether a container is a task container whose service was removed (it is shutting down). */
  leaving (containerId: string): boolean
}

export class NetworkHost {
  readonly o: NetworkOptions
  readonly paths: NetworkPaths
  /** Prefix of the iptables chains (and, lower-cased, of the links) this engine owns. */
  readonly prefix: string
  tools: Tools | null = null
  links: Links | null = null
  firewall: Firewall | null = null
  /** The host's /etc/resolv.conf as read at boot. */
  hostResolv = ''
  /** Why the Linux plumbing is unavailable ('' when it is). */
  unavailable = ''
  /** The host has IPv6 (a published port bound on every address is bound on [::] too, as dockerd's). */
  ipv6 = false

  constructor (o: NetworkOptions) {
    this.o = o
    this.paths = networkPaths(o.dataRoot, o.execRoot)
    this.prefix = enginePrefix(o.prefix)
  }

  get linkPrefix (): string { return this.prefix.toLowerCase() }

  /** Whether the containers' monitors hold and serve published ports: without iptables, or unless --userland-proxy=false. */
  get monitorsServe (): boolean { return this.firewall === null || this.o.userlandProxy !== false }

  /** The alias of the bridges this engine creates: `berth:<prefix>:<network id12>` (any name, from the options too). */
  get bridgeMark (): string { return bridgeMarkOf(this.prefix) }

  /** Finds the tools (and whether root may use them) and reads the host's resolver configuration. */
  async detect (): Promise<void> {
    this.hostResolv = await readFile(this.o.resolvConf ?? '/etc/resolv.conf', 'utf8').catch(() => '')
    this.ipv6 = await access('/proc/net/if_inet6').then(() => true, () => false)
    const tools = await findTools()
    if (typeof tools === 'string') this.unavailable = `${tools} is not installed`
    else if (process.getuid?.() !== 0) this.unavailable = 'networking needs root'
    else {
      this.tools = tools
      this.links = new Links(tools)
      if (tools.iptables !== null && this.o.iptables !== false) {
        this.firewall = new Firewall(tools.iptables, this.prefix, { loopbackDnat: this.o.userlandProxy === false })
      }
    }
  }
}
