// The event bus behind GET /events: a bounded history for `since`, bounded queues per subscriber.
import type { ServerResponse } from 'node:http'
import type { Filters } from '../http/query.js'
import { nowNs } from '../util/time.js'

export type EventType = 'container' | 'image' | 'network' | 'volume' | 'daemon' | 'service' | 'node'

export interface EngineEvent {
  type: EventType
  action: string
  actorId: string
  attributes: Record<string, string>
  timeNs: bigint
}

const HISTORY = 1024
const MAX_QUEUED = 4096

export function toWireEvent (e: EngineEvent): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  if (e.type === 'container' || e.type === 'image') {
    out.status = e.action
    out.id = e.actorId
    if (e.type === 'container' && e.attributes.image !== undefined) out.from = e.attributes.image
  }
  out.Type = e.type
  out.Action = e.action
  out.Actor = { ID: e.actorId, Attributes: e.attributes }
  out.scope = 'local'
  out.time = Number(e.timeNs / 1_000_000_000n)
  out.timeNano = Number(e.timeNs)
  return out
}

function matches (e: EngineEvent, filters: Filters): boolean {
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
      case 'scope': ok = values.includes('local'); break
      default: ok = values.some((v) => e.actorId === v || e.attributes.name === v)
    }
    if (!ok) return false
  }
  return true
}

interface Subscriber { filters: Filters, push: (e: EngineEvent) => void, end: () => void }

export class EventBus {
  private readonly history: EngineEvent[] = []
  private readonly subscribers = new Set<Subscriber>()

  emit (type: EventType, action: string, actorId: string, attributes: Record<string, string> = {}): void {
    const e: EngineEvent = { type, action, actorId, attributes, timeNs: nowNs() }
    this.history.push(e)
    if (this.history.length > HISTORY) this.history.shift()
    for (const s of this.subscribers) s.push(e)
  }

  /** Streams events to a reply until `until` passes, the client leaves, or close() is called. */
  async stream (opts: { res: ServerResponse, filters: Filters, sinceNs: bigint | undefined, untilNs: bigint | undefined, signal: AbortSignal }): Promise<void> {
    const { res, filters, sinceNs, untilNs, signal } = opts
    res.writeHead(200, { 'Content-Type': 'application/json' })
    res.flushHeaders()
    const queue: EngineEvent[] = []
    let wake: (() => void) | null = null
    let overflow = false
    let ended = false
    const sub: Subscriber = {
      filters,
      end () { ended = true; wake?.() },
      push (e) {
        if (!matches(e, filters)) return
        if (queue.length >= MAX_QUEUED) { overflow = true } else queue.push(e)
        wake?.()
      }
    }
    if (sinceNs !== undefined) {
      for (const e of this.history) if (e.timeNs >= sinceNs && (untilNs === undefined || e.timeNs <= untilNs) && matches(e, filters)) queue.push(e)
    }
    const now = nowNs()
    if (untilNs !== undefined && untilNs <= now) {
      for (const e of queue) res.write(JSON.stringify(toWireEvent(e)) + '\n')
      res.end()
      return
    }
    this.subscribers.add(sub)
    let timer: NodeJS.Timeout | undefined
    if (untilNs !== undefined) {
      timer = setTimeout(() => { wake?.() }, Number((untilNs - now) / 1_000_000n) + 1)
      timer.unref()
    }
    const onAbort = (): void => { wake?.() }
    signal.addEventListener('abort', onAbort)
    try {
      for (;;) {
        while (queue.length > 0) {
          const e = queue.shift() as EngineEvent
          if (untilNs !== undefined && e.timeNs > untilNs) break
          if (!res.write(JSON.stringify(toWireEvent(e)) + '\n')) {
            await new Promise<void>((resolve) => { res.once('drain', resolve); res.once('close', resolve) })
          }
        }
        if (overflow || ended || signal.aborted || res.destroyed) break
        if (untilNs !== undefined && nowNs() >= untilNs) break
        await new Promise<void>((resolve) => { wake = resolve })
        wake = null
      }
    } finally {
      this.subscribers.delete(sub)
      signal.removeEventListener('abort', onAbort)
      if (timer !== undefined) clearTimeout(timer)
    }
    if (!res.destroyed) res.end()
  }

  /** Ends every open stream (engine close). */
  close (): void {
    for (const s of this.subscribers) s.end()
    this.subscribers.clear()
  }
}
