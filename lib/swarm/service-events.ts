// The attributes of a service `update` event as dockerd sets them (pure): the name, and what changed of the image
// (image.old/new), the replica count (replicas.old/new) and the update state (updatestate.old/new).
import type { ServiceRecord } from './model.js'

export interface ServiceFacts { image: string, replicas: number | undefined, state: string | undefined }

export function serviceFacts (svc: ServiceRecord): ServiceFacts {
  const mode = svc.spec.mode
  return { image: svc.spec.taskTemplate.containerSpec.image, replicas: mode.kind === 'replicated' ? mode.replicas : undefined, state: svc.updateStatus?.state }
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
  out.name = svc.spec.name
  return out
}
