// The swarm's records as Berth keeps them in memory (camelCase, typed; the specs are spec.ts's) and the task state
// machine. The Engine API's shapes are made from them in wire.ts; state-file.ts writes them to disk in that shape.
import type { ClusterSpec, EndpointSpec, ServiceSpec, TaskSpec, WireDoc } from './spec.js'
import { isoTime } from '../util/time.js'

/** The fields every swarm object opens with: its ID, version (Version.Index) and times. */
export interface Meta {
  id: string
  version: number
  createdAt: string
  updatedAt: string
}

export interface SwarmRecord extends Meta {
  spec: ClusterSpec
  joinTokens: { worker: string, manager: string }
  /** The overlay networks' address pools and subnet size, and the data path port, as given at init (undefined in a state written before they existed: dockerd's defaults). */
  defaultAddrPool?: string[]
  subnetSize?: number
  dataPathPort?: number
  /** This node. */
  node: NodeRecord
  listenAddr: string
  advertiseAddr: string
}

export interface NodeSpec {
  name?: string
  labels: Record<string, string>
  role: string
  availability: string
}

export interface NodeRecord extends Meta { spec: NodeSpec }

/** A service's endpoint: the endpoint spec it was made from and the ports published for it (PublishedPort chosen). */
export interface Endpoint {
  spec: EndpointSpec
  ports?: PublishedPort[]
}

export interface PublishedPort {
  protocol: string
  targetPort?: number
  publishedPort: number
  publishMode: string
}

export type UpdateState = 'updating' | 'paused' | 'completed' | 'rollback_started' | 'rollback_paused' | 'rollback_completed'

export interface UpdateStatus {
  state: UpdateState
  startedAt?: string
  completedAt?: string
  message: string
}

export interface ServiceRecord extends Meta {
  spec: ServiceSpec
  previousSpec?: ServiceSpec
  endpoint: Endpoint
  updateStatus?: UpdateStatus
  /** A job's run: JobIteration.Index and when it started. */
  jobStatus?: { jobIteration: number, lastExecution: string }
  /** Restart times (ms) per slot key, for RestartPolicy.MaxAttempts within Window. */
  restarts: Record<string, number[]>
}

export const TASK_STATES = ['new', 'pending', 'assigned', 'accepted', 'preparing', 'ready', 'starting', 'running',
  'complete', 'shutdown', 'failed', 'rejected', 'remove', 'orphaned'] as const
export type TaskState = typeof TASK_STATES[number]

export function isTerminal (s: TaskState): boolean {
  return s === 'complete' || s === 'shutdown' || s === 'failed' || s === 'rejected' || s === 'remove' || s === 'orphaned'
}

/** A task moves forward only: its state never goes back to an earlier one. */
export function canMove (from: TaskState, to: TaskState): boolean {
  if (isTerminal(from)) return false
  return TASK_STATES.indexOf(to) >= TASK_STATES.indexOf(from)
}

export interface ContainerStatus { containerId: string, pid: number, exitCode: number }

export interface TaskStatus {
  timestamp: string
  state: TaskState
  message: string
  err?: string
  containerStatus?: ContainerStatus
  /** PortStatus as the API shows it (always empty: host-mode ports are the container's). */
  portStatus: WireDoc
}

export interface TaskRecord extends Meta {
  labels: Record<string, string>
  spec: TaskSpec
  serviceId: string
  slot?: number
  nodeId: string
  status: TaskStatus
  /** running, complete (jobs), shutdown or remove (its service is gone). */
  desiredState: TaskState
  jobIteration?: number
  /** The task ended while it was meant to run (not stopped by the orchestrator). */
  selfEnded?: boolean
  /** Not started before this time (ms; the restart delay). */
  notBefore?: number
  /** A replacement made by the restart policy (counts against MaxAttempts). */
  restart?: boolean
  /** Its container was stopped for failing its health check. */
  unhealthy?: boolean
  /** When the task was made (ms). */
  createdMs: number
  /** Its service's labels, kept when the service is removed (swarmkit's task keeps its service annotations). */
  serviceLabels?: Record<string, string>
  /** When the task first ran, and when it reached a terminal state (ms; an update's monitor window). */
  runningMs?: number
  endedMs?: number
}

export interface SecretSpec {
  name: string
  labels: Record<string, string>
  /** Templating as given (shown, not applied). */
  templating?: WireDoc
  /** The base64 data of a state written before sealing (moved into `sealed` at load). */
  data?: string
}

export interface SecretRecord extends Meta {
  spec: SecretSpec
  /** The data, sealed with the swarm's data key (lib/swarm/swarm-keys.ts). */
  sealed?: string
}

export interface SwarmState {
  index: number
  swarm: SwarmRecord | null
  services: Record<string, ServiceRecord>
  tasks: Record<string, TaskRecord>
  secrets: Record<string, SecretRecord>
  configs: Record<string, SecretRecord>
}

export function emptyState (): SwarmState {
  return { index: 0, swarm: null, services: {}, tasks: {}, secrets: {}, configs: {} }
}

export function nowIso (): string {
  const ms = Date.now()
  const ns = process.hrtime.bigint() % 1_000_000n
  return isoTime(ms).replace(/\.(\d{3})Z$/, (_m, f: string) => `.${f}${ns.toString().padStart(6, '0')}Z`)
}

/** The slot key of a task: its slot for replicated services and jobs, its node for global ones. */
export function slotKey (t: TaskRecord): string {
  return t.slot !== undefined && t.slot > 0 ? String(t.slot) : t.nodeId
}
