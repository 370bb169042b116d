// Address management for one network: the pool (subnet, range, gateway, auxiliary addresses) and the allocations.
// Pure: the network service persists the allocations with the endpoints that own them and rebuilds a pool at boot.
import { conflict, invalidArgument } from '../errors.js'
import { contains, formatIp, formatPrefix, last, overlaps, parseIp, parsePrefix, requirePrefix, size, type Prefix } from './cidr.js'

/** One IPAM config entry as stored (canonical text, camelCase). */
export interface PoolConfig {
  subnet: string
  gateway: string
  ipRange?: string
  auxAddresses?: Record<string, string>
  /**
   * The gateway was not asked for with a subnet that was: dockerd's inspect then shows the subnet alone (the bridge
   * still gets the first address).
   */
  autoGateway?: boolean
}

/** What a user asked for (the create body's IPAM.Config entry, already camelCased). */
export interface PoolRequest {
  subnet?: string
  gateway?: string
  ipRange?: string
  auxAddresses?: Record<string, string>
}

/** Validates a request against its own subnet and completes it (a default gateway: the first address). */
export function completePool (req: PoolRequest, subnet: Prefix): PoolConfig {
  const subnetText = formatPrefix(subnet)
  if (subnet.bits > 30) throw invalidArgument(`invalid subnet ${subnetText}: not enough addresses`)
  const out: PoolConfig = { subnet: subnetText, gateway: '' }
  if (req.ipRange !== undefined && req.ipRange !== '') {
    const r = parsePrefix(req.ipRange)
    if (r === null) throw invalidArgument(`invalid CIDR address: ${req.ipRange}`)
    if (!overlaps(r, subnet) || r.bits < subnet.bits) throw invalidArgument(`Invalid address ${req.ipRange}: it must be a subset of subnet ${subnetText}`)
    out.ipRange = formatPrefix(r)
  }
  if (req.gateway !== undefined && req.gateway !== '') {
    const g = parseIp(req.gateway)
    if (g === null) throw invalidArgument(`invalid gateway address ${req.gateway}`)
    // dockerd's words (the docker CLI refuses it before asking: `no matching subnet for gateway …`)
    if (!contains(subnet, g)) throw invalidArgument(`failed to allocate gateway (${req.gateway}): Requested address is out of range`)
    out.gateway = formatIp(g)
  } else {
    out.gateway = formatIp(subnet.base + 1)
  }
  if (req.auxAddresses !== undefined && Object.keys(req.auxAddresses).length > 0) {
    const aux: Record<string, string> = {}
    for (const [k, v] of Object.entries(req.auxAddresses)) {
      const a = parseIp(v)
      if (a === null || !contains(subnet, a)) throw invalidArgument(`invalid auxiliary address ${k}=${v}: it does not belong to the subnet ${subnetText}`)
      aux[k] = formatIp(a)
    }
    out.auxAddresses = aux
  }
  return out
}

/**
 * The first prefix of the pools' size inside `pools` that overlaps none of `used`; with `skip`, the free one after
 * that many others (the last free one when there are fewer): another try after a clash with a racing engine.
 */
export function pickSubnet (pools: ReadonlyArray<{ base: string, size: number }>, used: Prefix[], skip = 0): Prefix | null {
  let found: Prefix | null = null
  let seen = 0
  for (const pool of pools) {
    const p = requirePrefix(pool.base)
    const step = 2 ** (32 - pool.size)
    for (let base = p.base; base + step - 1 <= last(p); base += step) {
      const cand = { base, bits: pool.size }
      if (used.some((u) => overlaps(u, cand))) continue
      found = cand
      if (seen++ === skip) return cand
    }
  }
  return found
}

/** dockerd's default address pools (172.17-31/16, then 192.168/20s). */
export const DEFAULT_POOLS: ReadonlyArray<{ base: string, size: number }> = [
  { base: '172.17.0.0/16', size: 16 }, { base: '172.18.0.0/15', size: 16 }, { base: '172.20.0.0/14', size: 16 },
  { base: '172.24.0.0/14', size: 16 }, { base: '172.28.0.0/14', size: 16 }, { base: '192.168.0.0/16', size: 20 }
]

/** The allocations of one network: addresses in use and the next candidate (addresses are handed out round-robin). */
export class AddressPool {
  readonly subnet: Prefix
  readonly range: Prefix
  private readonly reserved = new Set<number>()
  private readonly used = new Set<number>()
  private next: number

  constructor (cfg: PoolConfig) {
    this.subnet = requirePrefix(cfg.subnet)
    this.range = cfg.ipRange !== undefined ? requirePrefix(cfg.ipRange) : this.subnet
    this.reserved.add(this.subnet.base)
    this.reserved.add(last(this.subnet))
    const gw = parseIp(cfg.gateway)
    if (gw !== null) this.reserved.add(gw)
    for (const a of Object.values(cfg.auxAddresses ?? {})) { const n = parseIp(a); if (n !== null) this.reserved.add(n) }
    this.next = this.range.base
  }

  /** Marks an address as taken (a static IP, or an allocation read back at boot). */
  claim (ipText: string): void {
    const ip = parseIp(ipText)
    if (ip === null) throw invalidArgument(`invalid IP address ${ipText}`)
    if (!contains(this.subnet, ip)) throw invalidArgument(`no configured subnet or ip-range contain the IP address ${ipText}`)
    if (this.used.has(ip) || this.reserved.has(ip)) throw conflict(`Address already in use`)
    this.used.add(ip)
  }

  /**
   * The next free address of the range, round-robin from the last one handed out. As dockerd, the first address of an
   * IP range narrower than the subnet is never handed out (10.0.0.128/30 gives .129 to .131).
   */
  allocate (): string {
    const n = size(this.range)
    const skipBase = this.range.bits > this.subnet.bits
    for (let i = 0; i < n; i++) {
      const ip = this.range.base + ((this.next - this.range.base + i) % n)
      if (this.used.has(ip) || this.reserved.has(ip) || (skipBase && ip === this.range.base)) continue
      this.used.add(ip)
      this.next = ip + 1
      return formatIp(ip)
    }
    throw conflict(`no available IPv4 addresses on this network's address pools: ${formatPrefix(this.subnet)}`)
  }

  release (ipText: string): void {
    const ip = parseIp(ipText)
    if (ip !== null) this.used.delete(ip)
  }

  inUse (): number { return this.used.size }
}
