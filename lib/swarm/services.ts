// Services: create, list (with dockerd's filters and status counts), inspect (with insertDefaults), update (and
// rollback), remove; their endpoint (published ports chosen and held per protocol) and their logs. The orchestrator
// keeps each one at its spec; this file only writes the records.
import { conflict, invalidArgument, notFound } from '../errors.js'
import type { Filters } from '../http/query.js'
import { randomServiceName, swarmId } from './ids.js'
import { isTerminal, nowIso, type Obj, type ServiceRecord } from './model.js'
import type { PublishedPorts } from './published-ports.js'
import { resolveRefs } from './secrets.js'
import { withServiceDefaults } from './service-defaults.js'
import { serviceFacts, serviceUpdateAttributes } from './service-events.js'
import { checkServiceSpec, modeOf, replicasOf } from './service-spec.js'
import { activeSwarm, matchLabel, rpc, type SwarmContext } from './swarm-context.js'
import { loggedTasks, logsTty, writeTaskLogs, type LogOptions } from './task-logs.js'
import { toService } from './wire.js'

function obj (v: unknown): Obj { return v !== null && typeof v === 'object' && !Array.isArray(v) ? v as Obj : {} }

export class Services {
  private readonly c: SwarmContext
  private readonly ports: PublishedPorts

  constructor (c: SwarmContext, ports: PublishedPorts) {
    this.c = c
    this.ports = ports
  }

  /** A service by ID, name or unique ID prefix. */
  find (ref: string): ServiceRecord | undefined {
    const all = this.c.store.state.services
    if (all[ref] !== undefined) return all[ref]
    const list = Object.values(all)
    const byName = list.find((s) => s.Spec.Name === ref)
    if (byName !== undefined) return byName
    const byPrefix = list.filter((s) => ref.length > 0 && s.ID.startsWith(ref))
    return byPrefix.length === 1 ? byPrefix[0] : undefined
  }

  get (ref: string): ServiceRecord {
    activeSwarm(this.c)
    const s = this.find(ref)
    if (s === undefined) throw notFound(`service ${ref} not found`)
    return s
  }

  private checkSpec (body: Obj, self?: ServiceRecord): { spec: Obj, warnings: string[] } {
    const { spec, warnings } = checkServiceSpec(body, () => randomServiceName((n) => this.find(n) !== undefined))
    const taken = Object.values(this.c.store.state.services).find((s) => s.Spec.Name === spec.Name && s !== self)
    if (taken !== undefined) throw conflict(rpc('AlreadyExists', `name conflicts with an existing object: service ${spec.Name as string} already exists`))
    resolveRefs(this.c.store.state, obj(obj(spec.TaskTemplate).ContainerSpec))
    for (const n of (obj(spec.TaskTemplate).Networks ?? []) as Obj[]) {
      const found = this.c.networks.find(String(n.Target))
      if (found === undefined) throw notFound(rpc('NotFound', `network ${String(n.Target)} not found`))
      n.Target = found.id
    }
    const image = obj(obj(spec.TaskTemplate).ContainerSpec).Image as string
    if (!this.c.containers.hasImage(image)) warnings.push(`image ${image} could not be found locally: its tasks are rejected until it is pulled or loaded`)
    return { spec, warnings }
  }

  /** The service's Endpoint: its spec with the mode Berth serves (dnsrr: no virtual IPs), and the published ports. */
  private endpointOf (spec: Obj, self?: ServiceRecord): Obj {
    const ep: Obj = { ...obj(spec.EndpointSpec), Mode: 'dnsrr' }
    const ports = (ep.Ports ?? []) as Obj[]
    if (ports.length === 0) return { Spec: ep }
    // published ports are taken per protocol (a tcp and a udp port of the same number coexist, as in dockerd)
    const used = new Map<string, ServiceRecord>()
    for (const s of Object.values(this.c.store.state.services)) {
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

  async create (body: Obj): Promise<{ ID: string, Warnings?: string[] }> {
    activeSwarm(this.c)
    const { store } = this.c
    const { spec, warnings } = this.checkSpec(body)
    const id = swarmId()
    const svc: ServiceRecord = { ...store.newMeta(id), Spec: spec, Endpoint: this.endpointOf(spec), restarts: {} }
    if (modeOf(spec).endsWith('job')) svc.JobStatus = { JobIteration: { Index: svc.Version.Index }, LastExecution: svc.CreatedAt }
    store.state.services[id] = svc
    await store.commit()
    this.c.events.emit('service', 'create', id, { name: spec.Name as string })
    this.c.orchestrator.kick()
    return warnings.length > 0 ? { ID: id, Warnings: warnings } : { ID: id }
  }

  inspect (ref: string, insertDefaults = false): Obj {
    const s = this.get(ref)
    const out = toService(s, this.status(s))
    if (insertDefaults) out.Spec = withServiceDefaults(s.Spec)
    return out
  }

  private status (s: ServiceRecord): Obj {
    const tasks = this.c.orchestrator.tasksOf(s.ID)
    const mode = modeOf(s.Spec)
    const running = tasks.filter((t) => t.Status.State === 'running' && t.DesiredState !== 'shutdown').length
    const drained = activeSwarm(this.c).node.Spec.Availability === 'drain'
    const desired = mode === 'replicated' ? replicasOf(s.Spec)
      : mode === 'global' ? (drained ? 0 : 1)
        : tasks.filter((t) => t.DesiredState === 'complete' && !isTerminal(t.Status.State)).length
    const completed = tasks.filter((t) => t.Status.State === 'complete' && (s.JobStatus === undefined || t.JobIteration?.Index === s.JobStatus.JobIteration.Index)).length
    return { RunningTasks: running, DesiredTasks: desired, CompletedTasks: completed }
  }

  list (f: Filters, status: boolean): Obj[] {
    activeSwarm(this.c)
    let list = Object.values(this.c.store.state.services)
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
    return list.sort((a, b) => a.CreatedAt.localeCompare(b.CreatedAt)).map((s) => toService(s, status ? this.status(s) : undefined))
  }

  async update (ref: string, version: number | undefined, body: Obj, rollback: boolean): Promise<{ Warnings: string[] | null }> {
    const svc = this.get(ref)
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
    this.c.store.touch(svc)
    await this.c.store.commit()
    this.c.events.emit('service', 'update', svc.ID, serviceUpdateAttributes(before, svc))
    this.c.orchestrator.kick()
    return { Warnings: warnings.length > 0 ? warnings : null }
  }

  /**
   * Removes a service and answers at once, as dockerd does: its tasks are marked `remove` and the orchestrator shuts
   * their containers down (their grace period) and then forgets them, so they stay listed until they are gone
   * (`docker stack rm --detach=false` waits on that). Its networks can be removed meanwhile (network-service's
   * deferred removal); a crash in between resumes at the next start.
   */
  async remove (ref: string): Promise<void> {
    const svc = this.get(ref)
    const { store } = this.c
    const tasks = this.c.orchestrator.tasksOf(svc.ID)
    delete store.state.services[svc.ID]
    for (const t of tasks) {
      if (t.DesiredState === 'remove') continue
      t.DesiredState = 'remove'
      t.serviceLabels = obj(svc.Spec.Labels) as Record<string, string>
      store.touch(t)
    }
    store.markDirty()
    await store.commit()
    this.c.events.emit('service', 'remove', svc.ID, { name: svc.Spec.Name as string })
    this.c.orchestrator.kick()
    void this.ports.sync()
  }

  /** Whether the logs of a service are raw (TTY) rather than multiplexed; throws for an unknown one. */
  logsTty (ref: string): boolean { return logsTty(loggedTasks(this.c.orchestrator.tasksOf(this.get(ref).ID))) }

  async logs (ref: string, o: LogOptions, write: (stream: 1 | 2, data: Buffer) => void): Promise<void> {
    await writeTaskLogs(this.c.containers, loggedTasks(this.c.orchestrator.tasksOf(this.get(ref).ID)), o, write)
  }

  /**
   * Why a swarm network cannot be removed, in swarmkit's words: a service names it, or (the ingress network) a
   * service publishes a port through the routing mesh; undefined when it can go.
   */
  networkRemovalBlocked (n: { id: string, ingress: boolean }): string | undefined {
    for (const s of Object.values(this.c.store.state.services)) {
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
}
