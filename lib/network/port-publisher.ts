// Published ports: the host port of each mapping a container asks for (the one given, the first free of a range, or
// an ephemeral one), what holds and serves it, and its firewall rules. By default the container's monitor binds the
// ports before its process starts and serves them (PortHold, handed to the runtime), and the DNAT rules follow off
// the request path (port-rules.ts): the monitor makes the mapping work before they exist. With --userland-proxy=false
// (DNAT only) the rules are in place before the start returns. Called under the network service's lock.
import { forbidden } from '../errors.js'
import { probePort, freePort, wantedPorts, stopForwarder, forwarderAlive, bindError, type WantedPort } from './host-ports.js'
import { PortRules } from './port-rules.js'
import type { Rule } from './firewall.js'
import type { NetworkHost } from './network-host.js'
import type { PortMapping, SandboxRecord } from './model.js'

/** Where a container's published ports lead: its address on its first network, and that network's bridge. */
export interface PortTarget { ip: string, bridge: string, endpoint: string }

/** A port the container's monitor binds and serves: the host side, and the container's address and port. */
export interface PortHold { proto: 'tcp' | 'udp', hostIp: string, hostPort: number, containerIp: string, containerPort: number }

export class PortPublisher {
  private readonly host: NetworkHost
  private readonly sandboxes: () => Iterable<SandboxRecord>
  /** The rules' changes, batched (made once the firewall is known, at boot). */
  private batcher: PortRules | null = null

  /** `sandboxes`: every container's record (the host ports they hold are taken). */
  constructor (host: NetworkHost, sandboxes: () => Iterable<SandboxRecord>) {
    this.host = host
    this.sandboxes = sandboxes
  }

  private get rules (): PortRules | null {
    if (this.batcher === null && this.host.firewall !== null) this.batcher = new PortRules(this.host.firewall)
    return this.batcher
  }

  /**
   * Chooses the host ports (each checked free now; another container's are taken) and records them in sb.ports.
   * Returns what the container's monitor is to hold and serve (nothing with DNAT only: the rules are in place then).
   */
  async publish (sb: SandboxRecord, t: PortTarget | null): Promise<PortHold[]> {
    sb.ports = []
    const wanted = t === null ? [] : wantedPorts(sb)
    if (t === null || wanted.length === 0) return []
    const taken = this.portsInUse()
    for (const w of wanted) {
      const hostPort = await this.hostPort(w, t.endpoint, taken)
      taken.add(`${w.proto}/${hostPort}`)
      sb.ports.push({ proto: w.proto, containerPort: w.containerPort, hostIp: hostIpOf(w), hostPort })
      // every address: [::] too where the host has IPv6, as dockerd's (served by the monitor's relay; DNAT is IPv4 only)
      if (w.hostIp === '' && this.host.ipv6 && this.host.monitorsServe) sb.ports.push({ proto: w.proto, containerPort: w.containerPort, hostIp: '::', hostPort })
    }
    this.rules?.add(sb.id, this.rulesOf(sb, t))
    // DNAT only: nothing serves the ports but the rules, in place before the start returns
    if (!this.host.monitorsServe) { await this.rules?.now(); return [] }
    return sb.ports.map((p) => ({ proto: p.proto, hostIp: p.hostIp, hostPort: p.hostPort, containerIp: t.ip, containerPort: p.containerPort }))
  }

  /**
   * The container stopped (its monitor let the ports go with its process): the records forget them, their rules go
   * off the stop path (port-rules.ts); forwarder processes of an earlier version are stopped.
   */
  async unpublish (sb: SandboxRecord, t: PortTarget | null): Promise<void> {
    const rules = this.rulesOf(sb, t)
    const legacy = sb.ports.map((p) => p.proxyPid ?? 0).filter((pid) => pid > 0)
    sb.ports = []
    this.rules?.remove(sb.id, rules)
    await Promise.all(legacy.map(stopForwarder))
  }

  /** Boot: a running container's rules again (the chains were rewritten); its monitor still serves its ports. */
  async restore (sb: SandboxRecord, t: PortTarget | null): Promise<void> {
    this.rules?.add(sb.id, this.rulesOf(sb, t))
    // a forwarder process of an earlier version keeps serving its port until the container stops
    for (const p of sb.ports) if ((p.proxyPid ?? 0) > 0 && !await forwarderAlive(p.proxyPid ?? 0)) p.proxyPid = 0
  }

  /** Applies the rules' changes waiting, and resolves once all are done (close, purge). */
  async settled (): Promise<void> { await this.rules?.now().catch(() => { /* logged */ }) }

  /**
   * The host port of a mapping: the one asked for, the first free one of a range, or an ephemeral one (the kernel's
   * pick, not another container's).
   */
  private async hostPort (w: WantedPort, endpoint: string, taken: Set<string>): Promise<number> {
    const hostIp = hostIpOf(w)
    // the kernel's pick was free a moment ago (its bind is the check)
    if (w.hostPort === '' || w.hostPort === '0') return await freePort(w.proto, hostIp, taken)
    const [lo = 0, hi = lo] = w.hostPort.split('-').map(Number)
    for (let p = lo; p <= hi; p++) {
      if (taken.has(`${w.proto}/${p}`)) { if (lo === hi) throw allocated(endpoint, hostIp, String(p)); continue }
      const why = await probePort(w.proto, hostIp, p)
      if (why === '') return p
      if (lo === hi) throw bindError(endpoint, { proto: w.proto, hostIp, hostPort: p }, why)
    }
    throw allocated(endpoint, hostIp, w.hostPort)
  }

  private portsInUse (): Set<string> {
    const out = new Set<string>()
    for (const sb of this.sandboxes()) for (const p of sb.ports) out.add(`${p.proto}/${p.hostPort}`)
    return out
  }

  private rulesOf (sb: { ports: PortMapping[] }, t: PortTarget | null): Rule[] {
    const fw = this.host.firewall
    if (fw === null || t === null || t.bridge === '') return []
    // an IPv6 host address is the monitor's relay's alone (no ip6tables rules, as dockerd without --ip6tables)
    return sb.ports.filter((p) => !p.hostIp.includes(':')).flatMap((p) => fw.portRules({ proto: p.proto, hostIp: p.hostIp, hostPort: p.hostPort, containerIp: t.ip, containerPort: p.containerPort, bridge: t.bridge }))
  }
}

function hostIpOf (w: WantedPort): string { return w.hostIp === '' ? '0.0.0.0' : w.hostIp }

/** dockerd's error for a host port another container of this engine maps. */
function allocated (endpoint: string, hostIp: string, port: string): Error {
  return forbidden(`driver failed programming external connectivity on endpoint ${endpoint}: Bind for ${hostIp}:${port} failed: port is already allocated`)
}
