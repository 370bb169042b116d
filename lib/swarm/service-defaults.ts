// `GET /services/{id}?insertDefaults=true` (pure): the service spec with every unset field swarmkit defaults filled
// in, as swarmkit's InterpolateService fills them and dockerd converts them back to the Engine API's shape. The docker
// CLI reads services this way before `docker service update`, so the flags it changes start from the defaults.
import type { WireDoc } from './spec.js'

type Obj = Record<string, unknown>

const SECOND = 1_000_000_000

function obj (v: unknown): Obj | undefined {
  return v !== null && typeof v === 'object' && !Array.isArray(v) ? v as Obj : undefined
}

/** An update or rollback config as dockerd returns it (enum fields always present; Monitor defaulted to 5 s). */
function updateConfig (given: Obj | undefined): Obj {
  if (given === undefined) return { Parallelism: 1, FailureAction: 'pause', Monitor: 5 * SECOND, MaxFailureRatio: 0, Order: 'stop-first' }
  return {
    Parallelism: given.Parallelism ?? 0,
    ...(given.Delay !== undefined && given.Delay !== 0 ? { Delay: given.Delay } : {}),
    FailureAction: given.FailureAction ?? 'pause',
    Monitor: given.Monitor !== undefined && given.Monitor !== 0 ? given.Monitor : 5 * SECOND,
    MaxFailureRatio: given.MaxFailureRatio ?? 0,
    Order: given.Order ?? 'stop-first'
  }
}

export function withServiceDefaults (spec: WireDoc): Obj {
  const out: Obj = { ...spec }
  const tt: Obj = { ...obj(spec.TaskTemplate) }
  const cs = obj(tt.ContainerSpec)
  if (cs !== undefined) {
    tt.ContainerSpec = { ...cs, StopGracePeriod: cs.StopGracePeriod ?? 10 * SECOND, DNSConfig: cs.DNSConfig ?? {} }
  }
  tt.Resources = obj(tt.Resources) ?? {}
  const rp = obj(tt.RestartPolicy)
  tt.RestartPolicy = { ...rp, Condition: rp?.Condition ?? 'any', Delay: rp?.Delay ?? 5 * SECOND, MaxAttempts: rp?.MaxAttempts ?? 0 }
  tt.Placement = obj(tt.Placement) ?? {}
  out.TaskTemplate = tt
  out.UpdateConfig = updateConfig(obj(spec.UpdateConfig))
  out.RollbackConfig = updateConfig(obj(spec.RollbackConfig))
  return out
}
