// Where a data root keeps the swarm's state, in a file of its own that imports nothing of lib/swarm: the engine asks
// at start whether there is a state before it loads the swarm's code (an engine that never joins a swarm does not
// carry it; lib/engine/engine.ts).
import { access } from 'node:fs/promises'
import { join } from 'node:path'

/** The swarm's directory (state and keys) under a data root. */
export function swarmDir (dataRoot: string): string {
  return join(dataRoot, 'swarm')
}

/** The swarm's state file under a data root. */
export function swarmStatePath (dataRoot: string): string {
  return join(swarmDir(dataRoot), 'state.json')
}

/** Whether the data root has a swarm state: once written by `docker swarm init`, it stays (a leave writes it empty). */
export async function hasSwarmState (dataRoot: string): Promise<boolean> {
  return await access(swarmStatePath(dataRoot)).then(() => true, () => false)
}
