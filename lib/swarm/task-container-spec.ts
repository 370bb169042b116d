// A task's container as the swarm asks the engine for it (pure): the task spec's ContainerSpec, resources, mounts,
// secret and config files, networks and host-mode ports, and the com.docker.swarm.* labels dockerd puts on task
// containers, in the engine's terms (task-containers.ts' TaskContainerRequest).
import type { ServiceRecord, TaskRecord } from './model.js'
import type { TaskContainerRequest } from './task-containers.js'

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

export function taskContainerRequest (i: TaskContainerInput): TaskContainerRequest {
  const spec = i.task.spec
  const cs = spec.containerSpec
  const serviceName = i.service.spec.name
  const name = taskName(serviceName, i.task)
  const binds: string[] = []
  const mounts: TaskContainerRequest['mounts'] = []
  for (const m of cs.mounts) {
    if (m.type === 'tmpfs') {
      // a tmpfs mount goes to the container as `--mount type=tmpfs` does (size and mode honoured by the engine)
      const o = m.tmpfsOptions
      const sizeBytes = o?.sizeBytes !== undefined && o.sizeBytes !== 0 ? o.sizeBytes : undefined
      const mode = o?.mode !== undefined && o.mode !== 0 ? o.mode : undefined
      mounts.push({ type: 'tmpfs', target: m.target, readOnly: m.readOnly, ...(sizeBytes !== undefined || mode !== undefined ? { tmpfsOptions: { ...(sizeBytes !== undefined ? { sizeBytes } : {}), ...(mode !== undefined ? { mode } : {}) } } : {}) })
      continue
    }
    if (m.type !== 'bind' && m.type !== 'volume') continue
    // an anonymous volume is named for the task and its target
    const source = m.source !== '' ? m.source : `${i.task.id}-${m.target.replace(/[^a-zA-Z0-9]/g, '') || 'anon'}`
    binds.push(`${source}:${m.target}${m.readOnly ? ':ro' : ''}`)
  }
  for (const f of i.files) binds.push(`${f.source}:${f.target}:ro`)
  const portBindings: TaskContainerRequest['portBindings'] = {}
  const exposed: string[] = []
  for (const p of i.service.spec.endpointSpec.ports) {
    const key = `${p.targetPort === undefined ? 'undefined' : p.targetPort}/${p.protocol}`
    if (!exposed.includes(key)) exposed.push(key)
    if (p.publishMode === 'host') (portBindings[key] ??= []).push({ hostIp: '', hostPort: p.publishedPort !== 0 ? String(p.publishedPort) : '' })
  }
  const limits = spec.resources.limits
  return {
    name,
    image: cs.image,
    entrypoint: [...cs.command],
    cmd: [...cs.args],
    env: [...cs.env],
    user: cs.user,
    workingDir: cs.dir,
    hostname: cs.hostname,
    labels: {
      ...cs.labels,
      'com.docker.swarm.node.id': i.nodeId,
      'com.docker.swarm.service.id': i.service.id,
      'com.docker.swarm.service.name': serviceName,
      'com.docker.swarm.task': '',
      'com.docker.swarm.task.id': i.task.id,
      'com.docker.swarm.task.name': name
    },
    tty: cs.tty,
    openStdin: cs.openStdin,
    ...(cs.stopSignal !== '' ? { stopSignal: cs.stopSignal } : {}),
    ...(cs.stopGracePeriodNs !== undefined ? { stopTimeout: Math.ceil(cs.stopGracePeriodNs / 1e9) } : {}),
    ...(cs.healthcheck !== undefined ? { healthcheck: cs.healthcheck } : {}),
    exposedPorts: exposed,
    binds,
    mounts,
    networkMode: i.networks[0]?.name ?? 'default',
    portBindings,
    ...(limits.memoryBytes !== undefined ? { memory: limits.memoryBytes } : {}),
    ...(limits.nanoCpus !== undefined ? { nanoCpus: limits.nanoCpus } : {}),
    ...(limits.pids !== undefined && limits.pids > 0 ? { pidsLimit: limits.pids } : {}),
    readonlyRootfs: cs.readOnly,
    extraHosts: extraHosts(cs.hosts),
    dns: { servers: [...cs.dnsConfig.nameservers], search: [...cs.dnsConfig.search], options: [...cs.dnsConfig.options] },
    capAdd: [...cs.capabilityAdd],
    capDrop: [...cs.capabilityDrop],
    groupAdd: [...cs.groups],
    init: cs.init,
    // as dockerd's service records: the service name and its aliases, and tasks.<each> for the task addresses
    endpoints: i.networks.map((n) => {
      const names = [serviceName, ...n.aliases]
      return { network: n.name, aliases: [...new Set([...names, ...names.map((a) => `tasks.${a}`)])] }
    })
  }
}
