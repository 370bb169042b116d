// What a container's embedded resolver answers, as dockerd's (libnetwork resolver.go, sandbox.go): the names of
// every network the container is on (container names, aliases, short IDs, `name.network`), its links' aliases, PTR
// records of those networks' addresses; everything else is forwarded to the container's upstream servers. Pure.
import { buildReply, encodeName, parseQuery, CLASS_IN, RCODE_SERVFAIL, TYPE_A, TYPE_AAAA, TYPE_MX, TYPE_PTR, UDP_MIN, type Answer } from './dns-codec.js'
import { parseIp } from './cidr.js'
import { formatIp6, ip6Bytes, parseIp6 } from './cidr6.js'

/** A network's names: container names, aliases and short IDs with their addresses; addresses with the container's name. */
export interface NameTable {
  names: Map<string, { v4: string[], v6: string[] }>
  /** address (canonical text) → container name */
  reverse: Map<string, string>
}

/** One of the container's endpoints on a network with name resolution (dockerd skips the default bridge). */
export interface ResolverEndpoint {
  network: string
  /** Link aliases of this endpoint (`--link target:alias`): alias → target's name, both lower case. */
  links: Map<string, string>
  table: NameTable
}

export interface ResolverView {
  endpoints: ResolverEndpoint[]
  /** ndots was set (host's resolv.conf or --dns-option): single-label names not found are not forwarded. */
  ndots: boolean
  /** Whether there is any upstream to forward to. */
  forwards: boolean
}

export type Resolution = { reply: Buffer } | { forward: true }

const PTR4 = '.in-addr.arpa'
const PTR6 = '.ip6.arpa'

/** The container names (and aliases) table of a network: `name → addresses`, built by the caller from endpoints. */
export function nameTable (entries: Array<{ names: string[], name: string, v4: string, v6: string }>): NameTable {
  const names = new Map<string, { v4: string[], v6: string[] }>()
  const reverse = new Map<string, string>()
  for (const e of entries) {
    for (const n of new Set(e.names.map((x) => x.toLowerCase()))) {
      let r = names.get(n)
      if (r === undefined) { r = { v4: [], v6: [] }; names.set(n, r) }
      if (e.v4 !== '' && !r.v4.includes(e.v4)) r.v4.push(e.v4)
      if (e.v6 !== '' && !r.v6.includes(e.v6)) r.v6.push(e.v6)
    }
    if (e.v4 !== '' && !reverse.has(e.v4)) reverse.set(e.v4, e.name)
    const v6 = e.v6 === '' ? null : parseIp6(e.v6)
    if (v6 !== null && !reverse.has(formatIp6(v6))) reverse.set(formatIp6(v6), e.name)
  }
  return { names, reverse }
}

/**
 * The addresses of `name` of the family asked, or null when no network of the container knows the name (then it is
 * forwarded). A name known only with the other family's addresses gives an empty list (an empty answer, as dockerd).
 * `a.b.c` is tried as `a.b.c` on every network, `a.b` on network `c`, `a` on network `b.c`.
 */
export function resolveName (view: ResolverView, query: string, v6: boolean): string[] | null {
  const name = query.replace(/\.$/, '').toLowerCase()
  const tries: Array<[string, string]> = [[name, '']]
  for (let i = name.lastIndexOf('.'); i > 0; i = name.lastIndexOf('.', i - 1)) tries.push([name.slice(0, i), name.slice(i + 1)])
  for (const [n, net] of tries) {
    for (const alias of [true, false]) {
      for (const ep of view.endpoints) {
        if (net !== '' && net !== ep.network.toLowerCase()) continue
        const target = ep.links.get(n)
        if (alias && target === undefined) continue
        // a link alias of this endpoint is looked up as its target, never as a name of its own
        if (!alias && target !== undefined) continue
        const r = ep.table.names.get(alias ? target as string : n)
        if (r !== undefined) return [...(v6 ? r.v6 : r.v4)]
      }
    }
  }
  return null
}

/** The address of a PTR question's name (`4.3.2.1.in-addr.arpa`, nibbles `.ip6.arpa`), canonical, or null. */
export function ptrAddress (name: string): string | null {
  const n = name.replace(/\.$/, '').toLowerCase()
  if (n.endsWith(PTR4)) {
    const parts = n.slice(0, -PTR4.length).split('.')
    if (parts.length !== 4) return null
    const ip = parts.reverse().join('.')
    return parseIp(ip) === null ? null : ip
  }
  if (n.endsWith(PTR6)) {
    const nibbles = n.slice(0, -PTR6.length).split('.')
    if (nibbles.length !== 32 || nibbles.some((x) => !/^[0-9a-f]$/.test(x))) return null
    return formatIp6(BigInt(`0x${nibbles.reverse().join('')}`))
  }
  return null
}

function shuffled<T> (a: T[]): T[] {
  for (let i = a.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1))
    const t = a[i] as T
    a[i] = a[j] as T
    a[j] = t
  }
  return a
}

function addressData (ip: string, v6: boolean): Buffer | null {
  if (!v6) {
    const n = parseIp(ip)
    if (n === null) return null
    const b = Buffer.alloc(4)
    b.writeUInt32BE(n, 0)
    return b
  }
  const n = parseIp6(ip)
  return n === null ? null : ip6Bytes(n)
}

/** The reply to a query from the container, or `forward` for the monitor to ask the upstreams. */
export function resolveQuery (msg: Buffer, tcp: boolean, view: ResolverView): Resolution {
  const q = parseQuery(msg)
  if (q === null) return { forward: true }
  const maxSize = tcp ? 65535 : Math.max(UDP_MIN, q.udpSize)
  const reply = (answers: Answer[], rcode = 0): Resolution => ({ reply: buildReply(msg, q, { answers, rcode, maxSize }) })
  if (q.cls === CLASS_IN) {
    if (q.type === TYPE_A || q.type === TYPE_AAAA) {
      const v6 = q.type === TYPE_AAAA
      const ips = resolveName(view, q.name, v6)
      if (ips !== null) {
        const answers: Answer[] = []
        for (const ip of shuffled(ips)) {
          const data = addressData(ip, v6)
          if (data !== null) answers.push({ type: q.type, data })
        }
        return reply(answers)
      }
    } else if (q.type === TYPE_MX) {
      // a container's name has no mail exchanger: an empty answer (RFC 5321's implicit MX), as dockerd
      if (resolveName(view, q.name, false) !== null) return reply([])
    } else if (q.type === TYPE_PTR) {
      const ip = ptrAddress(q.name)
      for (const ep of ip === null ? [] : view.endpoints) {
        const name = ep.table.reverse.get(ip as string)
        if (name !== undefined) return reply([{ type: TYPE_PTR, data: encodeName(`${name}.${ep.network}`) }])
      }
    }
  }
  // ndots set and a single label: not sent out, the client tries its search domains next (dockerd)
  if ((q.type === TYPE_A || q.type === TYPE_AAAA) && view.ndots && !q.name.includes('.')) return reply([])
  if (!view.forwards) return reply([], RCODE_SERVFAIL)
  return { forward: true }
}
