// Service and task specs as Berth reads them: camelCase and typed, decoded once from the Engine API's document by
// spec-wire.ts. Each keeps that document as `wire` (checked by service-spec.ts, with dockerd's defaults filled): the
// API shows it as it was given, byte for byte, unknown fields included; only the wire mapping (spec-wire.ts, wire.ts,
// service-defaults.ts, state-file.ts) reads it. Specs never change once decoded: an update makes a new one.
// Durations are in nanoseconds as the API counts them (`…Ns`); the resolved policies below are in milliseconds.

/** An Engine API document as given (never changed: frozen at decode). */
export type WireDoc = Readonly<Record<string, unknown>>

export type ServiceMode =
  | { readonly kind: 'replicated', readonly replicas: number }
  | { readonly kind: 'global' }
  | { readonly kind: 'replicated-job', readonly maxConcurrent: number, readonly totalCompletions: number }
  | { readonly kind: 'global-job' }

export type ModeKind = ServiceMode['kind']

export interface ServiceSpec {
  readonly wire: WireDoc
  readonly name: string
  readonly labels: Readonly<Record<string, string>>
  readonly taskTemplate: TaskSpec
  readonly mode: ServiceMode
  /** UpdateConfig and RollbackConfig with dockerd's defaults where not given. */
  readonly update: UpdatePolicy
  readonly rollback: UpdatePolicy
  readonly endpointSpec: EndpointSpec
  /** Spec.Networks, the deprecated place (only when TaskTemplate.Networks is given too: else moved there). */
  readonly networks: readonly NetworkAttachment[]
}

export interface TaskSpec {
  readonly wire: WireDoc
  readonly containerSpec: ContainerSpec
  readonly resources: { readonly limits: Resources, readonly reservations: Resources }
  readonly restartPolicy: RestartPolicySpec
  readonly placement: { readonly constraints: readonly string[] }
  /** Networks by ID (resolved when the service was created or updated), with the aliases the task has on each. */
  readonly networks: readonly NetworkAttachment[]
  readonly logDriver?: { readonly name: string, readonly options: Readonly<Record<string, string>> }
  readonly forceUpdate: number
}

export interface NetworkAttachment { readonly target: string, readonly aliases: readonly string[] }

export interface Resources { readonly nanoCpus?: number, readonly memoryBytes?: number, readonly pids?: number }

/** RestartPolicy as given (restartPolicyOf fills the defaults). */
export interface RestartPolicySpec {
  readonly condition?: 'none' | 'on-failure' | 'any'
  readonly delayNs?: number
  readonly maxAttempts?: number
  readonly windowNs?: number
}

export interface ContainerSpec {
  readonly image: string
  readonly labels: Readonly<Record<string, string>>
  /** The entrypoint ([]: the image's). */
  readonly command: readonly string[]
  /** The command's arguments ([]: the image's). */
  readonly args: readonly string[]
  readonly hostname: string
  readonly env: readonly string[]
  readonly dir: string
  readonly user: string
  readonly groups: readonly string[]
  readonly mounts: readonly MountSpec[]
  /** '' for the image's. */
  readonly stopSignal: string
  readonly stopGracePeriodNs?: number
  readonly healthcheck?: HealthcheckSpec
  readonly secrets: readonly FileReference[]
  readonly configs: readonly FileReference[]
  readonly init: boolean
  readonly tty: boolean
  readonly openStdin: boolean
  readonly readOnly: boolean
  /** Extra /etc/hosts lines, swarm's "IP host [alias...]" (the container form "host:IP" accepted too). */
  readonly hosts: readonly string[]
  readonly dnsConfig: { readonly nameservers: readonly string[], readonly search: readonly string[], readonly options: readonly string[] }
  readonly capabilityAdd: readonly string[]
  readonly capabilityDrop: readonly string[]
}

export interface MountSpec {
  /** bind, volume or tmpfs (others are refused with a warning and skipped). */
  readonly type: string
  /** '' for an anonymous volume. */
  readonly source: string
  readonly target: string
  readonly readOnly: boolean
  readonly tmpfsOptions?: { readonly sizeBytes?: number, readonly mode?: number }
}

/** Healthcheck as given (null kept: the container shows what the service said); durations in ns. */
export interface HealthcheckSpec {
  readonly test?: readonly string[] | null
  readonly interval?: number | null
  readonly timeout?: number | null
  readonly startPeriod?: number | null
  readonly startInterval?: number | null
  readonly retries?: number | null
}

/** A secret or config a task gets: by ID, and the file it is mounted as (none: a config the runtime reads). */
export interface FileReference {
  readonly id: string
  readonly name: string
  readonly file?: { readonly name: string, readonly uid: number, readonly gid: number, readonly mode: number }
}

export interface EndpointSpec {
  readonly wire: WireDoc
  /** vip or dnsrr (both served as dnsrr). */
  readonly mode: string
  readonly ports: readonly PortSpec[]
}

export interface PortSpec {
  readonly protocol: string
  readonly targetPort?: number
  /** 0: one chosen from 30000-32767 (ingress mode), or any (host mode). */
  readonly publishedPort: number
  /** ingress or host. */
  readonly publishMode: string
}

/** The swarm's own spec (Orchestration, EncryptionConfig, ... as given with dockerd's defaults). */
export interface ClusterSpec {
  readonly wire: WireDoc
  readonly taskHistoryRetentionLimit: number
  readonly autoLockManagers: boolean
}

export interface RestartPolicy { condition: 'none' | 'on-failure' | 'any', delayMs: number, maxAttempts: number, windowMs: number }

export interface UpdatePolicy {
  parallelism: number
  delayMs: number
  order: 'stop-first' | 'start-first'
  failureAction: 'pause' | 'continue' | 'rollback'
  monitorMs: number
  maxFailureRatio: number
}

export function isJob (mode: ServiceMode): boolean { return mode.kind === 'replicated-job' || mode.kind === 'global-job' }

/** A service's restart policy with dockerd's defaults (jobs restart on failure only). */
export function restartPolicyOf (spec: ServiceSpec): RestartPolicy {
  const rp = spec.taskTemplate.restartPolicy
  return {
    condition: rp.condition ?? (isJob(spec.mode) ? 'on-failure' : 'any'),
    delayMs: rp.delayNs !== undefined ? rp.delayNs / 1e6 : 5000,
    maxAttempts: rp.maxAttempts ?? 0,
    windowMs: rp.windowNs !== undefined ? rp.windowNs / 1e6 : 0
  }
}

/** A task spec's stop timeout in seconds (StopGracePeriod rounded up; dockerd's 10 s when unset). */
export function stopTimeoutOf (spec: TaskSpec): number {
  const ns = spec.containerSpec.stopGracePeriodNs
  return ns !== undefined ? Math.ceil(ns / 1e9) : 10
}

/** Whether two task specs are the same (a task of the service's current template, or an outdated one). */
export function sameTaskSpec (a: TaskSpec, b: TaskSpec): boolean {
  return a === b || a.wire === b.wire || JSON.stringify(a.wire) === JSON.stringify(b.wire)
}

/** Placement constraints checked against this node's attributes; returns whether the node qualifies. */
export function constraintsMet (constraints: readonly string[], attrs: Record<string, string>): boolean {
  for (const c of constraints) {
    const m = /^\s*([\w.-]+)\s*(==|!=)\s*(.*?)\s*$/.exec(c)
    if (m === null) return false
    const key = (m[1] as string).toLowerCase()
    const have = Object.entries(attrs).find(([k]) => k.toLowerCase() === key)?.[1]
    const eq = have !== undefined && (key.startsWith('node.labels.') || key.startsWith('engine.labels.') ? have === m[3] : have.toLowerCase() === (m[3] as string).toLowerCase())
    if ((m[2] === '==') !== eq) return false
  }
  return true
}
