// The operator's record of what happened to containers, images, volumes and networks, read off the engine's event
// bus and logged at info (berth:engine:info): container starts, exits with their code, the kernel's OOM kills,
// removals. Pulls and pushes log themselves with their sizes (lib/distribution), restarts by policy where they are
// decided (container-service).
import type { EngineEvent, EventBus } from '../events/event-bus.js'
import type { LevelLogger } from '../log.js'

const WATCHED = new Map<string, readonly string[]>([
  ['type', ['container', 'image', 'volume', 'network']],
  ['event', ['start', 'die', 'oom', 'destroy', 'delete', 'import', 'load']]
])

function container (e: EngineEvent): string {
  const name = e.attributes.name
  return `container ${e.actorId.slice(0, 12)}${name !== undefined && name !== '' ? ` (${name})` : ''}`
}

/** The line an event is logged as, or null for events that are not lifecycle. Pure. */
export function lifecycleLine (e: EngineEvent): string | null {
  switch (`${e.type} ${e.action}`) {
    case 'container start': return `${container(e)} started (image ${e.attributes.image ?? '?'})`
    case 'container die': return `${container(e)} exited with code ${e.attributes.exitCode ?? '?'}`
    case 'container oom': return `${container(e)}: a process was killed by the kernel's OOM killer (memory limit reached)`
    case 'container destroy': return `${container(e)} removed`
    case 'image delete': return `image ${e.actorId} removed`
    case 'image import': return `image ${e.actorId} imported as ${e.attributes.name ?? e.actorId}`
    case 'image load': return `image ${e.actorId} loaded`
    case 'volume destroy': return `volume ${e.actorId} removed`
    case 'network destroy': return `network ${e.actorId.slice(0, 12)} (${e.attributes.name ?? ''}) removed`
    default: return null
  }
}

/** Logs lifecycle events until the bus closes. */
export function watchLifecycle (events: EventBus, log: LevelLogger): void {
  const sub = events.subscribe(WATCHED)
  void (async () => {
    while (!sub.ended) {
      await sub.waitForMore()
      for (let e = sub.take(); e !== undefined; e = sub.take()) {
        if (!log.info.enabled) continue
        const line = lifecycleLine(e)
        if (line !== null) log.info('%s', line)
      }
      if (sub.overflowed) { log.warn('lifecycle log fell behind: events were dropped'); sub.cancel() }
    }
  })()
}
