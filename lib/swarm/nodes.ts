// The swarm's one node: list (with dockerd's filters), inspect, update (labels, availability; a manager stays one)
// and removal (refused, as for the last manager), and its attributes for placement constraints.
import os from 'node:os'
import { conflict, invalidArgument, notFound } from '../errors.js'
import type { Filters } from '../http/query.js'
import { labelsOf } from './labels.js'
import { activeSwarm, matchLabel, rpc, type SwarmContext } from './swarm-context.js'
import { toNode, type NodeFacts, type Wire } from './wire.js'

type Obj = Record<string, unknown>

/** What the node reports of itself: the engine's version, its CPUs and memory (placement reservations fit in them). */
export function nodeFacts (engineVersion: string): NodeFacts {
  return { engineVersion, nanoCpus: os.cpus().length * 1e9, memoryBytes: os.totalmem() }
}

export class Nodes {
  private readonly c: SwarmContext
  private readonly facts: NodeFacts

  constructor (c: SwarmContext, facts: NodeFacts) {
    this.c = c
    this.facts = facts
  }

  /** This node's attributes for placement constraints (node.id, node.hostname, node.role, node.labels.*, ...). */
  attributes (): Record<string, string> {
    const s = activeSwarm(this.c)
    const attrs: Record<string, string> = {
      'node.id': s.node.id,
      'node.hostname': os.hostname(),
      'node.role': 'manager',
      'node.platform.os': 'linux',
      'node.platform.arch': os.machine()
    }
    for (const [k, v] of Object.entries(s.node.spec.labels)) attrs[`node.labels.${k}`] = v
    return attrs
  }

  private check (ref: string): void {
    const s = activeSwarm(this.c)
    if (ref !== s.node.id && ref !== os.hostname() && ref !== 'self' && !(ref.length > 0 && s.node.id.startsWith(ref))) throw notFound(`node ${ref} not found`)
  }

  list (f: Filters): Wire[] {
    const s = activeSwarm(this.c)
    const n = toNode(s, this.facts)
    for (const [k, values] of f) {
      if (values.length === 0) continue
      const ok = k === 'id' ? values.some((v) => s.node.id.startsWith(v))
        : k === 'name' ? values.some((v) => os.hostname().includes(v))
          : k === 'role' ? values.includes('manager')
            : k === 'membership' ? values.includes('accepted')
              : k === 'node.label' || k === 'label' ? matchLabel(s.node.spec.labels, values) : true
      if (!ok) return []
    }
    return [n]
  }

  inspect (ref: string): Wire { this.check(ref); return toNode(activeSwarm(this.c), this.facts) }

  async update (ref: string, version: number | undefined, body: Obj): Promise<void> {
    // the body is decoded first, as dockerd's JSON decoding comes before the lookup
    const labels = labelsOf(body.Labels, 'NodeSpec.Labels')
    this.check(ref)
    const s = activeSwarm(this.c)
    if (version !== s.node.version) throw conflict(rpc('Unknown', 'update out of sequence'))
    const availability = body.Availability ?? 'active'
    if (!['active', 'pause', 'drain'].includes(availability as string)) throw invalidArgument(rpc('InvalidArgument', `invalid availability ${String(availability)}`))
    if (body.Role !== undefined && body.Role !== 'manager') throw invalidArgument(rpc('FailedPrecondition', 'attempting to demote the last manager of the swarm'))
    const before = s.node.spec.availability
    s.node.spec = { ...(typeof body.Name === 'string' && body.Name !== '' ? { name: body.Name } : {}), labels, role: 'manager', availability: availability as string }
    this.c.store.touch(s.node)
    await this.c.store.commit()
    // dockerd's attributes: the name, and availability.old/new when it changed
    const changed: Record<string, string> = before !== availability ? { 'availability.old': before, 'availability.new': availability as string } : {}
    this.c.events.emit('node', 'update', s.node.id, { ...changed, name: os.hostname() })
    this.c.orchestrator.kick()
  }

  remove (ref: string): never {
    this.check(ref)
    throw invalidArgument(rpc('FailedPrecondition', `node ${activeSwarm(this.c).node.id} is a cluster manager and is a member of the raft cluster. It must be demoted to worker before removal`))
  }
}
