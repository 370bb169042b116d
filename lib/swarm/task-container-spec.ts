// A task's container as the swarm asks the engine for it (pure): the task spec's ContainerSpec, resources, mounts,
// secret and config files, networks and host-mode ports, and the com.docker.swarm.* labels dockerd puts on task
// containers, as the containers floor's typed create request (lib/containers/create-request.ts), started from
// dockerd's defaults (newCreateRequest): no Engine API body is written here. Its restart policy stays `no` (the
// orchestrator replaces tasks); its image must be present.
import { newCreateRequest, setMounts, setPortBindings, type CreateRequest } from '../containers/create-request.js'
import type { HealthConfig, MountRequest } from '../containers/container.js'
import type { PortBindings } from '../network/endpoint-request.js'
import type { ServiceRecord, TaskRecord } from './model.js'

export interface TaskFile { source: string, target: string }

export interface TaskContainerInput {
  service: ServiceRecord
  task: TaskRecord
  nodeId: string
  /** Secret and config files prepared on the host (tmpfs), bound read-only at their targets. */
  files: TaskFile[]
  /** Networks resolved to names (first one is the container's network mode). */
  networks: Array<{ name: string, aliases: string[] }>
}

/** A task container's name: <service>.<slot or node>.<task ID>. */
export function taskName (serviceName: string, t: TaskRecord): string {
  return `${serviceName}.${t.slot !== undefined && t.slot > 0 ? t.slot : t.nodeId}.${t.id}`
}

/** Swarm's extra hosts ("IP host [alias...]", or the container form "host:IP") as `host:IP` entries. */
function extraHosts (hosts: readonly string[]): string[] {
  const out: string[] = []
  for (const h of hosts) {
    const parts = h.trim().split(/\s+/)
    if (parts.length >= 2) for (const host of parts.slice(1)) out.push(`${host}:${parts[0] as string}`)
    else if (parts[0] !== undefined && parts[0].includes(':')) out.push(parts[0])
  }
  return out
}

export function taskContainerRequest (i: TaskContainerInput): CreateRequest {
  const spec = i.task.spec
  const cs = spec.containerSpec
  const serviceName = i.service.spec.name
  const name = taskName(serviceName, i.task)
  const r = newCreateRequest(cs.image)
  const c = r.config
  if (cs.command.length > 0) c.entrypoint = [...cs.command]
  if (cs.args.length > 0) c.cmd = [...cs.args]
  c.env = [...cs.env]
  c.user = cs.user
  c.workingDir = cs.dir
  c.hostname = cs.hostname
  c.labels = {
    ...cs.labels,
    'com.docker.swarm.node.id': i.nodeId,
    'com.docker.swarm.service.id': i.service.id,
    'com.docker.swarm.service.name': serviceName,
    'com.docker.swarm.task': '',
    'com.docker.swarm.task.id': i.task.id,
    'com.docker.swarm.task.name': name
  }
  c.tty = cs.tty
  c.openStdin = cs.openStdin
  if (cs.stopSignal !== '') c.stopSignal = cs.stopSignal
  if (cs.stopGracePeriodNs !== undefined) c.stopTimeout = Math.ceil(cs.stopGracePeriodNs / 1e9)
  // the same fields, named alike (those given; null kept; durations in ns): a copy, the spec stays frozen
  if (cs.healthcheck !== undefined) c.healthcheck = structuredClone(cs.healthcheck) as HealthConfig

  const binds: string[] = []
  const mounts: MountRequest[] = []
  for (const m of cs.mounts) {
    if (m.type === 'tmpfs') {
      // a tmpfs mount goes to the container as `--mount type=tmpfs` does (size and mode honoured by the engine)
      const o = m.tmpfsOptions
      const sizeBytes = o?.sizeBytes !== undefined && o.sizeBytes !== 0 ? o.sizeBytes : undefined
      const mode = o?.mode !== undefined && o.mode !== 0 ? o.mode : undefined
      mounts.push({ type: 'tmpfs', target: m.target, ...(m.readOnly ? { readOnly: true } : {}), ...(sizeBytes !== undefined || mode !== undefined ? { tmpfsOptions: { ...(sizeBytes !== undefined ? { sizeBytes } : {}), ...(mode !== undefined ? { mode } : {}) } } : {}) })
      continue
    }
    if (m.type !== 'bind' && m.type !== 'volume') continue
    // an anonymous volume is named for the task and its target
    const source = m.source !== '' ? m.source : `${i.task.id}-${m.target.replace(/[^a-zA-Z0-9]/g, '') || 'anon'}`
    binds.push(`${source}:${m.target}${m.readOnly ? ':ro' : ''}`)
  }
  for (const f of i.files) binds.push(`${f.source}:${f.target}:ro`)
  setMounts(r, binds, mounts)

  // every port of the endpoint is exposed; host-mode ones are published on this node (0: a port the host picks)
  const bindings: PortBindings = {}
  const exposed: string[] = []
  for (const p of i.service.spec.endpointSpec.ports) {
    const key = `${p.targetPort === undefined ? 'undefined' : p.targetPort}/${p.protocol}`
    if (!exposed.includes(key)) exposed.push(key)
    if (p.publishMode === 'host') (bindings[key] ??= []).push({ hostIp: '', hostPort: p.publishedPort !== 0 ? String(p.publishedPort) : '' })
  }
  if (exposed.length > 0) c.exposedPorts = exposed
  setPortBindings(r, bindings)

  const s = r.settings
  // the first network is the container's network mode (none: the default bridge)
  s.networkMode = i.networks[0]?.name ?? 'bridge'
  const limits = spec.resources.limits
  if (limits.memoryBytes !== undefined) s.resources.memory = limits.memoryBytes
  if (limits.nanoCpus !== undefined) s.resources.nanoCpus = limits.nanoCpus
  if (limits.pids !== undefined && limits.pids > 0) s.resources.pidsLimit = limits.pids
  s.readonlyRootfs = cs.readOnly
  s.extraHosts = extraHosts(cs.hosts)
  s.dns = { servers: [...cs.dnsConfig.nameservers], search: [...cs.dnsConfig.search], options: [...cs.dnsConfig.options] }
  s.capAdd = [...cs.capabilityAdd]
  s.capDrop = [...cs.capabilityDrop]
  s.process = { ...s.process, groupAdd: [...cs.groups], ...(cs.init ? { init: true } : {}) }
  // as dockerd's service records: the service name and its aliases, and tasks.<each> for the task addresses
  for (const n of i.networks) {
    const names = [serviceName, ...n.aliases]
    r.network.endpoints[n.name] = { aliases: [...new Set([...names, ...names.map((a) => `tasks.${a}`)])], links: [], ipv4: '', ipv6: '', mac: '', linkLocal: [], driverOpts: {} }
  }
  return r
}
