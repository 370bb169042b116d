// Bridges, veth pairs and persistent network namespaces through iproute2 and util-linux.
import { rm, readdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { must, run, type Tools } from './commands.js'
import { isMountPoint } from '../runtime/rootfs.js'

export class Links {
  private readonly t: Tools
  constructor (tools: Tools) { this.t = tools }

  async bridgeExists (name: string): Promise<boolean> {
    return (await run(this.t.ip, ['link', 'show', 'dev', name])).code === 0
  }

  /**
   * Creates (or re-adopts) a bridge with the gateway address, up. A bridge this call creates carries `mark` as its
   * alias (ifalias): a later boot knows it for one of its own even when the network's record is gone.
   */
  async ensureBridge (name: string, gatewayCidr: string, mtu = 0, mark = ''): Promise<void> {
    if (!await this.bridgeExists(name)) {
      await must(this.t.ip, ['link', 'add', 'name', name, ...(mtu > 0 ? ['mtu', String(mtu)] : []), 'type', 'bridge'])
      if (mark !== '') await must(this.t.ip, ['link', 'set', 'dev', name, 'alias', mark])
    }
    const addrs = await this.bridgeAddresses(name)
    if (!addrs.includes(gatewayCidr)) await must(this.t.ip, ['addr', 'replace', gatewayCidr, 'dev', name])
    // the bridge ends with exactly this address (dockerd replaces a bridge's other address: a pre-existing bridge
    // never collects one more subnet per boot)
    for (const a of addrs) if (a !== gatewayCidr) await run(this.t.ip, ['addr', 'del', a, 'dev', name])
    await must(this.t.ip, ['link', 'set', 'dev', name, 'up'])
  }

  /** An IPv6 address on a link (IPv6 enabled on it first), without duplicate address detection. */
  async ensureAddress6 (name: string, cidr: string): Promise<void> {
    await writeFile(`/proc/sys/net/ipv6/conf/${name}/disable_ipv6`, '0').catch(() => {}) // absent: the kernel's default
    await must(this.t.ip, ['-6', 'addr', 'replace', cidr, 'dev', name, 'nodad'])
  }

  /** The IPv4 addresses on a link, as `address/prefix` (host bits kept), in the order `ip` lists them. */
  async bridgeAddresses (name: string): Promise<string[]> {
    const r = await run(this.t.ip, ['-o', '-4', 'addr', 'show', 'dev', name])
    const out: string[] = []
    for (const line of r.stdout.split('\n')) {
      const m = /\sinet\s+(\S+)/.exec(line)
      if (m?.[1] !== undefined) out.push(m[1])
    }
    return out
  }

  async deleteLink (name: string): Promise<void> {
    await run(this.t.ip, ['link', 'del', 'dev', name])
  }

  /** Host interfaces whose names start with `prefix` or whose alias starts with `markPrefix` (ensureBridge's mark). */
  async linksMarked (prefix: string, markPrefix: string): Promise<string[]> {
    return (await this.hostLinks()).filter((l) => l.name.startsWith(prefix) || l.alias.startsWith(markPrefix)).map((l) => l.name)
  }

  /** Every host interface with its alias ('' when it has none). */
  private async hostLinks (): Promise<Array<{ name: string, alias: string }>> {
    const r = await run(this.t.ip, ['-o', 'link', 'show'])
    const out: Array<{ name: string, alias: string }> = []
    for (const line of r.stdout.split('\n')) {
      const m = /^\d+:\s+([^:@\s]+)/.exec(line)
      if (m?.[1] !== undefined) out.push({ name: m[1], alias: /\\\s+alias (.*)$/.exec(line)?.[1]?.trim() ?? '' })
    }
    return out
  }

  async removeNetns (path: string): Promise<void> {
    if (await isMountPoint(path)) await run('umount', ['-l', path])
    await rm(path, { force: true })
  }

  async netnsFiles (dir: string): Promise<string[]> {
    return (await readdir(dir).catch(() => [] as string[])).map((n) => join(dir, n))
  }

  /** Runs an `ip -batch` script inside a namespace. */
  async inNetns (path: string, script: string[]): Promise<void> {
    await must(this.t.nsenter, [`--net=${path}`, this.t.ip, '-batch', '-'], script.join('\n') + '\n')
  }

  /**
   * An interface inside the namespace (`ifName`) paired with `hostName` on the host, attached to the bridge, with the
   * address and, when `gateway` is given, the default route (docker network connect; a start's veths are made by
   * the container's monitor).
   */
  async attachVeth (o: { netns: string, hostName: string, ifName: string, bridge: string, mac: string, cidr: string, extra?: string[], cidr6?: string, gateway: string | null, gateway6?: string | null, mtu?: number }): Promise<void> {
    const mtu = o.mtu !== undefined && o.mtu > 0 ? ` mtu ${o.mtu}` : ''
    const script = [
      'link set lo up',
      `link add ${o.ifName}${mtu} type veth peer name ${o.hostName}${mtu} netns ${process.pid}`,
      `link set dev ${o.ifName} address ${o.mac}`,
      `addr add ${o.cidr} dev ${o.ifName}`,
      ...(o.extra ?? []).map((cidr) => `addr add ${cidr} dev ${o.ifName}`),
      // the network's IPv6 address, usable at once (no duplicate address detection, as dockerd)
      ...(o.cidr6 !== undefined && o.cidr6 !== '' ? [`addr add ${o.cidr6} dev ${o.ifName} nodad`] : []),
      `link set dev ${o.ifName} up`
    ]
    if (o.gateway !== null) script.push(`route replace default via ${o.gateway} dev ${o.ifName}`)
    if (o.gateway6 !== undefined && o.gateway6 !== null && o.gateway6 !== '') script.push(`route replace default via ${o.gateway6} dev ${o.ifName}`)
    await this.inNetns(o.netns, script)
    try {
      await must(this.t.ip, ['link', 'set', 'dev', o.hostName, 'master', o.bridge, 'up'])
    } catch (err) {
      await this.deleteLink(o.hostName)
      throw err
    }
  }

  /** Removes a veth pair by its host end (the container end goes with it). */
  async detachVeth (hostName: string): Promise<void> {
    await this.deleteLink(hostName)
  }
}
