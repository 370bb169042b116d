// Container sandboxes: each container's networking record (mode, attachments, the ports it asks for), and while it
// runs its namespace, endpoints (address, MAC, veth on the bridge) and /etc files; its published ports are the port
// publisher's. Called under the network service's lock.
// Long because every change of a container's networking (register, setup, release, connect, disconnect, links, the
// boot's reconcile) works on one table of sandbox records under that lock; the pure parts are sandbox-config.ts,
// etc-files.ts, links.ts and link-env.ts.
import { access, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises'
import { randomBytes } from 'node:crypto'
import { conflict, forbidden, invalidArgument, notFound, describeError, isEngineError } from '../errors.js'
import { writeFileAtomic } from '../util/atomic.js'
import { readTexts } from '../util/read-files.js'
import { levelLogger, logger } from '../log.js'
import { dirname } from 'node:path'
import { parseIp } from './cidr.js'
import { sandboxFile, netnsFile } from './paths.js'
import { hostsFile, hostsEntries, resolvConf } from './etc-files.js'
import { newSandbox, newAttachment, checkEndpoint, type SandboxRequest } from './sandbox-config.js'
import { mtuOf, type Lease, type Networks } from './networks.js'
import type { NetworkHost } from './network-host.js'
import type { Links } from './links.js'
import { RESOLVER_ADDRESS, resolvesNames, type ContainerResolvers } from './container-resolvers.js'
import type { PortHold, PortPublisher, PortTarget } from './port-publisher.js'
import type { Attachment, SandboxView, EndpointRequest, SandboxRecord } from './model.js'
import type { NetworkNamespace, VethSpec } from '../runtime/run-spec.js'

const log = logger('engine:network')
const ops = levelLogger('engine:network')

export interface EtcInput {
  hostname: string
  domainname: string
  extraHosts: string[]
  dns: string[]
  dnsSearch: string[]
  dnsOptions: string[]
}

/** A legacy link of a container on the default bridge: its name (`/parent/alias`), the linked container and its address. */
export interface LegacyLink { name: string, containerId: string, ip: string }

/**
 * A started container's networking: its network namespace (the host's, another container's, a new one with loopback
 * only, or one the container's monitor makes with its veths: see lib/runtime/shim/shim.h), its /etc files, the
 * namespace its monitor opens its embedded DNS resolver in (null: none), and its legacy links (the environment they
 * give is the engine's to write), and the published ports its monitor is to hold and serve.
 */
export interface SandboxSetup {
  netns: NetworkNamespace
  hosts: string
  resolvConf: string
  resolver: string | null
  legacyLinks: LegacyLink[]
  ports: PortHold[]
}

/** Who removes a stopped container's namespace and veths: its monitor (it recorded the exit), or the daemon. */
export type Teardown = 'monitor' | 'daemon'

/** How long settled() waits for the veths monitors delete before deleting them itself. */
const VANISH_WAIT_MS = 5000

/** An endpoint given its address, before its veth exists. */
interface Wire { a: Attachment, lease: Lease }

/** What the monitor makes for an endpoint (the first one has the default route, unless its network is internal). */
function vethOf (w: Wire, defaultRoute: boolean): VethSpec {
  const n = w.lease.n
  return {
    hostName: w.a.hostIf,
    ifName: w.a.ifName,
    bridge: n.bridge,
    mac: w.a.mac,
    mtu: mtuOf(n),
    // the network's IPv6 address (the monitor adds it without duplicate address detection), link-local ones besides
    // (dockerd's /16 and /64)
    addresses: [`${w.a.ip}/${w.lease.bits}`, ...(w.lease.ip6 !== '' ? [`${w.lease.ip6}/${w.lease.bits6}`] : []),
      ...(w.a.linkLocal ?? []).map((ip) => `${ip}/${ip.includes(':') ? 64 : 16}`)],
    gateways: defaultRoute && !n.internal ? [w.lease.gateway, ...(w.lease.ip6 !== '' ? [w.lease.gateway6] : [])] : []
  }
}

/** Whether a host interface exists (sysfs: no process). */
async function linkExists (name: string): Promise<boolean> {
  return await access(`/sys/class/net/${name}`).then(() => true, () => false)
}

/**
 * Whether a container's namespace file still holds its namespace: its monitor unmounts and deletes the file at the
 * exit, before the daemon hears of it (a mounted namespace lives on another device than its directory).
 */
async function netnsAlive (path: string): Promise<boolean> {
  if (path === '') return false
  const [file, dir] = await Promise.all([stat(path).catch(() => null), stat(dirname(path)).catch(() => null)])
  return file !== null && dir !== null && file.dev !== dir.dev
}

function mac (ip: string): string {
  const n = parseIp(ip) ?? 0
  return ['02', '42', ...[24, 16, 8, 0].map((s) => ((n >>> s) & 255).toString(16).padStart(2, '0'))].join(':')
}

export class Sandboxes {
  private readonly host: NetworkHost
  private readonly networks: Networks
  private readonly ports: PortPublisher
  private readonly dns: ContainerResolvers
  private readonly records = new Map<string, SandboxRecord>()
  private readonly pendingDeletes = new Set<Promise<void>>()
  /** Host ends of veths their containers' monitors delete after the exit (settled() waits for them to go). */
  private readonly vanishing = new Set<string>()
  /** Each record file's changes, in order. */
  private readonly writes = new Map<string, Promise<void>>()
  /** Counts changes of endpoints and ports (list caches compare it). */
  seq = 0
  /** Who waits for a container's namespace to settle (its release, its monitor's start, its removal): transition(). */
  private readonly transitionWaiters = new Map<string, Set<() => void>>()

  constructor (host: NetworkHost, networks: Networks, ports: PortPublisher, dns: ContainerResolvers) {
    this.host = host
    this.networks = networks
    this.ports = ports
    this.dns = dns
  }

  /** Boot: the records on disk (the addresses they hold are claimed once the containers' copies are in: dropOrphans). */
  async load (): Promise<void> {
    const dir = this.host.paths.sandboxes
    // every record read at once (a restart answers /_ping only after this), then taken in the directory's order
    const files = (await readdir(dir)).filter((f) => f.endsWith('.json'))
    const texts = await readTexts(files.map((f) => `${dir}/${f}`))
    for (const [i, f] of files.entries()) {
      try {
        const read = texts[i] as PromiseSettledResult<string>
        if (read.status === 'rejected') throw read.reason
        const rec = JSON.parse(read.value) as SandboxRecord
        this.records.set(rec.id, rec)
      } catch (err) { ops.warn('sandbox record %s is unreadable and was skipped: %s', f, describeError(err)) }
    }
  }

  /** The addresses of the records of running containers, claimed from their pools (boot). */
  private claimAddresses (): void {
    for (const sb of this.records.values()) {
      for (const a of sb.attachments) {
        if (a.ip === '') continue
        const claim = (ip: string): void => {
          try { this.networks.claim(a.networkId, ip) } catch (err) { ops.warn('address %s of container %s was not claimed back: %s', ip, sb.id.slice(0, 12), describeError(err)) }
        }
        claim(a.ip)
        const ip6 = a.ip6 ?? ''
        if (ip6 !== '') claim(ip6)
      }
    }
  }

  all (): IterableIterator<SandboxRecord> { return this.records.values() }

  /** The container's record as it stands (its container's own record carries a copy: ContainerRecord.sandbox). */
  record (id: string): SandboxRecord | undefined { return this.records.get(id) }

  get (id: string): SandboxRecord | undefined { return this.records.get(id) }

  /** Containers with an endpoint on the network (running or not), with their endpoint. */
  endpointsOf (networkId: string): Array<{ sb: SandboxRecord, a: Attachment }> {
    const out: Array<{ sb: SandboxRecord, a: Attachment }> = []
    for (const sb of this.records.values()) for (const a of sb.attachments) if (a.networkId === networkId) out.push({ sb, a })
    return out
  }

  /**
   * Endpoints of running containers (dockerd's active endpoints): a stopped container does not keep its network from
   * being removed; starting it then fails with `network … not found`.
   */
  activeEndpoints (networkId: string): number {
    return this.endpointsOf(networkId).filter(({ a }) => a.ip !== '').length
  }

  /** Where the container's published ports lead: its first endpoint (null while it has no address). */
  portTarget (sb: SandboxRecord): PortTarget | null {
    const first = sb.attachments[0]
    if (first === undefined || first.ip === '') return null
    return { ip: first.ip, bridge: this.networks.byId(first.networkId)?.bridge ?? '', endpoint: `${sb.name} (${first.endpointId})` }
  }

  /**
   * Sandbox records change at every start and stop: written atomically, without the directory fsync (a power loss
   * may leave the previous record, which the boot reconciliation handles as a stopped container).
   */
  private async save (sb: SandboxRecord): Promise<void> {
    this.changed(sb)
    const data = JSON.stringify(sb)
    await this.afterWrites(sb.id, async () => { await writeFileAtomic(sandboxFile(this.host.paths, sb.id), data, { syncDir: false }) })
  }

  /** A record changed (its count, and the one list caches compare). */
  private changed (sb: SandboxRecord): void {
    sb.seq = (sb.seq ?? 0) + 1
    this.seq++
  }

  /** Runs a change of a record's file after the ones before it (a write never lands after a later write or the removal). */
  private async afterWrites (id: string, fn: () => Promise<void>): Promise<void> {
    const next = (this.writes.get(id) ?? Promise.resolve()).then(fn)
    const settled = next.catch(() => {}) // the chain only orders the writes: the caller gets the error below
    this.writes.set(id, settled)
    void settled.then(() => { if (this.writes.get(id) === settled) this.writes.delete(id) })
    await next
  }

  /** Waits for every record write under way. */
  async flushed (): Promise<void> {
    await Promise.all([...this.writes.values()])
  }

  /** A container's networking as inspect and the list show it (lib/api/containers/network-view.ts spells it). */
  view (id: string): SandboxView | undefined {
    const sb = this.records.get(id)
    if (sb === undefined) return undefined
    return { sandbox: sb, network: (nid) => this.networks.byId(nid) }
  }

  /**
   * Validates and records a new container's network mode and endpoints (create). The record has no file of its own
   * yet: the container's own record carries it (one write on the create's path, not two); a change written here (a
   * connect, a rename, a stop) makes its file, and a restart takes the container's copy when it is newer (restore).
   */
  register (o: SandboxRequest): string[] {
    const { sb, warnings } = newSandbox(o, (ref) => this.networks.find(ref), (ref) => this.host.o.containers.find(ref) !== undefined)
    this.changed(sb)
    this.records.set(o.id, sb)
    return warnings
  }

  /**
   * Boot, before any request: the copy of a container's networking record its container's own record carries is
   * taken when it is newer than the record's own file (a start's change is written only there), or when there is no
   * readable file (created and not changed since, or a file a power loss left empty).
   */
  restore (id: string, record: SandboxRecord): void {
    const own = this.records.get(id)
    if (own !== undefined && (own.seq ?? 0) >= (record.seq ?? 0)) return
    this.records.set(id, structuredClone(record))
  }

  /**
   * Forgets a removed container: releases what it held and forgets its record at once; the record's file goes after
   * (in the order of its writes: flushed() waits for it), off the removal's reply. A crash before it is gone leaves a
   * record of no container, which the boot drops (dropOrphans).
   */
  async unregister (id: string): Promise<void> {
    const sb = this.records.get(id)
    if (sb === undefined) return
    if (sb.running) await this.release(sb, 'daemon')
    this.records.delete(id)
    this.deleteFile(id)
    for (const a of sb.attachments) this.dns.refreshOf(a.networkId)
    this.settledTransition(id)
  }

  private deleteFile (id: string): void {
    void this.afterWrites(id, async () => { await rm(sandboxFile(this.host.paths, id), { force: true }) }).catch((err) => {
      ops.warn('container %s: the sandbox record of the removed container was not deleted (dropped at the next start): %s', id.slice(0, 12), describeError(err))
    })
  }

  /**
   * Boot, before any request, once the containers' records were read (and their copies restored): the records of
   * containers that do not exist (a crash between a removal and its record's deletion) go; the addresses the others
   * hold are claimed from their pools.
   */
  dropOrphans (exists: (id: string) => boolean): void {
    for (const sb of [...this.records.values()]) {
      if (exists(sb.id)) continue
      ops.info('sandbox record %s belongs to no container (a crash during its create or removal): dropped', sb.id.slice(0, 12))
      this.records.delete(sb.id)
      this.deleteFile(sb.id)
    }
    this.claimAddresses()
  }

  /** A renamed container answers to its new name. */
  async rename (id: string, name: string): Promise<void> {
    const sb = this.records.get(id)
    if (sb === undefined) return
    sb.name = name
    await this.save(sb)
    for (const a of sb.attachments) this.dns.refreshOf(a.networkId)
  }

  /** Prepares a container's network before its process starts: the namespace, endpoints, ports and /etc files. */
  async setup (id: string, etcIn: EtcInput): Promise<SandboxSetup> {
    const hostResolv = this.host.hostResolv
    // --add-host name:host-gateway is the default bridge's gateway, as with dockerd
    const gw = this.networks.defaultGateway()
    const etc = { ...etcIn, extraHosts: etcIn.extraHosts.map((h) => h.endsWith(':host-gateway') && gw !== '' ? `${h.slice(0, -'host-gateway'.length)}${gw}` : h) }
    const sb = this.records.get(id)
    if (sb === undefined) {
      // no record (a container from before networking existed): loopback only, never the host's network
      return { netns: { kind: 'new' }, hosts: hostsFile({ ...etc, ip: null, links: [] }), resolvConf: resolvConf({ host: hostResolv, ...etc, embedded: null }), resolver: null, legacyLinks: [], ports: [] }
    }
    if (sb.running) await this.release(sb, 'daemon')
    sb.dnsConfig = { servers: etc.dns, search: etc.dnsSearch, options: etc.dnsOptions }
    delete sb.dns
    if (sb.mode === 'host') {
      const hostHosts = await readFile('/etc/hosts', 'utf8').catch(() => '')
      return { netns: { kind: 'host' }, hosts: hostHosts + hostsEntries(etc.extraHosts), resolvConf: resolvConf({ host: hostResolv, ...etc, embedded: null, hostNetwork: true }), resolver: null, legacyLinks: [], ports: [] }
    }
    if (sb.mode.startsWith('container:')) {
      const other = this.host.o.containers.find(sb.mode.slice('container:'.length))
      if (other === undefined) throw notFound(`No such container: ${sb.mode.slice('container:'.length)}`)
      if (!other.running) throw conflict(`cannot join network of a non running container: ${other.id}`)
      const osb = this.records.get(other.id)
      const path = osb !== undefined && osb.running && osb.netns !== '' ? osb.netns : `/proc/${other.pid}/ns/net`
      const first = osb?.attachments.find((a) => a.ip !== '')
      // the namespace's resolver is the other container's (its monitor serves the namespace)
      return { netns: { kind: 'join', path }, hosts: hostsFile({ ...etc, ip: first?.ip ?? null, links: [] }), resolvConf: resolvConf({ host: hostResolv, ...etc, embedded: osb?.resolver === true ? RESOLVER_ADDRESS : null }), resolver: null, legacyLinks: [], ports: [] }
    }
    const links = this.host.links
    if (links === null) {
      // no ip/nsenter (or not root): a namespace with loopback only, as before networking existed
      log('container %s gets loopback only: %s', id, this.host.unavailable)
      return { netns: { kind: 'new' }, hosts: hostsFile({ ...etc, ip: null, links: [] }), resolvConf: resolvConf({ host: hostResolv, ...etc, embedded: null }), resolver: null, legacyLinks: [], ports: [] }
    }
    this.checkLinks(sb)
    await this.networks.ensureHost()
    const path = netnsFile(this.host.paths, id)
    sb.netns = path
    // a user network at start: the container's monitor serves its resolver in the namespace (the engine passes it on)
    sb.resolver = this.host.o.monitors !== undefined && this.dns.wants(sb)
    sb.running = true
    let veths: VethSpec[]
    let ports: PortHold[]
    try {
      // the addresses and the published ports here; the namespace and the veths are the container's monitor's to
      // make (no process spawned here)
      veths = sb.attachments.map((a, i) => vethOf(this.assign(sb, a, `eth${i}`), i === 0))
      ports = await this.ports.publish(sb, this.portTarget(sb))
    } catch (err) {
      await this.release(sb, 'daemon')
      throw err
    }
    // not written here: the container's own record, written while its monitor starts it, carries this change (one
    // record on the start's path; restore() takes it at boot); a crash before that lands leaves the namespace and
    // veths to the boot's cleaning of what no record names
    this.changed(sb)
    for (const a of sb.attachments) {
      this.dns.refreshOf(a.networkId)
      this.emitEndpoint('connect', a.networkId, sb.id)
    }
    const first = sb.attachments[0]
    const legacyLinks = this.legacyLinks(sb)
    return {
      netns: { kind: 'create', path, veths },
      hosts: hostsFile({ ...etc, ip: first?.ip ?? null, links: legacyLinks.map((l) => ({ ip: l.ip, names: l.names })) }),
      resolvConf: resolvConf({ host: hostResolv, ...etc, embedded: sb.resolver ? RESOLVER_ADDRESS : null }),
      resolver: sb.resolver ? path : null,
      legacyLinks: legacyLinks.map(({ names, ...l }) => l),
      ports
    }
  }

  /**
   * The container stopped: ports, endpoints and namespace go; the attachments (aliases, static IPs) stay. `teardown`
   * 'monitor': the container's monitor recorded the exit (it has removed the namespace and deletes the veths);
   * 'daemon': a failed start, a monitor that died, a boot's reconciliation (what still exists is removed here).
   * `persist` false: the container is removed next (its record need not be written).
   */
  async release (sb: SandboxRecord, teardown: Teardown, persist = true): Promise<void> {
    await this.ports.unpublish(sb, this.portTarget(sb))
    for (const a of sb.attachments) {
      const had = a.endpointId !== ''
      await this.unplug(sb, a, teardown).catch((err) => { ops.warn('container %s: its endpoint on network %s was not all removed: %s', sb.id.slice(0, 12), a.networkId.slice(0, 12), describeError(err)) })
      if (had) this.emitEndpoint('disconnect', a.networkId, sb.id)
    }
    if (sb.netns !== '' && this.host.links !== null && teardown === 'daemon') await this.host.links.removeNetns(sb.netns)
    sb.netns = ''
    sb.running = false
    sb.resolver = false
    this.dns.forget(sb.id)
    // not waited for: a record that still says running after a crash is released at the boot (its namespace is gone)
    if (persist) void this.save(sb).catch((err) => { ops.warn('container %s: its released networking was not written (released again at the next start): %s', sb.id.slice(0, 12), describeError(err)) })
    else this.seq++
    for (const a of sb.attachments) this.dns.refreshOf(a.networkId)
    this.settledTransition(sb.id)
  }

  /**
   * Resolves at the next change of a container's namespace (its release at the exit or after a failed start, its
   * monitor's start, its removal), or after `ms`; `cancel` when no longer waited for. Taken before looking, so that
   * a change between the look and the wait is not missed.
   */
  transition (id: string, ms: number): { settled: Promise<void>, cancel: () => void } {
    let cancel = (): void => {}
    const settled = new Promise<void>((resolve) => {
      const waiters = this.transitionWaiters.get(id) ?? new Set<() => void>()
      this.transitionWaiters.set(id, waiters)
      const timer = setTimeout(() => { cancel(); resolve() }, ms)
      timer.unref()
      const wake = (): void => { cancel(); resolve() }
      cancel = () => {
        clearTimeout(timer)
        waiters.delete(wake)
        if (waiters.size === 0 && this.transitionWaiters.get(id) === waiters) this.transitionWaiters.delete(id)
      }
      waiters.add(wake)
    })
    return { settled, cancel: () => { cancel() } }
  }

  /** A container's namespace changed (released, started, removed): whoever waits for it looks again. */
  settledTransition (id: string): void {
    for (const wake of [...this.transitionWaiters.get(id) ?? []]) wake()
  }

  /**
   * docker network connect: recorded, and plugged at once when the container runs. False, with nothing changed, when
   * the container runs but its namespace is not there to wire into: it is exiting (its monitor removed it, the exit
   * not applied yet) or starting (its monitor has not made it yet); the caller asks again once that settled
   * (transition()): connected then as a stopped container or plugged into the new run, never recorded unplugged on
   * a running container.
   */
  async connect (netRef: string, c: { id: string, name: string }, containerRef: string, ep: EndpointRequest): Promise<boolean> {
    const n = this.networks.get(netRef)
    const sb = this.records.get(c.id)
    if (sb === undefined) throw notFound(`No such container: ${containerRef}`)
    // dockerd's wording, case by case
    if (sb.mode === 'none' || n.driver === 'null') throw forbidden('container cannot be connected to multiple networks with one of the networks in private (none) mode')
    if (sb.mode === 'host' || sb.mode.startsWith('container:')) throw forbidden('container sharing network namespace with another container or host cannot be connected to any other network')
    if (n.driver === 'host') throw forbidden('container cannot be disconnected from host network or connected to host network')
    checkEndpoint(n, ep)
    if (sb.attachments.some((a) => a.networkId === n.id)) throw forbidden(`endpoint with name ${c.name} already exists in network ${n.name}`)
    if (sb.running && !await netnsAlive(sb.netns)) { log('connect of %s to %s: its namespace is in transition', sb.id.slice(0, 12), n.name); return false }
    const a = newAttachment(n.id, ep)
    sb.attachments.push(a)
    if (sb.running) {
      try { await this.wire(sb, this.assign(sb, a, `eth${sb.attachments.length - 1}`), false) } catch (err) {
        await this.unplug(sb, a).catch((e) => { ops.warn('container %s: a failed connect leaves part of its endpoint on network %s: %s', sb.id.slice(0, 12), n.name, describeError(e)) })
        sb.attachments.splice(sb.attachments.indexOf(a), 1)
        // the namespace went while it was wired (the container exited meanwhile)
        if (!await netnsAlive(sb.netns)) { log('connect of %s to %s: its namespace went (%s)', sb.id.slice(0, 12), n.name, describeError(err)); return false }
        throw err
      }
      // joining its first network that resolves names, a running container gets the resolver (as with dockerd)
      if (sb.resolver !== true && resolvesNames(n)) {
        // (its monitor serves it: one that exited meanwhile has the resolver at its next start)
        await this.enableResolver(sb).catch(async (err) => { if (!(isEngineError(err) && err.kind === 'conflict') && await netnsAlive(sb.netns)) throw err })
      }
    }
    await this.save(sb)
    this.dns.refreshOf(n.id)
    this.dns.attachmentsChanged(sb.id)
    this.emitEndpoint('connect', n.id, c.id)
    return true
  }

  async disconnect (netRef: string, containerRef: string, force: boolean): Promise<void> {
    const n = this.networks.get(netRef)
    const c = this.host.o.containers.find(containerRef)
    let sb = c === undefined ? undefined : this.records.get(c.id)
    if (sb === undefined && force) sb = [...this.records.values()].find((s) => s.name === containerRef || s.id.startsWith(containerRef))
    if (sb === undefined) throw notFound(`No such container: ${containerRef}`)
    const i = sb.attachments.findIndex((a) => a.networkId === n.id)
    if (i === -1) throw forbidden(`container ${sb.id} is not connected to network ${n.name}`)
    const a = sb.attachments[i] as Attachment
    if (sb.running) await this.unplug(sb, a)
    sb.attachments.splice(i, 1)
    this.emitEndpoint('disconnect', n.id, sb.id)
    await this.save(sb)
    this.dns.refreshOf(n.id)
    this.dns.attachmentsChanged(sb.id)
  }

  /** --link on the default bridge needs its targets running, as with dockerd (user networks resolve links by name). */
  private checkLinks (sb: SandboxRecord): void {
    for (const a of sb.attachments) {
      if (this.networks.byId(a.networkId)?.predefined !== true) continue
      for (const l of a.links) {
        const [target = '', alias = ''] = l.split(':')
        const name = target.replace(/^\//, '')
        const c = this.host.o.containers.find(name)
        if (c === undefined) throw invalidArgument(`could not get container for ${name}: No such container: ${name}`)
        if (!c.running) throw conflict(`Cannot link to a non running container: /${c.name} AS /${sb.name}/${alias === '' ? name : alias.split('/').pop() ?? name}`)
      }
    }
  }

  /**
   * The links of its default-bridge endpoint (dockerd's legacy links: /etc/hosts entries and environment); links on
   * user networks are names of the container's resolver instead.
   */
  private legacyLinks (sb: SandboxRecord): Array<LegacyLink & { names: string[] }> {
    const out: Array<LegacyLink & { names: string[] }> = []
    for (const a of sb.attachments) {
      if (this.networks.byId(a.networkId)?.predefined !== true) continue
      for (const l of a.links) {
        const [target = '', alias = ''] = l.split(':')
        const c = this.host.o.containers.find(target.replace(/^\//, ''))
        const osb = c === undefined ? undefined : this.records.get(c.id)
        const ip = osb?.attachments.find((x) => x.networkId === a.networkId)?.ip ?? ''
        if (c === undefined || ip === '') continue
        const aliasName = (alias === '' ? c.name : alias.split('/').pop()) ?? c.name
        out.push({ name: `/${sb.name}/${aliasName}`, containerId: c.id, ip, names: [...new Set([aliasName, c.id.slice(0, 12), c.name].filter((x) => x !== ''))] })
      }
    }
    return out
  }

  /**
   * The container's monitor opens its resolver now, and its resolv.conf names it (rewritten in place: it is bound
   * into the container), unless someone changed that file since it was written (dockerd leaves such a file alone).
   */
  private async enableResolver (sb: SandboxRecord): Promise<void> {
    const file = this.host.o.monitors?.resolvConfFile(sb.id)
    if (file === undefined) return
    await this.dns.enable(sb)
    const cfg = sb.dnsConfig ?? { servers: sb.dns ?? [], search: [], options: [] }
    const etc = { host: this.host.hostResolv, dns: cfg.servers, dnsSearch: cfg.search, dnsOptions: cfg.options }
    const current = await readFile(file, 'utf8').catch(() => null)
    if (current === resolvConf({ ...etc, embedded: null })) await writeFile(file, resolvConf({ ...etc, embedded: RESOLVER_ADDRESS }))
    else log('resolv.conf of %s was changed: left alone', sb.id)
  }

  /** Removes a legacy link (one of its default-bridge endpoint) by its alias; false when there is none. */
  async removeLink (id: string, alias: string): Promise<boolean> {
    const sb = this.records.get(id)
    for (const a of sb?.attachments ?? []) {
      if (this.networks.byId(a.networkId)?.predefined !== true) continue
      const i = a.links.findIndex((l) => {
        const [target = '', al = ''] = l.split(':')
        return ((al === '' ? target : al).split('/').pop() ?? '') === alias
      })
      if (i === -1) continue
      a.links.splice(i, 1)
      await this.save(sb as SandboxRecord)
      return true
    }
    return false
  }

  /** The interfaces of the container's namespace (its own, or the one it joined): ethN. */
  interfaces (id: string): string[] {
    let sb = this.records.get(id)
    if (sb?.mode.startsWith('container:') === true) {
      const other = this.host.o.containers.find(sb.mode.slice('container:'.length))
      sb = other === undefined ? undefined : this.records.get(other.id)
    }
    return (sb?.attachments ?? []).map((a) => a.ifName).filter((n) => n !== '')
  }

  /** An endpoint's address (from the pool, or the static one), MAC, endpoint ID and veth name. */
  private assign (sb: SandboxRecord, a: Attachment, ifName: string): Wire {
    // an attachment recorded by name (a network unknown at create) takes the network of that name created since
    const lease = this.networks.lease(a.networkId, a.staticIp, a.staticIp6 ?? '')
    a.networkId = lease.n.id
    a.ip = lease.ip
    if (lease.ip6 !== '') a.ip6 = lease.ip6
    a.mac = (a.staticMac ?? '') !== '' ? a.staticMac as string : mac(lease.ip)
    a.endpointId = randomBytes(32).toString('hex')
    a.ifName = ifName
    a.hostIf = `${this.host.linkPrefix}v${randomBytes(4).toString('hex')}`.slice(0, 15)
    return { a, lease }
  }

  /** The veth of an endpoint connected to a running container (its namespace exists): into it, on the bridge. */
  private async wire (sb: SandboxRecord, w: Wire, defaultRoute: boolean): Promise<void> {
    const n = w.lease.n
    await (this.host.links as Links).attachVeth({
      netns: sb.netns,
      hostName: w.a.hostIf,
      ifName: w.a.ifName,
      bridge: n.bridge,
      mac: w.a.mac,
      cidr: `${w.a.ip}/${w.lease.bits}`,
      // link-local addresses besides (dockerd's /16 and /64)
      extra: (w.a.linkLocal ?? []).map((ip) => `${ip}/${ip.includes(':') ? 64 : 16}`),
      ...(w.lease.ip6 !== '' ? { cidr6: `${w.lease.ip6}/${w.lease.bits6}` } : {}),
      mtu: mtuOf(n),
      gateway: defaultRoute && !n.internal ? w.lease.gateway : null,
      gateway6: defaultRoute && !n.internal && w.lease.ip6 !== '' ? w.lease.gateway6 : null
    })
  }

  /**
   * An endpoint's veth goes and its address returns to the pool. A monitor deletes its container's veths after the
   * exit (`teardown` 'monitor'); otherwise the daemon deletes one that still exists. Deleting a veth waits for the
   * kernel's RCU grace periods (~35 ms here): never on the exit → remove path; a network removal, close and purge
   * wait for the deletions (settled()).
   */
  private async unplug (sb: SandboxRecord, a: Attachment, teardown: Teardown = 'daemon'): Promise<void> {
    const links = this.host.links
    if (a.hostIf !== '' && links !== null) {
      if (teardown === 'monitor') this.vanishing.add(a.hostIf)
      else if (await linkExists(a.hostIf)) this.track(links.detachVeth(a.hostIf))
    }
    if (a.ip !== '') this.networks.release(a.networkId, a.ip)
    if ((a.ip6 ?? '') !== '') this.networks.release(a.networkId, a.ip6 as string)
    a.ip = ''; a.mac = ''; a.hostIf = ''; a.ifName = ''; a.endpointId = ''
    delete a.ip6
  }

  private track (p: Promise<void>): void {
    const q = p.catch((err) => { ops.warn('a container\'s host link was not deleted: %s', describeError(err)) }).finally(() => { this.pendingDeletes.delete(q) })
    this.pendingDeletes.add(q)
  }

  /** Waits for the link deletions still running (the daemon's, and its containers' monitors'). */
  async settled (): Promise<void> {
    const deadline = Date.now() + VANISH_WAIT_MS
    while (this.vanishing.size > 0) {
      for (const name of [...this.vanishing]) if (!await linkExists(name)) this.vanishing.delete(name)
      if (this.vanishing.size === 0) break
      const links = this.host.links
      if (Date.now() >= deadline || links === null) {
        // a monitor killed before it deleted them (they outlive it only while a container joined to it runs)
        for (const name of this.vanishing) if (links !== null) this.track(links.detachVeth(name))
        this.vanishing.clear()
        break
      }
      await new Promise((resolve) => setTimeout(resolve, 10))
    }
    while (this.pendingDeletes.size > 0) await Promise.all([...this.pendingDeletes])
  }

  /** dockerd's network connect/disconnect events, also sent when a container starts and stops. */
  private emitEndpoint (action: 'connect' | 'disconnect', networkId: string, containerId: string): void {
    const n = this.networks.byId(networkId)
    if (n !== undefined) this.host.o.events.emit('network', action, n.id, { container: containerId, name: n.name, type: n.driver })
  }
}
