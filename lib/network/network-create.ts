// A network create request checked the way dockerd checks it, and the record it becomes. Pure: the service passes
// the networks that exist and the subnets in use (its own and the host's routes).
import { conflict, forbidden, invalidArgument, notFound } from '../errors.js'
import { newId } from '../util/ids.js'
import { completePool, pickSubnet, type PoolConfig, type PoolRequest } from './ipam.js'
import { parseIp, parsePrefix, requirePrefix, overlaps, type Prefix } from './cidr.js'
import { overlaps6, parsePrefix6, type Prefix6 } from './cidr6.js'
import { completePool6 } from './ipam6.js'
import type { Driver, NetworkRecord } from './model.js'
import { isoTime } from '../util/time.js'

export interface CreateNetworkRequest {
  name: string
  driver: string
  internal: boolean
  attachable: boolean
  enableIPv6: boolean
  ipamDriver: string
  ipamOptions: Record<string, string>
  pools: PoolRequest[]
  options: Record<string, string>
  labels: Record<string, string>
  /** The swarm's routing-mesh network (overlay, never attachable, at most one). */
  ingress?: boolean
}

export interface CreateContext {
  existing: NetworkRecord[]
  /** Subnets in use: networks' and the host's routes. */
  used: Prefix[]
  /** Where subnets come from when none is given (--default-address-pool). */
  pools: ReadonlyArray<{ base: string, size: number }>
  /** The engine's link prefix: bridges are named <prefix>b<id>. */
  linkPrefix: string
  swarmActive: boolean
  /** In a swarm: where an overlay network's subnet comes from when none is given (init's DefaultAddrPool, SubnetSize). */
  swarmPools?: ReadonlyArray<{ base: string, size: number }>
  /** Free subnets of the pools to pass over (another try after a clash with a racing engine); default 0. */
  skip?: number
}

const BRIDGE_NAME_OPTION = 'com.docker.network.bridge.name'
const ICC_OPTION = 'com.docker.network.bridge.enable_icc'
/** Driver options this engine honours; others are kept (inspect shows them) and named in the create Warning. */
const HONOURED_OPTIONS = new Set([BRIDGE_NAME_OPTION, ICC_OPTION, 'com.docker.network.bridge.enable_ip_masquerade', 'com.docker.network.driver.mtu'])

export function unsupportedOptions (rec: NetworkRecord): string {
  const names = Object.keys(rec.options).filter((k) => !HONOURED_OPTIONS.has(k))
  return names.length === 0 ? '' : `options not supported by this engine were ignored: ${names.join(', ')}`
}

/** The IPv6 pools of a create request, checked (an IPv6 subnet, within no other network's), completed. */
function ipv6Pools (reqs: PoolRequest[], ctx: CreateContext): PoolConfig[] {
  const out: PoolConfig[] = []
  const own = ctx.existing.flatMap((n) => (n.pools6 ?? []).map((x) => parsePrefix6(x.subnet))).filter((p): p is Prefix6 => p !== null)
  for (const pr of reqs) {
    if (pr.subnet === undefined || pr.subnet === '') throw invalidArgument('invalid network config: a gateway or an IP range needs a subnet')
    const p = parsePrefix6(pr.subnet)
    if (p === null) throw invalidArgument(`invalid CIDR address: ${pr.subnet}`)
    if ([...own, ...out.map((x) => parsePrefix6(x.subnet) as Prefix6)].some((u) => overlaps6(u, p))) {
      throw forbidden('invalid pool request: Pool overlaps with other one on this address space')
    }
    const pool = completePool6(pr, p)
    if ((pr.gateway ?? '') === '') pool.autoGateway = true
    out.push(pool)
  }
  return out
}

/** Whether the request leaves the subnet to the default pools. */
export function subnetFromPools (req: CreateNetworkRequest): boolean {
  return !req.pools.some((p) => (p.subnet ?? '') !== '' && !(p.subnet ?? '').includes(':'))
}

export function newNetworkRecord (req: CreateNetworkRequest, ctx: CreateContext): NetworkRecord {
  // any other name is taken as given (dockerd's: spaces too)
  if (req.name.trim() === '') throw invalidArgument('network name is empty')
  if (['bridge', 'host', 'none'].includes(req.name) && ctx.existing.some((n) => n.predefined && n.name === req.name)) {
    throw forbidden(`${req.name} is a pre-defined network and cannot be created`)
  }
  const driver = req.driver === '' ? 'bridge' : req.driver
  if (driver === 'host' || driver === 'null') throw forbidden(`only one instance of "${driver}" network is allowed`)
  if (driver === 'overlay' && !ctx.swarmActive) {
    throw forbidden('This node is not a swarm manager. Use "docker swarm init" or "docker swarm join" to connect this node to swarm and try again.')
  }
  if (driver !== 'bridge' && driver !== 'overlay') throw notFound(`plugin "${driver}" not found`)
  if (req.ingress === true) {
    // swarmkit's and libnetwork's checks, in their words
    if (driver !== 'overlay') throw forbidden('Ingress network can only be global scope network')
    if (req.attachable) throw invalidArgument('rpc error: code = InvalidArgument desc = ingress network cannot be attachable')
    const other = ctx.existing.find((n) => n.ingress === true && n.removing !== true)
    if (other !== undefined) throw conflict(`rpc error: code = AlreadyExists desc = ingress network (${other.id}) is already present`)
  }
  // a network being removed (its name left the API) does not hold its name; its subnet and bridge it still holds
  if (ctx.existing.some((n) => n.name === req.name && n.removing !== true)) throw conflict(`network with name ${req.name} already exists`)
  if (req.ipamDriver !== '' && req.ipamDriver !== 'default') throw notFound(`plugin "${req.ipamDriver}" not found`)
  const mtu = req.options['com.docker.network.driver.mtu']
  if (mtu !== undefined && !(/^\d+$/.test(mtu) && Number(mtu) >= 68 && Number(mtu) <= 65535)) throw invalidArgument(`invalid MTU number: ${mtu}`)
  const used = ctx.used
  const pools: PoolConfig[] = []
  const isV6 = (pr: PoolRequest): boolean => (pr.subnet ?? pr.gateway ?? '').includes(':')
  const pools6 = ipv6Pools(req.pools.filter(isV6), ctx)
  // dockerd's words and status (404): it has no default IPv6 pools either
  if (req.enableIPv6 && pools6.length === 0) throw notFound('could not find an available, non-overlapping IPv6 address pool among the defaults to assign to the network')
  for (const pr of req.pools.filter((x) => !isV6(x))) {
    if (pr.subnet === undefined || pr.subnet === '') {
      if ((pr.gateway ?? '') !== '' || (pr.ipRange ?? '') !== '') throw invalidArgument('invalid network config: a gateway or an IP range needs a subnet')
      continue
    }
    const p = parsePrefix(pr.subnet)
    if (p === null) throw invalidArgument(`invalid CIDR address: ${pr.subnet}`)
    if (parseIp(pr.subnet.split('/')[0] as string) === null) throw invalidArgument(`invalid CIDR address: ${pr.subnet}`)
    const own = ctx.existing.flatMap((n) => n.pools.map((x) => requirePrefix(x.subnet)))
    if (own.some((u) => overlaps(u, p)) || pools.some((x) => overlaps(requirePrefix(x.subnet), p))) {
      throw forbidden('invalid pool request: Pool overlaps with other one on this address space')
    }
    const pool = completePool(pr, p)
    if ((pr.gateway ?? '') === '') pool.autoGateway = true
    pools.push(pool)
  }
  if (pools.length === 0) {
    const p = pickSubnet(driver === 'overlay' && ctx.swarmPools !== undefined ? ctx.swarmPools : ctx.pools, used, ctx.skip)
    if (p === null) throw forbidden('all predefined address pools have been fully subnetted')
    pools.push(completePool({}, p))
  }
  const id = newId()
  const bridge = req.options[BRIDGE_NAME_OPTION] ?? `${ctx.linkPrefix}b${id.slice(0, 14 - ctx.linkPrefix.length)}`
  if (bridge.length > 15 || !/^[a-zA-Z0-9_.-]+$/.test(bridge)) throw invalidArgument(`invalid bridge name ${bridge}`)
  if (ctx.existing.some((n) => n.bridge === bridge)) throw conflict(`bridge name ${bridge} is already in use by another network`)
  const rec: NetworkRecord = {
    id,
    name: req.name,
    driver: driver as Driver,
    created: isoTime(),
    internal: req.internal,
    attachable: req.attachable,
    predefined: false,
    options: req.options,
    labels: req.labels,
    ipamDriver: 'default',
    ipamOptions: req.ipamOptions,
    pools,
    bridge,
    icc: req.options[ICC_OPTION] !== 'false',
    ...(req.ingress === true ? { ingress: true } : {}),
    ...(req.enableIPv6 ? { enableIPv6: true } : {}),
    ...(pools6.length > 0 ? { pools6 } : {})
  }
  return rec
}
