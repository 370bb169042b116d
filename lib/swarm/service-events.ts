// The attributes of a service `update` event as dockerd sets them (pure): the name, and what changed of the image
// (image.old/new), the replica count (replicas.old/new) and the update state (updatestate.old/new).
import type { Obj, ServiceRecord } from './model.js'

export interface ServiceFacts { image: string, replicas: number | undefined, state: string | undefined }

function obj (v: unknown): Obj { return v !== null && typeof v === 'object' && !Array.isArray(v) ? v as Obj : {} }

export function serviceFacts (svc: ServiceRecord): ServiceFacts {
  const image = obj(obj(svc.Spec.TaskTemplate).ContainerSpec).Image
  const replicas = obj(obj(svc.Spec.Mode).Replicated).Replicas
  return { image: typeof image === 'string' ? image : '', replicas: typeof replicas === 'number' ? replicas : undefined, state: svc.UpdateStatus?.State }
}

export function serviceUpdateAttributes (before: ServiceFacts, svc: ServiceRecord): Record<string, string> {
  const after = serviceFacts(svc)
  const out: Record<string, string> = {}
  if (before.image !== after.image) { out['image.old'] = before.image; out['image.new'] = after.image }
  if (before.replicas !== undefined && after.replicas !== undefined && before.replicas !== after.replicas) {
    out['replicas.old'] = String(before.replicas)
    out['replicas.new'] = String(after.replicas)
  }
  if (after.state !== undefined && after.state !== before.state) {
    if (before.state !== undefined) out['updatestate.old'] = before.state
    out['updatestate.new'] = after.state
  }
  out.name = svc.Spec.Name as string
  return out
}
