// The container routes' backend: the lifecycle (ContainerService), the list and prune (ContainerList) and the
// attach event, behind the one method-only ContainerBackend interface.
import type { EventBus } from '../events/event-bus.js'
import type { Filters } from '../http/query.js'
import type { ContainerBackend, ListOptions } from './backend.js'
import type { ContainerHandle } from '../containers/container-handle.js'
import type { ContainerList } from '../containers/container-list.js'
import type { ContainerService, WaitCondition } from '../containers/container-service.js'

export class ContainerApi implements ContainerBackend {
  private readonly svc: ContainerService
  private readonly list: ContainerList
  private readonly events: EventBus

  constructor (o: { containers: ContainerService, list: ContainerList, events: EventBus }) {
    this.svc = o.containers
    this.list = o.list
    this.events = o.events
  }

  get (ref: string): ContainerHandle { return this.svc.get(ref) }
  async create (body: Record<string, unknown>, name: string | null): Promise<{ id: string, warnings: string[] }> { return await this.svc.create(body, name) }
  async start (ref: string): Promise<void> { await this.svc.start(ref) }
  async stop (ref: string, timeoutSec: number | undefined, signal: string | undefined): Promise<void> { await this.svc.stop(ref, timeoutSec, signal) }
  async restart (ref: string, timeoutSec: number | undefined, signal: string | undefined): Promise<void> { await this.svc.restart(ref, timeoutSec, signal) }
  async kill (ref: string, signal: string | undefined): Promise<void> { await this.svc.kill(ref, signal) }
  async pause (ref: string): Promise<void> { await this.svc.pause(ref) }
  async unpause (ref: string): Promise<void> { await this.svc.unpause(ref) }
  async rename (ref: string, newName: string): Promise<void> { await this.svc.rename(ref, newName) }
  async remove (ref: string, force: boolean, volumes: boolean): Promise<void> { await this.svc.remove(ref, force, volumes) }
  async removeLink (name: string): Promise<void> { await this.svc.removeLink(name) }
  async update (ref: string, body: Record<string, unknown>): Promise<string[]> { return await this.svc.update(ref, body) }
  async waitFor (c: ContainerHandle, condition: WaitCondition, signal: AbortSignal): Promise<{ StatusCode: number, Error?: { Message: string } }> {
    return await this.svc.waitFor(c, condition, signal)
  }

  async listContainers (o: ListOptions): Promise<Buffer> { return await this.list.listContainers(o) }
  async containerSizes (c: ContainerHandle): Promise<{ rw: number, rootfs: number }> { return await this.list.containerSizes(c) }
  async pruneContainers (filters: Filters): Promise<{ ContainersDeleted: string[], SpaceReclaimed: number }> { return await this.list.pruneContainers(filters) }

  emitAttach (c: ContainerHandle): void {
    this.events.emit('container', 'attach', c.id, { image: c.rec.image, name: c.rec.name.slice(1) })
  }

  emitDetach (c: ContainerHandle): void {
    this.events.emit('container', 'detach', c.id, { image: c.rec.image, name: c.rec.name.slice(1) })
  }
}
