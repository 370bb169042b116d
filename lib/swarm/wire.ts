// Swarm objects as the Engine API returns them (pure): internal fields dropped, secrets without their data.
import os from 'node:os'
import type { Meta, NodeRecord, Obj, SecretRecord, ServiceRecord, SwarmRecord, TaskRecord } from './model.js'

/** The fields every swarm object opens with: its ID, version and times. */
function meta (m: Meta): Meta {
  return { ID: m.ID, Version: m.Version, CreatedAt: m.CreatedAt, UpdatedAt: m.UpdatedAt }
}

export function toSwarm (s: SwarmRecord): Obj {
  return {
    ...meta(s),
    Spec: s.Spec,
    TLSInfo: { TrustRoot: '', CertIssuerSubject: '', CertIssuerPublicKey: '' },
    RootRotationInProgress: false,
    DefaultAddrPool: s.DefaultAddrPool ?? ['10.0.0.0/8'],
    SubnetSize: s.SubnetSize ?? 24,
    DataPathPort: s.DataPathPort ?? 4789,
    JoinTokens: s.JoinTokens
  }
}

export interface NodeFacts { engineVersion: string, nanoCpus: number, memoryBytes: number }

export function toNode (s: SwarmRecord, f: NodeFacts): Obj {
  const n: NodeRecord = s.node
  return {
    ...meta(n),
    Spec: n.Spec,
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

export function toInfoSwarm (s: SwarmRecord | null): Obj {
  if (s === null) return { NodeID: '', NodeAddr: '', LocalNodeState: 'inactive', ControlAvailable: false, Error: '', RemoteManagers: null }
  return {
    NodeID: s.node.ID,
    NodeAddr: s.advertiseAddr,
    LocalNodeState: 'active',
    ControlAvailable: true,
    Error: '',
    RemoteManagers: [{ NodeID: s.node.ID, Addr: `${s.advertiseAddr}:2377` }],
    Nodes: 1,
    Managers: 1,
    Cluster: (({ JoinTokens: _j, ...rest }) => rest)(toSwarm(s))
  }
}

export function toService (s: ServiceRecord, status?: Obj): Obj {
  return {
    ...meta(s),
    Spec: s.Spec,
    ...(s.PreviousSpec !== undefined ? { PreviousSpec: s.PreviousSpec } : {}),
    Endpoint: s.Endpoint,
    ...(s.UpdateStatus !== undefined ? { UpdateStatus: s.UpdateStatus } : {}),
    ...(status !== undefined ? { ServiceStatus: status } : {}),
    ...(s.JobStatus !== undefined ? { JobStatus: s.JobStatus } : {})
  }
}

export function toTask (t: TaskRecord): Obj {
  return {
    ...meta(t),
    Labels: t.Labels,
    Spec: t.Spec,
    ServiceID: t.ServiceID,
    ...(t.Slot !== undefined ? { Slot: t.Slot } : {}),
    NodeID: t.NodeID,
    Status: t.Status,
    DesiredState: t.DesiredState,
    ...(t.JobIteration !== undefined ? { JobIteration: t.JobIteration } : {})
  }
}

/** A secret or config; `data` (configs only: a secret's data never leaves the daemon) is sent in base64. */
export function toSecret (s: SecretRecord, data?: Buffer): Obj {
  const { Data: _legacy, ...spec } = s.Spec
  return { ...meta(s), Spec: data !== undefined ? { ...spec, Data: data.toString('base64') } : spec }
}
