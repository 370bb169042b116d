// Swarm objects as stored: the Engine API's shapes (so inspect returns them as they are) plus a few internal fields
// (lower-case names, never sent). The task state machine lives here.

export interface Version { Index: number }

export interface Meta {
  ID: string
  Version: Version
  CreatedAt: string
  UpdatedAt: string
}

export type Obj = Record<string, unknown>

export interface SwarmRecord extends Meta {
  Spec: Obj
  JoinTokens: { Worker: string, Manager: string }
  /** The overlay networks' address pools and subnet size, and the data path port, as given at init (dockerd's defaults). */
  DefaultAddrPool?: string[]
  SubnetSize?: number
  DataPathPort?: number
  /** Internal: this node. */
  node: NodeRecord
  listenAddr: string
  advertiseAddr: string
}

export interface NodeRecord extends Meta {
  Spec: { Name?: string, Labels: Record<string, string>, Role: string, Availability: string }
}

export interface ServiceRecord extends Meta {
  Spec: Obj
  PreviousSpec?: Obj
  Endpoint: Obj
  UpdateStatus?: { State: string, StartedAt?: string, CompletedAt?: string, Message: string }
  JobStatus?: { JobIteration: Version, LastExecution: string }
  /** Internal: restart times (ms) per slot key, for RestartPolicy.MaxAttempts within Window. */
  restarts: Record<string, number[]>
}

export const TASK_STATES = ['new', 'pending', 'assigned', 'accepted', 'preparing', 'ready', 'starting', 'running',
  'complete', 'shutdown', 'failed', 'rejected', 'remove', 'orphaned'] as const
export type TaskState = typeof TASK_STATES[number]

export function isTerminal (s: string): boolean {
  return s === 'complete' || s === 'shutdown' || s === 'failed' || s === 'rejected' || s === 'remove' || s === 'orphaned'
}

/** A task moves forward only: its state never goes back to an earlier one. */
export function canMove (from: string, to: string): boolean {
  if (isTerminal(from)) return false
  return TASK_STATES.indexOf(to as TaskState) >= TASK_STATES.indexOf(from as TaskState)
}

export interface TaskStatus {
  Timestamp: string
  State: TaskState
  Message: string
  Err?: string
  ContainerStatus?: { ContainerID: string, PID: number, ExitCode: number }
  PortStatus: Obj
}

export interface TaskRecord extends Meta {
  Labels: Record<string, string>
  Spec: Obj
  ServiceID: string
  Slot?: number
  NodeID: string
  Status: TaskStatus
  DesiredState: string
  JobIteration?: Version
  /** Internal: the task ended while it was meant to run (not stopped by the orchestrator). */
  selfEnded?: boolean
  /** Internal: not started before this time (ms; the restart delay). */
  notBefore?: number
  /** Internal: a replacement made by the restart policy (counts against MaxAttempts). */
  restart?: boolean
  /** Internal: its container was stopped for failing its health check. */
  unhealthy?: boolean
  /** Internal: when the task was made (ms). */
  createdMs: number
  /** Internal: its service's labels, kept when the service is removed (swarmkit's task keeps its service annotations). */
  serviceLabels?: Record<string, string>
  /** Internal: when the task first ran, and when it reached a terminal state (ms; an update's monitor window). */
  runningMs?: number
  endedMs?: number
}

export interface SecretRecord extends Meta {
  /** `Data` only in states written before sealing (moved into `sealed` at load). */
  Spec: { Name: string, Labels: Record<string, string>, Data?: string, Driver?: Obj, Templating?: Obj }
  /** Internal: the data, sealed with the swarm's data key (lib/swarm/swarm-keys.ts). */
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
  return new Date(ms).toISOString().replace(/\.(\d{3})Z$/, (_m, f: string) => `.${f}${ns.toString().padStart(6, '0')}Z`)
}

/** The slot key of a task: its slot for replicated services and jobs, its node for global ones. */
export function slotKey (t: TaskRecord): string {
  return t.Slot !== undefined && t.Slot > 0 ? String(t.Slot) : t.NodeID
}
