// IPv6 address management for one network (EnableIPv6 with an IPv6 subnet): the pool and its allocations, as
// ipam.ts for IPv4. Pure; addresses are handed out in order from the subnet's second address (the first is the
// gateway's), a released one not reused before the others, as dockerd's.
import { conflict, invalidArgument } from '../errors.js'
import { contains6, formatIp6, formatPrefix6, parseIp6, parsePrefix6, type Prefix6 } from './cidr6.js'
import type { PoolConfig, PoolRequest } from './ipam.js'

/** Validates an IPv6 pool request against its subnet and completes it (a default gateway: the first address). */
export function completePool6 (req: PoolRequest, subnet: Prefix6): PoolConfig {
  const subnetText = formatPrefix6(subnet)
  if (subnet.bits > 126) throw invalidArgument(`invalid subnet ${subnetText}: not enough addresses`)
  const out: PoolConfig = { subnet: subnetText, gateway: '' }
  if (req.ipRange !== undefined && req.ipRange !== '') {
    const r = parsePrefix6(req.ipRange)
    if (r === null) throw invalidArgument(`invalid CIDR address: ${req.ipRange}`)
    if (r.bits < subnet.bits || !contains6(subnet, r.base)) throw invalidArgument(`Invalid address ${req.ipRange}: it must be a subset of subnet ${subnetText}`)
    out.ipRange = formatPrefix6(r)
  }
  if (req.gateway !== undefined && req.gateway !== '') {
    const g = parseIp6(req.gateway)
    if (g === null) throw invalidArgument(`invalid gateway address ${req.gateway}`)
    if (!contains6(subnet, g)) throw invalidArgument(`failed to allocate gateway (${req.gateway}): Requested address is out of range`)
    out.gateway = formatIp6(g)
  } else {
    out.gateway = formatIp6(subnet.base + 1n)
  }
  if (req.auxAddresses !== undefined && Object.keys(req.auxAddresses).length > 0) {
    const aux: Record<string, string> = {}
    for (const [k, v] of Object.entries(req.auxAddresses)) {
      const a = parseIp6(v)
      if (a === null || !contains6(subnet, a)) throw invalidArgument(`invalid auxiliary address ${k}=${v}: it does not belong to the subnet ${subnetText}`)
      aux[k] = formatIp6(a)
    }
    out.auxAddresses = aux
  }
  return out
}

/** The allocations of one network's IPv6 pool. */
export class AddressPool6 {
  readonly subnet: Prefix6
  readonly range: Prefix6
  private readonly reserved = new Set<bigint>()
  private readonly used = new Set<bigint>()
  private next: bigint

  constructor (cfg: PoolConfig) {
    const s = parsePrefix6(cfg.subnet)
    if (s === null) throw invalidArgument(`invalid CIDR address: ${cfg.subnet}`)
    this.subnet = s
    this.range = cfg.ipRange !== undefined ? parsePrefix6(cfg.ipRange) ?? s : s
    // the subnet's first address (the subnet-router anycast address) is never a host's
    this.reserved.add(s.base)
    const gw = parseIp6(cfg.gateway)
    if (gw !== null) this.reserved.add(gw)
    for (const a of Object.values(cfg.auxAddresses ?? {})) { const n = parseIp6(a); if (n !== null) this.reserved.add(n) }
    this.next = this.range.base
  }

  private get size (): bigint { return 1n << BigInt(128 - this.range.bits) }

  contains (ipText: string): boolean {
    const ip = parseIp6(ipText)
    return ip !== null && contains6(this.subnet, ip)
  }

  claim (ipText: string): void {
    const ip = parseIp6(ipText)
    if (ip === null) throw invalidArgument(`invalid IP address ${ipText}`)
    if (!contains6(this.subnet, ip)) throw invalidArgument(`no configured subnet or ip-range contain the IP address ${ipText}`)
    if (this.used.has(ip) || this.reserved.has(ip)) throw conflict('Address already in use')
    this.used.add(ip)
  }

  allocate (): string {
    const n = this.size
    // at most the taken ones are passed over before a free one (a /64 is never walked)
    const limit = BigInt(this.used.size + this.reserved.size + 1)
    for (let i = 0n; i < n && i <= limit; i++) {
      const ip = this.range.base + ((this.next - this.range.base + i) % n)
      if (this.used.has(ip) || this.reserved.has(ip)) continue
      this.used.add(ip)
      this.next = ip + 1n
      return formatIp6(ip)
    }
    throw conflict(`no available IPv6 addresses on this network's address pools: ${formatPrefix6(this.subnet)}`)
  }

  release (ipText: string): void {
    const ip = parseIp6(ipText)
    if (ip !== null) this.used.delete(ip)
  }
}
