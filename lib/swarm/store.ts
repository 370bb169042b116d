// The swarm's state on disk: one JSON document written atomically (temp + fsync + rename), in the shape state-file.ts
// draws. Writes are coalesced: commit() resolves once a write that includes every change made before the call is on disk.
// Once closed (the engine stops) nothing is written: a commit is refused with the engine's 503.
import { mkdir, readFile } from 'node:fs/promises'
import { unavailable } from '../errors.js'
import { writeFileAtomic } from '../util/atomic.js'
import { emptyState, nowIso, type Meta, type SwarmState } from './model.js'
import { decodeState, encodeState } from './state-file.js'
import { logger } from '../log.js'
import { swarmDir, swarmStatePath } from './state-path.js'

const log = logger('swarm:store')

export class SwarmStore {
  private decoded: SwarmState = emptyState()
  /**
   * The state file's document as read, until the state is first asked for: a restart's /_ping needs only whether
   * this node is in a swarm (active()), and decoding every service and task was ~2 ms of its CPU before /_ping.
   */
  private doc: unknown = undefined
  private readonly path: string
  readonly dir: string
  private dirty = 0
  private written = 0
  private writing: Promise<void> | null = null
  private loading: Promise<void> | null = null
  private closed = false

  constructor (dataRoot: string) {
    this.dir = swarmDir(dataRoot)
    this.path = swarmStatePath(dataRoot)
  }

  /** Reads the state file, once: a later call shares the first read (the engine reads it before the swarm starts). */
  async load (): Promise<void> {
    this.loading ??= this.read()
    await this.loading
  }

  private async read (): Promise<void> {
    await mkdir(this.dir, { recursive: true, mode: 0o700 })
    const text = await readFile(this.path, 'utf8').catch((err: NodeJS.ErrnoException) => { if (err.code === 'ENOENT') return null; throw err })
    if (text === null) return
    this.doc = JSON.parse(text)
  }

  /** The state, decoded from the file read at its first use (a document that does not decode throws, at every use). */
  get state (): SwarmState {
    if (this.doc !== undefined) {
      this.decoded = decodeState(this.doc)
      this.doc = undefined
      log('loaded: %d services, %d tasks', Object.keys(this.decoded.services).length, Object.keys(this.decoded.tasks).length)
    }
    return this.decoded
  }

  set state (s: SwarmState) {
    this.doc = undefined
    this.decoded = s
  }

  /** Whether this node is in a swarm (/_ping's Swarm header), without decoding a state not used yet. */
  active (): boolean {
    if (this.doc === undefined) return this.decoded.swarm !== null
    const swarm = typeof this.doc === 'object' && this.doc !== null ? (this.doc as { swarm?: unknown }).swarm : undefined
    return swarm !== null && swarm !== undefined
  }

  /** Marks an object changed: a new Version.Index and UpdatedAt. */
  touch (m: Meta): void {
    m.version = ++this.state.index
    m.updatedAt = nowIso()
    this.dirty++
  }

  /** Marks the state changed without a versioned object (a record deleted). */
  markDirty (): void { this.dirty++ }

  newMeta (id: string): Meta {
    const at = nowIso()
    return { id, version: ++this.state.index, createdAt: at, updatedAt: at }
  }

  /** Resolves once every change made so far is on disk. */
  async commit (): Promise<void> {
    if (this.closed) throw unavailable('the engine is shutting down')
    this.dirty++
    const want = this.dirty
    while (this.written < want) {
      if (this.writing !== null) { await this.writing; continue }
      if (this.closed) throw unavailable('the engine is shutting down')
      const gen = this.dirty
      const text = JSON.stringify(encodeState(this.state))
      this.writing = writeFileAtomic(this.path, text).then(() => { this.written = gen }).finally(() => { this.writing = null })
      await this.writing
    }
  }

  /** Writes nothing more: a write under way ends first; later commits are refused. */
  async close (): Promise<void> {
    this.closed = true
    await this.writing?.catch(() => {})
  }
}
