// Tasks as the API shows them: list (with dockerd's filters, stack ps's label filter on the service's labels), inspect
// and logs; and the removal of a task's container when the swarm is left.
import os from 'node:os'
import { describeError, notFound } from '../errors.js'
import type { Filters } from '../http/query.js'
import { levelLogger } from '../log.js'
import type { TaskRecord } from './model.js'
import type { Services } from './services.js'
import { sameTaskSpec, stopTimeoutOf } from './spec.js'
import { activeSwarm, matchLabel, type SwarmContext } from './swarm-context.js'
import { taskName } from './task-container-spec.js'
import type { TaskFiles } from './task-files.js'
import { loggedTasks, logsTty, writeTaskLogs, type LogOptions } from './task-logs.js'
import { toTask, type Wire } from './wire.js'

const ops = levelLogger('swarm')

export class Tasks {
  private readonly c: SwarmContext
  private readonly services: Services
  private readonly files: TaskFiles

  constructor (c: SwarmContext, services: Services, files: TaskFiles) {
    this.c = c
    this.services = services
    this.files = files
  }

  /** The name `docker service ps` shows (<service>.<slot or node>), '' once its service is gone. */
  private name (t: TaskRecord): string {
    const svc = this.c.store.state.services[t.serviceId]
    return svc === undefined ? '' : taskName(svc.spec.name, t).replace(/\.[^.]+$/, '')
  }

  list (f: Filters): Wire[] {
    activeSwarm(this.c)
    const st = this.c.store.state
    let list = Object.values(st.tasks)
    for (const [k, values] of f) {
      if (values.length === 0) continue
      list = list.filter((t) => {
        switch (k) {
          case 'id': return values.some((v) => t.id.startsWith(v))
          case 'service': return values.some((v) => { const s = this.services.find(v); return s !== undefined && s.id === t.serviceId })
          case 'node': return values.some((v) => v === t.nodeId || v === os.hostname() || v === 'self' || t.nodeId.startsWith(v))
          case 'name': return values.some((v) => this.name(t).startsWith(v))
          case 'desired-state': return values.some((v) => v === t.desiredState || (v === 'accepted' && t.desiredState === 'running'))
          // swarmkit matches a task's labels and its service's (docker stack ps filters on the service's)
          case 'label': return matchLabel({ ...(t.serviceLabels ?? st.services[t.serviceId]?.spec.labels), ...t.labels }, values)
          case '_up-to-date': {
            const s = st.services[t.serviceId]
            return s !== undefined && sameTaskSpec(t.spec, s.spec.taskTemplate)
          }
          default: return true
        }
      })
    }
    return list.sort((a, b) => a.createdMs - b.createdMs).map(toTask)
  }

  private get (ref: string): TaskRecord {
    activeSwarm(this.c)
    const all = this.c.store.state.tasks
    const t = all[ref] ?? (() => { const m = Object.values(all).filter((x) => ref.length > 0 && x.id.startsWith(ref)); return m.length === 1 ? m[0] : undefined })()
    if (t === undefined) throw notFound(`task ${ref} not found`)
    return t
  }

  inspect (ref: string): Wire { return toTask(this.get(ref)) }

  /** Whether the logs of a task are raw (TTY) rather than multiplexed; throws for an unknown one. */
  logsTty (ref: string): boolean { return logsTty(loggedTasks([this.get(ref)])) }

  async logs (ref: string, o: LogOptions, write: (stream: 1 | 2, data: Buffer) => void): Promise<void> {
    await writeTaskLogs(this.c.containers, loggedTasks([this.get(ref)]), o, write)
  }

  /** Whether a container is a task container whose service was removed (shutting down, or a stray). */
  containerLeaving (containerId: string): boolean {
    const taskId = this.c.containers.inspect(containerId)?.labels['com.docker.swarm.task.id']
    if (taskId === undefined) return false
    const t = this.c.store.state.tasks[taskId]
    return t === undefined || this.c.store.state.services[t.serviceId] === undefined
  }

  /** Removes (forced) every task container left (the swarm is left: no task record is kept). */
  async removeStrays (): Promise<void> {
    const { containers } = this.c
    await Promise.all(containers.withLabel('com.docker.swarm.task.id').map(async (c) => {
      await containers.remove(c.id, true).catch((err) => { ops.warn('removing container %s of a task that is gone: %s', c.id.slice(0, 12), describeError(err)) })
    }))
  }

  /** Stops (its grace period) and removes a task's container and its files (the swarm is left). */
  async removeContainer (t: TaskRecord): Promise<void> {
    const { containers } = this.c
    const cid = t.status.containerStatus?.containerId
    const c = cid !== undefined && cid !== '' ? containers.inspect(cid) : containers.withLabel('com.docker.swarm.task.id').find((x) => x.labels['com.docker.swarm.task.id'] === t.id)
    try {
      if (c !== undefined) {
        // best effort: the forced removal below ends what the stop could not
        if (c.running) await containers.stop(c.id, stopTimeoutOf(t.spec)).catch(() => {})
        await containers.remove(c.id, true)
      }
      await this.files.remove(t.id)
    } catch (err) { ops.warn('removing task %s leaves its container or files: %s', t.id, describeError(err)) }
  }
}
