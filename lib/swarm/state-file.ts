// The swarm's state file (<data-root>/swarm/state.json) and the records in memory (pure). On disk every record has
// the Engine API's shape (wire.ts's, readable with any JSON tool, the format Berth always wrote) plus its internal
// fields in camelCase; it is decoded once at load. Tasks whose spec is their service's share its decoded TaskSpec.
//
//   { index, swarm: {ID, Version, CreatedAt, UpdatedAt, Spec, JoinTokens, DefaultAddrPool?, SubnetSize?, DataPathPort?,
//                    node: {ID, Version, CreatedAt, UpdatedAt, Spec}, listenAddr, advertiseAddr} | null,
//     services: {<id>: API Service (no ServiceStatus) + restarts},
//     tasks:    {<id>: API Task + selfEnded?, notBefore?, restart?, unhealthy?, createdMs, serviceLabels?, runningMs?, endedMs?},
//     secrets, configs: {<id>: {ID, Version, CreatedAt, UpdatedAt, Spec: {Name, Labels, Templating?, Data? (before sealing)}, sealed?}} }
import { emptyState, type Meta, type NodeRecord, type SecretRecord, type ServiceRecord, type SwarmRecord, type SwarmState, type TaskRecord, type TaskState, type UpdateStatus } from './model.js'
import { decodeClusterSpec, decodeEndpointSpec, decodeServiceSpec, decodeTaskSpec } from './spec-wire.js'
import type { TaskSpec, WireDoc } from './spec.js'
import { metaWire, nodeSpecWire, toService, toTask, type Wire } from './wire.js'

type Obj = Record<string, unknown>

function obj (v: unknown): Obj { return v !== null && typeof v === 'object' && !Array.isArray(v) ? v as Obj : {} }
function str (v: unknown): string { return typeof v === 'string' ? v : '' }
function num (v: unknown): number | undefined { return typeof v === 'number' ? v : undefined }
function strMap (v: unknown): Record<string, string> { return obj(v) as Record<string, string> }

// ---- encode ---------------------------------------------------------------------------------------------------

function swarmFile (s: SwarmRecord): Wire {
  return {
    ...metaWire(s),
    Spec: s.spec.wire,
    JoinTokens: { Worker: s.joinTokens.worker, Manager: s.joinTokens.manager },
    ...(s.defaultAddrPool !== undefined ? { DefaultAddrPool: s.defaultAddrPool } : {}),
    ...(s.subnetSize !== undefined ? { SubnetSize: s.subnetSize } : {}),
    ...(s.dataPathPort !== undefined ? { DataPathPort: s.dataPathPort } : {}),
    node: { ...metaWire(s.node), Spec: nodeSpecWire(s.node.spec) },
    listenAddr: s.listenAddr,
    advertiseAddr: s.advertiseAddr
  }
}

function serviceFile (s: ServiceRecord): Wire {
  return { ...toService(s), restarts: s.restarts }
}

function taskFile (t: TaskRecord): Wire {
  return {
    ...toTask(t),
    ...(t.selfEnded !== undefined ? { selfEnded: t.selfEnded } : {}),
    ...(t.notBefore !== undefined ? { notBefore: t.notBefore } : {}),
    ...(t.restart !== undefined ? { restart: t.restart } : {}),
    ...(t.unhealthy !== undefined ? { unhealthy: t.unhealthy } : {}),
    createdMs: t.createdMs,
    ...(t.serviceLabels !== undefined ? { serviceLabels: t.serviceLabels } : {}),
    ...(t.runningMs !== undefined ? { runningMs: t.runningMs } : {}),
    ...(t.endedMs !== undefined ? { endedMs: t.endedMs } : {})
  }
}

function secretFile (s: SecretRecord): Wire {
  const spec = { Name: s.spec.name, Labels: s.spec.labels, ...(s.spec.templating !== undefined ? { Templating: s.spec.templating } : {}), ...(s.spec.data !== undefined ? { Data: s.spec.data } : {}) }
  return { ...metaWire(s), Spec: spec, ...(s.sealed !== undefined ? { sealed: s.sealed } : {}) }
}

function mapValues<T> (m: Record<string, T>, f: (v: T) => Wire): Record<string, Wire> {
  const out: Record<string, Wire> = {}
  for (const [k, v] of Object.entries(m)) out[k] = f(v)
  return out
}

/** The state as written to disk. */
export function encodeState (st: SwarmState): Wire {
  return {
    index: st.index,
    swarm: st.swarm === null ? null : swarmFile(st.swarm),
    services: mapValues(st.services, serviceFile),
    tasks: mapValues(st.tasks, taskFile),
    secrets: mapValues(st.secrets, secretFile),
    configs: mapValues(st.configs, secretFile)
  }
}

// ---- decode ---------------------------------------------------------------------------------------------------

function meta (w: Obj): Meta {
  return { id: str(w.ID), version: num(obj(w.Version).Index) ?? 0, createdAt: str(w.CreatedAt), updatedAt: str(w.UpdatedAt) }
}

function node (w: Obj): NodeRecord {
  const spec = obj(w.Spec)
  return {
    ...meta(w),
    spec: { ...(typeof spec.Name === 'string' ? { name: spec.Name } : {}), labels: strMap(spec.Labels), role: str(spec.Role), availability: str(spec.Availability) }
  }
}

function swarm (w: Obj): SwarmRecord {
  const tokens = obj(w.JoinTokens)
  return {
    ...meta(w),
    spec: decodeClusterSpec(obj(w.Spec)),
    joinTokens: { worker: str(tokens.Worker), manager: str(tokens.Manager) },
    ...(Array.isArray(w.DefaultAddrPool) ? { defaultAddrPool: w.DefaultAddrPool as string[] } : {}),
    ...(num(w.SubnetSize) !== undefined ? { subnetSize: w.SubnetSize as number } : {}),
    ...(num(w.DataPathPort) !== undefined ? { dataPathPort: w.DataPathPort as number } : {}),
    node: node(obj(w.node)),
    listenAddr: str(w.listenAddr),
    advertiseAddr: str(w.advertiseAddr)
  }
}

function updateStatus (v: unknown): UpdateStatus | undefined {
  if (v === undefined || v === null) return undefined
  const u = obj(v)
  return {
    state: str(u.State) as UpdateStatus['state'],
    ...(typeof u.StartedAt === 'string' ? { startedAt: u.StartedAt } : {}),
    ...(typeof u.CompletedAt === 'string' ? { completedAt: u.CompletedAt } : {}),
    message: str(u.Message)
  }
}

function service (w: Obj, template: (w: WireDoc) => TaskSpec): ServiceRecord {
  const ep = obj(w.Endpoint)
  const job = w.JobStatus === undefined ? undefined : obj(w.JobStatus)
  const us = updateStatus(w.UpdateStatus)
  return {
    ...meta(w),
    spec: decodeServiceSpec(obj(w.Spec), template),
    ...(w.PreviousSpec !== undefined && w.PreviousSpec !== null ? { previousSpec: decodeServiceSpec(obj(w.PreviousSpec), template) } : {}),
    endpoint: {
      spec: decodeEndpointSpec(obj(ep.Spec)),
      ...(Array.isArray(ep.Ports) ? { ports: (ep.Ports as unknown[]).map((p) => { const o = obj(p); return { protocol: str(o.Protocol), ...(num(o.TargetPort) !== undefined ? { targetPort: o.TargetPort as number } : {}), publishedPort: num(o.PublishedPort) ?? 0, publishMode: str(o.PublishMode) } }) } : {})
    },
    ...(us !== undefined ? { updateStatus: us } : {}),
    ...(job !== undefined ? { jobStatus: { jobIteration: num(obj(job.JobIteration).Index) ?? 0, lastExecution: str(job.LastExecution) } } : {}),
    restarts: obj(w.restarts) as Record<string, number[]>
  }
}

function task (w: Obj, template: (w: WireDoc) => TaskSpec): TaskRecord {
  const s = obj(w.Status)
  const cs = s.ContainerStatus === undefined ? undefined : obj(s.ContainerStatus)
  const bool = (k: string): { [k: string]: boolean } => typeof w[k] === 'boolean' ? { [k]: w[k] as boolean } : {}
  const int = (k: string): { [k: string]: number } => num(w[k]) !== undefined ? { [k]: w[k] as number } : {}
  return {
    ...meta(w),
    labels: strMap(w.Labels),
    spec: template(obj(w.Spec)),
    serviceId: str(w.ServiceID),
    ...(num(w.Slot) !== undefined ? { slot: w.Slot as number } : {}),
    nodeId: str(w.NodeID),
    status: {
      timestamp: str(s.Timestamp),
      state: str(s.State) as TaskState,
      message: str(s.Message),
      ...(typeof s.Err === 'string' ? { err: s.Err } : {}),
      ...(cs !== undefined ? { containerStatus: { containerId: str(cs.ContainerID), pid: num(cs.PID) ?? 0, exitCode: num(cs.ExitCode) ?? 0 } } : {}),
      portStatus: obj(s.PortStatus)
    },
    desiredState: str(w.DesiredState) as TaskState,
    ...(w.JobIteration !== undefined ? { jobIteration: num(obj(w.JobIteration).Index) ?? 0 } : {}),
    ...bool('selfEnded'),
    ...int('notBefore'),
    ...bool('restart'),
    ...bool('unhealthy'),
    createdMs: num(w.createdMs) ?? 0,
    ...(w.serviceLabels !== undefined ? { serviceLabels: strMap(w.serviceLabels) } : {}),
    ...int('runningMs'),
    ...int('endedMs')
  }
}

function secret (w: Obj): SecretRecord {
  const spec = obj(w.Spec)
  return {
    ...meta(w),
    spec: {
      name: str(spec.Name),
      labels: strMap(spec.Labels),
      ...(spec.Templating !== undefined && spec.Templating !== null ? { templating: obj(spec.Templating) } : {}),
      ...(typeof spec.Data === 'string' ? { data: spec.Data } : {})
    },
    ...(typeof w.sealed === 'string' ? { sealed: w.sealed } : {})
  }
}

function decodeMap<T> (v: unknown, f: (w: Obj) => T): Record<string, T> {
  const out: Record<string, T> = {}
  for (const [k, w] of Object.entries(obj(v))) out[k] = f(obj(w))
  return out
}

/** The records of a state file (any Berth's: fields it lacks read as their defaults). */
export function decodeState (doc: unknown): SwarmState {
  const d = obj(doc)
  // equal task specs (a service's template and its tasks') are decoded once and shared
  const specs = new Map<string, TaskSpec>()
  const template = (w: WireDoc): TaskSpec => {
    const key = JSON.stringify(w)
    let t = specs.get(key)
    if (t === undefined) { t = decodeTaskSpec(w); specs.set(key, t) }
    return t
  }
  return {
    ...emptyState(),
    index: num(d.index) ?? 0,
    swarm: d.swarm === null || d.swarm === undefined ? null : swarm(obj(d.swarm)),
    services: decodeMap(d.services, (w) => service(w, template)),
    tasks: decodeMap(d.tasks, (w) => task(w, template)),
    secrets: decodeMap(d.secrets, secret),
    configs: decodeMap(d.configs, secret)
  }
}
