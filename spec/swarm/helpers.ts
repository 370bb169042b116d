// Helpers for swarm tests: the docker CLI that must succeed, bounded polling, task listings.
import assert from 'node:assert/strict'
import { request } from '../helpers/engine.js'

export { dockerOk, type Docker } from '../helpers/tools.js'
export { until } from '../helpers/poll.js'

export interface WireTask { ID: string, NodeID: string, Slot?: number, DesiredState: string, Status: { State: string, Err?: string, ContainerStatus?: { ContainerID: string, ExitCode: number } }, ServiceID: string }

export async function tasksOf (socket: string, service: string): Promise<WireTask[]> {
  const r = await request(socket, 'GET', `/tasks?filters=${encodeURIComponent(JSON.stringify({ service: [service] }))}`)
  assert.equal(r.status, 200, r.text)
  return r.json() as WireTask[]
}

/** The running tasks of a service, one entry per slot: fails if a slot runs two. */
export async function runningBySlot (socket: string, service: string): Promise<Map<number, WireTask>> {
  const out = new Map<number, WireTask>()
  for (const t of await tasksOf(socket, service)) {
    if (t.Status.State !== 'running' || t.DesiredState !== 'running') continue
    assert.equal(out.has(t.Slot ?? 0), false, `slot ${String(t.Slot)} runs two tasks`)
    out.set(t.Slot ?? 0, t)
  }
  return out
}
