// Swarm objects as the Engine API returns them (pure), from the typed records: internal fields dropped, secrets without
// their data, every spec the document it was given as (spec.ts). state-file.ts writes the records in these shapes too.
import os from 'node:os'
import type { ContainerStatus, Endpoint, Meta, NodeRecord, NodeSpec, PublishedPort, SecretRecord, ServiceRecord, SwarmRecord, TaskRecord, TaskStatus, UpdateStatus } from './model.js'
import { decodeEndpointSpec } from './spec-wire.js'
import type { EndpointSpec } from './spec.js'

export type Wire = Record<string, unknown>

/** The fields every swarm object opens with: its ID, version and times. */
export function metaWire (m: Meta): { ID: string, Version: { Index: number }, CreatedAt: string, UpdatedAt: string } {
  return { ID: m.id, Version: { Index: m.version }, CreatedAt: m.createdAt, UpdatedAt: m.updatedAt }
}

export function toSwarm (s: SwarmRecord): Wire {
  return {
    ...metaWire(s),
    Spec: s.spec.wire,
    TLSInfo: { TrustRoot: '', CertIssuerSubject: '', CertIssuerPublicKey: '' },
    RootRotationInProgress: false,
    DefaultAddrPool: s.defaultAddrPool ?? ['10.0.0.0/8'],
    SubnetSize: s.subnetSize ?? 24,
    DataPathPort: s.dataPathPort ?? 4789,
    JoinTokens: { Worker: s.joinTokens.worker, Manager: s.joinTokens.manager }
  }
}

export interface NodeFacts { engineVersion: string, nanoCpus: number, memoryBytes: number }

export function nodeSpecWire (n: NodeSpec): Wire {
  return { ...(n.name !== undefined ? { Name: n.name } : {}), Labels: n.labels, Role: n.role, Availability: n.availability }
}

export function toNode (s: SwarmRecord, f: NodeFacts): Wire {
  const n: NodeRecord = s.node
  return {
    ...metaWire(n),
    Spec: nodeSpecWire(n.spec),
    Description: {
      Hostname: os.hostname(),
      Platform: { Architecture: os.machine(), OS: 'linux' },
      Resources: { NanoCPUs: f.nanoCpus, MemoryBytes: f.memoryBytes },
      Engine: { EngineVersion: f.engineVersion, Plugins: [{ Type: 'Log', Name: 'json-file' }, { Type: 'Network', Name: 'bridge' }, { Type: 'Network', Name: 'host' }, { Type: 'Network', Name: 'null' }, { Type: 'Network', Name: 'overlay' }, { Type: 'Volume', Name: 'local' }] },
      TLSInfo: { TrustRoot: '', CertIssuerSubject: '', CertIssuerPublicKey: '' }
    },
    Status: { State: 'ready', Addr: s.advertiseAddr },
    ManagerStatus: { Leader: true, Reachability: 'reachable', Addr: `${s.advertiseAddr}:2377` }
  }
}

export function toInfoSwarm (s: SwarmRecord | null): Wire {
  if (s === null) return { NodeID: '', NodeAddr: '', LocalNodeState: 'inactive', ControlAvailable: false, Error: '', RemoteManagers: null }
  return {
    NodeID: s.node.id,
    NodeAddr: s.advertiseAddr,
    LocalNodeState: 'active',
    ControlAvailable: true,
    Error: '',
    RemoteManagers: [{ NodeID: s.node.id, Addr: `${s.advertiseAddr}:2377` }],
    Nodes: 1,
    Managers: 1,
    Cluster: (({ JoinTokens: _j, ...rest }) => rest)(toSwarm(s))
  }
}

/** The endpoint spec a service is served with: its own with Mode dnsrr (no virtual IPs). */
export function servedEndpointSpec (spec: EndpointSpec): EndpointSpec {
  return decodeEndpointSpec({ ...spec.wire, Mode: 'dnsrr' })
}

function portWire (p: PublishedPort): Wire {
  return { Protocol: p.protocol, ...(p.targetPort !== undefined ? { TargetPort: p.targetPort } : {}), PublishedPort: p.publishedPort, PublishMode: p.publishMode }
}

export function endpointWire (e: Endpoint): Wire {
  return { Spec: e.spec.wire, ...(e.ports !== undefined ? { Ports: e.ports.map(portWire) } : {}) }
}

export function updateStatusWire (u: UpdateStatus): Wire {
  return {
    State: u.state,
    ...(u.startedAt !== undefined ? { StartedAt: u.startedAt } : {}),
    ...(u.completedAt !== undefined ? { CompletedAt: u.completedAt } : {}),
    Message: u.message
  }
}

export function toService (s: ServiceRecord, status?: Wire): Wire {
  return {
    ...metaWire(s),
    Spec: s.spec.wire,
    ...(s.previousSpec !== undefined ? { PreviousSpec: s.previousSpec.wire } : {}),
    Endpoint: endpointWire(s.endpoint),
    ...(s.updateStatus !== undefined ? { UpdateStatus: updateStatusWire(s.updateStatus) } : {}),
    ...(status !== undefined ? { ServiceStatus: status } : {}),
    ...(s.jobStatus !== undefined ? { JobStatus: { JobIteration: { Index: s.jobStatus.jobIteration }, LastExecution: s.jobStatus.lastExecution } } : {})
  }
}

function containerStatusWire (c: ContainerStatus): Wire {
  return { ContainerID: c.containerId, PID: c.pid, ExitCode: c.exitCode }
}

/** A task's Status, its fields in the order Berth always wrote them (Err last). */
export function taskStatusWire (s: TaskStatus): Wire {
  return {
    Timestamp: s.timestamp,
    State: s.state,
    Message: s.message,
    PortStatus: s.portStatus,
    ...(s.containerStatus !== undefined ? { ContainerStatus: containerStatusWire(s.containerStatus) } : {}),
    ...(s.err !== undefined ? { Err: s.err } : {})
  }
}

export function toTask (t: TaskRecord): Wire {
  return {
    ...metaWire(t),
    Labels: t.labels,
    Spec: t.spec.wire,
    ServiceID: t.serviceId,
    ...(t.slot !== undefined ? { Slot: t.slot } : {}),
    NodeID: t.nodeId,
    Status: taskStatusWire(t.status),
    DesiredState: t.desiredState,
    ...(t.jobIteration !== undefined ? { JobIteration: { Index: t.jobIteration } } : {})
  }
}

/** A secret or config; `data` (configs only: a secret's data never leaves the daemon) is sent in base64. */
export function toSecret (s: SecretRecord, data?: Buffer): Wire {
  const spec = { Name: s.spec.name, Labels: s.spec.labels, ...(s.spec.templating !== undefined ? { Templating: s.spec.templating } : {}) }
  return { ...metaWire(s), Spec: data !== undefined ? { ...spec, Data: data.toString('base64') } : spec }
}
