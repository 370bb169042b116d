// The swarm's narrow view of the engine: task containers created (from the swarm's typed request), started, stopped,
// removed, inspected, waited on and their logs read through the container service; images and networks looked up.
// Nothing else crosses over.
import type { ContainerService } from '../containers/container-service.js'
import type { ContainerHandle } from '../containers/container-handle.js'
import { isRunning } from '../containers/container.js'
import { streamLog } from '../containers/log-reader.js'
import { demuxSink } from '../stream/stdcopy.js'
import type { ImageService } from '../image/image-service.js'
import type { NetworkService } from '../network/network-service.js'
import type { TaskContainers, TaskContainerState, TaskNetworks, TaskLogOptions } from '../swarm/task-containers.js'

function stateOf (c: ContainerHandle): TaskContainerState {
  // the address on its first predefined network, else its first address on any network
  const view = c.networkView?.()
  const known = view === undefined ? [] : view.sandbox.attachments.filter((a) => view.network(a.networkId) !== undefined)
  const primary = known.find((a) => view?.network(a.networkId)?.predefined === true)?.ip ?? ''
  const ip = primary !== '' ? primary : known.map((a) => a.ip).find((a) => a !== '') ?? ''
  return {
    id: c.id,
    name: c.rec.name.slice(1),
    labels: c.rec.config.labels,
    running: isRunning(c.rec),
    status: c.rec.state.status,
    pid: c.rec.state.pid,
    exitCode: c.rec.state.exitCode,
    oomKilled: c.rec.state.oomKilled,
    error: c.rec.state.error,
    ip,
    health: isRunning(c.rec) ? c.rec.state.health?.status ?? '' : ''
  }
}

export function taskContainers (containers: ContainerService, images: ImageService): TaskContainers {
  return {
    create: async (name, req) => await containers.create(req, name),
    start: async (id) => { await containers.start(id) },
    stop: async (id, timeoutSec, signal) => {
      const c = containers.find(id)
      if (c === undefined || !isRunning(c.rec)) return
      await containers.stop(id, timeoutSec, signal).catch((err: { kind?: string }) => { if (err.kind !== 'not-modified') throw err })
    },
    remove: async (id, force) => { if (containers.find(id) !== undefined) await containers.remove(id, force, false) },
    inspect: (id) => { const c = id === '' ? undefined : containers.find(id); return c === undefined ? undefined : stateOf(c) },
    withLabel: (key) => containers.all().filter((c) => c.rec.config.labels[key] !== undefined).map(stateOf),
    waitExit: async (id, signal) => {
      const c = containers.find(id)
      if (c === undefined || c.removed) return undefined
      if (!isRunning(c.rec)) return stateOf(c)
      return await new Promise<TaskContainerState | undefined>((resolve) => {
        const finish = (v: TaskContainerState | undefined): void => {
          c.off('exit', onExit); c.off('removed', onRemoved); signal.removeEventListener('abort', onAbort)
          resolve(v)
        }
        const onExit = (): void => { finish(stateOf(c)) }
        const onRemoved = (): void => { finish(undefined) }
        const onAbort = (): void => { finish(undefined) }
        c.on('exit', onExit)
        c.on('removed', onRemoved)
        signal.addEventListener('abort', onAbort)
      })
    },
    waitHealth: async (id, known, signal) => {
      const c = containers.find(id)
      const now = (): string => c === undefined || c.removed || !isRunning(c.rec) ? '' : c.rec.state.health?.status ?? ''
      if (now() !== known || c === undefined) return now()
      return await new Promise<string>((resolve) => {
        const finish = (): void => {
          c.off('health', onChange); c.off('exit', onChange); c.off('removed', onChange); signal.removeEventListener('abort', onChange)
          resolve(signal.aborted ? '' : now())
        }
        const onChange = (): void => { if (signal.aborted || now() !== known) finish() }
        c.on('health', onChange)
        c.on('exit', onChange)
        c.on('removed', onChange)
        signal.addEventListener('abort', onChange)
      })
    },
    hasImage: (ref) => { try { images.store.lookup(ref); return true } catch { return false } },
    logs: async (id, o: TaskLogOptions, onLine) => {
      const c = containers.find(id)
      if (c === undefined) return
      const out = demuxSink((type, payload) => { onLine(type === 2 ? 2 : 1, payload) })
      await streamLog(out, {
        path: c.logPath,
        unit: 'lines',
        startOffset: 0,
        stdout: o.stdout,
        stderr: o.stderr,
        tty: false,
        timestamps: o.timestamps,
        ...(o.sinceNs !== undefined ? { sinceNs: o.sinceNs } : {}),
        ...(o.tail !== undefined ? { tail: o.tail } : {}),
        follow: o.follow,
        done: () => !isRunning(c.rec) || c.removed,
        waitMore: c.followWaiter(o.signal),
        signal: o.signal
      })
    }
  }
}

export function taskNetworks (network: NetworkService): TaskNetworks {
  return {
    find: (ref) => { const n = network.find(ref); return n === undefined ? undefined : { id: n.id, name: n.name, driver: n.driver } },
    removeOverlays: async () => await network.prune((n) => n.driver === 'overlay'),
    createIngress: async () => {
      await network.create({ name: 'ingress', driver: 'overlay', ingress: true, internal: false, attachable: false, enableIPv6: false, ipamDriver: 'default', ipamOptions: {}, pools: [], options: {}, labels: {} })
    }
  }
}
