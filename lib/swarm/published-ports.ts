// The services' published ports (ingress mode) follow their running tasks: after each orchestrator pass and each
// service removal, every published port forwards to the addresses of its service's running task containers, and the
// ports of services that are gone close (the forwarding itself is ingress.ts).
import { levelLogger } from '../log.js'
import { describeError } from '../errors.js'
import { Ingress, ingressKey, type IngressProtocol } from './ingress.js'
import type { Obj, SwarmState, TaskRecord } from './model.js'
import type { TaskContainers } from './task-containers.js'

const ops = levelLogger('swarm')

function obj (v: unknown): Obj { return v !== null && typeof v === 'object' && !Array.isArray(v) ? v as Obj : {} }

export class PublishedPorts {
  private readonly ingress = new Ingress()
  private readonly state: () => SwarmState
  private readonly tasksOf: (serviceId: string) => TaskRecord[]
  private readonly containers: TaskContainers
  private syncing = false

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
    if (this.syncing) return
    this.syncing = true
    try {
      const keep = new Set<string>()
      for (const s of Object.values(this.state().services)) {
        const ports = ((obj(s.Endpoint).Ports ?? []) as Obj[]).filter((p) => p.PublishMode !== 'host' && (p.Protocol === 'tcp' || p.Protocol === 'udp'))
        if (ports.length === 0) continue
        const backends: string[] = []
        for (const t of this.tasksOf(s.ID)) {
          if (t.Status.State !== 'running' || t.DesiredState === 'shutdown') continue
          const c = this.containers.inspect(t.Status.ContainerStatus?.ContainerID ?? '')
          if (c !== undefined && c.running && c.ip !== '') backends.push(c.ip)
        }
        for (const p of ports) {
          const proto = p.Protocol as IngressProtocol
          keep.add(ingressKey(p.PublishedPort as number, proto))
          await this.ingress.set(p.PublishedPort as number, proto, p.TargetPort as number, backends).catch((err) => { ops.warn('publishing %d/%s of service %s: %s', p.PublishedPort, proto, s.ID, describeError(err)) })
        }
      }
      await this.ingress.retain(keep)
    } catch (err) {
      ops.warn('the published ports of services were not brought up to date: %s', describeError(err))
    } finally { this.syncing = false }
  }

  /** Closes every published port (leaving the swarm, closing the daemon). */
  async closeAll (): Promise<void> { await this.ingress.close() }
}
