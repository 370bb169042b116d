// What the swarm needs of the container engine: a narrow, method-only interface the engine implements over its
// container service. The swarm never sees container records, handles or the runtime.
import type { CreateRequest } from '../containers/create-request.js'

export interface TaskContainerState {
  id: string
  name: string
  labels: Record<string, string>
  running: boolean
  /** The engine's status word: created, running, exited, ... (a created container never ran). */
  status: string
  pid: number
  exitCode: number
  oomKilled: boolean
  error: string
  /** The container's first IPv4 address on its networks ('' when none). */
  ip: string
  /** Its health status (starting, healthy, unhealthy), '' when it has no health check. */
  health: string
}

export interface TaskLogOptions {
  follow: boolean
  stdout: boolean
  stderr: boolean
  timestamps: boolean
  tail?: number
  sinceNs?: bigint
  signal: AbortSignal
}

export interface TaskContainers {
  /** Creates a task's container, named, from the typed request task-container-spec.ts makes of the task. */
  create: (name: string, req: CreateRequest) => Promise<{ id: string, warnings: string[] }>
  start: (id: string) => Promise<void>
  stop: (id: string, timeoutSec: number, signal?: string) => Promise<void>
  remove: (id: string, force: boolean) => Promise<void>
  /** Undefined when no such container exists. */
  inspect: (id: string) => TaskContainerState | undefined
  /** Containers carrying a label key (the swarm finds its task containers after a restart). */
  withLabel: (key: string) => TaskContainerState[]
  /** Resolves at the container's next exit (or at once when it is not running); undefined once it is removed. */
  waitExit: (id: string, signal: AbortSignal) => Promise<TaskContainerState | undefined>
  /** Resolves with the container's health status once it differs from `known` ('' once it exits or is removed). */
  waitHealth: (id: string, known: string, signal: AbortSignal) => Promise<string>
  /** Whether an image is present locally (a task of an unknown image is rejected). */
  hasImage: (ref: string) => boolean
  /** Reads a container's log as lines: onLine gets the stream (1 stdout, 2 stderr) and the line with its newline. */
  logs: (id: string, o: TaskLogOptions, onLine: (stream: 1 | 2, line: Buffer) => void) => Promise<void>
}

/** Events the swarm reports (service, node, secret, config). */
export interface SwarmEvents {
  emit: (type: 'service' | 'node' | 'secret' | 'config', action: string, id: string, attributes: Record<string, string>) => void
}

/** Networks a task joins, resolved by name or ID (the engine's network service answers). */
export interface TaskNetworks {
  /** The network's name and ID, or undefined when it does not exist. */
  find: (ref: string) => { id: string, name: string, driver: string } | undefined
  /** Removes the overlay networks no running container uses (leaving the swarm); returns their names. */
  removeOverlays: () => Promise<string[]>
  /** Creates the swarm's `ingress` network (init), from the swarm's address pools. */
  createIngress: () => Promise<void>
}
