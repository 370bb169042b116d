// The reconciler: keeps every service at its spec. One pass at a time (kick() coalesces); each pass decides on the
// records (new tasks, shutdowns, history pruning), commits them to disk, and only then touches containers. A task's
// record is on disk before its container exists, and the container carries the task's ID, so after a crash the
// next pass adopts what runs and never starts a second task for a slot.
import { EventEmitter } from 'node:events'
import { describeError, errorMessage } from '../errors.js'
import { levelLogger, logger } from '../log.js'
import { swarmId } from './ids.js'
import { isTerminal, nowIso, slotKey, type ServiceRecord, type SwarmRecord, type TaskRecord, type TaskState, canMove, type UpdateStatus } from './model.js'
import { constraintsMet, isJob, restartPolicyOf, sameTaskSpec, stopTimeoutOf, type UpdatePolicy } from './spec.js'
import type { SwarmStore } from './store.js'
import { serviceFacts, type ServiceFacts } from './service-events.js'
import type { TaskContainers, TaskContainerState, TaskNetworks } from './task-containers.js'
import { taskContainerBody, taskName, type TaskFile } from './task-container-spec.js'

const log = logger('swarm:orchestrator')
const ops = levelLogger('swarm:orchestrator')

const TASK_LABEL = 'com.docker.swarm.task.id'
const UPDATE_WAIT_MS = 120_000

/** Whether the task is to stop (read afresh: it may be asked for while a start is under way). */
function shuttingDown (t: TaskRecord): boolean { return t.desiredState === 'shutdown' }

export interface OrchestratorOptions {
  store: SwarmStore
  containers: TaskContainers
  networks: TaskNetworks
  /** Writes a task's secret and config files (on a tmpfs) and returns them; removeFiles drops them. */
  taskFiles: (t: TaskRecord) => Promise<TaskFile[]>
  removeFiles: (taskId: string) => Promise<void>
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
  private readonly starting = new Set<string>()
  private readonly stopping = new Set<string>()
  private readonly watching = new Map<string, AbortController>()
  private readonly updaters = new Map<string, Promise<void>>()
  readonly changes = new EventEmitter()

  constructor (o: OrchestratorOptions) {
    this.o = o
    this.changes.setMaxListeners(0)
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
    for (const svc of Object.values(this.st.services)) this.reconcileService(svc)
    this.prune()
    await this.o.store.commit()
    log('pass: decisions committed')
    if (this.closed) return
    let wake = Infinity
    const now = Date.now()
    for (const t of Object.values(this.st.tasks)) {
      if (isTerminal(t.status.state)) continue
      if (t.desiredState === 'running' || t.desiredState === 'complete') {
        if (this.starting.has(t.id) || this.watching.has(t.id)) continue
        if (t.notBefore !== undefined && t.notBefore > now) { wake = Math.min(wake, t.notBefore); continue }
        this.launch(t)
      } else if (!this.starting.has(t.id)) this.stopTask(t)
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
    const updating = this.updaters.has(svc.id)
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
    if ((outdated || unfinished) && !updating && !paused) this.startUpdate(svc)
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
      if (this.st.services[t.serviceId] === undefined && isTerminal(t.status.state) && !this.stopping.has(t.id)) this.forget(t)
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
    this.watching.get(t.id)?.abort()
    this.watching.delete(t.id)
    const cid = t.status.containerStatus?.containerId
    void (async () => {
      if (cid !== undefined && cid !== '' && this.o.containers.inspect(cid) !== undefined) await this.o.containers.remove(cid, true)
      await this.o.removeFiles(t.id)
    })().catch((err) => { ops.warn('removing task %s leaves its container or files: %s', t.id, describeError(err)) })
  }

  // ---- running tasks --------------------------------------------------------------------------------------------

  /** Why this node cannot take the task now, or '' when it can. */
  private unschedulable (t: TaskRecord): string {
    if (this.swarm.node.spec.availability !== 'active') return 'no suitable node (1 node not available for new tasks)'
    if (!constraintsMet(t.spec.placement.constraints, this.o.nodeAttributes())) return 'no suitable node (scheduling constraints not satisfied on 1 node)'
    const r = t.spec.resources.reservations
    if ((r.nanoCpus !== undefined && r.nanoCpus > this.o.nodeResources.nanoCpus) ||
        (r.memoryBytes !== undefined && r.memoryBytes > this.o.nodeResources.memoryBytes)) return 'no suitable node (insufficient resources on 1 node)'
    return ''
  }

  private launch (t: TaskRecord): void {
    const why = this.unschedulable(t)
    if (why !== '') {
      if (t.status.state !== 'pending' || t.status.err !== why) this.setState(t, 'pending', 'pending task scheduling', why)
      return
    }
    this.starting.add(t.id)
    void this.run(t).catch((err) => { ops.warn('task %s: %s', t.id, describeError(err)) }).finally(() => {
      this.starting.delete(t.id)
      this.kick()
    })
  }

  private async run (t: TaskRecord): Promise<void> {
    const svc = this.st.services[t.serviceId]
    if (svc === undefined) return
    const image = t.spec.containerSpec.image
    // a container of this task may exist already: created before a crash, its ID not yet recorded
    const existing = this.findContainer(t)
    if (existing !== undefined && existing.status !== 'created') { this.adopt(t, existing); return }
    // created and never started (a crash in between): made again from the spec
    if (existing !== undefined) await this.o.containers.remove(existing.id, true)
    this.setState(t, 'assigned', 'scheduler assigned task to node')
    this.setState(t, 'accepted', 'accepted')
    if (!this.o.containers.hasImage(image)) {
      this.setState(t, 'rejected', 'preparing', `No such image: ${image}`)
      return
    }
    this.setState(t, 'preparing', 'preparing')
    let id: string
    try {
      const networks: Array<{ name: string, aliases: string[] }> = []
      for (const n of t.spec.networks) {
        const found = this.o.networks.find(n.target)
        if (found === undefined) throw new Error(`network ${n.target} not found`)
        networks.push({ name: found.name, aliases: [...n.aliases] })
      }
      const files = await this.o.taskFiles(t)
      this.setState(t, 'ready', 'prepared')
      const body = taskContainerBody({ service: svc, task: t, nodeId: this.swarm.node.id, files, networks })
      log('task %s: creating its container', t.id)
      id = (await this.o.containers.create(taskName(svc.spec.name, t), body)).id
      log('task %s: container %s created', t.id, id.slice(0, 12))
    } catch (err) {
      this.setState(t, 'rejected', 'preparing', errorMessage(err))
      return
    }
    t.status.containerStatus = { containerId: id, pid: 0, exitCode: 0 }
    this.setState(t, 'starting', 'starting')
    if (t.desiredState === 'shutdown') {
      this.setState(t, 'shutdown', 'shutdown')
      return
    }
    try {
      await this.o.containers.start(id)
    } catch (err) {
      const st = this.o.containers.inspect(id)
      if (t.status.containerStatus !== undefined) t.status.containerStatus.exitCode = st?.exitCode ?? 128
      this.setState(t, 'failed', 'starting', errorMessage(err))
      return
    }
    const st = this.o.containers.inspect(id)
    if (st !== undefined) t.status.containerStatus = { containerId: id, pid: st.pid, exitCode: 0 }
    // with a health check the task stays starting until its container is healthy (as dockerd's executor)
    if (st?.health === undefined || st.health === '') this.setState(t, 'running', 'started')
    log('task %s: %s', t.id, t.status.state)
    this.watch(t, id)
    // (asked while it started)
    if (shuttingDown(t)) this.stopTask(t)
  }

  private findContainer (t: TaskRecord): TaskContainerState | undefined {
    const cid = t.status.containerStatus?.containerId
    if (cid !== undefined && cid !== '') { const c = this.o.containers.inspect(cid); if (c !== undefined) return c }
    return this.o.containers.withLabel(TASK_LABEL).find((c) => c.labels[TASK_LABEL] === t.id)
  }

  /** Takes over a task's existing container (after a daemon restart): watch it if it runs, record its end if not. */
  private adopt (t: TaskRecord, c: TaskContainerState): void {
    t.status.containerStatus = { containerId: c.id, pid: c.pid, exitCode: c.running ? 0 : c.exitCode }
    if (c.running) {
      if (t.status.state !== 'running' && (c.health === '' || c.health === 'healthy')) this.setState(t, 'running', 'started')
      this.watch(t, c.id)
      if (t.desiredState === 'shutdown') this.stopTask(t)
    } else this.ended(t, c)
  }

  private watch (t: TaskRecord, id: string): void {
    this.watching.get(t.id)?.abort()
    const ac = new AbortController()
    this.watching.set(t.id, ac)
    void this.o.containers.waitExit(id, ac.signal).then((st) => {
      if (this.watching.get(t.id) === ac) this.watching.delete(t.id)
      if (this.closed || ac.signal.aborted) return
      this.ended(t, st)
      this.kick()
    }, () => { if (this.watching.get(t.id) === ac) this.watching.delete(t.id) })
    if (this.o.containers.inspect(id)?.health !== '') void this.watchHealth(t, id, ac.signal).catch((err) => { ops.warn('following the health of task %s: %s', t.id, describeError(err)) })
  }

  /** Follows a task container's health: healthy makes a starting task running; unhealthy stops the container, and
   *  the task fails (dockerd's "dockerexec: unhealthy container") to be replaced by the restart policy. */
  private async watchHealth (t: TaskRecord, id: string, signal: AbortSignal): Promise<void> {
    let known = 'none'
    for (let i = 0; i < 1_000_000 && !signal.aborted && !this.closed; i++) {
      known = await this.o.containers.waitHealth(id, known, signal)
      if (known === '' || signal.aborted || this.closed || isTerminal(t.status.state)) return
      if (known === 'healthy' && t.status.state === 'starting') { this.setState(t, 'running', 'started'); this.kick() }
      if (known === 'unhealthy' && t.desiredState !== 'shutdown') {
        log('task %s: container unhealthy, stopping it', t.id)
        t.unhealthy = true
        this.o.store.touch(t)
        await this.o.containers.stop(id, stopTimeoutOf(t.spec))
        return
      }
    }
  }

  /** Records how a task's container ended (undefined: the container is gone). */
  private ended (t: TaskRecord, st: TaskContainerState | undefined): void {
    if (isTerminal(t.status.state)) return
    log('task %s ended (exit %d)', t.id, st?.exitCode ?? -1)
    const code = st?.exitCode ?? 137
    if (t.status.containerStatus !== undefined) { t.status.containerStatus.exitCode = code; t.status.containerStatus.pid = 0 }
    // dockerd's message is the phase the task failed in: starting (before healthy) or started
    const phase = t.status.state === 'starting' ? 'starting' : 'started'
    if (t.desiredState === 'shutdown' || t.desiredState === 'remove') this.setState(t, 'shutdown', 'shutdown')
    else if (st === undefined) this.setState(t, 'failed', phase, 'task: container removed')
    else if (t.unhealthy === true) this.setState(t, 'failed', phase, `task: non-zero exit (${code}): dockerexec: unhealthy container`)
    else if (code === 0) this.setState(t, 'complete', 'finished')
    else this.setState(t, 'failed', phase, `task: non-zero exit (${code})${st.oomKilled ? ': OOM killed' : ''}`)
  }

  private stopTask (t: TaskRecord): void {
    if (this.stopping.has(t.id) || isTerminal(t.status.state)) return
    const cid = t.status.containerStatus?.containerId
    const c = cid === undefined ? undefined : this.o.containers.inspect(cid)
    if (c === undefined || !c.running) {
      this.setState(t, 'shutdown', 'shutdown')
      if (c !== undefined && t.status.containerStatus !== undefined) t.status.containerStatus.exitCode = c.exitCode
      return
    }
    this.stopping.add(t.id)
    void this.o.containers.stop(c.id, stopTimeoutOf(t.spec)).catch((err) => { ops.warn('stopping container %s of task %s: %s', c.id.slice(0, 12), t.id, describeError(err)) }).finally(() => {
      this.stopping.delete(t.id)
      if (!this.watching.has(t.id)) this.ended(t, this.o.containers.inspect(c.id))
      this.kick()
    })
  }

  // ---- recovery -------------------------------------------------------------------------------------------------

  /** After a daemon restart: adopt running task containers, record the ends that happened meanwhile, drop strays. */
  recover (): void {
    for (const t of Object.values(this.st.tasks)) {
      if (isTerminal(t.status.state)) continue
      const c = this.findContainer(t)
      if (c !== undefined && c.status === 'created') continue // the next pass makes it again
      if (c !== undefined) { this.adopt(t, c); continue }
      // its container was made and is gone now
      if (t.status.containerStatus !== undefined || t.status.state === 'running' || t.status.state === 'starting') this.ended(t, undefined)
    }
    for (const c of this.o.containers.withLabel(TASK_LABEL)) {
      const t = this.st.tasks[c.labels[TASK_LABEL] as string]
      if (t === undefined) void this.o.containers.remove(c.id, true).catch((err) => { ops.warn('removing container %s of a task that is gone: %s', c.id.slice(0, 12), describeError(err)) })
    }
    this.kick()
  }

  // ---- rolling updates ------------------------------------------------------------------------------------------

  private startUpdate (svc: ServiceRecord): void {
    const rollback = svc.updateStatus?.state === 'rollback_started'
    const p = this.runUpdate(svc, rollback).catch((err) => { ops.error('the %s of service %s failed: %s', rollback ? 'rollback' : 'update', svc.id, describeError(err)) }).finally(() => {
      this.updaters.delete(svc.id)
      this.kick()
    })
    this.updaters.set(svc.id, p)
  }

  private async waitTask (pred: () => boolean, ms = UPDATE_WAIT_MS): Promise<boolean> {
    if (pred()) return true
    return await new Promise<boolean>((resolve) => {
      const done = (v: boolean): void => { clearTimeout(timer); this.changes.off('task', check); resolve(v) }
      const check = (): void => { if (this.closed) done(false); else if (pred()) done(true) }
      const timer = setTimeout(() => { done(pred()) }, ms)
      timer.unref()
      this.changes.on('task', check)
    })
  }

  /** Records a service's update status; a new state (or spec) is an event, as dockerd's store updates are. */
  private setUpdateStatus (svc: ServiceRecord, status: UpdateStatus, before = serviceFacts(svc)): void {
    svc.updateStatus = status
    this.o.store.touch(svc)
    const after = serviceFacts(svc)
    if (after.state !== before.state || after.image !== before.image || after.replicas !== before.replicas) this.o.serviceChanged?.(svc, before)
  }

  private async runUpdate (svc: ServiceRecord, rollback: boolean): Promise<void> {
    const pol: UpdatePolicy = rollback ? svc.spec.rollback : svc.spec.update
    const target = svc.spec.taskTemplate
    const startMs = Date.now()
    // a rollback keeps the time it was asked for (dockerd's StartedAt); an update starts now
    const startedAt = rollback ? svc.updateStatus?.startedAt ?? nowIso() : nowIso()
    if (!rollback) this.setUpdateStatus(svc, { state: 'updating', startedAt, message: 'update in progress' })
    else this.setUpdateStatus(svc, { ...svc.updateStatus as UpdateStatus, startedAt })
    await this.o.store.commit()
    const job = isJob(svc.spec.mode)
    const live = (t: TaskRecord): boolean => t.desiredState !== 'shutdown' && !isTerminal(t.status.state)
    const outdatedNow = (): TaskRecord[] => this.tasksOf(svc.id).filter((t) => live(t) && !sameTaskSpec(t.spec, target))
    const total = Math.max(1, outdatedNow().length)
    // The monitor reads the task records, so a failure is seen whenever it happened: a task of the new spec made
    // during this update that failed (or ended early) before running, or within Monitor of starting to run, counts.
    const counted = new Set<string>()
    const failedTask = (): TaskRecord | undefined => this.tasksOf(svc.id).find((t) =>
      !counted.has(t.id) && t.createdMs >= startMs && isTerminal(t.status.state) && t.status.state !== 'shutdown' &&
      !(job && t.status.state === 'complete') && sameTaskSpec(t.spec, target) &&
      (t.runningMs === undefined || (t.endedMs ?? Date.now()) - t.runningMs <= pol.monitorMs))
    let failures = 0
    /** Counts a failure (a task, or a batch whose replacement never came); true when the failure action stopped the update. */
    const onFailure = (taskId: string): boolean => {
      counted.add(taskId)
      failures++
      log('update of %s: task %s failed (%d of %d)', svc.id, taskId, failures, total)
      if (failures / total <= pol.maxFailureRatio) return false
      if (pol.failureAction === 'pause' || (pol.failureAction === 'rollback' && rollback)) {
        const what = pol.failureAction === 'rollback' ? 'rollback' : 'update'
        this.setUpdateStatus(svc, { state: rollback ? 'rollback_paused' : 'paused', startedAt, message: `${what} paused due to failure or early termination of task ${taskId}` })
        return true
      }
      if (pol.failureAction === 'rollback' && svc.previousSpec !== undefined) {
        const before = serviceFacts(svc)
        svc.spec = svc.previousSpec
        delete svc.previousSpec
        this.setUpdateStatus(svc, { state: 'rollback_started', startedAt, message: `update rolled back due to failure or early termination of task ${taskId}` }, before)
        return true
      }
      return false
    }
    const check = (): boolean => { const bad = failedTask(); return bad !== undefined && onFailure(bad.id) }
    for (;;) {
      if (this.closed || this.st.services[svc.id] !== svc || !sameTaskSpec(svc.spec.taskTemplate, target)) return
      if (check()) return
      const outdated = outdatedNow()
      if (outdated.length === 0) break
      const batch = outdated.slice(0, pol.parallelism === 0 ? outdated.length : pol.parallelism)
      const fresh = await Promise.all(batch.map(async (t) => await this.replaceOne(svc, t, pol)))
      if (this.closed || this.st.services[svc.id] !== svc || !sameTaskSpec(svc.spec.taskTemplate, target)) return
      // the monitor period of this batch
      await this.waitTask(() => failedTask() !== undefined, pol.monitorMs)
      if (check()) return
      const lost = fresh.indexOf(undefined)
      if (lost >= 0 && onFailure((batch[lost] as TaskRecord).id)) return
      if (pol.delayMs > 0) await new Promise((resolve) => setTimeout(resolve, pol.delayMs).unref())
    }
    this.setUpdateStatus(svc, rollback
      ? { state: 'rollback_completed', startedAt, completedAt: nowIso(), message: 'rollback completed' }
      : { state: 'completed', startedAt, completedAt: nowIso(), message: 'update completed' })
    await this.o.store.commit()
  }

  /** Replaces one outdated task in its slot (stop-first or start-first); returns the new task once it runs or ended. */
  private async replaceOne (svc: ServiceRecord, old: TaskRecord, pol: UpdatePolicy): Promise<TaskRecord | undefined> {
    const key = slotKey(old)
    const newest = (): TaskRecord | undefined => this.tasksOf(svc.id).filter((t) => slotKey(t) === key && t.createdMs >= old.createdMs && t.id !== old.id).pop()
    if (pol.order === 'start-first') {
      const t = this.newTask(svc, key, isJob(svc.spec.mode) && svc.jobStatus !== undefined ? { iteration: svc.jobStatus.jobIteration } : {})
      this.o.store.touch(t)
      this.kick()
      await this.waitTask(() => t.status.state === 'running' || isTerminal(t.status.state))
      // the old task stays while its replacement does not run
      if (t.status.state === 'running') { this.shutdown(old); this.kick() }
      return t
    }
    this.shutdown(old)
    this.kick()
    await this.waitTask(() => isTerminal(old.status.state))
    await this.waitTask(() => { const n = newest(); return n !== undefined && (n.status.state === 'running' || isTerminal(n.status.state)) })
    return newest()
  }

  /** Whether an update (or rollback) is running for a service. */
  updating (serviceId: string): boolean { return this.updaters.has(serviceId) }

  async close (): Promise<void> {
    this.closed = true
    if (this.timer !== undefined) clearTimeout(this.timer)
    for (const ac of this.watching.values()) ac.abort()
    this.watching.clear()
    this.changes.emit('task')
    await this.idle.catch(() => {}) // loop() logs its own failure
  }
}
