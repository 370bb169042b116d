// Services: create, list (with dockerd's filters and status counts), inspect (with insertDefaults), update (and
// rollback), remove; their endpoint (published ports chosen and held per protocol) and their logs. The orchestrator
// keeps each one at its spec; this file only writes the records.
import { conflict, invalidArgument, notFound } from '../errors.js'
import type { Filters } from '../http/query.js'
import { randomServiceName, swarmId } from './ids.js'
import { isTerminal, nowIso, type Endpoint, type PublishedPort, type ServiceRecord } from './model.js'
import type { PublishedPorts } from './published-ports.js'
import { findSecret } from './secrets.js'
import { withServiceDefaults } from './service-defaults.js'
import { serviceFacts, serviceUpdateAttributes } from './service-events.js'
import { checkServiceSpec, resolveReferences } from './service-spec.js'
import { decodeServiceSpec } from './spec-wire.js'
import { isJob, sameTaskSpec, type ServiceSpec } from './spec.js'
import { activeSwarm, matchLabel, rpc, type SwarmContext } from './swarm-context.js'
import { loggedTasks, logsTty, writeTaskLogs, type LogOptions } from './task-logs.js'
import { servedEndpointSpec, toService, type Wire } from './wire.js'

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
    const byName = list.find((s) => s.spec.name === ref)
    if (byName !== undefined) return byName
    const byPrefix = list.filter((s) => ref.length > 0 && s.id.startsWith(ref))
    return byPrefix.length === 1 ? byPrefix[0] : undefined
  }

  get (ref: string): ServiceRecord {
    activeSwarm(this.c)
    const s = this.find(ref)
    if (s === undefined) throw notFound(`service ${ref} not found`)
    return s
  }

  /** A service spec from a create or update body: checked, its references resolved, decoded. */
  private checkSpec (body: Wire, self?: ServiceRecord): { spec: ServiceSpec, warnings: string[] } {
    const { store, networks, containers } = this.c
    const checked = checkServiceSpec(body, () => randomServiceName((n) => this.find(n) !== undefined))
    const taken = Object.values(store.state.services).find((s) => s.spec.name === checked.name && s !== self)
    if (taken !== undefined) throw conflict(rpc('AlreadyExists', `name conflicts with an existing object: service ${checked.name} already exists`))
    resolveReferences(checked.spec, {
      secret: (kind, ref) => { const s = findSecret(store.state, kind, ref); return s === undefined ? undefined : { id: s.id, name: s.spec.name } },
      network: (ref) => networks.find(ref)?.id
    })
    const spec = decodeServiceSpec(checked.spec)
    const { warnings } = checked
    const image = spec.taskTemplate.containerSpec.image
    if (!containers.hasImage(image)) warnings.push(`image ${image} could not be found locally: its tasks are rejected until it is pulled or loaded`)
    return { spec, warnings }
  }

  /** The service's Endpoint: its spec with the mode Berth serves (dnsrr: no virtual IPs), and the published ports. */
  private endpointOf (spec: ServiceSpec, self?: ServiceRecord): Endpoint {
    const served = servedEndpointSpec(spec.endpointSpec)
    const ports = served.ports
    if (ports.length === 0) return { spec: served }
    // published ports are taken per protocol (a tcp and a udp port of the same number coexist, as in dockerd)
    const used = new Map<string, ServiceRecord>()
    for (const s of Object.values(this.c.store.state.services)) {
      if (s === self) continue
      for (const p of s.endpoint.ports ?? []) used.set(`${p.publishedPort}/${p.protocol}`, s)
    }
    const prev = self?.endpoint.ports ?? []
    const mine = new Set<string>()
    const out: PublishedPort[] = []
    for (const p of ports) {
      const proto = p.protocol
      let published = p.publishedPort
      const owner = used.get(`${published}/${proto}`)
      if (published !== 0 && owner !== undefined) throw invalidArgument(rpc('InvalidArgument', `port '${published}' is already in use by service '${owner.spec.name}' (${owner.id}) as an ingress port`))
      if (published === 0 && p.publishMode !== 'host') {
        published = prev.find((q) => q.targetPort === p.targetPort && q.protocol === p.protocol)?.publishedPort ?? 0
        for (let c = 30000; published === 0 && c <= 32767; c++) if (!used.has(`${c}/${proto}`) && !mine.has(`${c}/${proto}`)) published = c
      }
      mine.add(`${published}/${proto}`)
      out.push({ protocol: p.protocol, ...(p.targetPort !== undefined ? { targetPort: p.targetPort } : {}), publishedPort: published, publishMode: p.publishMode })
    }
    return { spec: served, ports: out }
  }

  async create (body: Wire): Promise<{ ID: string, Warnings?: string[] }> {
    activeSwarm(this.c)
    const { store } = this.c
    const { spec, warnings } = this.checkSpec(body)
    const id = swarmId()
    const svc: ServiceRecord = { ...store.newMeta(id), spec, endpoint: this.endpointOf(spec), restarts: {} }
    if (isJob(spec.mode)) svc.jobStatus = { jobIteration: svc.version, lastExecution: svc.createdAt }
    store.state.services[id] = svc
    await store.commit()
    this.c.events.emit('service', 'create', id, { name: spec.name })
    this.c.orchestrator.kick()
    return warnings.length > 0 ? { ID: id, Warnings: warnings } : { ID: id }
  }

  inspect (ref: string, insertDefaults = false): Wire {
    const s = this.get(ref)
    const out = toService(s, this.status(s))
    if (insertDefaults) out.Spec = withServiceDefaults(s.spec.wire)
    return out
  }

  /** ServiceStatus: running, desired and completed tasks. */
  private status (s: ServiceRecord): Wire {
    const tasks = this.c.orchestrator.tasksOf(s.id)
    const mode = s.spec.mode
    const running = tasks.filter((t) => t.status.state === 'running' && t.desiredState !== 'shutdown').length
    const drained = activeSwarm(this.c).node.spec.availability === 'drain'
    const desired = mode.kind === 'replicated' ? mode.replicas
      : mode.kind === 'global' ? (drained ? 0 : 1)
        : tasks.filter((t) => t.desiredState === 'complete' && !isTerminal(t.status.state)).length
    const completed = tasks.filter((t) => t.status.state === 'complete' && (s.jobStatus === undefined || t.jobIteration === s.jobStatus.jobIteration)).length
    return { RunningTasks: running, DesiredTasks: desired, CompletedTasks: completed }
  }

  list (f: Filters, status: boolean): Wire[] {
    activeSwarm(this.c)
    let list = Object.values(this.c.store.state.services)
    for (const [k, values] of f) {
      if (values.length === 0) continue
      list = list.filter((s) => {
        switch (k) {
          case 'id': return values.some((v) => s.id.startsWith(v))
          case 'name': return values.some((v) => s.spec.name.startsWith(v))
          case 'label': return matchLabel(s.spec.labels, values)
          case 'mode': return values.includes(s.spec.mode.kind)
          default: return true
        }
      })
    }
    return list.sort((a, b) => a.createdAt.localeCompare(b.createdAt)).map((s) => toService(s, status ? this.status(s) : undefined))
  }

  async update (ref: string, version: number | undefined, body: Wire, rollback: boolean): Promise<{ Warnings: string[] | null }> {
    const svc = this.get(ref)
    if (version === undefined) throw invalidArgument(`invalid service version '': strconv.ParseUint: parsing "": invalid syntax`)
    if (version !== svc.version) throw conflict(rpc('Unknown', 'update out of sequence'))
    let spec: ServiceSpec
    let warnings: string[] = []
    if (rollback) {
      if (svc.previousSpec === undefined) throw invalidArgument(rpc('FailedPrecondition', `service ${svc.id} does not have a previous spec`))
      spec = svc.previousSpec
    } else {
      const checked = this.checkSpec(body, svc)
      spec = checked.spec
      warnings = checked.warnings
      if (spec.name !== svc.spec.name) throw invalidArgument(rpc('Unimplemented', 'renaming services is not supported'))
      if (spec.mode.kind !== svc.spec.mode.kind) throw invalidArgument(rpc('Unimplemented', 'service mode change is not allowed'))
    }
    const templateChanged = !sameTaskSpec(spec.taskTemplate, svc.spec.taskTemplate)
    const before = serviceFacts(svc)
    svc.previousSpec = svc.spec
    svc.spec = spec
    svc.endpoint = this.endpointOf(spec, svc)
    if (rollback) svc.updateStatus = { state: 'rollback_started', startedAt: nowIso(), message: 'manually requested rollback' }
    else if (templateChanged && svc.updateStatus !== undefined) delete svc.updateStatus
    if (svc.jobStatus !== undefined) svc.jobStatus = { jobIteration: svc.version + 1, lastExecution: nowIso() }
    this.c.store.touch(svc)
    await this.c.store.commit()
    this.c.events.emit('service', 'update', svc.id, serviceUpdateAttributes(before, svc))
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
    const tasks = this.c.orchestrator.tasksOf(svc.id)
    delete store.state.services[svc.id]
    for (const t of tasks) {
      if (t.desiredState === 'remove') continue
      t.desiredState = 'remove'
      t.serviceLabels = svc.spec.labels
      store.touch(t)
    }
    store.markDirty()
    await store.commit()
    this.c.events.emit('service', 'remove', svc.id, { name: svc.spec.name })
    this.c.orchestrator.kick()
    void this.ports.sync()
  }

  /** Whether the logs of a service are raw (TTY) rather than multiplexed; throws for an unknown one. */
  logsTty (ref: string): boolean { return logsTty(loggedTasks(this.c.orchestrator.tasksOf(this.get(ref).id))) }

  async logs (ref: string, o: LogOptions, write: (stream: 1 | 2, data: Buffer) => void): Promise<void> {
    await writeTaskLogs(this.c.containers, loggedTasks(this.c.orchestrator.tasksOf(this.get(ref).id)), o, write)
  }

  /**
   * Why a swarm network cannot be removed, in swarmkit's words: a service names it, or (the ingress network) a
   * service publishes a port through the routing mesh; undefined when it can go.
   */
  networkRemovalBlocked (n: { id: string, ingress: boolean }): string | undefined {
    for (const s of Object.values(this.c.store.state.services)) {
      if (n.ingress) {
        if (s.spec.endpointSpec.ports.some((p) => p.publishMode !== 'host')) return rpc('FailedPrecondition', `ingress network cannot be removed because service ${s.id} depends on it`)
        continue
      }
      if ([...s.spec.taskTemplate.networks, ...s.spec.networks].some((x) => x.target === n.id)) return rpc('FailedPrecondition', `network ${n.id} is in use by service ${s.id}`)
    }
    return undefined
  }
}
