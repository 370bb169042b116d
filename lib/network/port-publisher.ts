// Published ports: the host port of each mapping a container asks for (the one given, the first free of a range, or
// an ephemeral one), the `berth port-proxy` forwarders that hold and serve them, and their DNAT rules. Called under
// the network service's lock.
import { conflict, forbidden, errorMessage } from '../errors.js'
import { logger } from '../log.js'
import { portFree, freePort, wantedPorts, startForwarder, stopForwarder, forwarderAlive, bindError, type WantedPort } from './host-ports.js'
import type { Rule } from './firewall.js'
import type { NetworkHost } from './network-host.js'
import type { PortMapping, SandboxRecord } from './model.js'

const log = logger('engine:network')

/** Where a container's published ports lead: its address on its first network, and that network's bridge. */
export interface PortTarget { ip: string, bridge: string, endpoint: string }

export class PortPublisher {
  private readonly host: NetworkHost
  private readonly sandboxes: () => Iterable<SandboxRecord>

  /** `sandboxes`: every container's record (the host ports they hold are taken). */
  constructor (host: NetworkHost, sandboxes: () => Iterable<SandboxRecord>) {
    this.host = host
    this.sandboxes = sandboxes
  }

  /** Whether published ports get forwarders: without iptables, and with iptables unless --userland-proxy=false. */
  private get proxied (): boolean { return this.host.firewall === null || this.host.o.userlandProxy !== false }

  /**
   * Maps the published ports: a forwarder per port (its bind is the check that the port is free, and it holds the
   * port), started all at once; with iptables the DNAT rules then. With --userland-proxy=false, DNAT only, after a
   * check that each port is free. Every mapping made is in sb.ports, also when it throws (unpublish undoes them).
   */
  async publish (sb: SandboxRecord, t: PortTarget | null): Promise<void> {
    sb.ports = []
    const wanted = t === null ? [] : wantedPorts(sb)
    if (t === null || wanted.length === 0) return
    const taken = this.portsInUse()
    if (this.proxied) {
      const got = await Promise.allSettled(wanted.map(async (w) => await this.forward(w, t, taken)))
      // every forwarder started is recorded, so a failure's release stops them all
      for (const r of got) if (r.status === 'fulfilled') sb.ports.push(r.value)
      const failed = got.find((r) => r.status === 'rejected')
      if (failed !== undefined) throw (failed as PromiseRejectedResult).reason
    } else {
      for (const w of wanted) {
        const hostPort = await this.pickFreePort(w, t.endpoint, taken)
        taken.add(`${w.proto}/${hostPort}`)
        sb.ports.push({ proto: w.proto, containerPort: w.containerPort, hostIp: hostIpOf(w), hostPort })
      }
    }
    if (this.host.firewall !== null) await this.host.firewall.add(this.rulesOf(sb, t))
  }

  /** The container stopped: its rules and forwarders go (the ports are free on return). */
  async unpublish (sb: SandboxRecord, t: PortTarget | null): Promise<void> {
    if (this.host.firewall !== null) await this.host.firewall.remove(this.rulesOf(sb, t)).catch((err) => { log('ports of %s: %s', sb.id, errorMessage(err)) })
    await Promise.all(sb.ports.map(async (p) => { await stopForwarder(p.proxyPid ?? 0); p.proxyPid = 0 }))
    sb.ports = []
  }

  /** Boot: a running container's rules again, and its forwarders that died (with the host's processes, or a daemon run with DNAT only). */
  async restore (sb: SandboxRecord, t: PortTarget | null): Promise<void> {
    if (this.host.firewall !== null) await this.host.firewall.add(this.rulesOf(sb, t))
    if (!this.proxied || t === null) return
    await Promise.all(sb.ports.map(async (p) => {
      if (await forwarderAlive(p.proxyPid ?? 0)) return
      const r = await startForwarder(p, t.ip, this.host.prefix)
      if ('pid' in r) p.proxyPid = r.pid
      else log('forwarder %s %s/%d: %s', sb.id, p.proto, p.hostPort, r.error)
    }))
  }

  /** One mapping's forwarder, on the host port hostPort() picks. */
  private async forward (w: WantedPort, t: PortTarget, taken: Set<string>): Promise<PortMapping> {
    return await this.hostPort(w, t.endpoint, taken, async (hostPort) => {
      const m: PortMapping = { proto: w.proto, containerPort: w.containerPort, hostIp: hostIpOf(w), hostPort }
      const r = await startForwarder(m, t.ip, this.host.prefix)
      if ('pid' in r) { m.proxyPid = r.pid; return m }
      if (!r.inUse) throw bindError(t.endpoint, m, r.error)
      return r.error
    })
  }

  /** --userland-proxy=false: a host port free now (checked, then let go: DNAT does not hold it). */
  private async pickFreePort (w: WantedPort, endpoint: string, taken: Set<string>): Promise<number> {
    return await this.hostPort(w, endpoint, taken, async (p) => await portFree(w.proto, hostIpOf(w), p) ? p : 'EADDRINUSE')
  }

  /**
   * The host port of a mapping: the one asked for, the first of a range `bind` succeeds on, or an ephemeral one (the
   * kernel's pick, picked again when someone else binds it first). `bind` resolves with its result, or with why the
   * port is in use.
   */
  private async hostPort<T> (w: WantedPort, endpoint: string, taken: Set<string>, bind: (port: number) => Promise<T | string>): Promise<T> {
    const hostIp = hostIpOf(w)
    if (w.hostPort === '' || w.hostPort === '0') {
      for (let i = 0; i < 5; i++) {
        const r = await bind(await freePort(w.proto, hostIp, taken))
        if (typeof r !== 'string') return r
      }
      throw conflict('no free host port')
    }
    const [lo = 0, hi = lo] = w.hostPort.split('-').map(Number)
    for (let p = lo; p <= hi; p++) {
      if (taken.has(`${w.proto}/${p}`)) { if (lo === hi) throw allocated(endpoint, hostIp, String(p)); continue }
      const r = await bind(p)
      if (typeof r !== 'string') return r
      if (lo === hi) throw bindError(endpoint, { proto: w.proto, hostIp, hostPort: p }, r)
    }
    throw allocated(endpoint, hostIp, w.hostPort)
  }

  private portsInUse (): Set<string> {
    const out = new Set<string>()
    for (const sb of this.sandboxes()) for (const p of sb.ports) out.add(`${p.proto}/${p.hostPort}`)
    return out
  }

  private rulesOf (sb: SandboxRecord, t: PortTarget | null): Rule[] {
    const fw = this.host.firewall
    if (fw === null || t === null || t.bridge === '') return []
    return sb.ports.flatMap((p) => fw.portRules({ proto: p.proto, hostIp: p.hostIp, hostPort: p.hostPort, containerIp: t.ip, containerPort: p.containerPort, bridge: t.bridge }))
  }
}

function hostIpOf (w: WantedPort): string { return w.hostIp === '' ? '0.0.0.0' : w.hostIp }

/** dockerd's error for a host port another container of this engine maps. */
function allocated (endpoint: string, hostIp: string, port: string): Error {
  return forbidden(`driver failed programming external connectivity on endpoint ${endpoint}: Bind for ${hostIp}:${port} failed: port is already allocated`)
}
