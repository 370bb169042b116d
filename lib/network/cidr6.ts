// IPv6 addresses and prefixes as 128-bit bigints: parse, format (RFC 5952), contain. Pure.

export interface Prefix6 { base: bigint, bits: number }

const ALL = (1n << 128n) - 1n

function parseV4Tail (s: string): number[] | null {
  const m = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(s)
  if (m === null) return null
  const o = m.slice(1).map(Number)
  return o.some((x) => x > 255) ? null : o
}

/** The address as a 128-bit number, or null when it is not an IPv6 address (a zone is not accepted). */
export function parseIp6 (s: string): bigint | null {
  if (!s.includes(':') || s.length > 45) return null
  let text = s
  let tail: number[] = []
  const lastColon = text.lastIndexOf(':')
  if (text.slice(lastColon + 1).includes('.')) {
    const v4 = parseV4Tail(text.slice(lastColon + 1))
    if (v4 === null) return null
    tail = [(v4[0] as number) << 8 | (v4[1] as number), (v4[2] as number) << 8 | (v4[3] as number)]
    text = text.slice(0, lastColon + 1) + '0:0'
  }
  const halves = text.split('::')
  if (halves.length > 2) return null
  const words = (h: string): number[] | null => {
    if (h === '') return []
    const out: number[] = []
    for (const w of h.split(':')) {
      if (!/^[0-9a-fA-F]{1,4}$/.test(w)) return null
      out.push(parseInt(w, 16))
    }
    return out
  }
  const head = words(halves[0] as string)
  const rest = halves.length === 2 ? words(halves[1] as string) : []
  if (head === null || rest === null) return null
  const fill = 8 - head.length - rest.length
  if (halves.length === 2 ? fill < 1 : fill !== 0) return null
  const all = [...head, ...new Array<number>(halves.length === 2 ? fill : 0).fill(0), ...rest]
  if (tail.length === 2) { all[6] = tail[0] as number; all[7] = tail[1] as number }
  let n = 0n
  for (const w of all) n = (n << 16n) | BigInt(w)
  return n
}

/** RFC 5952: lower case, leading zeros dropped, the longest run of two or more zero words as `::`. */
export function formatIp6 (n: bigint): string {
  const w: number[] = []
  for (let i = 7; i >= 0; i--) w.push(Number((n >> BigInt(i * 16)) & 0xffffn))
  let best = -1
  let bestLen = 1
  for (let i = 0; i < 8;) {
    if (w[i] !== 0) { i++; continue }
    let j = i
    while (j < 8 && w[j] === 0) j++
    if (j - i > bestLen) { best = i; bestLen = j - i }
    i = j
  }
  const hex = w.map((x) => x.toString(16))
  if (best === -1) return hex.join(':')
  return `${hex.slice(0, best).join(':')}::${hex.slice(best + bestLen).join(':')}`
}

export function mask6 (bits: number): bigint {
  return bits === 0 ? 0n : (ALL << BigInt(128 - bits)) & ALL
}

/** `addr/n`; host bits dropped. */
export function parsePrefix6 (s: string): Prefix6 | null {
  const i = s.indexOf('/')
  if (i === -1) return null
  const ip = parseIp6(s.slice(0, i))
  const bitsText = s.slice(i + 1)
  if (ip === null || !/^\d{1,3}$/.test(bitsText)) return null
  const bits = Number(bitsText)
  if (bits > 128) return null
  return { base: ip & mask6(bits), bits }
}

export function formatPrefix6 (p: Prefix6): string { return `${formatIp6(p.base)}/${p.bits}` }

export function contains6 (p: Prefix6, ip: bigint): boolean { return (ip & mask6(p.bits)) === p.base }

export function overlaps6 (a: Prefix6, b: Prefix6): boolean {
  const m = mask6(Math.min(a.bits, b.bits))
  return (a.base & m) === (b.base & m)
}

/** The 16 bytes of an address, network order. */
export function ip6Bytes (n: bigint): Buffer {
  const out = Buffer.alloc(16)
  for (let i = 0; i < 16; i++) out[i] = Number((n >> BigInt((15 - i) * 8)) & 0xffn)
  return out
}
