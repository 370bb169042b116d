// What the container routes need (ContainerOps in lib/engine implements it): method-only, typed in lib/containers'
// vocabulary; the replies' wire shapes are wire.ts's and list-reply.ts's.
import type { Filters } from '../../http/query.js'
import type { ContainerHandle } from '../../containers/container-handle.js'
import type { WaitCondition, WaitResult } from '../../containers/container-service.js'
import type { ListOptions } from '../../containers/container-list.js'
import type { UpdateRequest } from '../../containers/update-request.js'
import type { CreateRequest } from '../../containers/create-request.js'
import type { LogsRequest } from '../../containers/container-logs.js'
import type { AttachOptions } from '../../containers/attach.js'
import type { Writable } from 'node:stream'

export interface ContainerBackend {
  /** Full ID, name or unique ID prefix; throws not-found. */
  get (ref: string): ContainerHandle
  /** The create's warnings (what is not applied, said out loud). */
  create (req: CreateRequest, name: string | null): Promise<{ id: string, warnings: string[] }>
  start (ref: string): Promise<void>
  stop (ref: string, timeoutSec: number | undefined, signal: string | undefined): Promise<void>
  restart (ref: string, timeoutSec: number | undefined, signal: string | undefined): Promise<void>
  kill (ref: string, signal: string | undefined): Promise<void>
  pause (ref: string): Promise<void>
  unpause (ref: string): Promise<void>
  rename (ref: string, newName: string): Promise<void>
  remove (ref: string, force: boolean, volumes: boolean): Promise<void>
  /** `docker rm --link /parent/alias`. */
  removeLink (name: string): Promise<void>
  /** The update's warnings. */
  update (ref: string, req: UpdateRequest): Promise<string[]>
  /** Validates at once; resolves when the condition holds, rejects when `signal` fires first. */
  waitFor (c: ContainerHandle, condition: WaitCondition, signal: AbortSignal): Promise<WaitResult>
  /** What a wait answers for a container auto-removed in the last minute (by ID, name or prefix); undefined for others. */
  exitOfAutoRemoved (ref: string, condition: WaitCondition): WaitResult | undefined
  /** The containers the options choose, newest first. */
  listContainers (o: ListOptions): ContainerHandle[]
  containerSizes (c: ContainerHandle): Promise<{ rw: number, rootfs: number }>
  /** Removes the stopped containers the filters choose; their IDs and the bytes reclaimed. */
  pruneContainers (filters: Filters): Promise<{ deleted: string[], reclaimed: number }>
  /** Writes the container's log to `out` until done (or `signal`). */
  logs (c: ContainerHandle, r: LogsRequest, out: Writable, signal: AbortSignal): Promise<void>
  /** One attach session on the hijacked connection (announced, as its detach is). */
  attach (c: ContainerHandle, o: Omit<AttachOptions, 'onDetach'>): Promise<void>
  /** Resizes a running container's terminal; throws for a container that is not running. */
  resize (c: ContainerHandle, height: number, width: number): void
}
