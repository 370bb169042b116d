// Removing what one engine put on the host, named after its network prefix: forwarders, links (veths and bridges),
// namespaces and iptables chains. For tests, benchmarks and uninstalls: with the daemon (NetworkService.purgeHost)
// or without it, after it exited or was killed (purgeEngineNetwork, from its data and exec roots).
import { readdir, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { findTools, type Tools } from './commands.js'
import { Links } from './links.js'
import { Firewall } from './firewall.js'
import { networkPaths } from './paths.js'
import { forwardersOf, stopForwarder } from './host-ports.js'

/** The alias prefix of the bridges an engine creates (`berth:<prefix>:<network id12>`). */
export function bridgeMarkOf (prefix: string): string { return `berth:${prefix}:` }

/** An engine's prefix as it uses it (at most 6 characters; BERTH by default). */
export function enginePrefix (prefix: string | undefined): string { return (prefix ?? 'BERTH').slice(0, 6) }

export interface HostState {
  prefix: string
  /** Where its namespace files are. */
  netnsDir: string
  /** Bridges known by name (the records'), besides the ones found by prefix or mark. */
  bridges: string[]
  /** Forwarder PIDs the records hold (forwarders of older daemons carry no owner on their command line). */
  forwarders: number[]
}

export async function removeHostState (tools: Tools, s: HostState, chains: boolean): Promise<void> {
  await Promise.all([...new Set([...s.forwarders, ...await forwardersOf(s.prefix)])].map(stopForwarder))
  const links = new Links(tools)
  for (const l of new Set([...s.bridges, ...await links.linksMarked(s.prefix.toLowerCase(), bridgeMarkOf(s.prefix))])) await links.deleteLink(l)
  for (const f of await links.netnsFiles(s.netnsDir)) await links.removeNetns(f)
  if (chains && tools.iptables !== null) await new Firewall(tools.iptables, s.prefix).teardown()
}

/** Without a daemon: what the engine of these options left on the host (its records say which bridges and forwarders). */
export async function purgeEngineNetwork (o: { dataRoot: string, execRoot: string, prefix?: string, defaultBridge?: string }): Promise<void> {
  const tools = await findTools()
  if (typeof tools === 'string') return
  const paths = networkPaths(o.dataRoot, o.execRoot)
  const bridges = o.defaultBridge === undefined ? [] : [o.defaultBridge]
  for (const r of await records(paths.networks)) if (typeof r.bridge === 'string' && r.bridge !== '') bridges.push(r.bridge)
  const forwarders: number[] = []
  for (const r of await records(paths.sandboxes)) for (const p of Array.isArray(r.ports) ? r.ports : []) if (typeof p?.proxyPid === 'number' && p.proxyPid > 0) forwarders.push(p.proxyPid)
  await removeHostState(tools, { prefix: enginePrefix(o.prefix), netnsDir: paths.netns, bridges, forwarders }, true)
}

async function records (dir: string): Promise<Array<Record<string, any>>> {
  const out: Array<Record<string, any>> = []
  for (const f of await readdir(dir).catch(() => [] as string[])) {
    if (!f.endsWith('.json')) continue
    try { out.push(JSON.parse(await readFile(join(dir, f), 'utf8'))) } catch { /* a torn or foreign file */ }
  }
  return out
}
