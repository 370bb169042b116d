// Where a reference's registry lives: the Docker Hub host for docker.io, HTTPS everywhere else, and plain HTTP only
// for loopback registries or those named with --insecure-registry (host, host:port or a CIDR), which are tried over
// HTTPS without certificate checks first, as dockerd does. Pure.
import { isIP } from 'node:net'
import { DEFAULT_DOMAIN } from '../image/reference.js'

export const HUB_REGISTRY_HOST = 'registry-1.docker.io'
/** The key Docker clients file Hub credentials under. */
export const INDEX_SERVER = 'https://index.docker.io/v1/'

export interface Endpoint {
  /** e.g. https://registry-1.docker.io, http://127.0.0.1:5000 */
  base: URL
  /** False for insecure registries tried over HTTPS. */
  tlsVerify: boolean
}

function splitHostPort (host: string): { hostname: string, port: string } {
  if (host.startsWith('[')) {
    const end = host.indexOf(']')
    return { hostname: host.slice(1, end), port: host.slice(end + 2) }
  }
  const i = host.lastIndexOf(':')
  if (i !== -1 && host.indexOf(':') === i) return { hostname: host.slice(0, i), port: host.slice(i + 1) }
  return { hostname: host, port: '' }
}

function ipv4ToInt (ip: string): number {
  return ip.split('.').reduce((acc, p) => (acc * 256) + Number(p), 0)
}

function inCidr (ip: string, cidr: string): boolean {
  const [net, bitsText] = cidr.split('/') as [string, string]
  const bits = Number(bitsText)
  if (isIP(ip) === 4 && isIP(net) === 4 && bits >= 0 && bits <= 32) {
    if (bits === 0) return true
    const mask = bits === 32 ? 0xffffffff : (0xffffffff << (32 - bits)) >>> 0
    return ((ipv4ToInt(ip) & mask) >>> 0) === ((ipv4ToInt(net) & mask) >>> 0)
  }
  return false
}

/** localhost, 127.0.0.0/8 and ::1 (with any port). */
export function isLoopbackHost (host: string): boolean {
  const { hostname } = splitHostPort(host)
  const h = hostname.toLowerCase()
  if (h === 'localhost' || h.endsWith('.localhost') || h === '::1') return true
  return isIP(h) === 4 && h.startsWith('127.')
}

/** Plain HTTP is allowed for loopback hosts and for hosts in the insecure list (exact, without port, or CIDR). */
export function isInsecureHost (host: string, insecure: readonly string[]): boolean {
  if (isLoopbackHost(host)) return true
  const { hostname } = splitHostPort(host)
  for (const entry of insecure) {
    const e = entry.replace(/^[a-z]+:\/\//i, '').replace(/\/+$/, '').toLowerCase()
    if (e === host.toLowerCase() || e === hostname.toLowerCase()) return true
    if (e.includes('/') && inCidr(hostname, e)) return true
  }
  return false
}

/** The registry host a reference domain is served from. */
export function registryHost (domain: string): string {
  return domain === DEFAULT_DOMAIN ? HUB_REGISTRY_HOST : domain
}

/** Endpoints to try, in order. */
export function endpointsFor (domain: string, insecure: readonly string[]): Endpoint[] {
  const host = registryHost(domain)
  if (domain !== DEFAULT_DOMAIN && isInsecureHost(host, insecure)) {
    return [{ base: new URL(`https://${host}`), tlsVerify: false }, { base: new URL(`http://${host}`), tlsVerify: false }]
  }
  return [{ base: new URL(`https://${host}`), tlsVerify: true }]
}

/**
 * A `serveraddress` as clients send it (`https://index.docker.io/v1/`, `127.0.0.1:5000`, `http://host:5000/`,
 * empty for Hub) → a reference domain.
 */
export function domainOfServerAddress (address: string | undefined): string {
  if (address === undefined || address.trim() === '') return DEFAULT_DOMAIN
  const host = address.trim().replace(/^[a-z]+:\/\//i, '').split('/')[0]?.toLowerCase() ?? ''
  if (host === '' || host === 'docker.io' || host === 'index.docker.io' || host === HUB_REGISTRY_HOST) return DEFAULT_DOMAIN
  return host
}
