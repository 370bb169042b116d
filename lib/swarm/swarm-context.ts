// What every swarm resource (cluster, nodes, services, tasks, secrets, configs) works over: the store, the keys, the
// orchestrator, the engine's containers and networks, the event sink, and the guard every request passes first.
import { unavailable } from '../errors.js'
import type { SwarmRecord } from './model.js'
import type { Orchestrator } from './orchestrator.js'
import type { SwarmStore } from './store.js'
import type { SwarmKeys } from './swarm-keys.js'
import type { SwarmEvents, TaskContainers, TaskNetworks } from './task-containers.js'

export const NOT_MANAGER = 'This node is not a swarm manager. Use "docker swarm init" or "docker swarm join" to connect this node to swarm and try again.'
export const SWARM_LOCKED = 'Swarm is encrypted and needs to be unlocked before it can be used. Please use "docker swarm unlock" to unlock it.'

/** swarmkit's gRPC error text, as dockerd passes it on. */
export function rpc (code: string, msg: string): string { return `rpc error: code = ${code} desc = ${msg}` }

export interface SwarmContext {
  readonly store: SwarmStore
  readonly keys: SwarmKeys
  readonly orchestrator: Orchestrator
  readonly containers: TaskContainers
  readonly networks: TaskNetworks
  readonly events: SwarmEvents
}

/** The swarm record of an unlocked swarm; dockerd's 503 outside a swarm or while it is locked. */
export function activeSwarm (c: SwarmContext): SwarmRecord {
  const s = c.store.state.swarm
  if (s === null) throw unavailable(NOT_MANAGER)
  if (c.keys.locked) throw unavailable(SWARM_LOCKED)
  return s
}

/** A label filter (`key` or `key=value`, all must match). */
export function matchLabel (labels: Record<string, string>, values: string[]): boolean {
  return values.every((v) => { const i = v.indexOf('='); return i === -1 ? labels[v] !== undefined : labels[v.slice(0, i)] === v.slice(i + 1) })
}
