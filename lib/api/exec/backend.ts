// What the exec routes need (ExecService implements it): method-only, in lib/containers' vocabulary.
import type { ContainerHandle } from '../../containers/container-handle.js'
import type { ExecConfig, ExecInstance, ExecStartOptions } from '../../containers/exec-service.js'

export interface ExecBackend {
  /** The container an exec is created in (full ID, name or unique ID prefix; throws not-found). */
  container (ref: string): ContainerHandle
  /** Throws conflict for a container that is paused or not running. */
  create (c: ContainerHandle, config: ExecConfig): ExecInstance
  /** Full ID or unique prefix; throws not-found. */
  get (ref: string): ExecInstance
  /** Detached: resolves once the process runs; attached: once its output has been written to the connection. */
  start (e: ExecInstance, o: ExecStartOptions): Promise<void>
  /** Throws conflict for an exec that is not running. */
  resize (e: ExecInstance, height: number, width: number): void
}
