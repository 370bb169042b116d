// The one wire mapping of the specs (pure): an Engine API document (a service spec checked by service-spec.ts, or
// one read back from the state file) decoded into spec.ts's typed form, which keeps the document, frozen, for the
// API to show as it was. Decoding never throws: a field of the wrong type reads as unset, as the code before typed
// specs read it.
import type { ClusterSpec, ContainerSpec, EndpointSpec, FileReference, HealthcheckSpec, MountSpec, NetworkAttachment, PortSpec, Resources, RestartPolicySpec, ServiceMode, ServiceSpec, TaskSpec, UpdatePolicy, WireDoc } from './spec.js'

type Obj = Record<string, unknown>

function obj (v: unknown): Obj { return v !== null && typeof v === 'object' && !Array.isArray(v) ? v as Obj : {} }
function list (v: unknown): unknown[] { return Array.isArray(v) ? v : [] }
function str (v: unknown, dflt = ''): string { return typeof v === 'string' ? v : dflt }
function num (v: unknown): number | undefined { return typeof v === 'number' ? v : undefined }
function strs (v: unknown): string[] { return list(v).filter((x): x is string => typeof x === 'string') }
function strMap (v: unknown): Record<string, string> { return obj(v) as Record<string, string> }

/** The document, frozen all the way down (specs never change once decoded). */
export function frozen<T> (v: T): T {
  if (v !== null && typeof v === 'object' && !Object.isFrozen(v)) {
    Object.freeze(v)
    for (const x of Object.values(v)) frozen(x)
  }
  return v
}

function mode (w: Obj): ServiceMode {
  if (w.Global !== undefined) return { kind: 'global' }
  if (w.ReplicatedJob !== undefined) {
    const j = obj(w.ReplicatedJob)
    return { kind: 'replicated-job', maxConcurrent: num(j.MaxConcurrent) ?? 1, totalCompletions: num(j.TotalCompletions) ?? 1 }
  }
  if (w.GlobalJob !== undefined) return { kind: 'global-job' }
  return { kind: 'replicated', replicas: num(obj(w.Replicated).Replicas) ?? 1 }
}

const FAILURE_ACTIONS = ['pause', 'continue', 'rollback'] as const

/** UpdateConfig or RollbackConfig with dockerd's defaults (parallelism 1, pause, 5 s monitor, stop-first). */
function updatePolicy (given: unknown): UpdatePolicy {
  const u = obj(given)
  const monitor = u.Monitor === undefined ? 5_000_000_000 : num(u.Monitor) ?? 0
  const action = FAILURE_ACTIONS.find((a) => a === u.FailureAction) ?? 'pause'
  return {
    parallelism: u.Parallelism === undefined ? 1 : num(u.Parallelism) ?? 0,
    delayMs: (num(u.Delay) ?? 0) / 1e6,
    order: u.Order === 'start-first' ? 'start-first' : 'stop-first',
    failureAction: action,
    monitorMs: monitor / 1e6,
    maxFailureRatio: num(u.MaxFailureRatio) ?? 0
  }
}

function networks (v: unknown): NetworkAttachment[] {
  return list(v).map((n) => ({ target: str(obj(n).Target, String(obj(n).Target)), aliases: strs(obj(n).Aliases) }))
}

function resources (v: unknown): Resources {
  const r = obj(v)
  const out: { nanoCpus?: number, memoryBytes?: number, pids?: number } = {}
  if (num(r.NanoCPUs) !== undefined) out.nanoCpus = r.NanoCPUs as number
  if (num(r.MemoryBytes) !== undefined) out.memoryBytes = r.MemoryBytes as number
  if (num(r.Pids) !== undefined) out.pids = r.Pids as number
  return out
}

function restartPolicy (v: unknown): RestartPolicySpec {
  const rp = obj(v)
  const c = rp.Condition
  return {
    ...(c === 'none' || c === 'on-failure' || c === 'any' ? { condition: c } : {}),
    ...(num(rp.Delay) !== undefined ? { delayNs: rp.Delay as number } : {}),
    ...(num(rp.MaxAttempts) !== undefined ? { maxAttempts: rp.MaxAttempts as number } : {}),
    ...(num(rp.Window) !== undefined ? { windowNs: rp.Window as number } : {})
  }
}

function mount (v: unknown): MountSpec {
  const m = obj(v)
  const t = obj(m.TmpfsOptions)
  return {
    type: str(m.Type ?? 'volume', String(m.Type)),
    source: str(m.Source),
    target: str(m.Target, String(m.Target)),
    readOnly: m.ReadOnly === true,
    ...(m.TmpfsOptions !== undefined ? { tmpfsOptions: { ...(num(t.SizeBytes) !== undefined ? { sizeBytes: t.SizeBytes as number } : {}), ...(num(t.Mode) !== undefined ? { mode: t.Mode as number } : {}) } } : {})
  }
}

const HEALTH_FIELDS = [['Test', 'test'], ['Interval', 'interval'], ['Timeout', 'timeout'], ['StartPeriod', 'startPeriod'], ['StartInterval', 'startInterval'], ['Retries', 'retries']] as const

function healthcheck (v: unknown): HealthcheckSpec | undefined {
  if (v === undefined) return undefined
  const h = obj(v)
  const out: Record<string, unknown> = {}
  for (const [wire, name] of HEALTH_FIELDS) if (h[wire] !== undefined) out[name] = h[wire]
  return out as HealthcheckSpec
}

/** Secrets or Configs of a ContainerSpec (IDs resolved at create): the file each is mounted as, if any. */
function references (v: unknown, idKey: string, nameKey: string): FileReference[] {
  return list(v).map((x) => {
    const r = obj(x)
    const f = r.File === undefined || r.File === null ? undefined : obj(r.File)
    return {
      id: String(r[idKey]),
      name: str(r[nameKey]),
      ...(f !== undefined && f.Name !== undefined ? { file: { name: String(f.Name), uid: Number(f.UID ?? 0), gid: Number(f.GID ?? 0), mode: num(f.Mode) ?? 0o444 } } : {})
    }
  })
}

function containerSpec (v: unknown): ContainerSpec {
  const cs = obj(v)
  const dns = obj(cs.DNSConfig)
  return {
    image: str(cs.Image),
    labels: strMap(cs.Labels),
    command: strs(cs.Command),
    args: strs(cs.Args),
    hostname: str(cs.Hostname),
    env: strs(cs.Env),
    dir: str(cs.Dir),
    user: str(cs.User),
    groups: strs(cs.Groups),
    mounts: list(cs.Mounts).map(mount),
    stopSignal: str(cs.StopSignal),
    ...(num(cs.StopGracePeriod) !== undefined ? { stopGracePeriodNs: cs.StopGracePeriod as number } : {}),
    ...(cs.Healthcheck !== undefined ? { healthcheck: healthcheck(cs.Healthcheck) } : {}),
    secrets: references(cs.Secrets, 'SecretID', 'SecretName'),
    configs: references(cs.Configs, 'ConfigID', 'ConfigName'),
    init: cs.Init === true,
    tty: cs.TTY === true,
    openStdin: cs.OpenStdin === true,
    readOnly: cs.ReadOnly === true,
    hosts: strs(cs.Hosts),
    dnsConfig: { nameservers: strs(dns.Nameservers), search: strs(dns.Search), options: strs(dns.Options) },
    capabilityAdd: strs(cs.CapabilityAdd),
    capabilityDrop: strs(cs.CapabilityDrop)
  }
}

/** A TaskTemplate (or a task's Spec). */
export function decodeTaskSpec (wire: WireDoc): TaskSpec {
  frozen(wire)
  const res = obj(wire.Resources)
  const ld = wire.LogDriver === undefined || wire.LogDriver === null ? undefined : obj(wire.LogDriver)
  return frozen({
    wire,
    containerSpec: containerSpec(wire.ContainerSpec),
    resources: { limits: resources(res.Limits), reservations: resources(res.Reservations) },
    restartPolicy: restartPolicy(wire.RestartPolicy),
    placement: { constraints: strs(obj(wire.Placement).Constraints) },
    networks: networks(wire.Networks),
    ...(ld !== undefined ? { logDriver: { name: str(ld.Name), options: strMap(ld.Options) } } : {}),
    forceUpdate: num(wire.ForceUpdate) ?? 0
  })
}

function portSpec (v: unknown): PortSpec {
  const p = obj(v)
  return {
    protocol: str(p.Protocol, String(p.Protocol)),
    ...(num(p.TargetPort) !== undefined ? { targetPort: p.TargetPort as number } : {}),
    publishedPort: num(p.PublishedPort) ?? 0,
    publishMode: str(p.PublishMode, String(p.PublishMode))
  }
}

export function decodeEndpointSpec (wire: WireDoc): EndpointSpec {
  frozen(wire)
  return frozen({ wire, mode: str(wire.Mode, 'vip'), ports: list(wire.Ports).map(portSpec) })
}

/** A ServiceSpec; `template` reuses an equal TaskSpec already decoded (tasks share their service's). */
export function decodeServiceSpec (wire: WireDoc, template?: (w: WireDoc) => TaskSpec): ServiceSpec {
  frozen(wire)
  const tt = obj(wire.TaskTemplate)
  return frozen({
    wire,
    name: str(wire.Name),
    labels: strMap(wire.Labels),
    taskTemplate: template !== undefined ? template(tt) : decodeTaskSpec(tt),
    mode: mode(obj(wire.Mode)),
    update: updatePolicy(wire.UpdateConfig),
    rollback: updatePolicy(wire.RollbackConfig),
    endpointSpec: decodeEndpointSpec(obj(wire.EndpointSpec)),
    networks: networks(wire.Networks)
  })
}

/** The swarm's spec (as init and update merged it over dockerd's defaults). */
export function decodeClusterSpec (wire: WireDoc): ClusterSpec {
  frozen(wire)
  return frozen({
    wire,
    taskHistoryRetentionLimit: num(obj(wire.Orchestration).TaskHistoryRetentionLimit) ?? 5,
    autoLockManagers: obj(wire.EncryptionConfig).AutoLockManagers === true
  })
}
