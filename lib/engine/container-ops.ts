// The container operations the API asks for (lib/api/containers/backend.ts): the lifecycle (ContainerService), the
// list and prune (ContainerList), logs, attach sessions with their events, and terminal resizes.
import type { Writable } from 'node:stream'
import type { EventBus } from '../events/event-bus.js'
import type { Filters } from '../http/query.js'
import type { ContainerBackend } from '../api/containers/backend.js'
import type { ContainerHandle } from '../containers/container-handle.js'
import type { ContainerList, ListOptions } from '../containers/container-list.js'
import type { ContainerService, WaitCondition, WaitResult } from '../containers/container-service.js'
import type { UpdateRequest } from '../containers/update-request.js'
import type { CreateRequest } from '../containers/create-request.js'
import { streamContainerLogs, type LogsRequest } from '../containers/container-logs.js'
import { attachSession, type AttachOptions } from '../containers/attach.js'
import { eventAttributes, isRunning } from '../containers/container.js'
import { invalidArgument } from '../errors.js'

export class ContainerOps implements ContainerBackend {
  private readonly svc: ContainerService
  private readonly list: ContainerList
  private readonly events: EventBus

  constructor (o: { containers: ContainerService, list: ContainerList, events: EventBus }) {
    this.svc = o.containers
    this.list = o.list
    this.events = o.events
  }

  get (ref: string): ContainerHandle { return this.svc.get(ref) }
  async create (req: CreateRequest, name: string | null): Promise<{ id: string, warnings: string[] }> { return await this.svc.create(req, name) }
  async start (ref: string): Promise<void> { await this.svc.start(ref) }
  async stop (ref: string, timeoutSec: number | undefined, signal: string | undefined): Promise<void> { await this.svc.stop(ref, timeoutSec, signal) }
  async restart (ref: string, timeoutSec: number | undefined, signal: string | undefined): Promise<void> { await this.svc.restart(ref, timeoutSec, signal) }
  async kill (ref: string, signal: string | undefined): Promise<void> { await this.svc.kill(ref, signal) }
  async pause (ref: string): Promise<void> { await this.svc.pause(ref) }
  async unpause (ref: string): Promise<void> { await this.svc.unpause(ref) }
  async rename (ref: string, newName: string): Promise<void> { await this.svc.rename(ref, newName) }
  async remove (ref: string, force: boolean, volumes: boolean): Promise<void> { await this.svc.remove(ref, force, volumes, { alone: true }) }
  async removeLink (name: string): Promise<void> { await this.svc.removeLink(name) }
  async update (ref: string, req: UpdateRequest): Promise<string[]> { return await this.svc.update(ref, req) }
  async waitFor (c: ContainerHandle, condition: WaitCondition, signal: AbortSignal): Promise<WaitResult> { return await this.svc.waitFor(c, condition, signal) }
  exitOfAutoRemoved (ref: string, condition: WaitCondition): WaitResult | undefined { return this.svc.exitOfAutoRemoved(ref, condition) }

  listContainers (o: ListOptions): ContainerHandle[] { return this.list.listContainers(o) }
  async containerSizes (c: ContainerHandle): Promise<{ rw: number, rootfs: number }> { return await this.list.containerSizes(c) }
  async pruneContainers (filters: Filters): Promise<{ deleted: string[], reclaimed: number }> { return await this.list.pruneContainers(filters) }

  async logs (c: ContainerHandle, r: LogsRequest, out: Writable, signal: AbortSignal): Promise<void> { await streamContainerLogs(c, r, out, signal) }

  async attach (c: ContainerHandle, o: Omit<AttachOptions, 'onDetach'>): Promise<void> {
    this.emit(c, 'attach')
    await attachSession(c, { ...o, onDetach: () => { this.emit(c, 'detach') } })
  }

  resize (c: ContainerHandle, height: number, width: number): void {
    if (!isRunning(c.rec)) throw invalidArgument(`Container ${c.id} is not running`)
    c.conn?.resize(height, width)
  }

  private emit (c: ContainerHandle, action: 'attach' | 'detach'): void {
    this.events.emit('container', action, c.id, eventAttributes(c.rec))
  }
}
