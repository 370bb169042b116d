// The swarm of one node: init/leave, the node, services, tasks, secrets and configs over the store, with the
// orchestrator keeping services at their spec. This is the backend of the /swarm, /nodes, /services, /tasks,
// /secrets and /configs routes.
import { serviceFacts, serviceUpdateAttributes } from './service-events.js'
import os from 'node:os'
import { conflict, invalidArgument, notFound, unavailable } from '../errors.js'
import type { Filters } from '../http/query.js'
import { logger } from '../log.js'
import { joinToken, randomServiceName, swarmId } from './ids.js'
import { isTerminal, nowIso, type Obj, type ServiceRecord, type SwarmRecord, type TaskRecord } from './model.js'
import { Orchestrator } from './orchestrator.js'
import { checkServiceSpec, modeOf, replicasOf } from './service-spec.js'
import { SwarmStore } from './store.js'
import type { SwarmEvents, TaskContainers, TaskLogOptions, TaskNetworks } from './task-containers.js'
import { taskName } from './task-container-spec.js'
import { createSecret, getSecret, removeSecret, resolveRefs, sealLegacyData, secretData, TaskFiles, updateSecret, type SecretKind } from './secrets.js'
import { SwarmKeys } from './swarm-keys.js'
import { withServiceDefaults } from './service-defaults.js'
import { parsePrefix } from '../network/cidr.js'
import { toInfoSwarm, toNode, toSecret, toService, toSwarm, toTask, type NodeFacts } from './wire.js'
import { Ingress, ingressKey, type IngressProtocol } from './ingress.js'

const log = logger('swarm')

export const NOT_MANAGER = 'This node is not a swarm manager. Use "docker swarm init" or "docker swarm join" to connect this node to swarm and try again.'
export const SWARM_LOCKED = 'Swarm is encrypted and needs to be unlocked before it can be used. Please use "docker swarm unlock" to unlock it.'
const rpc = (code: string, msg: string): string => `rpc error: code = ${code} desc = ${msg}`

export interface SwarmManagerOptions {
  dataRoot: string
  execRoot: string
  containers: TaskContainers
  networks: TaskNetworks
  events: SwarmEvents
  engineVersion: string
}

function obj (v: unknown): Obj { return v !== null && typeof v === 'object' && !Array.isArray(v) ? v as Obj : {} }

const SWARM_SPEC_DEFAULTS: Obj = {
  Name: 'default',
  Labels: {},
  Orchestration: { TaskHistoryRetentionLimit: 5 },
  Raft: { SnapshotInterval: 10000, KeepOldSnapshots: 0, LogEntriesForSlowFollowers: 500, ElectionTick: 10, HeartbeatTick: 1 },
  Dispatcher: { HeartbeatPeriod: 5000000000 },
  CAConfig: { NodeCertExpiry: 7776000000000000 },
  TaskDefaults: {},
  EncryptionConfig: { AutoLockManagers: false }
}

function mergeSpec (base: Obj, given: Obj): Obj {
  const out: Obj = { ...base }
  for (const [k, v] of Object.entries(given)) {
    if (v === null || v === undefined) continue
    out[k] = typeof v === 'object' && !Array.isArray(v) && typeof base[k] === 'object' && base[k] !== null && k !== 'Labels' ? mergeSpec(base[k] as Obj, v as Obj) : v
  }
  return out
}

function matchLabel (labels: Record<string, string>, values: string[]): boolean {
  return values.every((v) => { const i = v.indexOf('='); return i === -1 ? labels[v] !== undefined : labels[v.slice(0, i)] === v.slice(i + 1) })
}

/** init's address pools, subnet size and data path port, checked as dockerd checks them (its defaults when unset). */
function addressPools (body: Obj): { DefaultAddrPool: string[], SubnetSize: number, DataPathPort: number } {
  const given = body.DefaultAddrPool
  if (given !== undefined && given !== null && (!Array.isArray(given) || given.some((p) => typeof p !== 'string'))) {
    throw invalidArgument('json: cannot unmarshal into Go struct field InitRequest.DefaultAddrPool of type []string')
  }
  for (const k of ['SubnetSize', 'DataPathPort'] as const) {
    const v = body[k]
    if (v !== undefined && v !== null && (typeof v !== 'number' || !Number.isInteger(v) || v < 0 || v > 0xffffffff)) {
      throw invalidArgument(`json: cannot unmarshal ${typeof v} into Go struct field InitRequest.${k} of type uint32`)
    }
  }
  const size = typeof body.SubnetSize === 'number' && body.SubnetSize !== 0 ? body.SubnetSize : 24
  const pools = Array.isArray(given) && given.length > 0 ? (given as string[]).map((p) => p.trim()) : null
  if (pools !== null) {
    if (size > 29) throw invalidArgument(`subnet size is out of range: ${size}`)
    for (const p of pools) {
      const cidr = parsePrefix(p)
      if (cidr === null) throw invalidArgument(`invalid base pool ${p}: invalid CIDR address: ${p}`)
      if (size < cidr.bits) throw invalidArgument(`invalid CIDR: ${JSON.stringify(p)}. Subnet size is too small for pool: ${size}`)
    }
  }
  let port = typeof body.DataPathPort === 'number' ? body.DataPathPort : 0
  if (port === 0) port = 4789
  else if (port < 1024 || port > 49151) throw invalidArgument(`Datapath port number is not in valid range (1024-49151) : ${port}`)
  return { DefaultAddrPool: pools ?? ['10.0.0.0/8'], SubnetSize: pools === null ? 24 : size, DataPathPort: port }
}

function autolockOf (spec: Obj): boolean { return obj(spec.EncryptionConfig).AutoLockManagers === true }

function defaultAddr (): string {
  for (const list of Object.values(os.networkInterfaces())) {
    for (const a of list ?? []) if (a.family === 'IPv4' && !a.internal) return a.address
  }
  return '127.0.0.1'
}

export class SwarmManager {
  readonly store: SwarmStore
  readonly orchestrator: Orchestrator
  private readonly o: SwarmManagerOptions
  private readonly files: TaskFiles
  private readonly ingress = new Ingress()
  private readonly facts: NodeFacts
  private readonly keys: SwarmKeys

  constructor (o: SwarmManagerOptions) {
    this.o = o
    this.store = new SwarmStore(o.dataRoot)
    this.keys = new SwarmKeys(this.store.dir)
    this.files = new TaskFiles(o.execRoot)
    this.facts = { engineVersion: o.engineVersion, nanoCpus: os.cpus().length * 1e9, memoryBytes: os.totalmem() }
    this.orchestrator = new Orchestrator({
      store: this.store,
      containers: o.containers,
      networks: o.networks,
      taskFiles: async (t) => await this.files.write(this.store.state, this.keys, t),
      removeFiles: async (id) => { await this.files.remove(id) },
      nodeAttributes: () => this.nodeAttributes(),
      nodeResources: { nanoCpus: this.facts.nanoCpus, memoryBytes: this.facts.memoryBytes },
      afterPass: () => { void this.syncIngress() },
      serviceChanged: (svc, before) => { this.o.events.emit('service', 'update', svc.ID, serviceUpdateAttributes(before, svc)) }
    })
  }

  /**
   * Loads the state and resumes: running task containers are re-adopted, dead ones replaced. An autolocked swarm
   * stays locked (every swarm route answers dockerd's 503, task containers are left as they are) until unlocked.
   */
  async init (): Promise<void> {
    if (await this.load()) this.recover()
  }

  /** Reads the swarm's state and keys, touching no task; true when there is an unlocked swarm to run. */
  async load (): Promise<boolean> {
    await this.store.load()
    const s = this.store.state.swarm
    if (s === null) { await this.files.release(); return false }
    const keys = await this.keys.load()
    if (keys === 'locked') { log('the swarm is locked: waiting for docker swarm unlock'); return false }
    if (keys === 'none') await this.keys.create(autolockOf(s.Spec)) // a state written before the swarm had keys
    if (sealLegacyData(this.store.state, this.keys)) await this.store.commit()
    return true
  }

  /** Takes the tasks over once their containers are recovered (after load() found a swarm). */
  recover (): void { this.orchestrator.recover() }

  async close (): Promise<void> {
    await this.orchestrator.close()
    await this.ingress.close()
    // a task that may still run keeps its secret and config files; otherwise nothing needs their tmpfs
    if (!Object.values(this.store.state.tasks).some((t) => !isTerminal(t.Status.State))) await this.files.release()
  }

  get active (): boolean { return this.store.state.swarm !== null }

  private get swarm (): SwarmRecord {
    const s = this.store.state.swarm
    if (s === null) throw unavailable(NOT_MANAGER)
    if (this.keys.locked) throw unavailable(SWARM_LOCKED)
    return s
  }

  private nodeAttributes (): Record<string, string> {
    const s = this.swarm
    const attrs: Record<string, string> = {
      'node.id': s.node.ID,
      'node.hostname': os.hostname(),
      'node.role': 'manager',
      'node.platform.os': 'linux',
      'node.platform.arch': os.machine()
    }
    for (const [k, v] of Object.entries(s.node.Spec.Labels)) attrs[`node.labels.${k}`] = v
    return attrs
  }

  // ---- swarm ----------------------------------------------------------------------------------------------------

  infoSection (): Obj {
    if (this.store.state.swarm !== null && this.keys.locked) return { NodeID: '', NodeAddr: '', LocalNodeState: 'locked', ControlAvailable: false, Error: '', RemoteManagers: null }
    return toInfoSwarm(this.store.state.swarm)
  }

  async initSwarm (body: Obj): Promise<string> {
    if (this.store.state.swarm !== null) throw unavailable('This node is already part of a swarm. Use "docker swarm leave" to leave this swarm and join another one.')
    const pools = addressPools(body)
    const listen = typeof body.ListenAddr === 'string' && body.ListenAddr !== '' ? body.ListenAddr : '0.0.0.0:2377'
    let advertise = typeof body.AdvertiseAddr === 'string' ? body.AdvertiseAddr.replace(/:\d+$/, '') : ''
    if (advertise === '') {
      const host = listen.replace(/:\d+$/, '')
      advertise = host !== '0.0.0.0' && host !== '' && /^[\d.]+$/.test(host) ? host : defaultAddr()
    }
    if (!/^[\d.]+$/.test(advertise)) {
      const iface = os.networkInterfaces()[advertise]?.find((a) => a.family === 'IPv4')
      if (iface === undefined) throw invalidArgument(`advertise address must be a non-zero IP address or network interface (with optional port number)`)
      advertise = iface.address
    }
    const spec = mergeSpec(SWARM_SPEC_DEFAULTS, obj(body.Spec))
    const nodeId = swarmId()
    const s: SwarmRecord = {
      ...this.store.newMeta(swarmId()),
      Spec: spec,
      JoinTokens: { Worker: joinToken(), Manager: joinToken() },
      node: { ...this.store.newMeta(nodeId), Spec: { Labels: {}, Role: 'manager', Availability: 'active' } },
      ...pools,
      listenAddr: listen,
      advertiseAddr: advertise
    }
    await this.keys.create(autolockOf(spec))
    this.store.state.swarm = s
    await this.store.commit()
    this.o.events.emit('node', 'create', nodeId, { name: os.hostname() })
    // the routing mesh's network, as dockerd makes it at init (the first subnet of the pools)
    await this.o.networks.createIngress().catch((err: Error) => { log('creating the ingress network: %s', err.message) })
    log('swarm initialised: node %s', nodeId)
    this.orchestrator.kick()
    return nodeId
  }

  join (): never {
    if (this.store.state.swarm !== null) throw unavailable('This node is already part of a swarm. Use "docker swarm leave" to leave this swarm and join another one.')
    throw invalidArgument('Berth runs a single-node swarm: joining another swarm is not supported; use "docker swarm init" on this node')
  }

  async leave (force: boolean): Promise<void> {
    const s = this.store.state.swarm
    if (s === null) throw unavailable('This node is not part of a swarm')
    if (!force) throw unavailable('You are attempting to leave the swarm on a node that is participating as a manager. Removing the last manager erases all current state of the swarm. Use `--force` to ignore this message. ')
    const tasks = Object.values(this.store.state.tasks)
    const wasLocked = this.keys.locked
    this.store.state.swarm = null
    this.store.state.services = {}
    this.store.state.tasks = {}
    this.store.state.secrets = {}
    this.store.state.configs = {}
    await this.store.commit()
    await this.keys.remove()
    if (!wasLocked) await this.orchestrator.settle()
    await Promise.all(tasks.map(async (t) => { await this.removeTaskContainer(t) }))
    await this.ingress.retain(new Set())
    // the swarm's overlay networks go with it (dockerd's); one a running non-task container still uses stays
    const gone = await this.o.networks.removeOverlays()
    await this.files.release()
    log('left the swarm: overlay networks removed: %s', gone.join(', '))
  }

  inspectSwarm (): Obj { return toSwarm(this.swarm) }

  /** `GET /swarm/unlockkey`: the key as dockerd prints it, '' without autolock. */
  unlockKey (): { UnlockKey: string } {
    this.swarm
    return { UnlockKey: this.keys.humanUnlockKey() }
  }

  /** `POST /swarm/unlock`: the data key unwrapped, then the swarm resumes as after a start. */
  async unlock (key: string): Promise<void> {
    if (this.store.state.swarm === null) throw unavailable('This node is not part of a swarm')
    this.keys.unlock(key)
    if (sealLegacyData(this.store.state, this.keys)) await this.store.commit()
    log('the swarm is unlocked')
    this.orchestrator.recover()
  }

  async updateSwarm (version: number | undefined, q: { rotateWorker: boolean, rotateManager: boolean, rotateUnlockKey: boolean }, body: Obj): Promise<void> {
    const s = this.swarm
    if (version === undefined) throw invalidArgument('invalid swarm version \'\': strconv.ParseUint: parsing "": invalid syntax')
    if (version !== s.Version.Index) throw conflict(rpc('Unknown', 'update out of sequence'))
    for (const [k, v] of Object.entries(body)) {
      const want = typeof SWARM_SPEC_DEFAULTS[k]
      if (v !== null && want !== 'undefined' && (typeof v !== want || Array.isArray(v))) throw invalidArgument(`json: cannot unmarshal ${Array.isArray(v) ? 'array' : typeof v} into Go struct field Spec.${k} of type ${want === 'object' ? 'struct' : want}`)
    }
    const autolockBefore = autolockOf(s.Spec)
    s.Spec = mergeSpec(SWARM_SPEC_DEFAULTS, body)
    const autolock = autolockOf(s.Spec)
    if (autolock !== autolockBefore || (autolock && q.rotateUnlockKey)) await this.keys.setAutolock(autolock, q.rotateUnlockKey)
    if (q.rotateWorker) s.JoinTokens.Worker = joinToken()
    if (q.rotateManager) s.JoinTokens.Manager = joinToken()
    this.store.touch(s)
    await this.store.commit()
    this.orchestrator.kick()
  }

  // ---- nodes ----------------------------------------------------------------------------------------------------

  private nodeRef (ref: string): void {
    const s = this.swarm
    if (ref !== s.node.ID && ref !== os.hostname() && ref !== 'self' && !(ref.length > 0 && s.node.ID.startsWith(ref))) throw notFound(`node ${ref} not found`)
  }

  listNodes (f: Filters): Obj[] {
    const s = this.swarm
    const n = toNode(s, this.facts)
    for (const [k, values] of f) {
      if (values.length === 0) continue
      const ok = k === 'id' ? values.some((v) => s.node.ID.startsWith(v))
        : k === 'name' ? values.some((v) => os.hostname().includes(v))
          : k === 'role' ? values.includes('manager')
            : k === 'membership' ? values.includes('accepted')
              : k === 'node.label' || k === 'label' ? matchLabel(s.node.Spec.Labels, values) : true
      if (!ok) return []
    }
    return [n]
  }

  inspectNode (ref: string): Obj { this.nodeRef(ref); return toNode(this.swarm, this.facts) }

  async updateNode (ref: string, version: number | undefined, body: Obj): Promise<void> {
    this.nodeRef(ref)
    const s = this.swarm
    if (version !== s.node.Version.Index) throw conflict(rpc('Unknown', 'update out of sequence'))
    if (body.Labels !== undefined && body.Labels !== null && (typeof body.Labels !== 'object' || Array.isArray(body.Labels))) throw invalidArgument(`json: cannot unmarshal ${typeof body.Labels} into Go struct field Annotations.Labels of type map[string]string`)
    const availability = body.Availability ?? 'active'
    if (!['active', 'pause', 'drain'].includes(availability as string)) throw invalidArgument(rpc('InvalidArgument', `invalid availability ${String(availability)}`))
    if (body.Role !== undefined && body.Role !== 'manager') throw invalidArgument(rpc('FailedPrecondition', 'attempting to demote the last manager of the swarm'))
    const before = s.node.Spec.Availability
    s.node.Spec = { ...(typeof body.Name === 'string' && body.Name !== '' ? { Name: body.Name } : {}), Labels: obj(body.Labels) as Record<string, string>, Role: 'manager', Availability: availability as string }
    this.store.touch(s.node)
    await this.store.commit()
    // dockerd's attributes: the name, and availability.old/new when it changed
    const changed: Record<string, string> = before !== availability ? { 'availability.old': before, 'availability.new': availability as string } : {}
    this.o.events.emit('node', 'update', s.node.ID, { ...changed, name: os.hostname() })
    this.orchestrator.kick()
  }

  removeNode (ref: string): never {
    this.nodeRef(ref)
    throw invalidArgument(rpc('FailedPrecondition', `node ${this.swarm.node.ID} is a cluster manager and is a member of the raft cluster. It must be demoted to worker before removal`))
  }

  // ---- services -------------------------------------------------------------------------------------------------

  private findService (ref: string): ServiceRecord | undefined {
    const all = this.store.state.services
    if (all[ref] !== undefined) return all[ref]
    const list = Object.values(all)
    const byName = list.find((s) => s.Spec.Name === ref)
    if (byName !== undefined) return byName
    const byPrefix = list.filter((s) => ref.length > 0 && s.ID.startsWith(ref))
    return byPrefix.length === 1 ? byPrefix[0] : undefined
  }

  getService (ref: string): ServiceRecord {
    this.swarm
    const s = this.findService(ref)
    if (s === undefined) throw notFound(`service ${ref} not found`)
    return s
  }

  private checkSpec (body: Obj, self?: ServiceRecord): { spec: Obj, warnings: string[] } {
    const { spec, warnings } = checkServiceSpec(body, () => randomServiceName((n) => this.findService(n) !== undefined))
    const taken = Object.values(this.store.state.services).find((s) => s.Spec.Name === spec.Name && s !== self)
    if (taken !== undefined) throw conflict(rpc('AlreadyExists', `name conflicts with an existing object: service ${spec.Name as string} already exists`))
    resolveRefs(this.store.state, obj(obj(spec.TaskTemplate).ContainerSpec))
    for (const n of (obj(spec.TaskTemplate).Networks ?? []) as Obj[]) {
      const found = this.o.networks.find(String(n.Target))
      if (found === undefined) throw notFound(rpc('NotFound', `network ${String(n.Target)} not found`))
      n.Target = found.id
    }
    const image = obj(obj(spec.TaskTemplate).ContainerSpec).Image as string
    if (!this.o.containers.hasImage(image)) warnings.push(`image ${image} could not be found locally: its tasks are rejected until it is pulled or loaded`)
    return { spec, warnings }
  }

  /** The service's Endpoint: its spec with the mode Berth serves (dnsrr: no virtual IPs), and the published ports. */
  private endpointOf (spec: Obj, self?: ServiceRecord): Obj {
    const ep: Obj = { ...obj(spec.EndpointSpec), Mode: 'dnsrr' }
    const ports = (ep.Ports ?? []) as Obj[]
    if (ports.length === 0) return { Spec: ep }
    // published ports are taken per protocol (a tcp and a udp port of the same number coexist, as in dockerd)
    const used = new Map<string, ServiceRecord>()
    for (const s of Object.values(this.store.state.services)) {
      if (s === self) continue
      for (const p of (obj(s.Endpoint).Ports ?? []) as Obj[]) used.set(`${String(p.PublishedPort)}/${String(p.Protocol)}`, s)
    }
    const prev = (obj(self?.Endpoint).Ports ?? []) as Obj[]
    const mine = new Set<string>()
    const out: Obj[] = []
    for (const p of ports) {
      const proto = String(p.Protocol)
      let published = (p.PublishedPort as number | undefined) ?? 0
      const owner = used.get(`${published}/${proto}`)
      if (published !== 0 && owner !== undefined) throw invalidArgument(rpc('InvalidArgument', `port '${published}' is already in use by service '${owner.Spec.Name as string}' (${owner.ID}) as an ingress port`))
      if (published === 0 && p.PublishMode !== 'host') {
        published = (prev.find((q) => q.TargetPort === p.TargetPort && q.Protocol === p.Protocol)?.PublishedPort as number | undefined) ?? 0
        for (let c = 30000; published === 0 && c <= 32767; c++) if (!used.has(`${c}/${proto}`) && !mine.has(`${c}/${proto}`)) published = c
      }
      mine.add(`${published}/${proto}`)
      out.push({ Protocol: p.Protocol, TargetPort: p.TargetPort, PublishedPort: published, PublishMode: p.PublishMode })
    }
    return { Spec: ep, Ports: out }
  }

  async createService (body: Obj): Promise<{ ID: string, Warnings?: string[] }> {
    this.swarm
    const { spec, warnings } = this.checkSpec(body)
    const id = swarmId()
    const svc: ServiceRecord = { ...this.store.newMeta(id), Spec: spec, Endpoint: this.endpointOf(spec), restarts: {} }
    if (modeOf(spec).endsWith('job')) svc.JobStatus = { JobIteration: { Index: svc.Version.Index }, LastExecution: svc.CreatedAt }
    this.store.state.services[id] = svc
    await this.store.commit()
    this.o.events.emit('service', 'create', id, { name: spec.Name as string })
    this.orchestrator.kick()
    return warnings.length > 0 ? { ID: id, Warnings: warnings } : { ID: id }
  }

  inspectService (ref: string, insertDefaults = false): Obj {
    const s = this.getService(ref)
    const out = toService(s, this.serviceStatus(s))
    if (insertDefaults) out.Spec = withServiceDefaults(s.Spec)
    return out
  }

  private serviceStatus (s: ServiceRecord): Obj {
    const tasks = this.orchestrator.tasksOf(s.ID)
    const mode = modeOf(s.Spec)
    const running = tasks.filter((t) => t.Status.State === 'running' && t.DesiredState !== 'shutdown').length
    const drained = this.swarm.node.Spec.Availability === 'drain'
    const desired = mode === 'replicated' ? replicasOf(s.Spec)
      : mode === 'global' ? (drained ? 0 : 1)
        : tasks.filter((t) => t.DesiredState === 'complete' && !isTerminal(t.Status.State)).length
    const completed = tasks.filter((t) => t.Status.State === 'complete' && (s.JobStatus === undefined || t.JobIteration?.Index === s.JobStatus.JobIteration.Index)).length
    return { RunningTasks: running, DesiredTasks: desired, CompletedTasks: completed }
  }

  listServices (f: Filters, status: boolean): Obj[] {
    this.swarm
    let list = Object.values(this.store.state.services)
    for (const [k, values] of f) {
      if (values.length === 0) continue
      list = list.filter((s) => {
        switch (k) {
          case 'id': return values.some((v) => s.ID.startsWith(v))
          case 'name': return values.some((v) => (s.Spec.Name as string).startsWith(v))
          case 'label': return matchLabel(obj(s.Spec.Labels) as Record<string, string>, values)
          case 'mode': return values.includes(modeOf(s.Spec))
          default: return true
        }
      })
    }
    return list.sort((a, b) => a.CreatedAt.localeCompare(b.CreatedAt)).map((s) => toService(s, status ? this.serviceStatus(s) : undefined))
  }

  async updateService (ref: string, version: number | undefined, body: Obj, rollback: boolean): Promise<{ Warnings: string[] | null }> {
    const svc = this.getService(ref)
    if (version === undefined) throw invalidArgument(`invalid service version '': strconv.ParseUint: parsing "": invalid syntax`)
    if (version !== svc.Version.Index) throw conflict(rpc('Unknown', 'update out of sequence'))
    let spec: Obj
    let warnings: string[] = []
    if (rollback) {
      if (svc.PreviousSpec === undefined) throw invalidArgument(rpc('FailedPrecondition', `service ${svc.ID} does not have a previous spec`))
      spec = svc.PreviousSpec
    } else {
      const checked = this.checkSpec(body, svc)
      spec = checked.spec
      warnings = checked.warnings
      if (spec.Name !== svc.Spec.Name) throw invalidArgument(rpc('Unimplemented', 'renaming services is not supported'))
      const before = modeOf(svc.Spec)
      if (modeOf(spec) !== before) throw invalidArgument(rpc('Unimplemented', 'service mode change is not allowed'))
    }
    const templateChanged = JSON.stringify(spec.TaskTemplate) !== JSON.stringify(svc.Spec.TaskTemplate)
    const before = serviceFacts(svc)
    svc.PreviousSpec = svc.Spec
    svc.Spec = spec
    svc.Endpoint = this.endpointOf(spec, svc)
    if (rollback) svc.UpdateStatus = { State: 'rollback_started', StartedAt: nowIso(), Message: 'manually requested rollback' }
    else if (templateChanged && svc.UpdateStatus !== undefined) delete svc.UpdateStatus
    if (svc.JobStatus !== undefined) svc.JobStatus = { JobIteration: { Index: svc.Version.Index + 1 }, LastExecution: nowIso() }
    this.store.touch(svc)
    await this.store.commit()
    this.o.events.emit('service', 'update', svc.ID, serviceUpdateAttributes(before, svc))
    this.orchestrator.kick()
    return { Warnings: warnings.length > 0 ? warnings : null }
  }

  /**
   * Removes a service and answers at once, as dockerd does: its tasks are marked `remove` and the orchestrator shuts
   * their containers down (their grace period) and then forgets them, so they stay listed until they are gone
   * (`docker stack rm --detach=false` waits on that). Its networks can be removed meanwhile (network-service's
   * deferred removal); a crash in between resumes at the next start.
   */
  async removeService (ref: string): Promise<void> {
    const svc = this.getService(ref)
    const tasks = this.orchestrator.tasksOf(svc.ID)
    delete this.store.state.services[svc.ID]
    for (const t of tasks) {
      if (t.DesiredState === 'remove') continue
      t.DesiredState = 'remove'
      t.serviceLabels = obj(svc.Spec.Labels) as Record<string, string>
      this.store.touch(t)
    }
    this.store.markDirty()
    await this.store.commit()
    this.o.events.emit('service', 'remove', svc.ID, { name: svc.Spec.Name as string })
    this.orchestrator.kick()
    void this.syncIngress()
  }

  /**
   * Why a swarm network cannot be removed, in swarmkit's words: a service names it, or (the ingress network) a
   * service publishes a port through the routing mesh; undefined when it can go.
   */
  networkRemovalBlocked (n: { id: string, ingress: boolean }): string | undefined {
    for (const s of Object.values(this.store.state.services)) {
      if (n.ingress) {
        const ports = (obj(obj(s.Spec.EndpointSpec)).Ports ?? []) as Obj[]
        if (ports.some((p) => p.PublishMode !== 'host')) return rpc('FailedPrecondition', `ingress network cannot be removed because service ${s.ID} depends on it`)
        continue
      }
      const nets = [...((obj(s.Spec.TaskTemplate).Networks ?? []) as Obj[]), ...((s.Spec.Networks ?? []) as Obj[])]
      if (nets.some((x) => x.Target === n.id)) return rpc('FailedPrecondition', `network ${n.id} is in use by service ${s.ID}`)
    }
    return undefined
  }

  /** The address pools overlay networks take their subnets from (init's), undefined outside a swarm. */
  overlayPools (): Array<{ base: string, size: number }> | undefined {
    const s = this.store.state.swarm
    if (s === null) return undefined
    const size = s.SubnetSize ?? 24
    return (s.DefaultAddrPool ?? ['10.0.0.0/8']).map((base) => ({ base, size }))
  }

  /** Whether a container is a task container whose service was removed (shutting down, or a stray). */
  taskContainerLeaving (containerId: string): boolean {
    const taskId = this.o.containers.inspect(containerId)?.labels['com.docker.swarm.task.id']
    if (taskId === undefined) return false
    const t = this.store.state.tasks[taskId]
    return t === undefined || this.store.state.services[t.ServiceID] === undefined
  }

  private async removeTaskContainer (t: TaskRecord): Promise<void> {
    const cid = t.Status.ContainerStatus?.ContainerID
    const c = cid !== undefined && cid !== '' ? this.o.containers.inspect(cid) : this.o.containers.withLabel('com.docker.swarm.task.id').find((x) => x.labels['com.docker.swarm.task.id'] === t.ID)
    try {
      if (c !== undefined) {
        if (c.running) {
          const grace = obj(obj(t.Spec).ContainerSpec).StopGracePeriod
          await this.o.containers.stop(c.id, typeof grace === 'number' ? Math.ceil(grace / 1e9) : 10).catch(() => {})
        }
        await this.o.containers.remove(c.id, true)
      }
      await this.files.remove(t.ID)
    } catch (err) { log('removing task %s: %s', t.ID, (err as Error).message) }
  }

  // ---- tasks ----------------------------------------------------------------------------------------------------

  private taskName (t: TaskRecord): string {
    const svc = this.store.state.services[t.ServiceID]
    return svc === undefined ? '' : taskName(svc.Spec.Name as string, t).replace(/\.[^.]+$/, '')
  }

  listTasks (f: Filters): Obj[] {
    this.swarm
    let list = Object.values(this.store.state.tasks)
    for (const [k, values] of f) {
      if (values.length === 0) continue
      list = list.filter((t) => {
        switch (k) {
          case 'id': return values.some((v) => t.ID.startsWith(v))
          case 'service': return values.some((v) => { const s = this.findService(v); return s !== undefined && s.ID === t.ServiceID })
          case 'node': return values.some((v) => v === t.NodeID || v === os.hostname() || v === 'self' || t.NodeID.startsWith(v))
          case 'name': return values.some((v) => this.taskName(t).startsWith(v))
          case 'desired-state': return values.some((v) => v === t.DesiredState || (v === 'accepted' && t.DesiredState === 'running'))
          // swarmkit matches a task's labels and its service's (docker stack ps filters on the service's)
          case 'label': return matchLabel({ ...(t.serviceLabels ?? obj(this.store.state.services[t.ServiceID]?.Spec.Labels)), ...t.Labels } as Record<string, string>, values)
          case '_up-to-date': {
            const s = this.store.state.services[t.ServiceID]
            return s !== undefined && JSON.stringify(t.Spec) === JSON.stringify(s.Spec.TaskTemplate)
          }
          default: return true
        }
      })
    }
    return list.sort((a, b) => a.createdMs - b.createdMs).map(toTask)
  }

  inspectTask (ref: string): Obj {
    this.swarm
    const all = this.store.state.tasks
    const t = all[ref] ?? (() => { const m = Object.values(all).filter((x) => ref.length > 0 && x.ID.startsWith(ref)); return m.length === 1 ? m[0] : undefined })()
    if (t === undefined) throw notFound(`task ${ref} not found`)
    return toTask(t)
  }

  /**
   * Writes the logs of a service's (or one task's) containers: each line a stdcopy frame (raw without framing for
   * TTY tasks), with dockerd's details prefix when asked. Follow streams every task at once until the client leaves.
   */
  private logTasks (ref: { service?: string, task?: string }): TaskRecord[] {
    let tasks: TaskRecord[]
    if (ref.task !== undefined) {
      const t = this.inspectTask(ref.task)
      tasks = [this.store.state.tasks[t.ID as string] as TaskRecord]
    } else {
      const svc = this.getService(ref.service as string)
      tasks = this.orchestrator.tasksOf(svc.ID)
    }
    return tasks.filter((t) => t.Status.ContainerStatus?.ContainerID !== undefined).sort((a, b) => (a.Slot ?? 0) - (b.Slot ?? 0) || a.createdMs - b.createdMs)
  }

  /** Whether the logs of a service or task are raw (TTY) rather than multiplexed; throws for unknown ones. */
  logsTty (ref: { service?: string, task?: string }): boolean {
    return this.logTasks(ref).some((t) => obj(t.Spec.ContainerSpec).TTY === true)
  }

  async logs (ref: { service?: string, task?: string }, o: TaskLogOptions & { details: boolean }, write: (stream: 1 | 2, data: Buffer) => void): Promise<void> {
    const tasks = this.logTasks(ref)
    const one = async (t: TaskRecord): Promise<void> => {
      const cid = t.Status.ContainerStatus?.ContainerID as string
      if (this.o.containers.inspect(cid) === undefined) return
      const details = `com.docker.swarm.node.id=${t.NodeID},com.docker.swarm.service.id=${t.ServiceID},com.docker.swarm.task.id=${t.ID}`
      await this.o.containers.logs(cid, { ...o, timestamps: true }, (stream, line) => {
        // the reader's line starts with its timestamp and a space
        const sp = line.indexOf(32)
        const ts = line.subarray(0, sp + 1)
        const rest = line.subarray(sp + 1)
        const parts: Buffer[] = []
        if (o.timestamps) parts.push(ts)
        if (o.details) parts.push(Buffer.from(details + ' '))
        parts.push(rest)
        write(stream, Buffer.concat(parts))
      })
    }
    if (o.follow) await Promise.all(tasks.map(one))
    else for (const t of tasks) await one(t)
  }

  // ---- secrets and configs --------------------------------------------------------------------------------------

  listSecrets (kind: SecretKind, f: Filters): Obj[] {
    this.swarm
    let list = Object.values(kind === 'secret' ? this.store.state.secrets : this.store.state.configs)
    for (const [k, values] of f) {
      if (values.length === 0) continue
      list = list.filter((s) => {
        switch (k) {
          case 'id': return values.some((v) => s.ID.startsWith(v))
          case 'name': return values.some((v) => s.Spec.Name.startsWith(v))
          case 'names': return values.includes(s.Spec.Name)
          case 'label': return matchLabel(s.Spec.Labels, values)
          default: return true
        }
      })
    }
    return list.sort((a, b) => a.CreatedAt.localeCompare(b.CreatedAt)).map((s) => toSecret(s, kind === 'config' ? secretData(this.keys, s) : undefined))
  }

  async createSecret (kind: SecretKind, body: Obj): Promise<string> {
    this.swarm
    const id = createSecret(this.store, this.keys, kind, body)
    await this.store.commit()
    this.o.events.emit(kind, 'create', id, { name: body.Name as string })
    return id
  }

  inspectSecret (kind: SecretKind, ref: string): Obj {
    this.swarm
    const s = getSecret(this.store.state, kind, ref)
    return toSecret(s, kind === 'config' ? secretData(this.keys, s) : undefined)
  }

  async updateSecret (kind: SecretKind, ref: string, version: number | undefined, body: Obj): Promise<void> {
    this.swarm
    const s = updateSecret(this.store, this.keys, kind, ref, version ?? -1, body)
    await this.store.commit()
    this.o.events.emit(kind, 'update', s.ID, { name: s.Spec.Name })
  }

  async removeSecret (kind: SecretKind, ref: string): Promise<void> {
    this.swarm
    const s = removeSecret(this.store, kind, ref)
    await this.store.commit()
    this.o.events.emit(kind, 'remove', s.ID, { name: s.Spec.Name })
  }

  // ---- published ports ------------------------------------------------------------------------------------------

  private syncing = false
  private async syncIngress (): Promise<void> {
    if (this.syncing) return
    this.syncing = true
    try {
      const keep = new Set<string>()
      for (const s of Object.values(this.store.state.services)) {
        const ports = ((obj(s.Endpoint).Ports ?? []) as Obj[]).filter((p) => p.PublishMode !== 'host' && (p.Protocol === 'tcp' || p.Protocol === 'udp'))
        if (ports.length === 0) continue
        const backends: string[] = []
        for (const t of this.orchestrator.tasksOf(s.ID)) {
          if (t.Status.State !== 'running' || t.DesiredState === 'shutdown') continue
          const c = this.o.containers.inspect(t.Status.ContainerStatus?.ContainerID ?? '')
          if (c !== undefined && c.running && c.ip !== '') backends.push(c.ip)
        }
        for (const p of ports) {
          const proto = p.Protocol as IngressProtocol
          keep.add(ingressKey(p.PublishedPort as number, proto))
          await this.ingress.set(p.PublishedPort as number, proto, p.TargetPort as number, backends).catch((err: Error) => { log('publishing %d/%s: %s', p.PublishedPort, proto, err.message) })
        }
      }
      await this.ingress.retain(keep)
    } finally { this.syncing = false }
  }
}

