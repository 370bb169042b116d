// iptables rules of one engine, all in chains named after its prefix, so engines (and dockerd) never touch each
// other's rules:
//
//   raw    PREROUTING  -j <P>-RAW                                     drops before routing and DNAT:
//   raw    <P>-RAW     -i <br> -d 127.0.0.0/8 -j DROP                 a container never reaches the host's loopback
//                                                                     (CVE-2020-8558), whatever route_localnet says
//                      -d <subnet> ! -i <br> -m addrtype !            a container's address is reached through its
//                         --dst-type LOCAL -j DROP                    bridge only (dockerd 28; not with masquerade off)
//                      -d 127.0.0.1/32 ! -i lo -p tcp --dport P       a loopback mapping is not reachable from another
//                         -j DROP                                     interface (dockerd 27), per mapping
//   nat    PREROUTING  -m addrtype --dst-type LOCAL -j <P>            published ports (from elsewhere)
//   nat    OUTPUT      [! -d 127.0.0.0/8] -m addrtype --dst-type      published ports (from the host itself); with the
//                         LOCAL -j <P>                                monitors serving the ports, loopback is theirs
//   nat    POSTROUTING -j <P>-POST                                    MASQUERADE out of the bridges; loopback sources
//   filter FORWARD     -j <P>-FWD                                     bridges in/out, Internal and --icc=false drops
//   filter <P>-FWD     -m conntrack ! --ctstate DNAT -j <P>-ISO1      isolation between bridge networks (dockerd's
//   filter <P>-ISO1    -i <br> ! -o <br> -j <P>-ISO2                  DOCKER-ISOLATION-STAGE-1/2): what enters from one
//   filter <P>-ISO2    -o <br> -j DROP                                of our bridges never leaves through another; a
//                                                                     published port (DNAT) stays reachable from any
//
// Every rule is derived from the records (networks, port mappings), so the chains are rewritten from scratch at boot:
// what a crash left behind that no record owns goes away then.
//
// Once setup() has emptied the chains, the engine is their only writer and keeps a copy of what is in them: an add
// or a remove needs no `-C` probe, and the changes asked for within one turn of the event loop (a boot restoring
// every bridge and published port at once) go to the kernel in one `iptables-restore --noflush` (all or nothing; a
// batch the kernel refuses is replayed rule by rule, so each caller gets its own error).
import { writeFile, access } from 'node:fs/promises'
import { must, run } from './commands.js'
import { levelLogger, logger } from '../log.js'
import { describeError } from '../errors.js'

const log = logger('engine:network')
const ops = levelLogger('engine:network')

export type Rule = { table: 'raw' | 'nat' | 'filter', chain: string, args: string[] }

export interface BridgeRules { bridge: string, subnet: string, internal: boolean, icc: boolean, masquerade: boolean }
export interface PortRule { proto: 'tcp' | 'udp', hostIp: string, hostPort: number, containerIp: string, containerPort: number, bridge: string }

export interface FirewallOptions {
  /**
   * Whether published ports on loopback go through DNAT (--userland-proxy=false: nothing else serves them; the bridges
   * need route_localnet). Otherwise the containers' monitors serve loopback and DNAT leaves it alone.
   */
  loopbackDnat: boolean
}

const LOOPBACK = '127.0.0.0/8'

type Op = { rule: Rule, del: boolean }

const ruleKey = (r: Rule): string => `${r.table} ${r.chain} ${r.args.join(' ')}`

export class Firewall {
  readonly prefix: string
  private readonly bin: string
  /** What this engine's chains hold since setup() emptied them; null before (or after a teardown): probe with -C. */
  private held: Set<string> | null = null
  private pending: Array<{ ops: Op[], done: (err?: Error) => void }> = []
  private flushing: Promise<void> = Promise.resolve()
  private flushScheduled = false
  private restoreBin: Promise<string | null> | null = null
  private readonly o: FirewallOptions

  constructor (bin: string, prefix: string, o: FirewallOptions = { loopbackDnat: false }) {
    this.bin = bin
    this.prefix = prefix
    this.o = o
  }

  /** Whether published ports on loopback go through DNAT (see FirewallOptions). */
  get loopbackDnat (): boolean { return this.o.loopbackDnat }

  get natChain (): string { return this.prefix }
  get postChain (): string { return `${this.prefix}-POST` }
  get fwdChain (): string { return `${this.prefix}-FWD` }
  get iso1Chain (): string { return `${this.prefix}-ISO1` }
  get iso2Chain (): string { return `${this.prefix}-ISO2` }
  get rawChain (): string { return `${this.prefix}-RAW` }

  private chains (): Array<readonly [Rule['table'], string]> {
    return [['raw', this.rawChain], ['nat', this.natChain], ['nat', this.postChain], ['filter', this.fwdChain], ['filter', this.iso1Chain], ['filter', this.iso2Chain]]
  }

  /** First rule of <P>-FWD (before every ACCEPT): connections to a published port are exempt, as dockerd's proxy reaches them. */
  private isolationJump (): Rule {
    return { table: 'filter', chain: this.fwdChain, args: ['-m', 'conntrack', '!', '--ctstate', 'DNAT', '-j', this.iso1Chain] }
  }

  /** The jump from nat OUTPUT: loopback included only when DNAT serves loopback mappings. */
  private outputJump (loopback: boolean): Rule {
    return { table: 'nat', chain: 'OUTPUT', args: [...(loopback ? [] : ['!', '-d', LOOPBACK]), '-m', 'addrtype', '--dst-type', 'LOCAL', '-j', this.natChain] }
  }

  private jumps (): Rule[] {
    return [
      { table: 'raw', chain: 'PREROUTING', args: ['-j', this.rawChain] },
      { table: 'nat', chain: 'PREROUTING', args: ['-m', 'addrtype', '--dst-type', 'LOCAL', '-j', this.natChain] },
      this.outputJump(this.o.loopbackDnat),
      { table: 'nat', chain: 'POSTROUTING', args: ['-j', this.postChain] },
      { table: 'filter', chain: 'FORWARD', args: ['-j', this.fwdChain] }
    ]
  }

  /** Creates the chains and the jumps into them (once), and empties the chains. */
  async setup (): Promise<void> {
    await this.flushing
    this.held = null
    const restore = await this.restoreTool()
    // a chain declared to iptables-restore --noflush is created, or emptied when it exists: one call for all six
    const declared = restore !== null && (await run(restore, ['-w', '--noflush'], ['raw', 'nat', 'filter'].map((t) =>
      `*${t}\n${this.chains().filter(([table]) => table === t).map(([, c]) => `:${c} - [0:0]`).join('\n')}\nCOMMIT\n`).join(''))).code === 0
    if (!declared) {
      for (const [table, chain] of this.chains()) {
        if ((await run(this.bin, ['-w', '-t', table, '-N', chain])).code !== 0) await must(this.bin, ['-w', '-t', table, '-F', chain])
      }
    }
    const iso = this.isolationJump()
    const r = await run(this.bin, ['-w', '-t', iso.table, '-A', iso.chain, ...iso.args])
    if (r.code !== 0) log('isolation between bridge networks unavailable: %s', r.stderr.trim())
    const held = new Set<string>(r.code === 0 ? [ruleKey(iso)] : [])
    // a daemon run before with the other --userland-proxy left the other OUTPUT jump
    const stale = this.outputJump(!this.o.loopbackDnat)
    while ((await run(this.bin, ['-w', '-t', stale.table, '-D', stale.chain, ...stale.args])).code === 0) { /* every copy */ }
    const missing = await Promise.all(this.jumps().map(async (j) => (await run(this.bin, ['-w', '-t', j.table, '-C', j.chain, ...j.args])).code !== 0))
    for (const [i, j] of this.jumps().entries()) if (missing[i] === true) await must(this.bin, ['-w', '-t', j.table, '-I', j.chain, '1', ...j.args])
    this.held = held
    await writeFile('/proc/sys/net/ipv4/ip_forward', '1').catch((err) => { ops.warn('IPv4 forwarding not turned on (containers reach nothing beyond the host): %s', describeError(err)) })
  }

  /** iptables-restore beside the iptables binary (the same backend, nft or legacy), or null. */
  private async restoreTool (): Promise<string | null> {
    this.restoreBin ??= (async () => {
      const p = `${this.bin}-restore`
      try { await access(p); return p } catch { return null }
    })()
    return await this.restoreBin
  }

  /** Whether this engine's chains exist (a previous daemon of the same prefix made them). */
  async exists (): Promise<boolean> {
    return (await run(this.bin, ['-w', '-t', 'nat', '-S', this.natChain])).code === 0
  }

  /** Removes the jumps and the chains. */
  async teardown (): Promise<void> {
    await this.flushing
    this.held = null
    for (const j of [...this.jumps(), this.outputJump(!this.o.loopbackDnat)]) {
      while ((await run(this.bin, ['-w', '-t', j.table, '-D', j.chain, ...j.args])).code === 0) { /* every copy */ }
    }
    // every chain emptied before any is deleted: <P>-FWD and <P>-ISO1 refer to the isolation chains
    for (const [table, chain] of this.chains()) await run(this.bin, ['-w', '-t', table, '-F', chain])
    for (const [table, chain] of this.chains()) await run(this.bin, ['-w', '-t', table, '-X', chain])
  }

  bridgeRules (b: BridgeRules): Rule[] {
    const out: Rule[] = [
      // the host's loopback is not a container's: raw frames to the gateway's MAC with destination 127.0.0.1 die here
      { table: 'raw', chain: this.rawChain, args: ['-i', b.bridge, '-d', LOOPBACK, '-j', 'DROP'] },
      // loopback sources (a published port reached on 127.0.0.1) leave through the bridge with the gateway's address
      { table: 'nat', chain: this.postChain, args: ['-o', b.bridge, '-m', 'addrtype', '--src-type', 'LOCAL', '-j', 'MASQUERADE'] }
    ]
    // the containers' addresses are reached through their bridge only (a neighbour routing to them through this host
    // is dropped); a network without masquerading is meant to be routed to, as with dockerd
    if (b.masquerade && b.subnet !== '') out.push({ table: 'raw', chain: this.rawChain, args: ['-d', b.subnet, '!', '-i', b.bridge, '-m', 'addrtype', '!', '--dst-type', 'LOCAL', '-j', 'DROP'] })
    if (!b.icc) out.push({ table: 'filter', chain: this.fwdChain, args: ['-i', b.bridge, '-o', b.bridge, '-j', 'DROP'] })
    if (b.internal) {
      out.push({ table: 'filter', chain: this.fwdChain, args: ['-i', b.bridge, '!', '-o', b.bridge, '-j', 'DROP'] })
      out.push({ table: 'filter', chain: this.fwdChain, args: ['-o', b.bridge, '!', '-i', b.bridge, '-j', 'DROP'] })
    } else {
      out.push({ table: 'filter', chain: this.iso1Chain, args: ['-i', b.bridge, '!', '-o', b.bridge, '-j', this.iso2Chain] })
      out.push({ table: 'filter', chain: this.iso2Chain, args: ['-o', b.bridge, '-j', 'DROP'] })
      if (b.masquerade) out.push({ table: 'nat', chain: this.postChain, args: ['-s', b.subnet, '!', '-o', b.bridge, '-j', 'MASQUERADE'] })
      out.push({ table: 'filter', chain: this.fwdChain, args: ['-i', b.bridge, '-j', 'ACCEPT'] })
      out.push({ table: 'filter', chain: this.fwdChain, args: ['-o', b.bridge, '-j', 'ACCEPT'] })
    }
    return out
  }

  /**
   * A mapping's rules: a loopback mapping is dropped when it arrives on any interface but lo (dockerd 27's rule), and
   * goes through DNAT only when nothing else serves loopback; any other mapping goes through DNAT (outside clients keep
   * their source address).
   */
  portRules (p: PortRule): Rule[] {
    const dst = p.hostIp === '' || p.hostIp === '0.0.0.0' ? [] : ['-d', `${p.hostIp}/32`]
    const loopback = p.hostIp.startsWith('127.')
    const out: Rule[] = []
    if (loopback) out.push({ table: 'raw', chain: this.rawChain, args: [...dst, '!', '-i', 'lo', '-p', p.proto, '-m', p.proto, '--dport', String(p.hostPort), '-j', 'DROP'] })
    if (!loopback || this.o.loopbackDnat) {
      out.push({ table: 'nat', chain: this.natChain, args: [...dst, '-p', p.proto, '-m', p.proto, '--dport', String(p.hostPort), '-j', 'DNAT', '--to-destination', `${p.containerIp}:${p.containerPort}`] })
    }
    return out
  }

  async add (rules: Rule[]): Promise<void> {
    if (this.held !== null) { await this.apply(rules.map((rule) => ({ rule, del: false }))); return }
    for (const r of rules) await this.addOne(r)
  }

  async remove (rules: Rule[]): Promise<void> {
    if (this.held !== null) { await this.apply(rules.map((rule) => ({ rule, del: true }))); return }
    for (const r of rules) await this.removeOne(r)
  }

  private async addOne (r: Rule): Promise<void> {
    if ((await run(this.bin, ['-w', '-t', r.table, '-C', r.chain, ...r.args])).code === 0) return
    await must(this.bin, ['-w', '-t', r.table, ...this.position(r), ...r.args])
  }

  private async removeOne (r: Rule): Promise<void> {
    while ((await run(this.bin, ['-w', '-t', r.table, '-D', r.chain, ...r.args])).code === 0) { /* every copy */ }
  }

  /** Drops go first so the accepts below them never shadow them. */
  private position (r: Rule): string[] {
    return r.args.includes('DROP') ? ['-I', r.chain, '1'] : ['-A', r.chain]
  }

  /** Queues changes for the next batch (this turn of the event loop) and resolves once they are in the kernel. */
  private async apply (ops: Op[]): Promise<void> {
    await new Promise<void>((resolve, reject) => {
      this.pending.push({ ops, done: (err) => { if (err === undefined) resolve(); else reject(err) } })
      if (this.flushScheduled) return
      this.flushScheduled = true
      setImmediate(() => {
        this.flushScheduled = false
        this.flushing = this.flushing.then(async () => { await this.flush() })
      })
    })
  }

  private async flush (): Promise<void> {
    const batch = this.pending.splice(0)
    const held = this.held
    if (batch.length === 0) return
    if (held === null) {
      // a setup or teardown came between: probe rule by rule
      for (const b of batch) {
        try { for (const o of b.ops) await (o.del ? this.removeOne(o.rule) : this.addOne(o.rule)); b.done() } catch (err) { b.done(err as Error) }
      }
      return
    }
    // the changes in order (a rule present is not added again, one absent is not removed)
    const next = new Set(held)
    const lines = new Map<string, string[]>()
    for (const b of batch) {
      for (const o of b.ops) {
        const key = ruleKey(o.rule)
        if (o.del ? !next.has(key) : next.has(key)) continue
        if (o.del) next.delete(key); else next.add(key)
        const t = lines.get(o.rule.table) ?? []
        t.push([...(o.del ? ['-D', o.rule.chain] : this.position(o.rule)), ...o.rule.args].map(quoteArg).join(' '))
        lines.set(o.rule.table, t)
      }
    }
    if (lines.size === 0) { for (const b of batch) b.done(); return }
    const restore = await this.restoreTool()
    const input = [...lines].map(([table, l]) => `*${table}\n${l.join('\n')}\nCOMMIT\n`).join('')
    if (restore !== null && (await run(restore, ['-w', '--noflush'], input)).code === 0) {
      this.held = next
      for (const b of batch) b.done()
      return
    }
    // refused as a whole (or no iptables-restore): each caller's rules one by one, probed, so errors reach their owner
    this.held = null
    for (const b of batch) {
      try { for (const o of b.ops) await (o.del ? this.removeOne(o.rule) : this.addOne(o.rule)); b.done() } catch (err) { b.done(err as Error) }
    }
  }
}

/** An argument of an iptables-restore line (its parser splits on blanks and understands double quotes). */
function quoteArg (a: string): string {
  return /^[^\s"']+$/.test(a) ? a : `"${a.replace(/"/g, '\\"')}"`
}

/** Bridged traffic through iptables (dockerd sets it where --icc=false or Internal need the FORWARD rules). */
export async function enableBridgeNetfilter (): Promise<void> {
  await writeFile('/proc/sys/net/bridge/bridge-nf-call-iptables', '1').catch((err) => { ops.warn('bridged traffic does not go through iptables (bridge-nf-call-iptables; is br_netfilter loaded?): %s', describeError(err)) })
}

/**
 * route_localnet: lets DNAT send 127.0.0.1-sourced packets out of the bridge (published ports on loopback through
 * DNAT, --userland-proxy=false only: it also lets the bridge's hosts address the host's 127/8, which <P>-RAW drops).
 * Off otherwise (and turned off on a bridge an earlier daemon turned it on for).
 */
export async function setRouteLocalnet (bridge: string, on: boolean): Promise<void> {
  await writeFile(`/proc/sys/net/ipv4/conf/${bridge}/route_localnet`, on ? '1' : '0').catch((err) => { ops.warn('route_localnet of %s not set to %s: %s', bridge, on ? '1' : '0', describeError(err)) })
}
