// Networks and container sandboxes: the network API's operations, IPAM, the Linux plumbing of a container's
// namespace, published ports, and the recovery of all of it after a restart. Never imports lib/engine: the engine
// passes narrow callbacks in (events, container lookup).
import { mkdir, readdir, readFile, rm } from 'node:fs/promises'
import { randomBytes, randomInt } from 'node:crypto'
import { conflict, forbidden, invalidArgument, notFound, errorMessage } from '../errors.js'
import { writeJsonAtomic, writeFileAtomic } from '../util/atomic.js'
import { newId, resolvePrefix, FULL_ID } from '../util/ids.js'
import { logger } from '../log.js'
import { findTools, run, type Tools } from './commands.js'
import { Links } from './links.js'
import { Firewall, enableRouteLocalnet, enableBridgeNetfilter, type Rule } from './firewall.js'
import { AddressPool, completePool, pickSubnet, DEFAULT_POOLS, type PoolConfig } from './ipam.js'
import { overlaps, parseIp, parsePrefix, requirePrefix, type Prefix } from './cidr.js'
import { networkPaths, networkFile, sandboxFile, netnsFile, type NetworkPaths } from './paths.js'
import { hostsFile, hostsEntries, resolvConf, hostNameservers } from './etc-files.js'
import { DnsServer } from './dns-server.js'
import { newSandbox, newAttachment, checkStaticIp, type SandboxRequest } from './sandbox-config.js'
import { newNetworkRecord, subnetFromPools, unsupportedOptions, type CreateNetworkRequest } from './network-create.js'
import { portFree, freePort, wantedPorts, startForwarder, stopForwarder, forwarderAlive, bindError, type WantedPort } from './host-ports.js'
import { bridgeMarkOf, enginePrefix, removeHostState } from './purge.js'
import { toContainerNetworkView, type ContainerNetworkView } from './network-wire.js'
import type { Attachment, Driver, NetworkRecord, PortMapping, SandboxRecord } from './model.js'

const log = logger('engine:network')

/** How many times a network created from the default pools picks again after clashing with a racing engine. */
const CLASH_RETRIES = 8

/** The host's IPv4 interface addresses (`ip -4 -o addr show`), each as its interface's name and prefix. */
async function hostAddresses (ip: string): Promise<Array<{ name: string, prefix: Prefix }>> {
  const out: Array<{ name: string, prefix: Prefix }> = []
  for (const line of (await run(ip, ['-4', '-o', 'addr', 'show'])).stdout.split('\n')) {
    const m = /^\d+:\s+(\S+)\s+inet\s+(\S+)/.exec(line)
    const p = m?.[2] !== undefined ? parsePrefix(m[2]) : null
    if (m?.[1] !== undefined && p !== null && p.bits > 0 && !m[2]?.startsWith('127.')) out.push({ name: m[1], prefix: p })
  }
  return out
}

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
   * --userland-proxy (default true): with iptables, a `berth port-proxy` forwarder per published port besides the
   * DNAT rule, holding the host port (dockerd's docker-proxy); false: DNAT only. Without iptables forwarders always.
   */
  userlandProxy?: boolean
  /** The host's resolver configuration (default /etc/resolv.conf): containers' servers and the DNS forwarders. */
  resolvConf?: string
  /**
   * Whether this node is in a swarm. The `overlay` driver is accepted only then; on a single node an overlay network is
   * served as a bridge network (driver reported as overlay). For the swarm subsystem to pass in.
   */
  swarmActive?: () => boolean
}

export interface EtcInput {
  hostname: string
  domainname: string
  extraHosts: string[]
  dns: string[]
  dnsSearch: string[]
  dnsOptions: string[]
}

/**
 * A started container's networking: its namespace (a path to join; null: the host's; undefined: a new one with
 * loopback only) and its /etc files.
 */
export interface SandboxSetup { netnsPath: string | null | undefined, hosts: string, resolvConf: string }


export type { CreateNetworkRequest }

export interface EndpointRequest {
  aliases: string[]
  ipv4: string
  links: string[]
  /** Endpoint settings given but not supported (MacAddress, IPv6…): reported as warnings. */
  ignored?: string[]
}

const BRIDGE_NAME_OPTION = 'com.docker.network.bridge.name'
const MASQUERADE_OPTION = 'com.docker.network.bridge.enable_ip_masquerade'
const MTU_OPTION = 'com.docker.network.driver.mtu'

function mac (ip: string): string {
  const n = parseIp(ip) ?? 0
  return ['02', '42', ...[24, 16, 8, 0].map((s) => ((n >>> s) & 255).toString(16).padStart(2, '0'))].join(':')
}

export class NetworkService {
  private readonly o: NetworkOptions
  readonly paths: NetworkPaths
  private readonly networks = new Map<string, NetworkRecord>()
  private readonly sandboxes = new Map<string, SandboxRecord>()
  private readonly pools = new Map<string, AddressPool[]>()
  private readonly dns = new Map<string, DnsServer>()
  private tools: Tools | null = null
  private links: Links | null = null
  private firewall: Firewall | null = null
  readonly prefix: string
  private queue: Promise<unknown> = Promise.resolve()
  private hostResolv = ''
  private readonly pendingDeletes = new Set<Promise<void>>()
  /** Chains created and bridges up (ensureHost). */
  private hostUp = false
  /** Counts changes of endpoints and ports (list caches compare it). */
  seq = 0
  /** Why the Linux plumbing is unavailable ('' when it is). */
  unavailable = ''

  constructor (o: NetworkOptions) {
    this.o = o
    this.paths = networkPaths(o.dataRoot, o.execRoot)
    this.prefix = enginePrefix(o.prefix)
  }

  private get linkPrefix (): string { return this.prefix.toLowerCase() }

  /** The alias of the bridges this engine creates: `berth:<prefix>:<network id12>` (any name, from the options too). */
  private get bridgeMark (): string { return bridgeMarkOf(this.prefix) }

  /** Serializes state changes (records, pools, links). */
  private async locked<T> (fn: () => Promise<T>): Promise<T> {
    const p = this.queue.then(fn, fn)
    this.queue = p.catch(() => {})
    return await p
  }

  // ---- boot -----------------------------------------------------------------------------------------------------

  async init (): Promise<void> {
    await mkdir(this.paths.networks, { recursive: true })
    await mkdir(this.paths.sandboxes, { recursive: true })
    await mkdir(this.paths.netns, { recursive: true, mode: 0o700 })
    this.hostResolv = await readFile(this.o.resolvConf ?? '/etc/resolv.conf', 'utf8').catch(() => '')
    const tools = await findTools()
    if (typeof tools === 'string') this.unavailable = `${tools} is not installed`
    else if (process.getuid?.() !== 0) this.unavailable = 'networking needs root'
    else {
      this.tools = tools
      this.links = new Links(tools)
      if (tools.iptables !== null && this.o.iptables !== false) this.firewall = new Firewall(tools.iptables, this.prefix)
    }
    for (const f of await readdir(this.paths.networks)) {
      if (!f.endsWith('.json')) continue
      try {
        const rec = JSON.parse(await readFile(`${this.paths.networks}/${f}`, 'utf8')) as NetworkRecord
        this.networks.set(rec.id, rec)
      } catch (err) { log('network record %s: %s', f, errorMessage(err)) }
    }
    for (const f of await readdir(this.paths.sandboxes)) {
      if (!f.endsWith('.json')) continue
      try {
        const rec = JSON.parse(await readFile(`${this.paths.sandboxes}/${f}`, 'utf8')) as SandboxRecord
        this.sandboxes.set(rec.id, rec)
      } catch (err) { log('sandbox record %s: %s', f, errorMessage(err)) }
    }
    await this.ensurePredefined()
    for (const n of this.networks.values()) this.pools.set(n.id, n.pools.map((p) => new AddressPool(p)))
    for (const sb of this.sandboxes.values()) {
      for (const a of sb.attachments) {
        if (a.ip === '') continue
        try { this.poolFor(a.networkId, a.ip)?.claim(a.ip) } catch (err) { log('address %s of %s: %s', a.ip, sb.id, errorMessage(err)) }
      }
    }
    if (this.links !== null) await this.reconcile()
  }

  /** Brings the host in line with the records: bridges, rules, and nothing left that no record owns. */
  private async reconcile (): Promise<void> {
    const links = this.links as Links
    // an engine with nothing but the predefined networks and no running container sets the host up on first use
    const busy = [...this.sandboxes.values()].some((sb) => sb.running) || [...this.networks.values()].some((n) => !n.predefined)
    if (busy) await this.ensureHost()
    // no container and no network of ours: the chains (if a previous daemon made them) are emptied now, not at first use
    else if (this.firewall !== null && await this.firewall.exists()) await this.firewall.setup()
    const bridges = new Set<string>()
    for (const n of this.networks.values()) if (n.bridge !== '') bridges.add(n.bridge)
    const veths = new Set<string>()
    const namespaces = new Set<string>()
    for (const sb of this.sandboxes.values()) {
      if (!sb.running) continue
      const alive = sb.netns !== '' && await this.netnsAlive(sb.netns)
      if (!alive) { await this.releaseLocked(sb); continue }
      namespaces.add(sb.netns)
      for (const a of sb.attachments) if (a.hostIf !== '') veths.add(a.hostIf)
      if (this.firewall !== null) await this.firewall.add(this.portRulesOf(sb))
      if (this.proxied) await this.reviveForwarders(sb)
    }
    // ours: veths and default-named bridges by their prefix, bridges named by the options by their mark; never others'
    for (const l of await links.linksMarked(this.linkPrefix, this.bridgeMark)) {
      if (!bridges.has(l) && !veths.has(l)) { log('removing stray link %s', l); await links.deleteLink(l) }
    }
    for (const f of await links.netnsFiles(this.paths.netns)) {
      if (!namespaces.has(f)) { log('removing stray namespace %s', f); await links.removeNetns(f) }
    }
  }

  /** Creates the chains and brings every bridge up (once per daemon, on first need). */
  private async ensureHost (): Promise<void> {
    if (this.hostUp || this.links === null) return
    if (this.firewall !== null) await this.firewall.setup()
    for (const n of this.networks.values()) if (n.driver === 'bridge' || n.driver === 'overlay') await this.bringUp(n)
    this.hostUp = true
    for (const n of this.networks.values()) this.refreshDns(n)
  }

  private async netnsAlive (path: string): Promise<boolean> {
    const mi = await readFile('/proc/self/mountinfo', 'utf8').catch(() => '')
    return mi.includes(` ${path} `)
  }

  private async ensurePredefined (): Promise<void> {
    const want: Array<{ name: string, driver: Driver }> = [{ name: 'bridge', driver: 'bridge' }, { name: 'host', driver: 'host' }, { name: 'none', driver: 'null' }]
    for (const w of want) {
      let rec = [...this.networks.values()].find((n) => n.predefined && n.name === w.name)
      if (rec === undefined) {
        rec = {
          id: newId(),
          name: w.name,
          driver: w.driver,
          created: new Date().toISOString(),
          internal: false,
          attachable: false,
          predefined: true,
          options: {},
          labels: {},
          ipamDriver: 'default',
          ipamOptions: {},
          pools: [],
          bridge: '',
          icc: true
        }
      }
      if (w.driver === 'bridge') {
        const bridge = this.o.defaultBridge ?? 'berth0'
        rec.bridge = bridge
        rec.icc = this.o.icc !== false
        rec.options = {
          'com.docker.network.bridge.default_bridge': 'true',
          'com.docker.network.bridge.enable_icc': String(rec.icc),
          'com.docker.network.bridge.enable_ip_masquerade': 'true',
          'com.docker.network.bridge.host_binding_ipv4': '0.0.0.0',
          [BRIDGE_NAME_OPTION]: bridge,
          'com.docker.network.driver.mtu': '1500'
        }
        if (this.o.bip !== undefined && this.o.bip !== '') {
          const gw = this.o.bip.split('/')[0] as string
          const p = parsePrefix(this.o.bip)
          if (p === null || parseIp(gw) === null) throw invalidArgument(`invalid --bip: ${this.o.bip}`)
          rec.pools = [completePool({ gateway: gw }, p)]
        } else if (rec.pools.length === 0) {
          rec.pools = await this.existingBridgePool(bridge)
        }
        if (rec.pools.length === 0) {
          const p = pickSubnet(this.o.defaultAddressPools ?? DEFAULT_POOLS, await this.usedSubnets(rec.id))
          if (p === null) throw conflict('could not find an available, non-overlapping IPv4 address pool among the defaults to assign to the network')
          rec.pools = [completePool({}, p)]
        }
      }
      this.networks.set(rec.id, rec)
      await writeJsonAtomic(networkFile(this.paths, rec.id), rec)
    }
  }

  /**
   * The pool of a default bridge that already exists on the host with an IPv4 address (no --bip): dockerd takes that
   * address for the default network's gateway and subnet instead of adding one more. None when there is no such bridge.
   */
  private async existingBridgePool (bridge: string): Promise<PoolConfig[]> {
    if (this.links === null || !await this.links.bridgeExists(bridge)) return []
    for (const cidr of await this.links.bridgeAddresses(bridge)) {
      const p = parsePrefix(cidr)
      if (p === null || p.bits === 0 || p.bits > 30) continue
      log('default bridge %s exists with %s: its address is the default network\'s', bridge, cidr)
      return [completePool({ gateway: cidr.split('/')[0] as string }, p)]
    }
    return []
  }

  /** Subnets in use: other networks' and the host's own routes (other engines' bridges, the LAN). */
  private async usedSubnets (except: string): Promise<Prefix[]> {
    const out: Prefix[] = []
    for (const n of this.networks.values()) if (n.id !== except) for (const p of n.pools) out.push(requirePrefix(p.subnet))
    if (this.tools !== null) {
      const r = await run(this.tools.ip, ['-4', 'route', 'show', 'table', 'all'])
      for (const line of r.stdout.split('\n')) {
        const dst = line.split(' ')[0] ?? ''
        const p = parsePrefix(dst.includes('/') ? dst : `${dst}/32`)
        if (p !== null && dst !== 'default' && p.bits > 0 && !line.includes('table local')) out.push(p)
      }
      // a bridge that is down has no route yet, but its address is taken
      for (const a of await hostAddresses(this.tools.ip)) out.push(a.prefix)
    }
    return out
  }

  // ---- networks -------------------------------------------------------------------------------------------------

  all (): NetworkRecord[] { return [...this.networks.values()] }

  find (ref: string): NetworkRecord | undefined {
    if (FULL_ID.test(ref)) { const n = this.networks.get(ref); if (n !== undefined) return n }
    for (const n of this.networks.values()) if (n.name === ref) return n
    const id = resolvePrefix(this.networks.keys(), ref)
    return id === undefined ? undefined : this.networks.get(id)
  }

  get (ref: string): NetworkRecord {
    const n = ref === '' ? undefined : this.find(ref)
    if (n === undefined) throw notFound(`network ${ref} not found`)
    return n
  }

  /** Containers with an endpoint on the network (running or not), with their endpoint. */
  endpointsOf (networkId: string): Array<{ sb: SandboxRecord, a: Attachment }> {
    const out: Array<{ sb: SandboxRecord, a: Attachment }> = []
    for (const sb of this.sandboxes.values()) for (const a of sb.attachments) if (a.networkId === networkId) out.push({ sb, a })
    return out
  }

  /**
   * Endpoints of running containers (dockerd's active endpoints): a stopped container does not keep its network from
   * being removed; starting it then fails with `network … not found`.
   */
  activeEndpoints (networkId: string): number {
    return this.endpointsOf(networkId).filter(({ a }) => a.ip !== '').length
  }

  /** A renamed container answers to its new name. */
  async rename (id: string, name: string): Promise<void> {
    await this.locked(async () => {
      const sb = this.sandboxes.get(id)
      if (sb === undefined) return
      sb.name = name
      await this.saveSandbox(sb)
      for (const a of sb.attachments) this.refreshDnsOf(a.networkId)
    })
  }

  async create (req: CreateNetworkRequest): Promise<{ id: string, warning: string }> {
    return await this.locked(async () => {
      const clashed: Prefix[] = []
      for (let attempt = 0; ; attempt++) {
        const rec = newNetworkRecord(req, {
          existing: [...this.networks.values()],
          used: [...await this.usedSubnets(''), ...clashed],
          pools: this.o.defaultAddressPools ?? DEFAULT_POOLS,
          linkPrefix: this.linkPrefix,
          swarmActive: this.o.swarmActive?.() === true,
          // after a clash, not the first free subnet: the engine it raced with is choosing again too
          skip: attempt === 0 ? 0 : randomInt(4)
        })
        const id = rec.id
        const pools = rec.pools
        await writeJsonAtomic(networkFile(this.paths, id), rec)
        this.networks.set(id, rec)
        this.pools.set(id, pools.map((p) => new AddressPool(p)))
        try {
          if (this.links !== null) {
            if (this.hostUp) await this.bringUp(rec)
            else await this.ensureHost()
          }
        } catch (err) {
          await this.removeLocked(rec)
          throw err
        }
        const clash = subnetFromPools(req) && attempt < CLASH_RETRIES ? await this.hostClash(rec) : null
        if (clash !== null) {
          log('network %s: subnet %s clashes with %s on the host (another engine picked it at the same time); picking again', req.name, rec.pools[0]?.subnet, clash.name)
          await this.removeLocked(rec)
          clashed.push(clash.prefix)
          continue
        }
        this.refreshDns(rec)
        this.emitLifecycle(rec, 'create')
        return { id, warning: unsupportedOptions(rec) }
      }
    })
  }

  /**
   * Another host interface holding an address in the subnet of a network whose bridge just got its address. Two
   * engines can pick the same free subnet before either bridge has it; the one that looks after both addresses are in
   * place sees the clash and moves on, and the later one to add its address always looks after the earlier one's is
   * there, so two engines never both keep a subnet.
   */
  private async hostClash (n: NetworkRecord): Promise<{ name: string, prefix: Prefix } | null> {
    const subnet = n.pools[0]?.subnet
    if (this.tools === null || this.links === null || subnet === undefined) return null
    const own = requirePrefix(subnet)
    for (const a of await hostAddresses(this.tools.ip)) {
      if (a.name !== n.bridge && overlaps(a.prefix, own)) return a
    }
    return null
  }

  private bridgeRules (n: NetworkRecord): Rule[] {
    if (this.firewall === null) return []
    return this.firewall.bridgeRules({ bridge: n.bridge, subnet: n.pools[0]?.subnet ?? '', internal: n.internal, icc: n.icc, masquerade: n.options[MASQUERADE_OPTION] !== 'false' })
  }

  private async bringUp (n: NetworkRecord): Promise<void> {
    const links = this.links as Links
    const pool = n.pools[0]
    if (pool === undefined) return
    await links.ensureBridge(n.bridge, `${pool.gateway}/${pool.subnet.split('/')[1] as string}`, mtuOf(n), `${this.bridgeMark}${n.id.slice(0, 12)}`)
    await enableRouteLocalnet(n.bridge)
    if (this.firewall !== null) {
      if (!n.icc) await enableBridgeNetfilter()
      await this.firewall.add(this.bridgeRules(n))
    }
  }

  async remove (ref: string): Promise<void> {
    await this.locked(async () => {
      const n = this.get(ref)
      if (n.predefined) throw forbidden(`${n.name} is a pre-defined network and cannot be removed`)
      if (this.activeEndpoints(n.id) > 0) throw forbidden(`error while removing network: network ${n.name} id ${n.id} has active endpoints`)
      await this.removeLocked(n)
      this.emitLifecycle(n, 'remove')
    })
  }

  private async removeLocked (n: NetworkRecord): Promise<void> {
    await this.settled()
    this.dns.get(n.id)?.close()
    this.dns.delete(n.id)
    if (this.firewall !== null) await this.firewall.remove(this.bridgeRules(n))
    if (this.links !== null && n.bridge !== '') await this.links.deleteLink(n.bridge)
    await rm(networkFile(this.paths, n.id), { force: true })
    this.networks.delete(n.id)
    this.pools.delete(n.id)
  }

  async prune (keep: (n: NetworkRecord) => boolean): Promise<string[]> {
    const out: string[] = []
    for (const n of this.all()) {
      if (n.predefined || !keep(n) || this.activeEndpoints(n.id) > 0) continue
      try { await this.remove(n.id); out.push(n.name) } catch (err) { log('prune %s: %s', n.name, errorMessage(err)) }
    }
    return out
  }

  // ---- container sandboxes --------------------------------------------------------------------------------------

  sandbox (id: string): SandboxRecord | undefined { return this.sandboxes.get(id) }

  /**
   * Sandbox records change at every start and stop: written atomically, without the directory fsync (a power loss
   * may leave the previous record, which the boot reconciliation handles as a stopped container).
   */
  private async saveSandbox (sb: SandboxRecord): Promise<void> {
    this.seq++
    await writeFileAtomic(sandboxFile(this.paths, sb.id), JSON.stringify(sb), { syncDir: false })
  }

  /** A container's NetworkSettings parts (inspect, list). */
  view (id: string, exposed: string[]): ContainerNetworkView | undefined {
    const sb = this.sandboxes.get(id)
    if (sb === undefined) return undefined
    return toContainerNetworkView(sb, (nid) => this.networks.get(nid), exposed)
  }

  private poolFor (networkId: string, ip: string): AddressPool | undefined {
    const n = parseIp(ip)
    return n === null ? undefined : this.pools.get(networkId)?.find((p) => (((n ^ p.subnet.base) >>> (32 - p.subnet.bits)) === 0) || p.subnet.bits === 0)
  }

  /** Validates and records a new container's network mode and endpoints (create). */
  async register (o: SandboxRequest): Promise<string[]> {
    return await this.locked(async () => {
      const { sb, warnings } = newSandbox(o, (ref) => this.find(ref), (ref) => this.o.containers.find(ref) !== undefined)
      await this.saveSandbox(sb)
      this.sandboxes.set(o.id, sb)
      return warnings
    })
  }

  /** Forgets a removed container: releases what it held and deletes its record. */
  async unregister (id: string): Promise<void> {
    await this.locked(async () => {
      const sb = this.sandboxes.get(id)
      if (sb === undefined) return
      if (sb.running) await this.releaseLocked(sb)
      this.sandboxes.delete(id)
      await rm(sandboxFile(this.paths, id), { force: true })
      for (const a of sb.attachments) this.refreshDnsOf(a.networkId)
    })
  }

  /** Prepares a container's network before its process starts: the namespace, endpoints, ports and /etc files. */
  async setup (id: string, etcIn: EtcInput): Promise<SandboxSetup> {
    return await this.locked(async () => {
      // --add-host name:host-gateway is the default bridge's gateway, as with dockerd
      const gw = [...this.networks.values()].find((n) => n.predefined && n.driver === 'bridge')?.pools[0]?.gateway ?? ''
      const etc = { ...etcIn, extraHosts: etcIn.extraHosts.map((h) => h.endsWith(':host-gateway') && gw !== '' ? `${h.slice(0, -'host-gateway'.length)}${gw}` : h) }
      const sb = this.sandboxes.get(id)
      if (sb === undefined) {
        // no record (a container from before networking existed): loopback only, never the host's network
        return { netnsPath: undefined, hosts: hostsFile({ ...etc, ip: null, links: [] }), resolvConf: resolvConf({ host: this.hostResolv, ...etc, embedded: null }) }
      }
      if (sb.running) await this.releaseLocked(sb)
      if (sb.mode === 'host') {
        const hostHosts = await readFile('/etc/hosts', 'utf8').catch(() => '')
        return { netnsPath: null, hosts: hostHosts + hostsEntries(etc.extraHosts), resolvConf: resolvConf({ host: this.hostResolv, ...etc, embedded: null, hostNetwork: true }) }
      }
      if (sb.mode.startsWith('container:')) {
        const other = this.o.containers.find(sb.mode.slice('container:'.length))
        if (other === undefined) throw notFound(`No such container: ${sb.mode.slice('container:'.length)}`)
        if (!other.running) throw conflict(`cannot join network of a non running container: ${other.id}`)
        const osb = this.sandboxes.get(other.id)
        const path = osb !== undefined && osb.running && osb.netns !== '' ? osb.netns : `/proc/${other.pid}/ns/net`
        const first = osb?.attachments.find((a) => a.ip !== '')
        return { netnsPath: path, hosts: hostsFile({ ...etc, ip: first?.ip ?? null, links: [] }), resolvConf: resolvConf({ host: this.hostResolv, ...etc, embedded: this.embeddedFor(osb) }) }
      }
      if (this.links === null) {
        // no ip/nsenter/unshare (or not root): a namespace with loopback only, as before networking existed
        log('container %s gets loopback only: %s', id, this.unavailable)
        return { netnsPath: undefined, hosts: hostsFile({ ...etc, ip: null, links: [] }), resolvConf: resolvConf({ host: this.hostResolv, ...etc, embedded: null }) }
      }
      this.checkLinks(sb)
      await this.ensureHost()
      const path = netnsFile(this.paths, id)
      sb.netns = path
      sb.dns = etc.dns
      sb.running = true
      try {
        // the first veth's call creates the namespace (and brings lo up)
        if (sb.attachments.length === 0) {
          await this.links.createNetns(path)
          await this.links.loopbackUp(path)
        }
        // addresses first; then the veths and the published ports side by side (a forwarder process starts while
        // the namespace is wired), both settled before a failure releases what either made
        const wires = sb.attachments.map((a, i) => this.assign(sb, a, `eth${i}`))
        const done = await Promise.allSettled([
          (async () => { for (let i = 0; i < wires.length; i++) await this.wire(sb, wires[i] as Wire, i === 0, i === 0) })(),
          this.publish(sb)
        ])
        for (const r of done) if (r.status === 'rejected') throw r.reason
        await this.saveSandbox(sb)
      } catch (err) {
        await this.releaseLocked(sb)
        throw err
      }
      for (const a of sb.attachments) {
        this.refreshDnsOf(a.networkId)
        this.emitEndpoint('connect', a.networkId, sb.id)
      }
      const first = sb.attachments[0]
      return { netnsPath: path, hosts: hostsFile({ ...etc, ip: first?.ip ?? null, links: this.linkEntries(sb) }), resolvConf: resolvConf({ host: this.hostResolv, ...etc, embedded: this.embeddedFor(sb) }) }
    })
  }

  private embeddedFor (sb: SandboxRecord | undefined): string | null {
    if (sb === undefined) return null
    for (const a of sb.attachments) {
      const n = this.networks.get(a.networkId)
      if (n !== undefined && !n.predefined && this.dns.has(n.id)) return n.pools[0]?.gateway ?? null
    }
    return null
  }

  /** --link on the default bridge needs its targets running, as with dockerd (user networks resolve links by name). */
  private checkLinks (sb: SandboxRecord): void {
    for (const a of sb.attachments) {
      if (this.networks.get(a.networkId)?.predefined !== true) continue
      for (const l of a.links) {
        const [target = '', alias = ''] = l.split(':')
        const name = target.replace(/^\//, '')
        const c = this.o.containers.find(name)
        if (c === undefined) throw invalidArgument(`could not get container for ${name}: No such container: ${name}`)
        if (!c.running) throw conflict(`Cannot link to a non running container: /${c.name} AS /${sb.name}/${alias === '' ? name : alias.split('/').pop() ?? name}`)
      }
    }
  }

  private linkEntries (sb: SandboxRecord): Array<{ ip: string, names: string[] }> {
    const out: Array<{ ip: string, names: string[] }> = []
    for (const a of sb.attachments) {
      for (const l of a.links) {
        const [target = '', alias = ''] = l.split(':')
        const c = this.o.containers.find(target.replace(/^\//, ''))
        const osb = c === undefined ? undefined : this.sandboxes.get(c.id)
        const ip = osb?.attachments.find((x) => x.networkId === a.networkId)?.ip ?? ''
        if (c === undefined || ip === '') continue
        const aliasName = alias.split('/').pop() ?? ''
        out.push({ ip, names: [...new Set([aliasName, c.id.slice(0, 12), c.name].filter((x) => x !== ''))] })
      }
    }
    return out
  }

  /** An endpoint: address from the pool (or the static one), veth into the namespace, on the bridge. */
  private async plug (sb: SandboxRecord, a: Attachment, ifName: string, defaultRoute: boolean, createNetns = false): Promise<void> {
    await this.wire(sb, this.assign(sb, a, ifName), defaultRoute, createNetns)
  }

  /** An endpoint's address (from the pool, or the static one), MAC, endpoint ID and veth name. */
  private assign (sb: SandboxRecord, a: Attachment, ifName: string): Wire {
    // an attachment recorded by name (a network unknown at create) takes the network of that name created since
    const n = this.networks.get(a.networkId) ?? (FULL_ID.test(a.networkId) ? undefined : this.find(a.networkId))
    if (n === undefined) throw notFound(`network ${a.networkId} not found`)
    a.networkId = n.id
    const pools = this.pools.get(n.id) ?? []
    const pool = pools[0]
    const cfg = n.pools[0]
    if (pool === undefined || cfg === undefined) throw conflict(`network ${n.name} has no IPv4 pool`)
    let ip: string
    if (a.staticIp !== '') { pool.claim(a.staticIp); ip = a.staticIp } else {
      try { ip = pool.allocate() } catch { throw conflict(`no available IPv4 addresses on this network's address pools: ${n.name} (${n.id})`) }
    }
    a.ip = ip
    a.mac = mac(ip)
    a.endpointId = randomBytes(32).toString('hex')
    a.ifName = ifName
    a.hostIf = `${this.linkPrefix}v${randomBytes(4).toString('hex')}`.slice(0, 15)
    return { a, n, gateway: cfg.gateway, bits: cfg.subnet.split('/')[1] as string }
  }

  /** The veth of an assigned endpoint: into the namespace (the first one creates it), on the bridge. */
  private async wire (sb: SandboxRecord, w: Wire, defaultRoute: boolean, createNetns: boolean): Promise<void> {
    await (this.links as Links).attachVeth({
      netns: sb.netns,
      hostName: w.a.hostIf,
      ifName: w.a.ifName,
      bridge: w.n.bridge,
      mac: w.a.mac,
      cidr: `${w.a.ip}/${w.bits}`,
      mtu: mtuOf(w.n),
      gateway: defaultRoute && !w.n.internal ? w.gateway : null,
      create: createNetns
    })
  }

  private async unplug (sb: SandboxRecord, a: Attachment): Promise<void> {
    // deleting a veth waits for the kernel's RCU grace periods (~35 ms here): not on the exit → remove path; a network
    // removal, close and purge wait for the deletions still running
    if (a.hostIf !== '' && this.links !== null) this.track(this.links.detachVeth(a.hostIf))
    if (a.ip !== '') this.poolFor(a.networkId, a.ip)?.release(a.ip)
    a.ip = ''; a.mac = ''; a.hostIf = ''; a.ifName = ''; a.endpointId = ''
  }

  /** Whether published ports get forwarders: without iptables, and with iptables unless --userland-proxy=false. */
  private get proxied (): boolean { return this.firewall === null || this.o.userlandProxy !== false }

  /**
   * Maps the published ports: a forwarder per port (its bind is the check that the port is free, and it holds the
   * port), started all at once; with iptables the DNAT rules then. With --userland-proxy=false, DNAT only, after a
   * check that each port is free.
   */
  private async publish (sb: SandboxRecord): Promise<void> {
    const first = sb.attachments[0]
    sb.ports = []
    const wanted = first === undefined || first.ip === '' ? [] : wantedPorts(sb)
    if (first === undefined || wanted.length === 0) return
    const endpoint = `${sb.name} (${first.endpointId})`
    const taken = this.portsInUse()
    if (this.proxied) {
      const got = await Promise.allSettled(wanted.map(async (w) => await this.forward(w, first.ip, endpoint, taken)))
      // every forwarder started is recorded, so a failure's release stops them all
      for (const r of got) if (r.status === 'fulfilled') sb.ports.push(r.value)
      const failed = got.find((r) => r.status === 'rejected')
      if (failed !== undefined) throw (failed as PromiseRejectedResult).reason
    } else {
      for (const w of wanted) {
        const hostPort = await this.pickFreePort(w, endpoint, taken)
        taken.add(`${w.proto}/${hostPort}`)
        sb.ports.push({ proto: w.proto, containerPort: w.containerPort, hostIp: hostIpOf(w), hostPort })
      }
    }
    if (this.firewall !== null) await this.firewall.add(this.portRulesOf(sb))
  }

  /** One mapping's forwarder, on the host port hostPort() picks. */
  private async forward (w: WantedPort, containerIp: string, endpoint: string, taken: Set<string>): Promise<PortMapping> {
    return await this.hostPort(w, endpoint, taken, async (hostPort) => {
      const m: PortMapping = { proto: w.proto, containerPort: w.containerPort, hostIp: hostIpOf(w), hostPort }
      const r = await startForwarder(m, containerIp, this.prefix)
      if ('pid' in r) { m.proxyPid = r.pid; return m }
      if (!r.inUse) throw bindError(endpoint, m, r.error)
      return r.error
    })
  }

  /** --userland-proxy=false: a host port free now (checked, then let go: DNAT does not hold it). */
  private async pickFreePort (w: WantedPort, endpoint: string, taken: Set<string>): Promise<number> {
    return await this.hostPort(w, endpoint, taken, async (p) => await portFree(w.proto, hostIpOf(w), p) ? p : 'EADDRINUSE')
  }

  /**
   * The host port of a mapping: the one asked for, the first of a range `bind` succeeds on, or an ephemeral one (the
   * kernel's pick, picked again when someone else binds it first). `bind` resolves with its result, or with why the
   * port is in use.
   */
  private async hostPort<T> (w: WantedPort, endpoint: string, taken: Set<string>, bind: (port: number) => Promise<T | string>): Promise<T> {
    const hostIp = hostIpOf(w)
    if (w.hostPort === '' || w.hostPort === '0') {
      for (let i = 0; i < 5; i++) {
        const r = await bind(await freePort(w.proto, hostIp, taken))
        if (typeof r !== 'string') return r
      }
      throw conflict('no free host port')
    }
    const [lo = 0, hi = lo] = w.hostPort.split('-').map(Number)
    for (let p = lo; p <= hi; p++) {
      if (taken.has(`${w.proto}/${p}`)) { if (lo === hi) throw allocated(endpoint, hostIp, String(p)); continue }
      const r = await bind(p)
      if (typeof r !== 'string') return r
      if (lo === hi) throw bindError(endpoint, { proto: w.proto, hostIp, hostPort: p }, r)
    }
    throw allocated(endpoint, hostIp, w.hostPort)
  }

  /** At boot: forwarders that died (with the host's processes, or a daemon run with DNAT only) are started again. */
  private async reviveForwarders (sb: SandboxRecord): Promise<void> {
    const ip = sb.attachments[0]?.ip ?? ''
    if (ip === '') return
    await Promise.all(sb.ports.map(async (p) => {
      if (await forwarderAlive(p.proxyPid ?? 0)) return
      const r = await startForwarder(p, ip, this.prefix)
      if ('pid' in r) p.proxyPid = r.pid
      else log('forwarder %s %s/%d: %s', sb.id, p.proto, p.hostPort, r.error)
    }))
  }

  private portsInUse (): Set<string> {
    const out = new Set<string>()
    for (const sb of this.sandboxes.values()) for (const p of sb.ports) out.add(`${p.proto}/${p.hostPort}`)
    return out
  }

  private portRulesOf (sb: SandboxRecord): Rule[] {
    const first = sb.attachments[0]
    if (this.firewall === null || first === undefined || first.ip === '') return []
    const n = this.networks.get(first.networkId)
    if (n === undefined) return []
    const fw = this.firewall
    return sb.ports.flatMap((p) => fw.portRules({ proto: p.proto, hostIp: p.hostIp, hostPort: p.hostPort, containerIp: first.ip, containerPort: p.containerPort, bridge: n.bridge }))
  }

  /** The container stopped: ports, endpoints and namespace go; the attachments (aliases, static IPs) stay. */
  async release (id: string): Promise<void> {
    await this.locked(async () => {
      const sb = this.sandboxes.get(id)
      if (sb !== undefined && sb.running) await this.releaseLocked(sb)
    })
  }

  private async releaseLocked (sb: SandboxRecord): Promise<void> {
    if (this.firewall !== null) await this.firewall.remove(this.portRulesOf(sb)).catch((err) => { log('ports of %s: %s', sb.id, errorMessage(err)) })
    await Promise.all(sb.ports.map(async (p) => { await stopForwarder(p.proxyPid ?? 0); p.proxyPid = 0 }))
    sb.ports = []
    for (const a of sb.attachments) {
      const had = a.endpointId !== ''
      await this.unplug(sb, a).catch((err) => { log('unplug %s: %s', sb.id, errorMessage(err)) })
      if (had) this.emitEndpoint('disconnect', a.networkId, sb.id)
    }
    if (sb.netns !== '' && this.links !== null) await this.links.removeNetns(sb.netns)
    sb.netns = ''
    sb.running = false
    await this.saveSandbox(sb).catch(() => {})
    for (const a of sb.attachments) this.refreshDnsOf(a.networkId)
  }

  /** docker network connect: recorded, and plugged at once when the container runs. */
  async connect (netRef: string, containerRef: string, ep: EndpointRequest): Promise<void> {
    const c = this.o.containers.find(containerRef)
    if (c === undefined) throw notFound(`No such container: ${containerRef}`)
    await this.locked(async () => {
      const n = this.get(netRef)
      const sb = this.sandboxes.get(c.id)
      if (sb === undefined) throw notFound(`No such container: ${containerRef}`)
      // dockerd's wording, case by case
      if (sb.mode === 'none' || n.driver === 'null') throw forbidden('container cannot be connected to multiple networks with one of the networks in private (none) mode')
      if (sb.mode === 'host' || sb.mode.startsWith('container:')) throw forbidden('container sharing network namespace with another container or host cannot be connected to any other network')
      if (n.driver === 'host') throw forbidden('container cannot be disconnected from host network or connected to host network')
      if (ep.ipv4 !== '' && n.predefined) throw invalidArgument('user specified IP address is supported on user defined networks only')
      if (sb.attachments.some((a) => a.networkId === n.id)) throw forbidden(`endpoint with name ${c.name} already exists in network ${n.name}`)
      if (ep.ipv4 !== '') checkStaticIp(n, ep.ipv4)
      const a = newAttachment(n.id, ep)
      sb.attachments.push(a)
      if (sb.running) {
        try { await this.plug(sb, a, `eth${sb.attachments.length - 1}`, false) } catch (err) {
          await this.unplug(sb, a).catch(() => {})
          sb.attachments.pop()
          throw err
        }
      }
      await this.saveSandbox(sb)
      this.refreshDnsOf(n.id)
      this.emitEndpoint('connect', n.id, c.id)
    })
  }

  async disconnect (netRef: string, containerRef: string, force: boolean): Promise<void> {
    await this.locked(async () => {
      const n = this.get(netRef)
      const c = this.o.containers.find(containerRef)
      let sb = c === undefined ? undefined : this.sandboxes.get(c.id)
      if (sb === undefined && force) sb = [...this.sandboxes.values()].find((s) => s.name === containerRef || s.id.startsWith(containerRef))
      if (sb === undefined) throw notFound(`No such container: ${containerRef}`)
      const i = sb.attachments.findIndex((a) => a.networkId === n.id)
      if (i === -1) throw forbidden(`container ${sb.id} is not connected to network ${n.name}`)
      const a = sb.attachments[i] as Attachment
      if (sb.running) await this.unplug(sb, a)
      sb.attachments.splice(i, 1)
      this.emitEndpoint('disconnect', n.id, sb.id)
      await this.saveSandbox(sb)
      this.refreshDnsOf(n.id)
    })
  }

  private track (p: Promise<void>): void {
    const q = p.catch((err) => { log('link deletion: %s', errorMessage(err)) }).finally(() => { this.pendingDeletes.delete(q) })
    this.pendingDeletes.add(q)
  }

  /** Waits for the link deletions still running. */
  async settled (): Promise<void> {
    while (this.pendingDeletes.size > 0) await Promise.all([...this.pendingDeletes])
  }

  /** dockerd's network connect/disconnect events, also sent when a container starts and stops. */
  /**
   * A network's creation or removal: a local network's `create`/`destroy` with its name and driver; a swarm-scoped
   * (overlay) network's as dockerd relays the cluster's: `create` then the allocator's `update`, and `remove`, with
   * only the name, scope swarm.
   */
  private emitLifecycle (n: NetworkRecord, what: 'create' | 'remove'): void {
    if (n.driver !== 'overlay') {
      this.o.events.emit('network', what === 'create' ? 'create' : 'destroy', n.id, { name: n.name, type: n.driver })
      return
    }
    for (const action of what === 'create' ? ['create', 'update'] : ['remove']) this.o.events.emit('network', action, n.id, { name: n.name }, 'swarm')
  }

  private emitEndpoint (action: 'connect' | 'disconnect', networkId: string, containerId: string): void {
    const n = this.networks.get(networkId)
    if (n !== undefined) this.o.events.emit('network', action, n.id, { container: containerId, name: n.name, type: n.driver })
  }

  // ---- name resolution ------------------------------------------------------------------------------------------

  private refreshDnsOf (networkId: string): void {
    const n = this.networks.get(networkId)
    if (n !== undefined) this.refreshDns(n)
  }

  /** The embedded DNS server of a user-defined network: on its gateway, port 53, while the bridge exists. */
  private refreshDns (n: NetworkRecord): void {
    if (n.predefined || (n.driver !== 'bridge' && n.driver !== 'overlay') || this.links === null || !this.hostUp) return
    const names = new Map<string, string[]>()
    const forwarders = new Map<string, string[]>()
    for (const { sb, a } of this.endpointsOf(n.id)) {
      if (a.ip === '') continue
      if (sb.dns !== undefined && sb.dns.length > 0 && !n.internal) forwarders.set(a.ip, sb.dns)
      for (const name of [sb.name, sb.id.slice(0, 12), ...a.aliases]) {
        // as dockerd: a name, and the name qualified with the network's (web.app)
        for (const key of [name.toLowerCase(), `${name}.${n.name}`.toLowerCase()]) names.set(key, [...(names.get(key) ?? []), a.ip])
      }
    }
    let server = this.dns.get(n.id)
    if (server === undefined) {
      const gw = n.pools[0]?.gateway
      if (gw === undefined) return
      // the server lives in the host's namespace: the host's loopback resolvers (a local cache) are reachable from it
      // an Internal network has no way out: like dockerd, its server answers the network's names only
      server = new DnsServer({ address: gw, forwarders: n.internal ? [] : hostNameservers(this.hostResolv, true) })
      server.listen()
      this.dns.set(n.id, server)
    }
    server.setRecords(names, forwarders)
  }

  /** Stops the DNS servers; the host's networking stays (containers keep running and their ports answering). */
  async close (): Promise<void> {
    await this.queue
    await this.settled()
    for (const s of this.dns.values()) s.close()
    this.dns.clear()
  }

  /**
   * Removes everything this engine put on the host: namespaces, veths, bridges, chains. For tests and uninstalls;
   * containers still running lose their network.
   */
  async purgeHost (): Promise<void> {
    await this.close()
    if (this.links === null) return
    for (const sb of this.sandboxes.values()) if (sb.running) await this.releaseLocked(sb)
    await this.settled()
    const bridges = [...this.networks.values()].map((n) => n.bridge).filter((b) => b !== '')
    const chains = this.firewall !== null && (this.hostUp || await this.firewall.exists())
    // forwarders no record holds any more (a daemon killed while it started them) go too
    await removeHostState(this.tools as Tools, { prefix: this.prefix, netnsDir: this.paths.netns, bridges, forwarders: [] }, chains)
    this.hostUp = false
  }
}

/** An endpoint given its address, before its veth exists. */
interface Wire { a: Attachment, n: NetworkRecord, gateway: string, bits: string }

function hostIpOf (w: WantedPort): string { return w.hostIp === '' ? '0.0.0.0' : w.hostIp }

/** dockerd's error for a host port another container of this engine maps. */
function allocated (endpoint: string, hostIp: string, port: string): Error {
  return forbidden(`driver failed programming external connectivity on endpoint ${endpoint}: Bind for ${hostIp}:${port} failed: port is already allocated`)
}

function mtuOf (n: NetworkRecord): number {
  const v = Number(n.options[MTU_OPTION] ?? '0')
  return Number.isInteger(v) && v >= 68 && v <= 65535 ? v : 0
}
