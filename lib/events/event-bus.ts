// The engine's event bus: a bounded history for `since`, and subscriptions with bounded queues. No HTTP here: the
// `/events` route writes subscriptions out.
import { nowNs } from '../util/time.js'

export type EventType = 'container' | 'image' | 'network' | 'volume' | 'daemon' | 'service' | 'node' | 'secret' | 'config'

export interface EngineEvent {
  type: EventType
  action: string
  actorId: string
  attributes: Record<string, string>
  timeNs: bigint
  /** Set by the emitter for a cluster object of another type (a swarm-scoped network's create, update, remove). */
  scope?: 'swarm'
}

/** Filter name → accepted values (dockerd's `filters` of GET /events); an empty list accepts everything. */
export type EventFilters = ReadonlyMap<string, readonly string[]>

const SWARM_TYPES: ReadonlySet<string> = new Set(['service', 'node', 'secret', 'config'])

/** dockerd's scope of an event: swarm for the cluster's objects (services, nodes, secrets, configs, and the creation,
 *  update and removal of overlay networks, which their emitter marks), local for the rest. */
export function eventScope (e: EngineEvent): 'local' | 'swarm' {
  return SWARM_TYPES.has(e.type) || e.scope === 'swarm' ? 'swarm' : 'local'
}

const HISTORY = 1024
const MAX_QUEUED = 4096

export function eventMatches (e: EngineEvent, filters: EventFilters): boolean {
  for (const [key, values] of filters) {
    if (values.length === 0) continue
    let ok = false
    switch (key) {
      case 'type': ok = values.includes(e.type); break
      case 'event': ok = values.some((v) => e.action === v || e.action.startsWith(v + ':')); break
      case 'container': ok = e.type === 'container' && values.some((v) => e.actorId.startsWith(v) || e.attributes.name === v); break
      case 'image': ok = values.some((v) => e.attributes.image === v || e.attributes.name === v || e.actorId === v); break
      case 'label': ok = values.some((v) => {
        const i = v.indexOf('=')
        return i === -1 ? e.attributes[v] !== undefined : e.attributes[v.slice(0, i)] === v.slice(i + 1)
      }); break
      case 'scope': ok = values.includes(eventScope(e)); break
      default: ok = values.some((v) => e.actorId === v || e.attributes.name === v)
    }
    if (!ok) return false
  }
  return true
}

/** One subscriber's view of the bus: matching events queue up (bounded) until taken. */
export class EventSubscription {
  private readonly queue: EngineEvent[] = []
  private wake: (() => void) | null = null
  /** More events arrived than the queue holds: the subscriber fell behind and should stop. */
  overflowed = false
  /** The bus closed, or the subscriber cancelled. */
  ended = false

  private readonly filters: EventFilters
  private readonly detach: (s: EventSubscription) => void

  constructor (filters: EventFilters, detach: (s: EventSubscription) => void) {
    this.filters = filters
    this.detach = detach
  }

  /** @internal the bus hands over a new event */
  offer (e: EngineEvent): void {
    if (!eventMatches(e, this.filters)) return
    if (this.queue.length >= MAX_QUEUED) this.overflowed = true
    else this.queue.push(e)
    this.notify()
  }

  /** The next queued event, or undefined when none is queued. */
  take (): EngineEvent | undefined {
    return this.queue.shift()
  }

  /** Resolves when an event is queued, the subscription ends, or notify() is called (timers, aborts). */
  async waitForMore (): Promise<void> {
    if (this.queue.length > 0 || this.ended || this.overflowed) return
    await new Promise<void>((resolve) => { this.wake = resolve })
    this.wake = null
  }

  /** Wakes a pending waitForMore(). */
  notify (): void {
    this.wake?.()
  }

  /** Stops receiving events. */
  cancel (): void {
    if (this.ended) return
    this.ended = true
    this.detach(this)
    this.notify()
  }
}

export class EventBus {
  private readonly history: EngineEvent[] = []
  private readonly subscribers = new Set<EventSubscription>()

  emit (type: EventType, action: string, actorId: string, attributes: Record<string, string> = {}, scope?: 'swarm'): void {
    const e: EngineEvent = { type, action, actorId, attributes, timeNs: nowNs(), ...(scope !== undefined ? { scope } : {}) }
    this.history.push(e)
    if (this.history.length > HISTORY) this.history.shift()
    for (const s of this.subscribers) s.offer(e)
  }

  /** A subscription for matching events; with `sinceNs`, the remembered events from then on come first. */
  subscribe (filters: EventFilters, sinceNs?: bigint): EventSubscription {
    const sub = new EventSubscription(filters, (s) => { this.subscribers.delete(s) })
    if (sinceNs !== undefined) for (const e of this.history) if (e.timeNs >= sinceNs) sub.offer(e)
    this.subscribers.add(sub)
    return sub
  }

  /** Ends every subscription (engine close). */
  close (): void {
    for (const s of [...this.subscribers]) s.cancel()
    this.subscribers.clear()
  }
}
