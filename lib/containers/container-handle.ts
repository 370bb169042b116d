// A live container: its record, its directories, the connection to its shim, and the signals other parts wait on.
import type { SandboxRecord, SandboxView } from '../network/model.js'
import { EventEmitter } from 'node:events'
import { join } from 'node:path'
import type { ContainerRecord } from './container.js'
import type { ShimConnection } from '../runtime/shim-client.js'
import type { SupervisedProcess } from '../runtime/supervisor.js'
import { rootfsPaths, type RootfsPaths } from '../runtime/rootfs.js'
import { writeFileAtomic } from '../util/atomic.js'
import { countedWaiter } from './log-reader.js'
import { RwLock } from '../util/rw-lock.js'

const MAX_PENDING_STDIN = 1024 * 1024
const WAKE_SIGNALS = new Set<string | symbol>(['output', 'exit', 'start', 'removed'])

export class ContainerHandle extends EventEmitter {
  rec: ContainerRecord
  readonly dir: string
  readonly stateDir: string
  readonly rootfs: RootfsPaths
  conn: ShimConnection | null = null
  /** The supervised process of the current run (null when none runs, or its exit has been applied). */
  proc: SupervisedProcess | null = null
  /**
   * While a start waits for the runtime: ends that start (the runtime's processes and the container's cgroup), for a
   * kill, stop or forced removal of a container whose runtime is stuck (`runc init` blocked). Null otherwise.
   */
  abortStart: (() => Promise<void>) | null = null
  /** Increments on every exit; attach sessions compare it to know "the run I was waiting for is over". */
  exitSeq = 0
  /**
   * Increments when a run's process has ended and all its output is in the log, as the exit begins to be applied
   * (before exitSeq): an attach session's output can end then, as dockerd's ends when the process's streams close.
   */
  outputEndSeq = 0
  /** The attach sessions following its output (each settles once it has written its last output). */
  private readonly attachReaders = new Set<Promise<void>>()
  /** An exit is being applied (the connection is gone already; 'exit' comes once volumes and network are let go). */
  applyingExit = false
  startSeq = 0
  removed = false
  /** A docker restart is stopping and starting it: an AutoRemove container is not removed by that exit (as dockerd). */
  manualRestart = false
  /** Its networking as inspect and list show it (set by the engine; undefined without a network service). */
  networkView: (() => SandboxView | undefined) | undefined
  /** The network service's change counter (connect, disconnect): what the list's cached items are checked against. */
  networkSeq: (() => number) | undefined
  /**
   * Settles once the monitor of its last run is done with its root filesystem and namespace file (it unmounts them
   * just after telling the exit): a start, a removal's deletion and a mount of the stopped root wait for it.
   */
  released: Promise<void> = Promise.resolve()
  /** Its networking's record as it stands, which every save carries a copy of (ContainerRecord.sandbox). */
  networkRecord: (() => SandboxRecord | undefined) | undefined
  /**
   * dockerd's container lock as its archive routes take it: a copy in or out (`docker cp`, HEAD/GET/PUT archive) holds
   * it shared for its whole length (a GET until its tar stream ends), and a start, stop, restart or removal waits for
   * it exclusively, so that a copy sees one root filesystem from its first byte to its last (a stop and start
   * meanwhile would detach it and mount another over the same writable layer). A kill does not wait (nor behind a
   * stop's grace period): the copy goes on in the tree the exit detached. Export, commit and changes do not take it
   * (nor does dockerd's export): they keep the tree they read (ContainerService.holdRootfs).
   */
  readonly files = new RwLock()
  private saving: Promise<void> = Promise.resolve()
  private opChain: Promise<unknown> = Promise.resolve()
  private pendingStdin: Buffer[] = []
  private pendingBytes = 0
  private pendingClose = false
  /** How many 'output', 'exit', 'start' and 'removed' signals were emitted (see followWaiter). */
  private wakes = 0

  /** Creation time in ms, for sorting lists without reparsing the record's ns string. */
  readonly createdMs: number

  constructor (rec: ContainerRecord, containersDir: string, execRoot: string) {
    super()
    this.setMaxListeners(0)
    this.rec = rec
    this.createdMs = Number(BigInt(rec.created) / 1_000_000n)
    this.dir = join(containersDir, rec.id)
    this.stateDir = join(execRoot, rec.id.slice(0, 16))
    this.rootfs = rootfsPaths(this.dir)
  }

  get id (): string { return this.rec.id }
  get logPath (): string { return join(this.dir, 'container.log') }
  get recordPath (): string { return join(this.dir, 'container.json') }

  /**
   * Persists the record (or a state of it to come); saves are serialised so an older state never overwrites a newer one.
   * `first`: the create's record, where no file was (written without waiting for the disk: see writeFileAtomic's sync).
   */
  async save (rec: ContainerRecord = this.rec, first = false): Promise<void> {
    // (its networking's record as it stands now: a start's setup is written nowhere else)
    const sandbox = this.networkRecord?.() ?? rec.sandbox
    const snapshot = JSON.stringify(sandbox === undefined ? rec : { ...rec, sandbox })
    const next = this.saving.then(async () => {
      if (this.removed) return
      // rewritten at every state change and reconciled with the monitors at boot: atomic, no directory fsync
      await writeFileAtomic(this.recordPath, snapshot, { syncDir: false, ...(first ? { sync: false } : {}) })
    })
    this.saving = next.catch(() => {}) // the chain only orders the writes: this save's caller gets its error below
    await next
  }

  /** An attach session's output, followed until it settles (see attachedOutput). */
  followedBy (reading: Promise<void>): void {
    this.attachReaders.add(reading)
    void reading.finally(() => { this.attachReaders.delete(reading) })
  }

  /**
   * Waits (at most `ms`) for the attach sessions to have written the run's last output: an exit is announced after
   * that, as dockerd waits for its stream copiers, so that a client reading the output on one connection and the
   * wait's answer on another (dockerode's run) has the output first.
   */
  async attachedOutput (ms: number): Promise<void> {
    if (this.attachReaders.size === 0) return
    let t: NodeJS.Timeout | undefined
    await Promise.race([Promise.allSettled([...this.attachReaders]), new Promise((resolve) => { t = setTimeout(resolve, ms) })])
    clearTimeout(t)
  }

  /** Runs lifecycle operations one at a time (start, stop, remove, ...). */
  async serialize<T> (fn: () => Promise<T>): Promise<T> {
    const run = this.opChain.then(fn, fn)
    this.opChain = run.catch(() => {}) // the chain only orders the operations: the caller gets the error below
    return await run
  }

  /** Stdin from attach sessions: to the shim when connected, else buffered (bounded) until start. */
  writeStdin (data: Buffer): boolean {
    if (this.conn !== null && !this.conn.isClosed) return this.conn.writeStdin(data)
    this.pendingStdin.push(data)
    this.pendingBytes += data.length
    return this.pendingBytes < MAX_PENDING_STDIN
  }

  closeStdin (): void {
    if (this.conn !== null && !this.conn.isClosed) this.conn.closeStdin()
    else this.pendingClose = true
  }

  attachShim (conn: ShimConnection): void {
    this.conn = conn
    conn.on('output', () => { this.emit('output') })
    conn.on('drain', () => { this.emit('stdin-drain') })
    for (const b of this.pendingStdin) conn.writeStdin(b)
    this.pendingStdin = []
    this.pendingBytes = 0
    if (this.pendingClose) { conn.closeStdin(); this.pendingClose = false }
    this.emit('stdin-drain')
  }

  override emit (event: string | symbol, ...args: unknown[]): boolean {
    if (WAKE_SIGNALS.has(event)) this.wakes++
    return super.emit(event, ...args)
  }

  /** A log follower's waitMore: at the next signal, or at once when one came since it last returned. */
  followWaiter (signal?: AbortSignal): () => Promise<void> {
    return countedWaiter(() => this.wakes, async () => { await this.nextSignal(signal) })
  }

  /** Resolves at the next 'output', 'exit', 'start' or 'removed' signal. */
  async nextSignal (signal?: AbortSignal): Promise<void> {
    // an abort that came before the wait (a client that detached meanwhile) does not wait for a later signal
    if (signal?.aborted === true) return
    await new Promise<void>((resolve) => {
      const done = (): void => {
        this.off('output', done); this.off('exit', done); this.off('start', done); this.off('removed', done)
        signal?.removeEventListener('abort', done)
        resolve()
      }
      this.on('output', done); this.on('exit', done); this.on('start', done); this.on('removed', done)
      signal?.addEventListener('abort', done)
    })
  }
}
