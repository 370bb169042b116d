// The /etc/hosts and /etc/resolv.conf a container sees, as dockerd writes them. Pure text functions.

const HOSTS_BASE = '127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\nfe00::0\tip6-localnet\n' +
  'ff00::0\tip6-mcastprefix\nff02::1\tip6-allnodes\nff02::2\tip6-allrouters\n'

export interface HostsInput {
  hostname: string
  domainname: string
  /** The container's own address on its first network; null without one (none, host). */
  ip: string | null
  /** `name:ip` entries (--add-host); `host-gateway` already replaced by the caller. */
  extraHosts: string[]
  /** --link entries on the default bridge: ip and the names it answers to. */
  links: Array<{ ip: string, names: string[] }>
}

/** `name:ip` entries (--add-host) as hosts lines. */
export function hostsEntries (extra: string[]): string {
  let out = ''
  for (const h of extra) {
    const k = h.indexOf(':')
    if (k !== -1) out += `${h.slice(k + 1)}\t${h.slice(0, k)}\n`
  }
  return out
}

export function hostsFile (i: HostsInput): string {
  // dockerd's order: --add-host entries, then links, then the container's own line
  let out = HOSTS_BASE + hostsEntries(i.extraHosts)
  for (const l of i.links) out += `${l.ip}\t${l.names.join(' ')}\n`
  const fqdn = i.domainname !== '' ? `${i.hostname}.${i.domainname} ${i.hostname}` : i.hostname
  out += i.ip !== null ? `${i.ip}\t${fqdn}\n` : `127.0.1.1\t${fqdn}\n`
  return out
}

export interface ResolvInput {
  /** The host's resolv.conf text. */
  host: string
  dns: string[]
  dnsSearch: string[]
  dnsOptions: string[]
  /** The embedded DNS server's address (user-defined networks); its forwarders are the host's servers. */
  embedded: string | null
  /** --network host: the host's loopback servers are reachable and kept. */
  hostNetwork?: boolean
}

/** dockerd's servers for a container left with none once the host's loopback servers are dropped. */
export const FALLBACK_NAMESERVERS = ['8.8.8.8', '8.8.4.4']

/**
 * Nameservers of a resolv.conf text. Loopback ones are dropped unless `keepLoopback` (unreachable from a container's
 * namespace; the embedded DNS server and host-mode containers live in the host's and reach them).
 */
export function hostNameservers (text: string, keepLoopback = false): string[] {
  const out: string[] = []
  for (const line of text.split('\n')) {
    const m = /^\s*nameserver\s+(\S+)/.exec(line)
    if (m?.[1] !== undefined && (keepLoopback || !/^(127\.|::1$)/.test(m[1]))) out.push(m[1])
  }
  return out
}

export function resolvConf (i: ResolvInput): string {
  const search: string[] = []
  const options: string[] = []
  for (const line of i.host.split('\n')) {
    const m = /^\s*(search|domain)\s+(.*)$/.exec(line)
    if (m?.[2] !== undefined) search.push(...m[2].trim().split(/\s+/))
    const o = /^\s*options\s+(.*)$/.exec(line)
    if (o?.[1] !== undefined) options.push(...o[1].trim().split(/\s+/))
  }
  let servers = i.embedded !== null ? [i.embedded] : i.dns.length > 0 ? i.dns : hostNameservers(i.host, i.hostNetwork === true)
  if (servers.length === 0) servers = FALLBACK_NAMESERVERS
  let out = servers.map((s) => `nameserver ${s}\n`).join('')
  const s = i.dnsSearch.length > 0 ? i.dnsSearch : search
  if (s.length > 0) out += `search ${s.join(' ')}\n`
  const o = i.dnsOptions.length > 0 ? i.dnsOptions : options
  if (i.embedded !== null && !o.some((x) => x.startsWith('ndots'))) o.push('ndots:0')
  if (o.length > 0) out += `options ${o.join(' ')}\n`
  return out
}
