// The swarm's own spec as init and update take it (pure): the given fields over dockerd's defaults (Labels replaced
// whole, other objects merged field by field), a field of the wrong JSON type refused in Go's words, decoded.
import { invalidArgument } from '../errors.js'
import { labelsOf } from './labels.js'
import { decodeClusterSpec } from './spec-wire.js'
import type { ClusterSpec } from './spec.js'

type Obj = Record<string, unknown>

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

function merged (base: Obj, given: Obj): Obj {
  const out: Obj = { ...base }
  for (const [k, v] of Object.entries(given)) {
    if (v === null || v === undefined) continue
    out[k] = typeof v === 'object' && !Array.isArray(v) && typeof base[k] === 'object' && base[k] !== null && k !== 'Labels' ? merged(base[k] as Obj, v as Obj) : v
  }
  return out
}

/** A swarm spec from init's Spec or update's body (`update`: each field's JSON type checked first). */
export function clusterSpecOf (given: unknown, update = false): ClusterSpec {
  const body: Obj = given !== null && typeof given === 'object' && !Array.isArray(given) ? { ...given as Obj } : {}
  // init's Spec is a field of its request (Spec.Spec.Labels in Go's words), update's body the spec itself
  if (body.Labels !== undefined && body.Labels !== null) body.Labels = labelsOf(body.Labels, update ? 'Spec.Labels' : 'Spec.Spec.Labels')
  if (update) {
    for (const [k, v] of Object.entries(body)) {
      const want = typeof SWARM_SPEC_DEFAULTS[k]
      if (v !== null && want !== 'undefined' && (typeof v !== want || Array.isArray(v))) throw invalidArgument(`json: cannot unmarshal ${Array.isArray(v) ? 'array' : typeof v} into Go struct field Spec.${k} of type ${want === 'object' ? 'struct' : want}`)
    }
  }
  return decodeClusterSpec(merged(SWARM_SPEC_DEFAULTS, body))
}
