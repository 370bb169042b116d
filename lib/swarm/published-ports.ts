// The services' published ports (ingress mode) follow their running tasks: after each orchestrator pass and each
// service removal, every published port forwards to the addresses of its service's running task containers, and the
// ports of services that are gone close (the forwarding itself is ingress.ts).
import { levelLogger } from '../log.js'
import { describeError } from '../errors.js'
import { Ingress, ingressKey, type IngressProtocol } from './ingress.js'
import type { SwarmState, TaskRecord } from './model.js'
import type { TaskContainers } from './task-containers.js'

const ops = levelLogger('swarm')

export class PublishedPorts {
  private readonly ingress = new Ingress()
  private readonly state: () => SwarmState
  private readonly tasksOf: (serviceId: string) => TaskRecord[]
  private readonly containers: TaskContainers
  /** The sync under way (one at a time: one asked for meanwhile runs once it is over, for what changed since). */
  private syncing: Promise<void> | null = null
  private again = false
  private closed = false

  constructor (o: { state: () => SwarmState, tasksOf: (serviceId: string) => TaskRecord[], containers: TaskContainers }) {
    this.state = o.state
    this.tasksOf = o.tasksOf
    this.containers = o.containers
  }

  /**
   * Points every published port at its service's running tasks; closes the ports no service publishes. Never
   * rejects (its callers do not wait for it): a failure is logged.
   */
  async sync (): Promise<void> {
    if (this.closed) return
    // (a task that began running while a sync read the tasks would wait for the next pass: maybe never)
    if (this.syncing !== null) { this.again = true; await this.syncing; return }
    this.syncing = (async () => {
      do {
        this.again = false
        await this.syncOnce().catch((err) => { ops.warn('the published ports of services were not brought up to date: %s', describeError(err)) })
      } while (this.again && !this.closed)
    })().finally(() => { this.syncing = null })
    await this.syncing
  }

  private async syncOnce (): Promise<void> {
    const keep = new Set<string>()
    for (const s of Object.values(this.state().services)) {
      const ports = (s.endpoint.ports ?? []).filter((p) => p.publishMode !== 'host' && (p.protocol === 'tcp' || p.protocol === 'udp'))
      if (ports.length === 0) continue
      const backends: string[] = []
      for (const t of this.tasksOf(s.id)) {
        if (t.status.state !== 'running' || t.desiredState === 'shutdown') continue
        const c = this.containers.inspect(t.status.containerStatus?.containerId ?? '')
        if (c !== undefined && c.running && c.ip !== '') backends.push(c.ip)
      }
      for (const p of ports) {
        const proto = p.protocol as IngressProtocol
        keep.add(ingressKey(p.publishedPort, proto))
        await this.ingress.set(p.publishedPort, proto, p.targetPort as number, backends).catch((err) => { ops.warn('publishing %d/%s of service %s: %s', p.publishedPort, proto, s.id, describeError(err)) })
      }
    }
    await this.ingress.retain(keep)
  }

  /** Closes every published port once a sync under way is over (leaving the swarm). */
  async closeAll (): Promise<void> {
    await this.syncing
    await this.ingress.close()
  }

  /** Closes every published port for good (the daemon stops): a sync asked for later opens none. */
  async close (): Promise<void> {
    this.closed = true
    await this.closeAll()
  }
}
