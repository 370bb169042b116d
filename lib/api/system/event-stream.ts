// GET /events on the wire: an event bus subscription written out as dockerd's JSON lines until `until` passes, the
// client leaves, the subscriber falls behind or the engine closes.
import type { ServerResponse } from 'node:http'
import { eventScope, type EngineEvent, type EventSubscription } from '../../events/event-bus.js'
import { nowNs } from '../../util/time.js'

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
  out.scope = eventScope(e)
  out.time = Number(e.timeNs / 1_000_000_000n)
  out.timeNano = Number(e.timeNs)
  return out
}

/** Writes the subscription's events to the reply; cancels the subscription when done. */
export async function writeEventStream (res: ServerResponse, sub: EventSubscription, untilNs: bigint | undefined, signal: AbortSignal): Promise<void> {
  res.writeHead(200, { 'Content-Type': 'application/json' })
  res.flushHeaders()
  const now = nowNs()
  if (untilNs !== undefined && untilNs <= now) {
    for (let e = sub.take(); e !== undefined; e = sub.take()) if (e.timeNs <= untilNs) res.write(JSON.stringify(toWireEvent(e)) + '\n')
    sub.cancel()
    res.end()
    return
  }
  let timer: NodeJS.Timeout | undefined
  // a timer counts from the event loop's cached time, which lags the clock on a busy loop: it may fire before
  // `until`, so each wake-up before it arms the timer again for what is left
  const armUntil = (): void => {
    if (untilNs === undefined) return
    if (timer !== undefined) clearTimeout(timer)
    timer = setTimeout(() => { sub.notify() }, Number((untilNs - nowNs()) / 1_000_000n) + 1)
    timer.unref()
  }
  armUntil()
  const onAbort = (): void => { sub.notify() }
  signal.addEventListener('abort', onAbort)
  try {
    for (;;) {
      for (let e = sub.take(); e !== undefined; e = sub.take()) {
        if (untilNs !== undefined && e.timeNs > untilNs) break
        if (!res.write(JSON.stringify(toWireEvent(e)) + '\n')) {
          await new Promise<void>((resolve) => { res.once('drain', resolve); res.once('close', resolve) })
        }
      }
      if (sub.overflowed || sub.ended || signal.aborted || res.destroyed) break
      if (untilNs !== undefined && nowNs() >= untilNs) break
      armUntil()
      await sub.waitForMore()
    }
  } finally {
    sub.cancel()
    signal.removeEventListener('abort', onAbort)
    if (timer !== undefined) clearTimeout(timer)
  }
  if (!res.destroyed) res.end()
}
