// The networks: their records (the predefined bridge, host and none, and user-defined ones), their address pools
// (IPAM), and their bridges and bridge rules on the host. Called under the network service's lock.
import { readdir, rm } from 'node:fs/promises'
import { randomInt } from 'node:crypto'
import { conflict, invalidArgument, notFound, describeError } from '../errors.js'
import { writeJsonAtomic } from '../util/atomic.js'
import { readTexts } from '../util/read-files.js'
import { newId, resolvePrefix, FULL_ID } from '../util/ids.js'
import { levelLogger, logger } from '../log.js'
import { run } from './commands.js'
import { setRouteLocalnet, enableBridgeNetfilter, type Rule } from './firewall.js'
import { AddressPool, completePool, pickSubnet, DEFAULT_POOLS, type PoolConfig } from './ipam.js'
import { AddressPool6 } from './ipam6.js'
import { overlaps, parseIp, parsePrefix, requirePrefix, type Prefix } from './cidr.js'
import { networkFile } from './paths.js'
import { newNetworkRecord, subnetFromPools, unsupportedOptions, type CreateNetworkRequest } from './network-create.js'
import type { NetworkHost } from './network-host.js'
import type { Driver, NetworkRecord } from './model.js'
import { isoTime } from '../util/time.js'

const log = logger('engine:network')
const ops = levelLogger('engine:network')

/** How many times a network created from the default pools picks again after clashing with a racing engine. */
const CLASH_RETRIES = 8

const BRIDGE_NAME_OPTION = 'com.docker.network.bridge.name'
const MASQUERADE_OPTION = 'com.docker.network.bridge.enable_ip_masquerade'
const MTU_OPTION = 'com.docker.network.driver.mtu'

/** An address handed to an endpoint: its network, and the gateway and prefix length of its subnet. */
/** An endpoint's addresses on a network: IPv4 always, IPv6 on a network with EnableIPv6 ('' otherwise). */
export interface Lease { n: NetworkRecord, ip: string, gateway: string, bits: string, ip6: string, gateway6: string, bits6: string }

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

export function mtuOf (n: NetworkRecord): number {
  const v = Number(n.options[MTU_OPTION] ?? '0')
  return Number.isInteger(v) && v >= 68 && v <= 65535 ? v : 0
}

export class Networks {
  private readonly host: NetworkHost
  private readonly records = new Map<string, NetworkRecord>()
  private readonly pools = new Map<string, AddressPool[]>()
  private readonly pools6 = new Map<string, AddressPool6[]>()
  /** Chains created and bridges up (ensureHost). */
  private up = false

  constructor (host: NetworkHost) {
    this.host = host
  }

  /** Boot: the records on disk, the predefined networks, and the pools (addresses claimed later by the sandboxes). */
  async load (): Promise<void> {
    const dir = this.host.paths.networks
    // every record read at once (a restart answers /_ping only after this), then taken in the directory's order
    const files = (await readdir(dir)).filter((f) => f.endsWith('.json'))
    const texts = await readTexts(files.map((f) => `${dir}/${f}`))
    for (const [i, f] of files.entries()) {
      try {
        const read = texts[i] as PromiseSettledResult<string>
        if (read.status === 'rejected') throw read.reason
        const rec = JSON.parse(read.value) as NetworkRecord
        this.records.set(rec.id, rec)
      } catch (err) { ops.warn('network record %s is unreadable and was skipped: %s', f, describeError(err)) }
    }
    await this.ensurePredefined()
    for (const n of this.records.values()) this.setPools(n)
  }

  get hostUp (): boolean { return this.up }

  /** Creates the chains and brings every bridge up (once per daemon, on first need). */
  async ensureHost (): Promise<void> {
    if (this.up || this.host.links === null) return
    if (this.host.firewall !== null) await this.host.firewall.setup()
    // every bridge at once: their rules reach the kernel in one batch (Firewall)
    await Promise.all([...this.records.values()].filter((n) => n.driver === 'bridge' || n.driver === 'overlay').map(async (n) => { await this.bringUp(n) }))
    this.up = true
  }

  /** The host's networking was removed (purge): the next need sets it up again. */
  hostGone (): void { this.up = false }

  private async ensurePredefined (): Promise<void> {
    const want: Array<{ name: string, driver: Driver }> = [{ name: 'bridge', driver: 'bridge' }, { name: 'host', driver: 'host' }, { name: 'none', driver: 'null' }]
    for (const w of want) {
      let rec = [...this.records.values()].find((n) => n.predefined && n.name === w.name)
      if (rec === undefined) {
        rec = {
          id: newId(),
          name: w.name,
          driver: w.driver,
          created: isoTime(),
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
        const o = this.host.o
        const bridge = o.defaultBridge ?? 'berth0'
        rec.bridge = bridge
        rec.icc = o.icc !== false
        rec.options = {
          'com.docker.network.bridge.default_bridge': 'true',
          'com.docker.network.bridge.enable_icc': String(rec.icc),
          'com.docker.network.bridge.enable_ip_masquerade': 'true',
          'com.docker.network.bridge.host_binding_ipv4': '0.0.0.0',
          [BRIDGE_NAME_OPTION]: bridge,
          'com.docker.network.driver.mtu': '1500'
        }
        if (o.bip !== undefined && o.bip !== '') {
          const gw = o.bip.split('/')[0] as string
          const p = parsePrefix(o.bip)
          if (p === null || parseIp(gw) === null) throw invalidArgument(`invalid --bip: ${o.bip}`)
          rec.pools = [completePool({ gateway: gw }, p)]
        } else if (rec.pools.length === 0) {
          rec.pools = await this.existingBridgePool(bridge)
        }
        if (rec.pools.length === 0) {
          const p = pickSubnet(o.defaultAddressPools ?? DEFAULT_POOLS, await this.usedSubnets(rec.id))
          if (p === null) throw conflict('could not find an available, non-overlapping IPv4 address pool among the defaults to assign to the network')
          rec.pools = [completePool({}, p)]
        }
      }
      this.records.set(rec.id, rec)
      await writeJsonAtomic(networkFile(this.host.paths, rec.id), rec)
    }
  }

  /**
   * The pool of a default bridge that already exists on the host with an IPv4 address (no --bip): dockerd takes that
   * address for the default network's gateway and subnet instead of adding one more. None when there is no such bridge.
   */
  private async existingBridgePool (bridge: string): Promise<PoolConfig[]> {
    const links = this.host.links
    if (links === null || !await links.bridgeExists(bridge)) return []
    for (const cidr of await links.bridgeAddresses(bridge)) {
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
    for (const n of this.records.values()) if (n.id !== except) for (const p of n.pools) out.push(requirePrefix(p.subnet))
    const tools = this.host.tools
    if (tools !== null) {
      const r = await run(tools.ip, ['-4', 'route', 'show', 'table', 'all'])
      for (const line of r.stdout.split('\n')) {
        const dst = line.split(' ')[0] ?? ''
        const p = parsePrefix(dst.includes('/') ? dst : `${dst}/32`)
        if (p !== null && dst !== 'default' && p.bits > 0 && !line.includes('table local')) out.push(p)
      }
      // a bridge that is down has no route yet, but its address is taken
      for (const a of await hostAddresses(tools.ip)) out.push(a.prefix)
    }
    return out
  }

  /** Every record, those being removed too (their bridges are still ours). */
  all (): NetworkRecord[] { return [...this.records.values()] }

  /** The networks the API shows: not those being removed. */
  visible (): NetworkRecord[] { return [...this.records.values()].filter((n) => n.removing !== true) }

  byId (id: string): NetworkRecord | undefined { return this.records.get(id) }

  /** A network by full ID, name or unique ID prefix; never one being removed. */
  find (ref: string): NetworkRecord | undefined {
    if (FULL_ID.test(ref)) { const n = this.records.get(ref); if (n !== undefined && n.removing !== true) return n }
    for (const n of this.records.values()) if (n.name === ref && n.removing !== true) return n
    const id = resolvePrefix(this.visible().map((n) => n.id), ref)
    return id === undefined ? undefined : this.records.get(id)
  }

  get (ref: string): NetworkRecord {
    const n = ref === '' ? undefined : this.find(ref)
    if (n === undefined) throw notFound(`network ${ref} not found`)
    return n
  }

  /** The default bridge's gateway (what `host-gateway` in --add-host stands for), '' without one. */
  defaultGateway (): string {
    return [...this.records.values()].find((n) => n.predefined && n.driver === 'bridge')?.pools[0]?.gateway ?? ''
  }

  async create (req: CreateNetworkRequest): Promise<{ id: string, warning: string }> {
    const o = this.host.o
    const clashed: Prefix[] = []
    for (let attempt = 0; ; attempt++) {
      const rec = newNetworkRecord(req, {
        existing: [...this.records.values()],
        used: [...await this.usedSubnets(''), ...clashed],
        pools: o.defaultAddressPools ?? DEFAULT_POOLS,
        linkPrefix: this.host.linkPrefix,
        swarmActive: o.swarmActive?.() === true,
        ...(o.swarmNetworkUse?.pools() !== undefined ? { swarmPools: o.swarmNetworkUse.pools() } : {}),
        // after a clash, not the first free subnet: the engine it raced with is choosing again too
        skip: attempt === 0 ? 0 : randomInt(4)
      })
      const id = rec.id
      await writeJsonAtomic(networkFile(this.host.paths, id), rec)
      this.records.set(id, rec)
      this.setPools(rec)
      try {
        if (this.host.links !== null) {
          if (this.up) await this.bringUp(rec)
          else await this.ensureHost()
        }
      } catch (err) {
        await this.drop(rec)
        throw err
      }
      const clash = subnetFromPools(req) && attempt < CLASH_RETRIES ? await this.hostClash(rec) : null
      if (clash !== null) {
        log('network %s: subnet %s clashes with %s on the host (another engine picked it at the same time); picking again', req.name, rec.pools[0]?.subnet, clash.name)
        await this.drop(rec)
        clashed.push(clash.prefix)
        continue
      }
      this.emitLifecycle(rec, 'create')
      return { id, warning: unsupportedOptions(rec) }
    }
  }

  /**
   * Another host interface holding an address in the subnet of a network whose bridge just got its address. Two
   * engines can pick the same free subnet before either bridge has it; the one that looks after both addresses are in
   * place sees the clash and moves on, and the later one to add its address always looks after the earlier one's is
   * there, so two engines never both keep a subnet.
   */
  private async hostClash (n: NetworkRecord): Promise<{ name: string, prefix: Prefix } | null> {
    const subnet = n.pools[0]?.subnet
    if (this.host.tools === null || this.host.links === null || subnet === undefined) return null
    const own = requirePrefix(subnet)
    for (const a of await hostAddresses(this.host.tools.ip)) {
      if (a.name !== n.bridge && overlaps(a.prefix, own)) return a
    }
    return null
  }

  private bridgeRules (n: NetworkRecord): Rule[] {
    const fw = this.host.firewall
    if (fw === null) return []
    return fw.bridgeRules({ bridge: n.bridge, subnet: n.pools[0]?.subnet ?? '', internal: n.internal, icc: n.icc, masquerade: n.options[MASQUERADE_OPTION] !== 'false' })
  }

  private async bringUp (n: NetworkRecord): Promise<void> {
    const links = this.host.links
    const pool = n.pools[0]
    if (links === null || pool === undefined) return
    await links.ensureBridge(n.bridge, `${pool.gateway}/${pool.subnet.split('/')[1] as string}`, mtuOf(n), `${this.host.bridgeMark}${n.id.slice(0, 12)}`)
    // an IPv6 network's gateway is the bridge's too (no duplicate address detection: it is the bridge's own subnet)
    const pool6 = n.pools6?.[0]
    if (n.enableIPv6 === true && pool6 !== undefined) await links.ensureAddress6(n.bridge, `${pool6.gateway}/${pool6.subnet.split('/')[1] as string}`)
    await setRouteLocalnet(n.bridge, this.host.firewall?.loopbackDnat === true)
    const fw = this.host.firewall
    if (fw !== null) {
      if (!n.icc) await enableBridgeNetfilter()
      await fw.add(this.bridgeRules(n))
    }
  }

  /** Removes a network that has no active endpoint (the caller checked, and waited for its veths to go). */
  async remove (n: NetworkRecord): Promise<void> {
    await this.drop(n)
    this.emitLifecycle(n, 'remove')
  }

  /** A swarm-scoped network leaves the API now (its removal event too) and the host when its endpoints have gone. */
  async markRemoving (n: NetworkRecord): Promise<void> {
    n.removing = true
    await writeJsonAtomic(networkFile(this.host.paths, n.id), n)
    this.emitLifecycle(n, 'remove')
  }

  /** Tears down a network marked removing (its event went out when it was marked). */
  async finishRemoving (n: NetworkRecord): Promise<void> { await this.drop(n) }

  private async drop (n: NetworkRecord): Promise<void> {
    if (this.host.firewall !== null) await this.host.firewall.remove(this.bridgeRules(n))
    if (this.host.links !== null && n.bridge !== '') await this.host.links.deleteLink(n.bridge)
    await rm(networkFile(this.host.paths, n.id), { force: true })
    this.records.delete(n.id)
    this.pools.delete(n.id)
    this.pools6.delete(n.id)
  }

  /**
   * A network's creation or removal: a local network's `create`/`destroy` with its name and driver; a swarm-scoped
   * (overlay) network's as dockerd relays the cluster's: `create` then the allocator's `update`, and `remove`, with
   * only the name, scope swarm.
   */
  private emitLifecycle (n: NetworkRecord, what: 'create' | 'remove'): void {
    const events = this.host.o.events
    if (n.driver !== 'overlay') {
      events.emit('network', what === 'create' ? 'create' : 'destroy', n.id, { name: n.name, type: n.driver })
      return
    }
    for (const action of what === 'create' ? ['create', 'update'] : ['remove']) events.emit('network', action, n.id, { name: n.name }, 'swarm')
  }

  // ---- addresses ------------------------------------------------------------------------------------------------

  private poolFor (networkId: string, ip: string): AddressPool | undefined {
    const n = parseIp(ip)
    return n === null ? undefined : this.pools.get(networkId)?.find((p) => (((n ^ p.subnet.base) >>> (32 - p.subnet.bits)) === 0) || p.subnet.bits === 0)
  }

  private setPools (n: NetworkRecord): void {
    this.pools.set(n.id, n.pools.map((p) => new AddressPool(p)))
    if (n.enableIPv6 === true) this.pools6.set(n.id, (n.pools6 ?? []).map((p) => new AddressPool6(p)))
  }

  /** Boot: an address a running container's record holds is taken (IPv4 or IPv6). */
  claim (networkId: string, ip: string): void {
    if (ip.includes(':')) this.pools6.get(networkId)?.find((p) => p.contains(ip))?.claim(ip)
    else this.poolFor(networkId, ip)?.claim(ip)
  }

  /**
   * An address on a network (by ID, or by name for an attachment recorded before its network existed): the static
   * one, or the next free one of its pool.
   */
  lease (networkRef: string, staticIp: string, staticIp6 = ''): Lease {
    const n = this.records.get(networkRef) ?? (FULL_ID.test(networkRef) ? undefined : this.find(networkRef))
    if (n === undefined) throw notFound(`network ${networkRef} not found`)
    const pool = this.pools.get(n.id)?.[0]
    const cfg = n.pools[0]
    if (pool === undefined || cfg === undefined) throw conflict(`network ${n.name} has no IPv4 pool`)
    let ip: string
    if (staticIp !== '') { pool.claim(staticIp); ip = staticIp } else {
      try { ip = pool.allocate() } catch { throw conflict(`no available IPv4 addresses on this network's address pools: ${n.name} (${n.id})`) }
    }
    const six = { ip6: '', gateway6: '', bits6: '' }
    const pool6 = this.pools6.get(n.id)?.[0]
    const cfg6 = n.pools6?.[0]
    if (n.enableIPv6 === true && pool6 !== undefined && cfg6 !== undefined) {
      try {
        if (staticIp6 !== '') { pool6.claim(staticIp6); six.ip6 = staticIp6 } else six.ip6 = pool6.allocate()
      } catch (err) {
        pool.release(ip)
        throw err
      }
      six.gateway6 = cfg6.gateway
      six.bits6 = cfg6.subnet.split('/')[1] as string
    }
    return { n, ip, gateway: cfg.gateway, bits: cfg.subnet.split('/')[1] as string, ...six }
  }

  /** An endpoint's address goes back to its pool (IPv4 or IPv6). */
  release (networkId: string, ip: string): void {
    if (ip.includes(':')) this.pools6.get(networkId)?.find((p) => p.contains(ip))?.release(ip)
    else this.poolFor(networkId, ip)?.release(ip)
  }
}
