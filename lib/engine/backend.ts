// The narrow interfaces the route tables depend on. The Engine implements them; tests may fake them.
import type { Filters } from '../http/query.js'
import type { WaitCondition } from '../containers/container-service.js'
import type { ContainerHandle } from '../containers/container-handle.js'
import type { ExecInstance, ExecService } from '../containers/exec-service.js'

export interface ListOptions { all: boolean, limit: number, size: boolean, filters: Filters }

/** The lifecycle operations the container routes call (ContainerService implements them). */
export interface ContainerLifecycle {
  /** Full ID, name or unique ID prefix; throws not-found. */
  get (ref: string): ContainerHandle
  create (body: Record<string, unknown>, name: string | null): Promise<{ id: string, warnings: string[] }>
  start (ref: string): Promise<void>
  stop (ref: string, timeoutSec: number | undefined, signal: string | undefined): Promise<void>
  restart (ref: string, timeoutSec: number | undefined, signal: string | undefined): Promise<void>
  kill (ref: string, signal: string | undefined): Promise<void>
  pause (ref: string): Promise<void>
  unpause (ref: string): Promise<void>
  rename (ref: string, newName: string): Promise<void>
  remove (ref: string, force: boolean, volumes: boolean): Promise<void>
  removeLink (name: string): Promise<void>
  update (ref: string, body: Record<string, unknown>): Promise<string[]>
  waitFor (c: ContainerHandle, condition: WaitCondition, signal: AbortSignal): Promise<{ StatusCode: number, Error?: { Message: string } }>
}

export interface ContainerBackend extends ContainerLifecycle {
  /** The list as JSON text (an array). */
  listContainers (opts: ListOptions): Promise<Buffer>
  containerSizes (c: ContainerHandle): Promise<{ rw: number, rootfs: number }>
  emitAttach (c: ContainerHandle): void
  emitDetach (c: ContainerHandle): void
  pruneContainers (filters: Filters): Promise<{ ContainersDeleted: string[], SpaceReclaimed: number }>
}

/** What the exec routes call (ExecService implements it). */
export interface ExecBackend {
  /** The container an exec is created in (full ID, name or unique ID prefix; throws not-found). */
  container (ref: string): ContainerHandle
  create (c: ContainerHandle, body: Record<string, unknown>): ExecInstance
  get (ref: string): ExecInstance
  start: ExecService['start']
  resize (e: ExecInstance, h: number, w: number): void
  inspect (e: ExecInstance): Record<string, unknown>
}

export interface NetworkBackend {
  listNetworks (filters: Filters): Promise<unknown[]>
  inspectNetwork (ref: string, scope: string): Promise<Record<string, unknown>>
  createNetwork (body: Record<string, unknown>): Promise<{ Id: string, Warning: string }>
  removeNetwork (ref: string): Promise<void>
  connectNetwork (ref: string, body: Record<string, unknown>): Promise<void>
  disconnectNetwork (ref: string, body: Record<string, unknown>): Promise<void>
  pruneNetworks (filters: Filters): Promise<{ NetworksDeleted: string[] }>
}
