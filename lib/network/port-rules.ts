// The published ports' firewall rules, applied off the request path: changes wait a short window and reach the
// kernel together, in order, in one batch of the firewall's (one iptables-restore). Rules a container's stop withdraws before they were applied
// never are: a `run --rm -p` of a short command spawns no iptables at all. The container's monitor serves its ports
// meanwhile, so a mapping works before its rule exists (outside clients then appear from the gateway's address).
import { describeError } from '../errors.js'
import { levelLogger } from '../log.js'
import type { Firewall, Rule } from './firewall.js'

const ops = levelLogger('engine:network')

/** How long a change waits for others to share its iptables-restore. */
export const RULES_WINDOW_MS = 200

export class PortRules {
  private readonly fw: Firewall
  /** Rules waiting to be added, by owner (a container): its stop can take them back. */
  private readonly adding = new Map<string, Rule[]>()
  private removing: Rule[] = []
  private timer: NodeJS.Timeout | null = null
  private applied: Promise<void> = Promise.resolve()

  constructor (fw: Firewall) { this.fw = fw }

  add (owner: string, rules: Rule[]): void {
    if (rules.length === 0) return
    this.adding.set(owner, [...(this.adding.get(owner) ?? []), ...rules])
    this.schedule()
  }

  /** Rules `owner` added: taken back if they are still waiting, removed otherwise. */
  remove (owner: string, rules: Rule[]): void {
    if (rules.length === 0 || this.adding.delete(owner)) return
    this.removing.push(...rules)
    this.schedule()
  }

  /** Applies what waits now; resolves once every change made so far is applied, rejects if this batch failed. */
  async now (): Promise<void> {
    const batch = this.flush()
    for (let last = this.applied; ; last = this.applied) { await last; if (last === this.applied) break }
    await batch
  }

  private schedule (): void {
    if (this.timer !== null) return
    this.timer = setTimeout(() => { this.flush() }, RULES_WINDOW_MS)
    this.timer.unref()
  }

  /** Starts applying what waits (after what is being applied); the batch's own promise, which may reject. */
  private flush (): Promise<void> {
    if (this.timer !== null) { clearTimeout(this.timer); this.timer = null }
    if (this.adding.size === 0 && this.removing.length === 0) return Promise.resolve()
    const add = [...this.adding.values()].flat()
    const remove = this.removing
    this.adding.clear()
    this.removing = []
    // one batch of the firewall's (removals first: a container started again re-adds what its stop removes)
    const batch = this.applied.then(async () => { await Promise.all([this.fw.remove(remove), this.fw.add(add)]) })
    this.applied = batch.catch((err) => { ops.warn('the published ports\' firewall rules were not all applied: %s', describeError(err)) })
    return batch
  }
}
