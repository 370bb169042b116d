// A task's container as an Engine API create body (pure): the task spec's ContainerSpec, resources, mounts, secret
// and config files, networks and host-mode ports, and the com.docker.swarm.* labels dockerd puts on task containers.
import type { Obj, ServiceRecord, TaskRecord } from './model.js'

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

export function taskName (serviceName: string, t: TaskRecord): string {
  return `${serviceName}.${t.Slot !== undefined && t.Slot > 0 ? t.Slot : t.NodeID}.${t.ID}`
}

function obj (v: unknown): Obj { return v !== null && typeof v === 'object' && !Array.isArray(v) ? v as Obj : {} }
function strs (v: unknown): string[] { return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [] }

export function taskContainerBody (i: TaskContainerInput): Record<string, unknown> {
  const spec = i.task.Spec
  const cs = obj(spec.ContainerSpec)
  const serviceName = i.service.Spec.Name as string
  const name = taskName(serviceName, i.task)
  const labels: Record<string, string> = {
    ...obj(cs.Labels) as Record<string, string>,
    'com.docker.swarm.node.id': i.nodeId,
    'com.docker.swarm.service.id': i.service.ID,
    'com.docker.swarm.service.name': serviceName,
    'com.docker.swarm.task': '',
    'com.docker.swarm.task.id': i.task.ID,
    'com.docker.swarm.task.name': name
  }
  const binds: string[] = []
  const mounts: Obj[] = []
  for (const m of (Array.isArray(cs.Mounts) ? cs.Mounts : []) as Obj[]) {
    const type = m.Type ?? 'volume'
    if (type === 'tmpfs') {
      // a tmpfs mount goes to the container as `--mount type=tmpfs` does (size and mode honoured by the engine)
      const o = obj(m.TmpfsOptions)
      const tmpfs: Obj = {}
      if (typeof o.SizeBytes === 'number' && o.SizeBytes !== 0) tmpfs.SizeBytes = o.SizeBytes
      if (typeof o.Mode === 'number' && o.Mode !== 0) tmpfs.Mode = o.Mode
      mounts.push({ Type: 'tmpfs', Target: m.Target, ...(m.ReadOnly === true ? { ReadOnly: true } : {}), ...(Object.keys(tmpfs).length > 0 ? { TmpfsOptions: tmpfs } : {}) })
      continue
    }
    if (type !== 'bind' && type !== 'volume') continue
    let source = typeof m.Source === 'string' ? m.Source : ''
    if (source === '') source = `${i.task.ID}-${(m.Target as string).replace(/[^a-zA-Z0-9]/g, '') || 'anon'}`
    binds.push(`${source}:${m.Target as string}${m.ReadOnly === true ? ':ro' : ''}`)
  }
  for (const f of i.files) binds.push(`${f.source}:${f.target}:ro`)
  const res = obj(spec.Resources)
  const limits = obj(res.Limits)
  const dns = obj(cs.DNSConfig)
  const extraHosts: string[] = []
  for (const h of strs(cs.Hosts)) {
    const parts = h.trim().split(/\s+/)
    // swarm's form is "IP host [alias...]"; the container form "host:IP" is accepted as well
    if (parts.length >= 2) for (const host of parts.slice(1)) extraHosts.push(`${host}:${parts[0] as string}`)
    else if (parts[0] !== undefined && parts[0].includes(':')) extraHosts.push(parts[0])
  }
  const portBindings: Record<string, Array<{ HostIp: string, HostPort: string }>> = {}
  const exposed: Record<string, object> = {}
  for (const p of (obj(i.service.Spec.EndpointSpec).Ports ?? []) as Obj[]) {
    const key = `${String(p.TargetPort)}/${String(p.Protocol ?? 'tcp')}`
    exposed[key] = {}
    if (p.PublishMode === 'host') (portBindings[key] ??= []).push({ HostIp: '', HostPort: p.PublishedPort !== undefined && p.PublishedPort !== 0 ? String(p.PublishedPort) : '' })
  }
  const endpoints: Record<string, unknown> = {}
  // as dockerd's service records: the service name and its aliases, and tasks.<each> for the task addresses
  for (const n of i.networks) {
    const names = [serviceName, ...n.aliases]
    endpoints[n.name] = { Aliases: [...new Set([...names, ...names.map((a) => `tasks.${a}`)])] }
  }
  const grace = typeof cs.StopGracePeriod === 'number' ? Math.ceil(cs.StopGracePeriod / 1e9) : undefined
  return {
    Image: cs.Image,
    ...(Array.isArray(cs.Command) && cs.Command.length > 0 ? { Entrypoint: cs.Command } : {}),
    ...(Array.isArray(cs.Args) && cs.Args.length > 0 ? { Cmd: cs.Args } : {}),
    Env: strs(cs.Env),
    User: typeof cs.User === 'string' ? cs.User : '',
    WorkingDir: typeof cs.Dir === 'string' ? cs.Dir : '',
    Hostname: typeof cs.Hostname === 'string' ? cs.Hostname : '',
    Labels: labels,
    Tty: cs.TTY === true,
    OpenStdin: cs.OpenStdin === true,
    ...(typeof cs.StopSignal === 'string' && cs.StopSignal !== '' ? { StopSignal: cs.StopSignal } : {}),
    ...(grace !== undefined ? { StopTimeout: grace } : {}),
    ...(cs.Healthcheck !== undefined ? { Healthcheck: cs.Healthcheck } : {}),
    ...(Object.keys(exposed).length > 0 ? { ExposedPorts: exposed } : {}),
    HostConfig: {
      Binds: binds,
      ...(mounts.length > 0 ? { Mounts: mounts } : {}),
      RestartPolicy: { Name: 'no' },
      NetworkMode: i.networks[0]?.name ?? 'default',
      PortBindings: portBindings,
      ...(typeof limits.MemoryBytes === 'number' ? { Memory: limits.MemoryBytes } : {}),
      ...(typeof limits.NanoCPUs === 'number' ? { NanoCpus: limits.NanoCPUs } : {}),
      ...(typeof limits.Pids === 'number' && limits.Pids > 0 ? { PidsLimit: limits.Pids } : {}),
      ReadonlyRootfs: cs.ReadOnly === true,
      ExtraHosts: extraHosts,
      Dns: strs(dns.Nameservers),
      DnsSearch: strs(dns.Search),
      DnsOptions: strs(dns.Options),
      CapAdd: strs(cs.CapabilityAdd),
      CapDrop: strs(cs.CapabilityDrop),
      GroupAdd: strs(cs.Groups),
      ...(cs.Init === true ? { Init: true } : {})
    },
    NetworkingConfig: { EndpointsConfig: endpoints }
  }
}
