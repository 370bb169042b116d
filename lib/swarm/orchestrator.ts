// The reconciler: keeps every service at its spec. One pass at a time (kick() coalesces); each pass decides on the
// records (new tasks, shutdowns, history pruning), commits them to disk, and only then touches containers (the task
// runner starts and stops them, rolling-update.ts replaces outdated tasks). A task's record is on disk before its
// container exists, and the container carries the task's ID, so after a crash the next pass adopts what runs and never
// starts a second task for a slot. close() ends it all: no pass, timer, task start or stop, removal or state write
// follows the resolution of its promise.
import { EventEmitter } from 'node:events'
import { describeError } from '../errors.js'
import { levelLogger, logger } from '../log.js'
import { swarmId } from './ids.js'
import { isTerminal, nowIso, slotKey, type ServiceRecord, type SwarmRecord, type TaskRecord, type TaskState, canMove } from './model.js'
import { RollingUpdates } from './rolling-update.js'
import type { ServiceFacts } from './service-events.js'
import { constraintsMet, isJob, restartPolicyOf, sameTaskSpec } from './spec.js'
import type { SwarmStore } from './store.js'
import type { TaskFile } from './task-container-spec.js'
import type { TaskContainers, TaskNetworks } from './task-containers.js'
import { TaskRunner } from './task-runner.js'

const log = logger('swarm:orchestrator')
const ops = levelLogger('swarm:orchestrator')

export interface OrchestratorOptions {
  store: SwarmStore
  containers: TaskContainers
  networks: TaskNetworks
  /** Writes a task's secret and config files (on a tmpfs) and returns them; removeFiles drops them. */
  taskFiles: (t: TaskRecord) => Promise<TaskFile[]>
  removeFiles: (taskId: string) => Promise<void>
  /** Removes the files of every task `known` does not name (at a recovery). */
  removeOtherFiles: (known: (taskId: string) => boolean) => Promise<void>
  /** This node's attributes for placement constraints (node.id, node.hostname, node.role, node.labels.*, ...). */
  nodeAttributes: () => Record<string, string>
  nodeResources: { nanoCpus: number, memoryBytes: number }
  /** Called after each pass (published ports follow the running tasks). */
  afterPass?: () => void
  /** A rolling update changed a service (its update state, or its spec on an automatic rollback): the event. */
  serviceChanged?: (svc: ServiceRecord, before: ServiceFacts) => void
}

export class Orchestrator {
  private readonly o: OrchestratorOptions
  private running = false
  private again = false
  private closed = false
  private idle: Promise<void> = Promise.resolve()
  private timer: NodeJS.Timeout | undefined
  /** Removals of forgotten tasks' containers and files, and a recovery's removal of files (close() waits for them). */
  private readonly cleanups = new Set<Promise<void>>()
  private readonly runner: TaskRunner
  private readonly updates: RollingUpdates
  /** Emits 'task' whenever a task record changes, and at each pass (rolling updates wait on it). */
  readonly changes = new EventEmitter()

  constructor (o: OrchestratorOptions) {
    this.o = o
    this.changes.setMaxListeners(0)
    const common = { store: o.store, kick: () => { this.kick() }, closed: () => this.closed }
    this.runner = new TaskRunner({
      ...common,
      containers: o.containers,
      networks: o.networks,
      taskFiles: o.taskFiles,
      nodeAttributes: o.nodeAttributes,
      nodeResources: o.nodeResources,
      setState: (t, state, message, err) => { this.setState(t, state, message, err) }
    })
    this.updates = new RollingUpdates({
      ...common,
      changes: this.changes,
      tasksOf: (id) => this.tasksOf(id),
      newTask: (svc, key, x) => this.newTask(svc, key, x),
      shutdown: (t) => { this.shutdown(t) },
      ...(o.serviceChanged !== undefined ? { serviceChanged: o.serviceChanged } : {})
    })
  }

  private get st (): SwarmStore['state'] { return this.o.store.state }
  private get swarm (): SwarmRecord { return this.st.swarm as SwarmRecord }

  tasksOf (serviceId: string): TaskRecord[] {
    return Object.values(this.st.tasks).filter((t) => t.serviceId === serviceId).sort((a, b) => a.createdMs - b.createdMs)
  }

  /** Asks for a pass; passes never overlap, and a kick during one makes another. */
  kick (): void {
    if (this.closed || this.st.swarm === null) return
    if (this.running) { this.again = true; return }
    this.running = true
    this.idle = this.loop()
  }

  /** Resolves when no pass is running (tests and shutdown). */
  async settle (): Promise<void> { await this.idle }

  /** Resolves once the task starts under way have ended (a swarm leave then removes what they made). */
  async startsSettled (): Promise<void> { await this.runner.startsSettled() }

  private async loop (): Promise<void> {
    try {
      do {
        this.again = false
        await this.pass()
      } while (this.again && !this.closed)
    } catch (err) {
      ops.error('a reconciliation pass failed (the next change runs one again): %s', describeError(err))
    } finally {
      this.running = false
    }
  }

  private setState (t: TaskRecord, state: TaskState, message: string, err?: string): void {
    if (t.status.state !== state && !canMove(t.status.state, state)) return
    t.status = { ...t.status, state, message, timestamp: nowIso() }
    if (err !== undefined) t.status.err = err
    else delete t.status.err
    if (state === 'running' && t.runningMs === undefined) t.runningMs = Date.now()
    if (isTerminal(state) && t.endedMs === undefined) t.endedMs = Date.now()
    this.o.store.touch(t)
    this.changes.emit('task', t)
  }

  // ---- the pass -------------------------------------------------------------------------------------------------

  private async pass (): Promise<void> {
    if (this.st.swarm === null) return
    // a service changed (or went) since the last pass: the rolling updates waiting on tasks look again
    this.changes.emit('task')
    for (const svc of Object.values(this.st.services)) this.reconcileService(svc)
    this.prune()
    this.runner.removeStrays()
    await this.o.store.commit()
    log('pass: decisions committed')
    if (this.closed) return
    let wake = Infinity
    const now = Date.now()
    for (const t of Object.values(this.st.tasks)) {
      if (isTerminal(t.status.state)) continue
      if (t.desiredState === 'running' || t.desiredState === 'complete') {
        if (this.runner.busy(t.id)) continue
        if (t.notBefore !== undefined && t.notBefore > now) { wake = Math.min(wake, t.notBefore); continue }
        this.runner.launch(t)
      } else if (!this.runner.isStarting(t.id)) this.runner.stop(t)
    }
    if (this.timer !== undefined) clearTimeout(this.timer)
    this.timer = undefined
    if (wake !== Infinity) {
      this.timer = setTimeout(() => { this.timer = undefined; this.kick() }, Math.max(0, wake - Date.now()))
      this.timer.unref()
    }
    await this.o.store.commit()
    this.o.afterPass?.()
  }

  /** The keys (slots or the node) a service wants tasks in now. */
  private wantedKeys (svc: ServiceRecord): string[] {
    const mode = svc.spec.mode
    const nodeId = this.swarm.node.id
    if (mode.kind === 'replicated') return Array.from({ length: mode.replicas }, (_, i) => String(i + 1))
    if (mode.kind === 'replicated-job') return Array.from({ length: mode.totalCompletions }, (_, i) => String(i + 1))
    // global: one task on this node while it is not drained and satisfies the constraints
    const constraints = svc.spec.taskTemplate.placement.constraints
    if (this.swarm.node.spec.availability === 'drain' || !constraintsMet(constraints, this.o.nodeAttributes())) return []
    return [nodeId]
  }

  private reconcileService (svc: ServiceRecord): void {
    const mode = svc.spec.mode
    const job = isJob(mode)
    const iteration = svc.jobStatus?.jobIteration
    const all = this.tasksOf(svc.id)
    const tasks = job ? all.filter((t) => t.jobIteration === iteration) : all
    // tasks of an earlier job run go
    if (job) for (const t of all) if (t.jobIteration !== iteration && t.desiredState !== 'shutdown') this.shutdown(t)
    const wanted = new Set(this.wantedKeys(svc))
    const groups = new Map<string, TaskRecord[]>()
    for (const t of tasks) {
      const k = slotKey(t)
      const g = groups.get(k)
      if (g === undefined) groups.set(k, [t]); else g.push(t)
    }
    for (const [k, ts] of groups) if (!wanted.has(k)) for (const t of ts) if (t.desiredState !== 'shutdown') this.shutdown(t)
    const drain = this.swarm.node.spec.availability === 'drain'
    const updating = this.updates.running(svc.id)
    const target = svc.spec.taskTemplate
    let alive = 0
    for (const ts of groups.values()) alive += ts.filter((t) => t.desiredState !== 'shutdown' && !isTerminal(t.status.state)).length
    const maxConcurrent = mode.kind === 'replicated-job' ? mode.maxConcurrent : Infinity
    let outdated = false
    for (const key of [...wanted].sort((a, b) => Number(a) - Number(b))) {
      const ts = groups.get(key) ?? []
      for (const t of ts) {
        // a task that ended while it was meant to run (its container exited, was stopped, killed or removed)
        if ((t.desiredState === 'running' || t.desiredState === 'complete') && isTerminal(t.status.state)) {
          if (job && t.status.state === 'complete') continue
          t.selfEnded = true
          t.desiredState = 'shutdown'
          this.o.store.touch(t)
        }
      }
      const live = ts.filter((t) => t.desiredState !== 'shutdown' && !isTerminal(t.status.state))
      if (drain) {
        for (const t of live) if (t.status.state !== 'new' && t.status.state !== 'pending') this.shutdown(t)
      }
      if (live.length > 1 && !updating) for (const t of live.slice(0, -1)) this.shutdown(t)
      if (live.length > 0) {
        const newest = live[live.length - 1] as TaskRecord
        if (!sameTaskSpec(newest.spec, target)) outdated = true
        continue
      }
      // a task still stopping holds its slot: never two containers for one slot (start-first updates excepted)
      if (ts.some((t) => t.desiredState === 'shutdown' && !isTerminal(t.status.state))) continue
      const last = ts[ts.length - 1]
      if (job && last?.status.state === 'complete') continue
      if (alive >= maxConcurrent) continue
      let notBefore: number | undefined
      let restart = false
      if (last !== undefined && last.selfEnded === true) {
        const rp = restartPolicyOf(svc.spec)
        const failed = last.status.state !== 'complete'
        if (rp.condition === 'none') continue
        if (rp.condition === 'on-failure' && !failed) continue
        const now = Date.now()
        const times = (svc.restarts[key] ?? []).filter((at) => rp.windowMs === 0 || at > now - rp.windowMs)
        if (rp.maxAttempts > 0 && times.length >= rp.maxAttempts) continue
        times.push(now)
        svc.restarts[key] = times.slice(-Math.max(rp.maxAttempts, 16))
        const ended = Date.parse(last.status.timestamp)
        notBefore = (Number.isNaN(ended) ? now : Math.min(ended, now)) + rp.delayMs
        restart = true
      }
      this.newTask(svc, key, { ...(notBefore !== undefined ? { notBefore } : {}), restart, ...(iteration !== undefined ? { iteration } : {}) })
      alive++
    }
    const paused = svc.updateStatus?.state === 'paused' || svc.updateStatus?.state === 'rollback_paused'
    // an update or rollback still marked started (no live task outdated: its slots are between tasks, or the
    // daemon restarted mid-way) runs too: it replaces what is left and then marks itself completed
    const unfinished = svc.updateStatus?.state === 'updating' || svc.updateStatus?.state === 'rollback_started'
    if ((outdated || unfinished) && !updating && !paused) this.updates.start(svc)
  }

  newTask (svc: ServiceRecord, key: string, o: { notBefore?: number, restart?: boolean, iteration?: number }): TaskRecord {
    const job = isJob(svc.spec.mode)
    const id = swarmId()
    const slot = /^\d+$/.test(key) ? Number(key) : undefined
    const t: TaskRecord = {
      ...this.o.store.newMeta(id),
      labels: {},
      spec: svc.spec.taskTemplate,
      serviceId: svc.id,
      ...(slot !== undefined ? { slot } : {}),
      nodeId: this.swarm.node.id,
      status: { timestamp: nowIso(), state: 'new', message: 'created', portStatus: {} },
      desiredState: job ? 'complete' : 'running',
      createdMs: Date.now(),
      ...(o.notBefore !== undefined ? { notBefore: o.notBefore } : {}),
      ...(o.restart === true ? { restart: true } : {}),
      ...(o.iteration !== undefined ? { jobIteration: o.iteration } : {})
    }
    this.st.tasks[id] = t
    this.changes.emit('task', t)
    return t
  }

  shutdown (t: TaskRecord): void {
    if (t.desiredState === 'shutdown') return
    t.desiredState = 'shutdown'
    this.o.store.touch(t)
  }

  /** Keeps at most TaskHistoryRetentionLimit tasks per slot; the oldest ended ones go with their containers. */
  private prune (): void {
    const limit = this.swarm.spec.taskHistoryRetentionLimit
    const groups = new Map<string, TaskRecord[]>()
    for (const t of Object.values(this.st.tasks)) {
      const k = `${t.serviceId}/${slotKey(t)}`
      const g = groups.get(k)
      if (g === undefined) groups.set(k, [t]); else g.push(t)
    }
    // the tasks of a removed service go once they have ended (their containers with them)
    for (const t of Object.values(this.st.tasks)) {
      if (this.st.services[t.serviceId] === undefined && isTerminal(t.status.state) && !this.runner.isStopping(t.id)) this.forget(t)
    }
    for (const ts of groups.values()) {
      if (ts.length <= limit) continue
      const dead = ts.filter((t) => isTerminal(t.status.state) && t.desiredState !== 'running' && t.desiredState !== 'complete').sort((a, b) => a.createdMs - b.createdMs)
      let extra = ts.length - Math.max(limit, 1)
      for (const t of dead) {
        if (extra <= 0) break
        this.forget(t)
        extra--
      }
    }
  }

  /** Deletes a task record and its container. */
  forget (t: TaskRecord): void {
    delete this.st.tasks[t.id]
    this.o.store.markDirty()
    this.runner.unwatch(t.id)
    // its container by the recorded ID, or by its label: made before a crash, its ID never recorded
    const c = this.runner.findContainer(t)
    this.cleanup((async () => {
      if (c !== undefined) await this.runner.removeContainer(c.id)
      await this.o.removeFiles(t.id)
    })().catch((err) => { ops.warn('removing task %s leaves its files: %s', t.id, describeError(err)) }))
  }

  private cleanup (p: Promise<void>): void {
    this.cleanups.add(p)
    void p.finally(() => { this.cleanups.delete(p) })
  }

  /** After a daemon restart: the running task containers adopted, the ends that happened meanwhile recorded. */
  recover (): void {
    if (this.closed) return
    this.runner.recover()
    this.cleanup(this.o.removeOtherFiles((id) => this.st.tasks[id] !== undefined).catch((err) => { ops.warn('removing the files of tasks that are gone: %s', describeError(err)) }))
    this.kick()
  }

  /**
   * Takes no new work (no pass, no task started, stopped or removed) and resolves once what was under way has ended:
   * the pass, the task starts (they stop before their next container operation), stops, removals and rolling updates.
   */
  async close (): Promise<void> {
    this.closed = true
    if (this.timer !== undefined) clearTimeout(this.timer)
    this.timer = undefined
    this.runner.close()
    // the rolling updates waiting on tasks see the close
    this.changes.emit('task')
    await this.idle.catch(() => {}) // loop() logs its own failure
    await Promise.all([this.runner.settled(), this.updates.settled()])
    while (this.cleanups.size > 0) await Promise.allSettled([...this.cleanups])
  }

  /** Resolves once the task starts under way have ended, at most `ms` (the engine's close lets them finish first). */
  async startsSettledWithin (ms: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined
    await Promise.race([this.runner.startsSettled(), new Promise<void>((resolve) => { timer = setTimeout(resolve, ms) })])
    clearTimeout(timer)
  }
}
