// IPv4 addresses and prefixes as 32-bit numbers: parse, format, contain, overlap. Pure.
import { invalidArgument } from '../errors.js'

export interface Prefix { base: number, bits: number }

const DOTTED = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/

/** The address as an unsigned 32-bit number, or null when it is not a dotted IPv4 address. */
export function parseIp (s: string): number | null {
  const m = DOTTED.exec(s)
  if (m === null) return null
  let n = 0
  for (let i = 1; i <= 4; i++) {
    const o = Number(m[i])
    if (o > 255) return null
    n = n * 256 + o
  }
  return n
}

export function formatIp (n: number): string {
  return `${(n >>> 24) & 255}.${(n >>> 16) & 255}.${(n >>> 8) & 255}.${n & 255}`
}

export function mask (bits: number): number {
  return bits === 0 ? 0 : (0xffffffff << (32 - bits)) >>> 0
}

/** `a.b.c.d/n`; the host bits are dropped as dockerd does (it keeps the canonical network). */
export function parsePrefix (s: string): Prefix | null {
  const i = s.indexOf('/')
  if (i === -1) return null
  const ip = parseIp(s.slice(0, i))
  const bitsText = s.slice(i + 1)
  if (ip === null || !/^\d{1,2}$/.test(bitsText)) return null
  const bits = Number(bitsText)
  if (bits > 32) return null
  return { base: (ip & mask(bits)) >>> 0, bits }
}

export function requirePrefix (s: string): Prefix {
  const p = parsePrefix(s)
  if (p === null) throw invalidArgument(`invalid CIDR address: ${s}`)
  return p
}

export function formatPrefix (p: Prefix): string { return `${formatIp(p.base)}/${p.bits}` }

export function size (p: Prefix): number { return 2 ** (32 - p.bits) }

export function contains (p: Prefix, ip: number): boolean {
  return ((ip & mask(p.bits)) >>> 0) === p.base
}

export function overlaps (a: Prefix, b: Prefix): boolean {
  const bits = Math.min(a.bits, b.bits)
  return ((a.base & mask(bits)) >>> 0) === ((b.base & mask(bits)) >>> 0)
}

/** The last address of the prefix (its broadcast address). */
export function last (p: Prefix): number { return p.base + size(p) - 1 }
