// What the swarm routes need (lib/swarm's cluster, nodes, services, tasks, secrets and configs implement them):
// method-only, one interface per table.
import type { Filters } from '../../http/query.js'
import type { TaskLogOptions } from '../../swarm/task-containers.js'

/** The swarm's objects as lib/swarm spells them (its wire mapping: they move here with it). */
export type Wire = Record<string, unknown>
export type LogWriter = (stream: 1 | 2, data: Buffer) => void
export type LogOptions = TaskLogOptions & { details: boolean }

/** What the /swarm routes call. */
export interface SwarmClusterBackend {
  init: (body: Wire) => Promise<string>
  join: () => never
  leave: (force: boolean) => Promise<void>
  inspect: () => Wire
  update: (version: number | undefined, q: { rotateWorker: boolean, rotateManager: boolean, rotateUnlockKey: boolean }, body: Wire) => Promise<void>
  unlockKey: () => { UnlockKey: string }
  unlock: (key: string) => Promise<void>
}

/** What the /nodes routes call. */
export interface NodeBackend {
  list: (f: Filters) => Wire[]
  inspect: (ref: string) => Wire
  update: (ref: string, version: number | undefined, body: Wire) => Promise<void>
  remove: (ref: string) => never
}

/** The logs of a service or a task: whether they are raw (TTY), then the lines. Both throw for an unknown ref. */
export interface TaskLogBackend {
  logsTty: (ref: string) => boolean
  logs: (ref: string, o: LogOptions, write: LogWriter) => Promise<void>
}

/** What the /services routes call. */
export interface ServiceBackend extends TaskLogBackend {
  list: (f: Filters, status: boolean) => Wire[]
  create: (body: Wire) => Promise<{ ID: string, Warnings?: string[] }>
  inspect: (ref: string, insertDefaults: boolean) => Wire
  update: (ref: string, version: number | undefined, body: Wire, rollback: boolean) => Promise<{ Warnings: string[] | null }>
  remove: (ref: string) => Promise<void>
}

/** What the /tasks routes call. */
export interface TaskBackend extends TaskLogBackend {
  list: (f: Filters) => Wire[]
  inspect: (ref: string) => Wire
}

/** What the /secrets and /configs routes call (one backend each). */
export interface SecretBackend {
  list: (f: Filters) => Wire[]
  create: (body: Wire) => Promise<string>
  inspect: (ref: string) => Wire
  update: (ref: string, version: number | undefined, body: Wire) => Promise<void>
  remove: (ref: string) => Promise<void>
}
