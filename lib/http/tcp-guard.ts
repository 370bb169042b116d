// What a TCP listener of the Engine API accepts besides the request itself. A web page can make a browser send
// requests to any address it names (form posts and text/plain bodies go out without a CORS preflight), and by DNS
// rebinding it can give its own host name an address of ours. So on TCP: a request carrying `Origin` (browsers add
// it to every cross-origin and every POST request; Docker clients never send it) is refused, and so is a `Host`
// that does not name this listener: its own address, a loopback name when it is bound to loopback, this machine's
// host name and addresses when it is bound to every interface, or a name in the server certificate. A Unix socket
// has none of this: a browser cannot reach it.
import os from 'node:os'
import net from 'node:net'
import { X509Certificate } from 'node:crypto'
import type { IncomingMessage } from 'node:http'

export function isLoopbackAddress (host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '').toLowerCase()
  if (h === 'localhost' || h.endsWith('.localhost')) return true
  if (net.isIPv4(h)) return h.startsWith('127.')
  if (net.isIPv6(h)) return h === '::1' || /^::ffff:127\./.test(h)
  return false
}

function isWildcard (host: string): boolean {
  return host === '' || host === '0.0.0.0' || host === '::' || host === '[::]'
}

/** Host names (lower case, no port, IPv6 without brackets) a certificate's subjectAltName lists. */
export function certificateNames (certPem: string | Buffer): string[] {
  try {
    const san = new X509Certificate(certPem).subjectAltName ?? ''
    return san.split(/,\s*/).map((e) => e.replace(/^(DNS|IP Address):/, '').toLowerCase()).filter((e) => e !== '')
  } catch { return [] }
}

/** The host part of a Host header value: `name`, `name:port`, `[v6]:port`. */
function hostPart (value: string): string {
  const v = value.trim().toLowerCase()
  if (v.startsWith('[')) return v.slice(1, v.indexOf(']') === -1 ? undefined : v.indexOf(']'))
  const colon = v.lastIndexOf(':')
  // a bare IPv6 address has several colons and no port
  return colon !== -1 && v.indexOf(':') === colon ? v.slice(0, colon) : v
}

export type RequestGuard = (req: IncomingMessage) => string | null

/** The guard of a TCP listener bound to `bound` (as given to listen); `extraNames` come from its certificate. */
export function tcpRequestGuard (bound: string, extraNames: string[] = []): RequestGuard {
  const names = new Set<string>(extraNames.map((n) => n.toLowerCase()))
  const host = bound.replace(/^\[|\]$/g, '').toLowerCase()
  names.add(host)
  const loopbackNames = ['localhost', '127.0.0.1', '::1']
  if (isLoopbackAddress(host)) for (const n of loopbackNames) names.add(n)
  const wildcard = isWildcard(host)
  const allowed = (h: string): boolean => {
    if (names.has(h)) return true
    if (!wildcard) return false
    // bound to every interface: any of this machine's addresses or names, read when asked (interfaces change)
    if (isLoopbackAddress(h)) return true
    const hn = os.hostname().toLowerCase()
    if (h === hn || h.split('.')[0] === hn) return true
    return Object.values(os.networkInterfaces()).some((list) => (list ?? []).some((i) => i.address.toLowerCase() === h))
  }
  return (req) => {
    if (req.headers.origin !== undefined) {
      return `cross-origin requests are not allowed on this API (Origin: ${JSON.stringify(req.headers.origin.slice(0, 200))})`
    }
    const h = req.headers.host
    if (h === undefined || h === '') return 'a Host header naming this daemon is required on a TCP listener'
    if (!allowed(hostPart(h))) {
      return `Host ${JSON.stringify(h.slice(0, 200))} does not name this daemon's listener; use its address (e.g. tcp://${host.includes(':') ? `[${host}]` : host}:PORT)`
    }
    return null
  }
}
