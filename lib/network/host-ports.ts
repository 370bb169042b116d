// Host ports of published mappings: which a container asks for, whether one is free, an ephemeral one; and the
// `berth port-proxy` forwarder processes earlier versions ran per port, found and stopped (the containers' monitors
// hold the ports now).
import net from 'node:net'
import dgram from 'node:dgram'
import { readFile, readdir } from 'node:fs/promises'
import { conflict, forbidden } from '../errors.js'
import type { SandboxRecord } from './model.js'

export interface WantedPort { proto: 'tcp' | 'udp', containerPort: number, hostIp: string, hostPort: string }

/** The mappings a container asks for: its PortBindings, and with -P its exposed ports not bound otherwise. */
export function wantedPorts (sb: SandboxRecord): WantedPort[] {
  const wanted: WantedPort[] = []
  for (const [key, list] of Object.entries(sb.portBindings)) {
    const [p = '0', proto = 'tcp'] = key.split('/')
    for (const b of list ?? []) wanted.push({ proto: proto as 'tcp' | 'udp', containerPort: Number(p), hostIp: b.hostIp, hostPort: b.hostPort })
  }
  if (sb.publishAll) {
    for (const key of sb.exposed) {
      if ((sb.portBindings[key]?.length ?? 0) > 0) continue
      const [p = '0', proto = 'tcp'] = key.split('/')
      wanted.push({ proto: proto as 'tcp' | 'udp', containerPort: Number(p), hostIp: '', hostPort: '' })
    }
  }
  return wanted
}

/** Whether a host port can be bound now: '' when it can, or why not (the errno code, EADDRINUSE…). */
export async function probePort (proto: 'tcp' | 'udp', host: string, port: number): Promise<string> {
  return await new Promise((resolve) => {
    const failed = (err: NodeJS.ErrnoException): void => { resolve(err.code ?? err.message) }
    if (proto === 'udp') {
      const s = dgram.createSocket({ type: host.includes(':') ? 'udp6' : 'udp4', ipv6Only: host.includes(':') })
      s.once('error', (err) => { s.close(); failed(err) })
      s.bind(port, host, () => { s.close(); resolve('') })
      return
    }
    const srv = net.createServer()
    srv.once('error', failed)
    srv.listen({ port, host, exclusive: true, ipv6Only: host.includes(':') }, () => { srv.close(() => { resolve('') }) })
  })
}

/** An ephemeral host port the kernel hands out now, not mapped by another container. */
export async function freePort (proto: 'tcp' | 'udp', host: string, taken: Set<string>): Promise<number> {
  for (let i = 0; i < 20; i++) {
    const port = await new Promise<number>((resolve, reject) => {
      if (proto === 'udp') {
        const s = dgram.createSocket({ type: host.includes(':') ? 'udp6' : 'udp4', ipv6Only: host.includes(':') })
        s.once('error', reject)
        s.bind(0, host, () => { const p = s.address().port; s.close(); resolve(p) })
        return
      }
      const srv = net.createServer()
      srv.once('error', reject)
      srv.listen({ port: 0, host, ipv6Only: host.includes(':') }, () => { const p = (srv.address() as net.AddressInfo).port; srv.close(() => { resolve(p) }) })
    })
    if (!taken.has(`${proto}/${port}`)) return port
  }
  throw conflict('no free host port')
}

/** dockerd's error when a published port cannot be bound (`endpoint`: `<name> (<endpoint id>)`). */
export function bindError (endpoint: string, p: { proto: string, hostIp: string, hostPort: number }, why: string): Error {
  // Go's wording of the bind errors, as dockerd reports them
  const errno = /EADDRINUSE/.test(why) ? 'address already in use' : /EADDRNOTAVAIL/.test(why) ? 'cannot assign requested address' : /EACCES/.test(why) ? 'permission denied' : ''
  const v6 = p.hostIp.includes(':')
  const addr = v6 ? `[${p.hostIp}]` : p.hostIp
  const reason = errno !== '' ? `listen ${p.proto}${v6 ? '6' : '4'} ${addr}:${p.hostPort}: bind: ${errno}` : why
  return forbidden(`driver failed programming external connectivity on endpoint ${endpoint}: failed to bind port ${addr}:${p.hostPort}/${p.proto}: Error starting userland proxy: ${reason}`)
}

/** Whether `pid` is still one of our forwarders (not a reused PID). */
export async function forwarderAlive (pid: number): Promise<boolean> {
  if (pid === 0) return false
  return (await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '')).split('\0').includes('port-proxy')
}

/**
 * Stops a forwarder and waits (5 s at most) for it to be gone, so its host port is free on return. SIGKILL: it keeps
 * no state, and the kernel frees its sockets at once, however busy the machine (a SIGTERM waits for its event loop).
 */
export async function stopForwarder (pid: number): Promise<void> {
  if (!await forwarderAlive(pid)) return
  try { process.kill(pid, 'SIGKILL') } catch { return }
  for (let i = 0; i < 500 && !await exited(pid); i++) await new Promise((resolve) => setTimeout(resolve, 10))
}

/**
 * Whether a process has exited: gone, or a zombie. Not its empty command line: an exiting process loses its memory
 * (and its command line) before its files, so its sockets still hold their ports for a moment then.
 */
async function exited (pid: number): Promise<boolean> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => null)
  if (stat === null) return true
  const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3)
  return state === 'Z' || state === 'X'
}

/** PIDs of the forwarders an engine (its network prefix) started, recorded or not (a daemon killed mid-start). */
export async function forwardersOf (owner: string): Promise<number[]> {
  const out: number[] = []
  for (const d of await readdir('/proc').catch(() => [] as string[])) {
    if (!/^\d+$/.test(d)) continue
    const argv = (await readFile(`/proc/${d}/cmdline`, 'utf8').catch(() => '')).split('\0')
    const i = argv.indexOf('port-proxy')
    if (i !== -1 && argv[i + 6] === owner) out.push(Number(d))
  }
  return out
}
