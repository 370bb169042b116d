// The service spec a client sends, checked and filled with dockerd's defaults (pure): the Engine API document a
// service keeps (spec-wire.ts decodes it). What Berth does not honour is named in the reply's Warnings, never silently
// dropped. Its references (networks, secrets, configs) are resolved to IDs here too, before the spec is decoded.
import { invalidArgument, notFound } from '../errors.js'
import { checkLabels, labelsOf } from './labels.js'
import { rpc as rpcText } from './swarm-context.js'

type Obj = Record<string, unknown>

export const NAME_RE = /^[a-zA-Z0-9](?:[-_]*[A-Za-z0-9]+)*$/

const rpc = (msg: string): Error => invalidArgument(`rpc error: code = InvalidArgument desc = ${msg}`)

function obj (v: unknown): Obj { return v !== null && typeof v === 'object' && !Array.isArray(v) ? v as Obj : {} }

function uint (v: unknown, field: string, type = 'uint64'): number | undefined {
  if (v === undefined || v === null) return undefined
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 0) {
    throw invalidArgument(`json: cannot unmarshal ${typeof v === 'number' ? `number ${v}` : typeof v} into Go struct field ${field} of type ${type}`)
  }
  return v
}

const CONTAINER_SPEC_HONOURED = new Set(['Image', 'Labels', 'Command', 'Args', 'Hostname', 'Env', 'Dir', 'User',
  'Groups', 'Mounts', 'StopSignal', 'StopGracePeriod', 'Healthcheck', 'Secrets', 'Configs', 'Init', 'TTY', 'OpenStdin',
  'ReadOnly', 'Hosts', 'DNSConfig', 'Isolation', 'CapabilityAdd', 'CapabilityDrop', 'Privileges'])
const TASK_TEMPLATE_KEYS = new Set(['ContainerSpec', 'Resources', 'RestartPolicy', 'Placement', 'Networks',
  'ForceUpdate', 'Runtime', 'LogDriver', 'PluginSpec', 'NetworkAttachmentSpec'])

export const UPDATE_DEFAULTS = { Parallelism: 1, FailureAction: 'pause', Monitor: 5_000_000_000, MaxFailureRatio: 0, Order: 'stop-first' }

function updateConfig (v: unknown, field: string): Obj | undefined {
  if (v === undefined || v === null) return undefined
  const u = { ...UPDATE_DEFAULTS, ...obj(v) } as Obj
  uint(u.Parallelism, `${field}.Parallelism`)
  if (!['pause', 'continue', 'rollback'].includes(u.FailureAction as string)) throw rpc(`${field}: unrecognized failure action ${String(u.FailureAction)}`)
  if (!['stop-first', 'start-first'].includes(u.Order as string)) throw rpc(`${field}: unrecognized order ${String(u.Order)}`)
  if (typeof u.Delay === 'number' && u.Delay < 0) throw rpc('TaskSpec: update-delay cannot be negative')
  return u
}

export interface CheckedSpec { spec: Obj, name: string, warnings: string[] }

type GoType = 'string' | '[]string' | 'map[string]string' | 'object' | 'int64' | 'bool' | '[]object'

/** The JSON kind Go's messages name (bool, not boolean). */
function jsKind (v: unknown): string {
  return Array.isArray(v) ? 'array' : v === null ? 'null' : typeof v === 'boolean' ? 'bool' : typeof v
}

/** Go's json decoding refuses a value of the wrong type with this wording (null is always accepted). */
function checkType (v: unknown, path: string, type: GoType): void {
  if (v === undefined || v === null) return
  // a map's values are checked one by one (an object among them: `… of type string`, as dockerd says)
  if (type === 'map[string]string') { checkLabels(v, path); return }
  const ok = type === 'string' ? typeof v === 'string'
    : type === '[]string' ? Array.isArray(v) && v.every((x) => typeof x === 'string')
      : type === 'object' ? typeof v === 'object' && !Array.isArray(v)
        : type === 'int64' ? typeof v === 'number' && Number.isInteger(v)
          : type === 'bool' ? typeof v === 'boolean'
            : Array.isArray(v) && v.every((x) => x !== null && typeof x === 'object' && !Array.isArray(x))
  if (!ok) throw invalidArgument(`json: cannot unmarshal ${jsKind(v)} into Go struct field ${path} of type ${type === 'object' || type === '[]object' ? (type === 'object' ? 'struct' : '[]struct') : type}`)
}

const CONTAINER_SPEC_TYPES: Record<string, GoType> = {
  Image: 'string', Hostname: 'string', Dir: 'string', User: 'string', StopSignal: 'string', Isolation: 'string',
  Command: '[]string', Args: '[]string', Env: '[]string', Groups: '[]string', Hosts: '[]string',
  CapabilityAdd: '[]string', CapabilityDrop: '[]string', Labels: 'map[string]string', DNSConfig: 'object',
  Healthcheck: 'object', Privileges: 'object', StopGracePeriod: 'int64', TTY: 'bool', OpenStdin: 'bool',
  ReadOnly: 'bool', Init: 'bool', Mounts: '[]object', Secrets: '[]object', Configs: '[]object'
}
const TASK_TEMPLATE_TYPES: Record<string, GoType> = {
  ContainerSpec: 'object', Resources: 'object', RestartPolicy: 'object', Placement: 'object', Networks: '[]object',
  ForceUpdate: 'int64', Runtime: 'string', LogDriver: 'object'
}
const SPEC_TYPES: Record<string, GoType> = {
  Name: 'string', Labels: 'map[string]string', TaskTemplate: 'object', Mode: 'object', UpdateConfig: 'object',
  RollbackConfig: 'object', Networks: '[]object', EndpointSpec: 'object'
}

function checkTypes (spec: Obj): void {
  for (const [k, t] of Object.entries(SPEC_TYPES)) checkType(spec[k], `ServiceSpec.${k}`, t)
  const tt = obj(spec.TaskTemplate)
  for (const [k, t] of Object.entries(TASK_TEMPLATE_TYPES)) checkType(tt[k], `TaskSpec.TaskTemplate.${k}`, t)
  const cs = obj(tt.ContainerSpec)
  for (const [k, t] of Object.entries(CONTAINER_SPEC_TYPES)) checkType(cs[k], `ContainerSpec.TaskTemplate.ContainerSpec.${k}`, t)
  checkType(obj(tt.Placement).Constraints, 'Placement.TaskTemplate.Placement.Constraints', '[]string')
  const hc = obj(cs.Healthcheck)
  checkType(hc.Test, 'HealthConfig.TaskTemplate.ContainerSpec.Healthcheck.Test', '[]string')
  for (const k of ['Interval', 'Timeout', 'StartPeriod', 'StartInterval', 'Retries']) checkType(hc[k], `HealthConfig.TaskTemplate.ContainerSpec.Healthcheck.${k}`, 'int64')
  for (const k of ['Replicated', 'Global', 'ReplicatedJob', 'GlobalJob']) checkType(obj(spec.Mode)[k], `ServiceMode.Mode.${k}`, 'object')
  checkType(obj(spec.EndpointSpec).Ports, 'EndpointSpec.EndpointSpec.Ports', '[]object')
  checkType(obj(spec.EndpointSpec).Mode, 'EndpointSpec.EndpointSpec.Mode', 'string')
  const rp = obj(tt.RestartPolicy)
  checkType(rp.Condition, 'RestartPolicy.TaskTemplate.RestartPolicy.Condition', 'string')
  for (const k of ['Delay', 'Window']) checkType(rp[k], `RestartPolicy.TaskTemplate.RestartPolicy.${k}`, 'int64')
  for (const m of (Array.isArray(cs.Mounts) ? cs.Mounts : []) as Obj[]) {
    for (const k of ['Type', 'Source', 'Target']) checkType(m[k], `Mount.TaskTemplate.ContainerSpec.Mounts.${k}`, 'string')
    checkType(m.ReadOnly, 'Mount.TaskTemplate.ContainerSpec.Mounts.ReadOnly', 'bool')
  }
  for (const n of (Array.isArray(tt.Networks) ? tt.Networks : []) as Obj[]) {
    checkType(n.Target, 'NetworkAttachmentConfig.TaskTemplate.Networks.Target', 'string')
    checkType(n.Aliases, 'NetworkAttachmentConfig.TaskTemplate.Networks.Aliases', '[]string')
  }
  for (const p of (Array.isArray(obj(spec.EndpointSpec).Ports) ? obj(spec.EndpointSpec).Ports : []) as Obj[]) {
    for (const k of ['Protocol', 'PublishMode', 'Name']) checkType(p[k], `PortConfig.EndpointSpec.Ports.${k}`, 'string')
  }
  for (const key of ['UpdateConfig', 'RollbackConfig']) {
    const u = obj(spec[key])
    for (const k of ['Delay', 'Monitor']) checkType(u[k], `UpdateConfig.${key}.${k}`, 'int64')
    for (const k of ['FailureAction', 'Order']) checkType(u[k], `UpdateConfig.${key}.${k}`, 'string')
  }
}

/** Field names of the ServiceSpec tree, for Go's case-insensitive key matching (docker-py sends {"replicated": ...}). */
const FIELDS = ['Name', 'Labels', 'TaskTemplate', 'Mode', 'UpdateConfig', 'RollbackConfig', 'Networks', 'EndpointSpec',
  'ContainerSpec', 'Resources', 'RestartPolicy', 'Placement', 'ForceUpdate', 'Runtime', 'LogDriver', 'PluginSpec',
  'NetworkAttachmentSpec', 'Image', 'Command', 'Args', 'Hostname', 'Env', 'Dir', 'User', 'Groups', 'Mounts',
  'StopSignal', 'StopGracePeriod', 'Healthcheck', 'Secrets', 'Configs', 'Init', 'TTY', 'OpenStdin', 'ReadOnly', 'Hosts',
  'DNSConfig', 'Isolation', 'CapabilityAdd', 'CapabilityDrop', 'Privileges', 'Ulimits', 'Sysctls', 'Limits',
  'Reservations', 'NanoCPUs', 'MemoryBytes', 'Pids', 'Condition', 'Delay', 'MaxAttempts', 'Window', 'Constraints',
  'Preferences', 'MaxReplicas', 'Platforms', 'Replicated', 'Global', 'ReplicatedJob', 'GlobalJob', 'Replicas',
  'MaxConcurrent', 'TotalCompletions', 'Parallelism', 'FailureAction', 'Monitor', 'MaxFailureRatio', 'Order', 'Ports',
  'Protocol', 'TargetPort', 'PublishedPort', 'PublishMode', 'Target', 'Aliases', 'DriverOpts', 'Source', 'Type',
  'Consistency', 'BindOptions', 'VolumeOptions', 'TmpfsOptions', 'SecretID', 'SecretName', 'ConfigID', 'ConfigName',
  'File', 'UID', 'GID', 'Nameservers', 'Search', 'Options', 'Test', 'Interval', 'Timeout', 'Retries', 'StartPeriod',
  'Driver', 'Data', 'Templating']
const BY_LOWER = new Map(FIELDS.map((f) => [f.toLowerCase(), f]))
/** Maps whose keys are data, not field names. */
const MAPS = new Set(['Labels', 'DriverOpts', 'Options', 'Sysctls'])

export function canonicalSpec (v: unknown): unknown {
  if (Array.isArray(v)) return v.map(canonicalSpec)
  if (v === null || typeof v !== 'object') return v
  const out: Obj = {}
  for (const [k, val] of Object.entries(v as Obj)) {
    const canon = BY_LOWER.get(k.toLowerCase()) ?? k
    if (out[canon] !== undefined && k !== canon) continue
    out[canon] = MAPS.has(canon) ? val : canonicalSpec(val)
  }
  return out
}

/** Checks a ServiceSpec and fills the defaults dockerd reports back. */
export function checkServiceSpec (raw: Obj, randomName: () => string): CheckedSpec {
  const warnings: string[] = []
  const spec: Obj = { ...canonicalSpec(raw) as Obj }
  checkTypes(spec)
  if (typeof spec.Name !== 'string' || spec.Name === '') spec.Name = randomName()
  const name = spec.Name as string
  if (name.length > 63 || !NAME_RE.test(name)) throw rpc('name must be valid as a DNS name component')
  spec.Labels = labelsOf(spec.Labels, 'ServiceSpec.Labels')
  const tt: Obj = { ...obj(spec.TaskTemplate) }
  for (const k of Object.keys(tt)) if (!TASK_TEMPLATE_KEYS.has(k)) warnings.push(`TaskTemplate.${k} is not supported by Berth and was ignored`)
  if (tt.PluginSpec !== undefined || (tt.Runtime !== undefined && tt.Runtime !== 'container' && tt.Runtime !== '')) throw rpc('TaskSpec: only container runtime is supported by Berth')
  const cs: Obj = { ...obj(tt.ContainerSpec) }
  if (cs.Labels !== undefined && cs.Labels !== null) cs.Labels = labelsOf(cs.Labels, 'ContainerSpec.TaskTemplate.ContainerSpec.Labels')
  if (typeof cs.Image !== 'string' || cs.Image === '') throw rpc('ContainerSpec: image reference must be provided')
  for (const k of Object.keys(cs)) if (!CONTAINER_SPEC_HONOURED.has(k)) warnings.push(`ContainerSpec.${k} is not supported by Berth and was ignored`)
  // the CLI sends an empty Privileges object ({CredentialSpec: null, SELinuxContext: null}): only content is refused
  if (Object.values(obj(cs.Privileges)).some((v) => v !== null && v !== undefined && !(typeof v === 'object' && Object.keys(v).length === 0) && v !== false)) {
    warnings.push('ContainerSpec.Privileges is not supported by Berth and was ignored')
  }
  for (const m of (Array.isArray(cs.Mounts) ? cs.Mounts : []) as Obj[]) {
    const type = m.Type ?? 'volume'
    if (type !== 'bind' && type !== 'volume' && type !== 'tmpfs') warnings.push(`mount type ${String(type)} (target ${String(m.Target)}) is not supported by Berth and was ignored`)
    if (typeof m.Target !== 'string' || !m.Target.startsWith('/')) throw rpc(`ContainerSpec: invalid mount target, must be an absolute path: ${String(m.Target)}`)
    if (type === 'bind' && (typeof m.Source !== 'string' || !m.Source.startsWith('/'))) throw rpc(`ContainerSpec: invalid bind mount source, must be an absolute path: ${String(m.Source)}`)
  }
  cs.Init ??= false
  cs.DNSConfig ??= {}
  cs.Isolation ??= 'default'
  tt.ContainerSpec = cs
  const res = obj(tt.Resources)
  tt.Resources = { ...res, Limits: obj(res.Limits), Reservations: obj(res.Reservations) }
  for (const k of ['GenericResources', 'Devices']) if (obj(res.Reservations)[k] !== undefined || obj(res.Limits)[k] !== undefined) warnings.push(`Resources ${k} are not supported by Berth and were ignored`)
  if (tt.RestartPolicy !== undefined && tt.RestartPolicy !== null) {
    const rp = obj(tt.RestartPolicy)
    if (rp.Condition !== undefined && !['none', 'on-failure', 'any'].includes(rp.Condition as string)) throw rpc(`ContainerSpec: invalid restart condition ${String(rp.Condition)}`)
    if (typeof rp.Delay === 'number' && rp.Delay < 0) throw rpc('TaskSpec: restart-delay cannot be negative')
    uint(rp.MaxAttempts, 'RestartPolicy.MaxAttempts')
  }
  tt.Placement = obj(tt.Placement)
  for (const c of ((tt.Placement as Obj).Constraints ?? []) as string[]) {
    if (!/^\s*[\w.-]+\s*(==|!=)\s*\S.*$/.test(c)) throw rpc(`ContainerSpec: invalid constraint: ${c}`)
  }
  if ((tt.Placement as Obj).Preferences !== undefined) warnings.push('Placement preferences have no effect on a single node')
  tt.ForceUpdate = uint(tt.ForceUpdate, 'TaskSpec.ForceUpdate') ?? 0
  tt.Runtime = 'container'
  if (Array.isArray(spec.Networks) && !Array.isArray(tt.Networks)) { tt.Networks = spec.Networks; delete spec.Networks }
  spec.TaskTemplate = tt
  const mode = obj(spec.Mode)
  const kinds = ['Replicated', 'Global', 'ReplicatedJob', 'GlobalJob'].filter((k) => mode[k] !== undefined && mode[k] !== null)
  if (kinds.length > 1) throw rpc('only one mode can be set')
  if (kinds.length === 0) spec.Mode = { Replicated: { Replicas: 1 } }
  else if (kinds[0] === 'Replicated') {
    const r = obj(mode.Replicated)
    spec.Mode = { Replicated: { ...r, Replicas: uint(r.Replicas, 'ReplicatedService.Mode.Replicated.Replicas') ?? 1 } }
  } else if (kinds[0] === 'ReplicatedJob') {
    const j = obj(mode.ReplicatedJob)
    const max = uint(j.MaxConcurrent, 'ReplicatedJob.Mode.ReplicatedJob.MaxConcurrent') ?? 1
    const total = uint(j.TotalCompletions, 'ReplicatedJob.Mode.ReplicatedJob.TotalCompletions') ?? max
    spec.Mode = { ReplicatedJob: { MaxConcurrent: max, TotalCompletions: total } }
  } else spec.Mode = { [kinds[0] as string]: {} }
  if (spec.UpdateConfig !== undefined && spec.UpdateConfig !== null) spec.UpdateConfig = updateConfig(spec.UpdateConfig, 'UpdateConfig')
  if (spec.RollbackConfig !== undefined && spec.RollbackConfig !== null) spec.RollbackConfig = updateConfig(spec.RollbackConfig, 'RollbackConfig')
  const ep = obj(spec.EndpointSpec)
  if (ep.Mode !== undefined && ep.Mode !== 'vip' && ep.Mode !== 'dnsrr') throw rpc(`EndpointSpec: invalid mode ${String(ep.Mode)}`)
  const ports = (Array.isArray(ep.Ports) ? ep.Ports : []) as Obj[]
  const seen = new Set<string>()
  for (const p of ports) {
    uint(p.TargetPort, 'PortConfig.TargetPort', 'uint32')
    uint(p.PublishedPort, 'PortConfig.PublishedPort', 'uint32')
    p.Protocol ??= 'tcp'
    p.PublishMode ??= 'ingress'
    if (p.Protocol !== 'tcp' && p.Protocol !== 'udp') warnings.push(`port ${String(p.PublishedPort ?? p.TargetPort)}/${String(p.Protocol)}: only tcp and udp ports are published by Berth`)
    const key = `${String(p.PublishedPort ?? 0)}/${String(p.Protocol)}`
    if (typeof p.PublishedPort === 'number' && p.PublishedPort !== 0 && seen.has(key)) throw rpc(`EndpointSpec: duplicate published ports provided`)
    seen.add(key)
  }
  spec.EndpointSpec = { Mode: ep.Mode ?? 'vip', ...(ports.length > 0 ? { Ports: ports } : {}) }
  // no virtual IPs: on its networks the service name resolves to the task addresses (dnsrr), which the reply says
  const networks = [...(Array.isArray(obj(spec.TaskTemplate).Networks) ? obj(spec.TaskTemplate).Networks as unknown[] : []), ...(Array.isArray(spec.Networks) ? spec.Networks : [])]
  if (ep.Mode === 'vip' && networks.length > 0) warnings.push(VIP_WARNING)
  return { spec, name, warnings }
}

export const VIP_WARNING = 'EndpointSpec.Mode vip is served as dnsrr by Berth: the service name resolves to its task addresses, no virtual IP'

/** Looks a secret or config up by ID, name or unique ID prefix. */
export type SecretLookup = (kind: 'secret' | 'config', ref: string) => { id: string, name: string } | undefined

/**
 * Resolves a checked spec's references in place: secret and config references to IDs (names accepted; unknown ones
 * refused, their files filled with dockerd's defaults) and TaskTemplate.Networks' targets to network IDs.
 */
export function resolveReferences (spec: Obj, o: { secret: SecretLookup, network: (ref: string) => string | undefined }): void {
  const tt = obj(spec.TaskTemplate)
  const cs = obj(tt.ContainerSpec)
  for (const kind of ['secret', 'config'] as const) {
    const key = kind === 'secret' ? 'Secrets' : 'Configs'
    const refs = cs[key]
    if (refs === undefined || refs === null) continue
    if (!Array.isArray(refs)) throw invalidArgument(`json: cannot unmarshal into Go struct field ContainerSpec.${key}`)
    for (const r of refs as Obj[]) {
      const ref = (r[kind === 'secret' ? 'SecretID' : 'ConfigID'] ?? r[kind === 'secret' ? 'SecretName' : 'ConfigName']) as string | undefined
      const s = ref === undefined ? undefined : o.secret(kind, ref)
      if (s === undefined) throw invalidArgument(rpcText('InvalidArgument', `${kind} not found: ${String(ref)}`))
      r[kind === 'secret' ? 'SecretID' : 'ConfigID'] = s.id
      r[kind === 'secret' ? 'SecretName' : 'ConfigName'] ??= s.name
      if (kind === 'config' && r.Runtime !== undefined) continue
      const f = (r.File ?? {}) as Obj
      r.File = { Name: f.Name ?? s.name, UID: f.UID ?? '0', GID: f.GID ?? '0', Mode: f.Mode ?? 0o444 }
    }
  }
  for (const n of (tt.Networks ?? []) as Obj[]) {
    const id = o.network(String(n.Target))
    if (id === undefined) throw notFound(rpcText('NotFound', `network ${String(n.Target)} not found`))
    n.Target = id
  }
}
