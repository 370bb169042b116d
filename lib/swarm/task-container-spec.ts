// A task's container as an Engine API create body (pure): the task spec's ContainerSpec, resources, mounts, secret
// and config files, networks and host-mode ports, and the com.docker.swarm.* labels dockerd puts on task containers.
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

export function taskName (serviceName: string, t: TaskRecord): string {
  return `${serviceName}.${t.slot !== undefined && t.slot > 0 ? t.slot : t.nodeId}.${t.id}`
}

export function taskContainerBody (i: TaskContainerInput): Record<string, unknown> {
  const spec = i.task.spec
  const cs = spec.containerSpec
  const serviceName = i.service.spec.name
  const name = taskName(serviceName, i.task)
  const labels: Record<string, string> = {
    ...cs.labels,
    'com.docker.swarm.node.id': i.nodeId,
    'com.docker.swarm.service.id': i.service.id,
    'com.docker.swarm.service.name': serviceName,
    'com.docker.swarm.task': '',
    'com.docker.swarm.task.id': i.task.id,
    'com.docker.swarm.task.name': name
  }
  const binds: string[] = []
  const mounts: Array<Record<string, unknown>> = []
  for (const m of cs.mounts) {
    if (m.type === 'tmpfs') {
      // a tmpfs mount goes to the container as `--mount type=tmpfs` does (size and mode honoured by the engine)
      const o = m.tmpfsOptions
      const tmpfs: Record<string, number> = {}
      if (o?.sizeBytes !== undefined && o.sizeBytes !== 0) tmpfs.SizeBytes = o.sizeBytes
      if (o?.mode !== undefined && o.mode !== 0) tmpfs.Mode = o.mode
      mounts.push({ Type: 'tmpfs', Target: m.target, ...(m.readOnly ? { ReadOnly: true } : {}), ...(Object.keys(tmpfs).length > 0 ? { TmpfsOptions: tmpfs } : {}) })
      continue
    }
    if (m.type !== 'bind' && m.type !== 'volume') continue
    const source = m.source !== '' ? m.source : `${i.task.id}-${m.target.replace(/[^a-zA-Z0-9]/g, '') || 'anon'}`
    binds.push(`${source}:${m.target}${m.readOnly ? ':ro' : ''}`)
  }
  for (const f of i.files) binds.push(`${f.source}:${f.target}:ro`)
  const limits = spec.resources.limits
  const extraHosts: string[] = []
  for (const h of cs.hosts) {
    const parts = h.trim().split(/\s+/)
    // swarm's form is "IP host [alias...]"; the container form "host:IP" is accepted as well
    if (parts.length >= 2) for (const host of parts.slice(1)) extraHosts.push(`${host}:${parts[0] as string}`)
    else if (parts[0] !== undefined && parts[0].includes(':')) extraHosts.push(parts[0])
  }
  const portBindings: Record<string, Array<{ HostIp: string, HostPort: string }>> = {}
  const exposed: Record<string, object> = {}
  for (const p of i.service.spec.endpointSpec.ports) {
    const key = `${p.targetPort === undefined ? 'undefined' : p.targetPort}/${p.protocol}`
    exposed[key] = {}
    if (p.publishMode === 'host') (portBindings[key] ??= []).push({ HostIp: '', HostPort: p.publishedPort !== 0 ? String(p.publishedPort) : '' })
  }
  const endpoints: Record<string, unknown> = {}
  // as dockerd's service records: the service name and its aliases, and tasks.<each> for the task addresses
  for (const n of i.networks) {
    const names = [serviceName, ...n.aliases]
    endpoints[n.name] = { Aliases: [...new Set([...names, ...names.map((a) => `tasks.${a}`)])] }
  }
  const grace = cs.stopGracePeriodNs !== undefined ? Math.ceil(cs.stopGracePeriodNs / 1e9) : undefined
  const hc = cs.healthcheck
  return {
    Image: cs.image,
    ...(cs.command.length > 0 ? { Entrypoint: cs.command } : {}),
    ...(cs.args.length > 0 ? { Cmd: cs.args } : {}),
    Env: cs.env,
    User: cs.user,
    WorkingDir: cs.dir,
    Hostname: cs.hostname,
    Labels: labels,
    Tty: cs.tty,
    OpenStdin: cs.openStdin,
    ...(cs.stopSignal !== '' ? { StopSignal: cs.stopSignal } : {}),
    ...(grace !== undefined ? { StopTimeout: grace } : {}),
    ...(hc !== undefined ? { Healthcheck: { ...(hc.test !== undefined ? { Test: hc.test } : {}), ...(hc.interval !== undefined ? { Interval: hc.interval } : {}), ...(hc.timeout !== undefined ? { Timeout: hc.timeout } : {}), ...(hc.startPeriod !== undefined ? { StartPeriod: hc.startPeriod } : {}), ...(hc.startInterval !== undefined ? { StartInterval: hc.startInterval } : {}), ...(hc.retries !== undefined ? { Retries: hc.retries } : {}) } } : {}),
    ...(Object.keys(exposed).length > 0 ? { ExposedPorts: exposed } : {}),
    HostConfig: {
      Binds: binds,
      ...(mounts.length > 0 ? { Mounts: mounts } : {}),
      RestartPolicy: { Name: 'no' },
      NetworkMode: i.networks[0]?.name ?? 'default',
      PortBindings: portBindings,
      ...(limits.memoryBytes !== undefined ? { Memory: limits.memoryBytes } : {}),
      ...(limits.nanoCpus !== undefined ? { NanoCpus: limits.nanoCpus } : {}),
      ...(limits.pids !== undefined && limits.pids > 0 ? { PidsLimit: limits.pids } : {}),
      ReadonlyRootfs: cs.readOnly,
      ExtraHosts: extraHosts,
      Dns: cs.dnsConfig.nameservers,
      DnsSearch: cs.dnsConfig.search,
      DnsOptions: cs.dnsConfig.options,
      CapAdd: cs.capabilityAdd,
      CapDrop: cs.capabilityDrop,
      GroupAdd: cs.groups,
      ...(cs.init ? { Init: true } : {})
    },
    NetworkingConfig: { EndpointsConfig: endpoints }
  }
}
