// The network service: one lock over its parts and what crosses them: the networks (records, IPAM, bridges:
// networks.ts), the containers' sandboxes (namespaces, endpoints, /etc files: sandboxes.ts), the published ports
// (port-publisher.ts) and the containers' embedded DNS resolvers (container-resolvers.ts), with the boot reconciliation
// and the purge.
// Never imports lib/engine: the engine passes narrow callbacks in (events, container lookup).
import { mkdir, stat, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { conflict, forbidden, invalidArgument, notFound, errorMessage, describeError } from '../errors.js'
import { levelLogger, logger } from '../log.js'
import { removeHostState } from './purge.js'
import { forwardersOf, stopForwarder } from './host-ports.js'
import { NetworkHost, type NetworkOptions } from './network-host.js'
import { ContainerResolvers } from './container-resolvers.js'
import { Networks } from './networks.js'
import { PortPublisher } from './port-publisher.js'
import { Sandboxes, type EtcInput, type SandboxSetup, type Teardown } from './sandboxes.js'
import { isMountPoint } from '../runtime/rootfs.js'
import type { Tools } from './commands.js'
import type { SandboxRequest } from './sandbox-config.js'
import type { CreateNetworkRequest } from './network-create.js'
import type { NetworkPaths } from './paths.js'
import type { Attachment, SandboxView, EndpointRequest, NetworkRecord, SandboxRecord } from './model.js'
import { PRIVATE_DIR, PRIVATE_FILE } from '../util/private-modes.js'

const log = logger('engine:network')
const ops = levelLogger('engine:network')
/** A connect finding its container's namespace in transition looks again once it settled: at most this many times, */
const TRANSITION_ROUNDS = 5
/** each wait bounded (a start whose monitor is slow to come up, an exit whose application is queued behind others). */
const TRANSITION_WAIT_MS = 5000

export type { NetworkOptions, NetworkEvents, ContainerLookup, SwarmNetworkUse } from './network-host.js'
export type { EtcInput, SandboxSetup, Teardown } from './sandboxes.js'
export type { CreateNetworkRequest }
export type { EndpointRequest }

export class NetworkService {
  private readonly host: NetworkHost
  private readonly resolvers: ContainerResolvers
  private readonly networks: Networks
  private readonly ports: PortPublisher
  private readonly sandboxes: Sandboxes
  private queue: Promise<unknown> = Promise.resolve()
  /** The boot's sweep of an earlier version's forwarders (sweepForwarders). */
  private sweeping: Promise<void> = Promise.resolve()

  constructor (o: NetworkOptions) {
    this.host = new NetworkHost(o)
    this.resolvers = new ContainerResolvers({
      network: (id) => this.networks.byId(id),
      endpointsOf: (id) => this.sandboxes.endpointsOf(id),
      sandbox: (id) => this.sandboxes.get(id),
      hostResolv: () => this.host.hostResolv
    }, o.monitors)
    this.networks = new Networks(this.host)
    this.ports = new PortPublisher(this.host, () => this.sandboxes.all())
    this.sandboxes = new Sandboxes(this.host, this.networks, this.ports, this.resolvers)
  }

  get paths (): NetworkPaths { return this.host.paths }
  get prefix (): string { return this.host.prefix }
  /** Why the Linux plumbing is unavailable ('' when it is). */
  get unavailable (): string { return this.host.unavailable }
  /** Counts changes of endpoints and ports (list caches compare it). */
  get seq (): number { return this.sandboxes.seq }

  /** Serializes state changes (records, pools, links). */
  private async locked<T> (fn: () => Promise<T>): Promise<T> {
    const p = this.queue.then(fn, fn)
    this.queue = p.catch(() => {}) // the queue only orders the changes: the caller gets the error below
    return await p
  }

  // ---- boot -----------------------------------------------------------------------------------------------------

  async init (): Promise<void> {
    await this.load()
    // (no containers' records here: every sandbox record is kept, and the addresses they hold are claimed)
    this.dropOrphans(() => true)
    await this.reconcileHost()
  }

  /** Boot, first half: the records (the host is not touched). */
  async load (): Promise<void> {
    const paths = this.host.paths
    await mkdir(paths.networks, { recursive: true, mode: PRIVATE_DIR })
    await mkdir(paths.sandboxes, { recursive: true, mode: PRIVATE_DIR })
    await mkdir(paths.netns, { recursive: true, mode: PRIVATE_DIR })
    await this.host.detect()
    await this.networks.load()
    await this.sandboxes.load()
  }

  /**
   * Boot, second half: the host brought in line with the records, and networks a crash left half-removed finished,
   * under the lock (network changes wait for it).
   */
  async reconcileHost (): Promise<void> {
    await this.locked(async () => {
      if (this.host.links !== null) await this.reconcile()
      await this.reapRemoving()
    })
  }

  /** Brings the host in line with the records: bridges, rules, and nothing left that no record owns. */
  private async reconcile (): Promise<void> {
    const links = this.host.links
    if (links === null) return
    const firewall = this.host.firewall
    // an engine with nothing but the predefined networks and no running container sets the host up on first use
    const busy = [...this.sandboxes.all()].some((sb) => sb.running) || this.networks.all().some((n) => !n.predefined)
    if (busy) await this.networks.ensureHost()
    // no container and no network of ours: the chains (if a previous daemon made them) are emptied now, not at first use
    else if (firewall !== null && await firewall.exists()) await firewall.setup()
    const bridges = new Set<string>()
    for (const n of this.networks.all()) if (n.bridge !== '') bridges.add(n.bridge)
    const veths = new Set<string>()
    const namespaces = new Set<string>()
    const running = [...this.sandboxes.all()].filter((sb) => sb.running)
    const alive = await Promise.all(running.map(async (sb) => sb.netns !== '' && await netnsAlive(sb.netns)))
    for (const [i, sb] of running.entries()) {
      if (alive[i] !== true) { await this.sandboxes.release(sb, 'daemon'); continue }
      namespaces.add(sb.netns)
      for (const a of sb.attachments) if (a.hostIf !== '') veths.add(a.hostIf)
    }
    // every sandbox's ports at once: their DNAT rules reach the kernel in one batch (Firewall)
    await Promise.all(running.filter((sb, i) => alive[i] === true).map(async (sb) => { await this.ports.restore(sb, this.sandboxes.portTarget(sb)) }))
    // ours: veths and default-named bridges by their prefix, bridges named by the options by their mark; never others'
    for (const l of await links.linksMarked(this.host.linkPrefix, this.host.bridgeMark)) {
      if (!bridges.has(l) && !veths.has(l)) { log('removing stray link %s', l); await links.deleteLink(l) }
    }
    for (const f of await links.netnsFiles(this.host.paths.netns)) {
      if (!namespaces.has(f)) { log('removing stray namespace %s', f); await links.removeNetns(f) }
    }
    this.sweeping = this.sweepForwarders()
  }

  /**
   * Forwarder processes (`berth port-proxy`, one per port) of an earlier version that no record holds, a daemon killed
   * while it started them: stopped. Once, off the boot path (it reads every process's command line); this version
   * starts none, so a marker file says it is done.
   */
  private async sweepForwarders (): Promise<void> {
    const marker = join(this.host.paths.root, 'forwarders-swept')
    if (await stat(marker).then(() => true, () => false)) return
    const recorded = new Set<number>()
    for (const sb of this.sandboxes.all()) for (const p of sb.ports) if ((p.proxyPid ?? 0) > 0) recorded.add(p.proxyPid ?? 0)
    for (const pid of await forwardersOf(this.host.prefix)) {
      if (!recorded.has(pid)) { log('stopping forwarder %d (no record holds it)', pid); await stopForwarder(pid) }
    }
    await writeFile(marker, '', { mode: PRIVATE_FILE }).catch((err) => { log('%s: %s', marker, errorMessage(err)) })
  }

  // ---- networks -------------------------------------------------------------------------------------------------

  /** The networks the API shows (not those being removed). */
  all (): NetworkRecord[] { return this.networks.visible() }
  find (ref: string): NetworkRecord | undefined { return this.networks.find(ref) }
  get (ref: string): NetworkRecord { return this.networks.get(ref) }
  endpointsOf (networkId: string): Array<{ sb: SandboxRecord, a: Attachment }> { return this.sandboxes.endpointsOf(networkId) }
  activeEndpoints (networkId: string): number { return this.sandboxes.activeEndpoints(networkId) }

  async create (req: CreateNetworkRequest): Promise<{ id: string, warning: string }> {
    return await this.locked(async () => await this.networks.create(req))
  }

  async remove (ref: string): Promise<void> {
    await this.locked(async () => {
      const n = this.networks.get(ref)
      if (n.predefined) throw forbidden(`${n.name} is a pre-defined network and cannot be removed`)
      const swarm = n.driver === 'overlay' ? this.host.o.swarmNetworkUse : undefined
      const blocked = swarm?.blocksRemoval({ id: n.id, ingress: n.ingress === true })
      if (blocked !== undefined) throw invalidArgument(blocked)
      const active = this.sandboxes.endpointsOf(n.id).filter(({ a }) => a.ip !== '')
      if (active.length > 0) {
        // the task containers of removed services still shut down on it: the network goes from the API now and
        // from the host once they have left (docker stack rm removes a stack's networks right after its services)
        if (swarm !== undefined && active.every(({ sb }) => swarm.leaving(sb.id))) { await this.networks.markRemoving(n); return }
        throw forbidden(`error while removing network: network ${n.name} id ${n.id} has active endpoints`)
      }
      // gone for every lookup from now on, before the first await: a swarm service created meanwhile (its references
      // are resolved outside this lock) must not name a network whose removal passed the check (swarmkit checks and
      // removes in one store transaction)
      n.removing = true
      try {
        await this.sandboxes.settled()
        await this.networks.remove(n)
      } catch (err) {
        delete n.removing
        throw err
      }
      this.resolvers.drop(n.id)
    })
  }

  /** Tears down the networks marked removing whose last endpoint has left. Called under the lock (and at boot). */
  private async reapRemoving (): Promise<void> {
    for (const n of this.networks.all()) {
      if (n.removing !== true || this.sandboxes.activeEndpoints(n.id) > 0) continue
      await this.sandboxes.settled()
      await this.networks.finishRemoving(n)
    }
  }

  async prune (keep: (n: NetworkRecord) => boolean): Promise<string[]> {
    const out: string[] = []
    for (const n of this.networks.visible()) {
      if (n.predefined || !keep(n) || this.sandboxes.activeEndpoints(n.id) > 0) continue
      try { await this.remove(n.id); out.push(n.name) } catch (err) { ops.warn('could not remove network %s: %s', n.name, describeError(err)) }
    }
    return out
  }

  // ---- container sandboxes --------------------------------------------------------------------------------------

  sandbox (id: string): SandboxRecord | undefined { return this.sandboxes.get(id) }

  /** A container's NetworkSettings parts (inspect, list). */
  view (id: string): SandboxView | undefined { return this.sandboxes.view(id) }

  /**
   * Validates and records a new container's network mode and endpoints (create); its container's own record carries
   * it (it has no file of its own until a change networking writes; see Sandboxes.register).
   */
  async register (o: SandboxRequest): Promise<string[]> {
    return await this.locked(async () => this.sandboxes.register(o))
  }

  /** Boot: a container's networking record as its container's record carries it, when its own file had none. */
  restore (id: string, record: SandboxRecord): void { this.sandboxes.restore(id, record) }

  /**
   * Boot, after the containers' records were read (and their copies restored) and before any request: sandbox records
   * of no container go and the others' addresses are claimed (see Sandboxes.dropOrphans); the reconciliation then
   * removes what the dropped ones held on the host.
   */
  dropOrphans (exists: (id: string) => boolean): void { this.sandboxes.dropOrphans(exists) }

  /** Forgets a removed container: releases what it held and forgets its record (its file goes after). */
  async unregister (id: string): Promise<void> {
    await this.locked(async () => { await this.sandboxes.unregister(id); await this.reapRemoving() })
  }

  /** A renamed container answers to its new name. */
  async rename (id: string, name: string): Promise<void> {
    await this.locked(async () => { await this.sandboxes.rename(id, name) })
  }

  /** Prepares a container's network before its process starts: the namespace, endpoints, ports and /etc files. */
  async setup (id: string, etc: EtcInput): Promise<SandboxSetup> {
    return await this.locked(async () => await this.sandboxes.setup(id, etc))
  }

  /**
   * The container's monitor runs (just started, or found running at boot): its embedded DNS resolver, if it has one,
   * is served from now on. Not awaited by a start: the monitor holds the queries that come first.
   */
  monitorStarted (id: string): void {
    this.sandboxes.settledTransition(id)
    void this.resolvers.serve(id).catch((err) => { log('resolver of %s: %s', id, errorMessage(err)) })
  }

  /** Removes the legacy link `alias` of a container (DELETE …?link=true); false when it has none of that alias. */
  async removeLink (id: string, alias: string): Promise<boolean> {
    return await this.locked(async () => await this.sandboxes.removeLink(id, alias))
  }

  /** The network interfaces in a container's namespace (its stats' networks). */
  interfaces (id: string): string[] { return this.sandboxes.interfaces(id) }

  /**
   * The container stopped: ports, endpoints and namespace go; the attachments (aliases, static IPs) stay. `teardown`:
   * 'monitor' when the container's monitor recorded the exit (it removes the namespace and veths), 'daemon' otherwise.
   * `persist` false: the container is removed next.
   */
  async release (id: string, teardown: Teardown = 'daemon', persist = true): Promise<void> {
    await this.locked(async () => {
      const sb = this.sandboxes.get(id)
      if (sb !== undefined && sb.running) await this.sandboxes.release(sb, teardown, persist)
      await this.reapRemoving()
    })
  }

  /** The container's networking record as it stands (its container's own record carries a copy of it). */
  record (id: string): SandboxRecord | undefined { return this.sandboxes.record(id) }

  /**
   * docker network connect: recorded, and plugged at once when the container runs. A container whose namespace is in
   * transition (exiting, or starting) is connected once it settled, as dockerd's connect waits for the container's
   * lock: as a stopped container (the endpoint recorded, attached at its next start) or into the new run.
   */
  async connect (netRef: string, containerRef: string, ep: EndpointRequest): Promise<void> {
    const c = this.host.o.containers.find(containerRef)
    if (c === undefined) throw notFound(`No such container: ${containerRef}`)
    for (let round = 0; ; round++) {
      const transition = this.sandboxes.transition(c.id, TRANSITION_WAIT_MS)
      try {
        if (await this.locked(async () => await this.sandboxes.connect(netRef, c, containerRef, ep))) return
        // (a container restarting in a loop may be caught more than once)
        if (round === TRANSITION_ROUNDS) throw conflict(`cannot connect container ${c.name} to network ${this.networks.find(netRef)?.name ?? netRef} while it starts or stops: try again`)
        await transition.settled
      } finally { transition.cancel() }
    }
  }

  async disconnect (netRef: string, containerRef: string, force: boolean): Promise<void> {
    await this.locked(async () => { await this.sandboxes.disconnect(netRef, containerRef, force) })
  }

  /** Waits for the link deletions still running (the daemon's and the monitors'). */
  async settled (): Promise<void> { await this.sandboxes.settled() }

  // ---- shutdown -------------------------------------------------------------------------------------------------

  /**
   * Lets go of the containers' resolvers (their monitors hold their queries for the next daemon); the host's networking
   * stays (containers keep running and their ports answering).
   */
  async close (): Promise<void> {
    await this.queue
    await this.sandboxes.settled()
    await this.sandboxes.flushed()
    await this.ports.settled()
    await this.sweeping
    this.resolvers.close()
  }

  /**
   * Removes everything this engine put on the host: namespaces, veths, bridges, chains. For tests and uninstalls;
   * containers still running lose their network.
   */
  async purgeHost (): Promise<void> {
    await this.close()
    if (this.host.links === null) return
    for (const sb of this.sandboxes.all()) if (sb.running) await this.sandboxes.release(sb, 'daemon')
    await this.sandboxes.settled()
    await this.ports.settled()
    const bridges = this.networks.all().map((n) => n.bridge).filter((b) => b !== '')
    const firewall = this.host.firewall
    const chains = firewall !== null && (this.networks.hostUp || await firewall.exists())
    // forwarders no record holds any more (a daemon killed while it started them) go too
    await removeHostState(this.host.tools as Tools, { prefix: this.host.prefix, netnsDir: this.host.paths.netns, bridges, forwarders: [] }, chains)
    this.networks.hostGone()
  }
}

/** A namespace mounted on its file (two stats, not a read of the whole mount table). */
async function netnsAlive (path: string): Promise<boolean> {
  return await isMountPoint(path)
}
