// Rolling updates and rollbacks of a service whose tasks are outdated: batches of UpdateConfig.Parallelism tasks
// replaced in their slots (stop-first, or start-first keeping the old task while its replacement does not run), a
// monitor period after each batch, failures counted against MaxFailureRatio with the failure action (pause, continue,
// rollback), and the update status recorded as dockerd reports it.
import type { EventEmitter } from 'node:events'
import { describeError } from '../errors.js'
import { levelLogger, logger } from '../log.js'
import { isTerminal, nowIso, slotKey, type ServiceRecord, type TaskRecord, type UpdateStatus } from './model.js'
import { serviceFacts, type ServiceFacts } from './service-events.js'
import { isJob, sameTaskSpec, type UpdatePolicy } from './spec.js'
import type { SwarmStore } from './store.js'

const log = logger('swarm:orchestrator')
const ops = levelLogger('swarm:orchestrator')

const UPDATE_WAIT_MS = 120_000

export interface RollingUpdatesHost {
  store: SwarmStore
  /** Emits 'task' whenever a task record changes, and at each orchestrator pass. */
  changes: EventEmitter
  tasksOf: (serviceId: string) => TaskRecord[]
  newTask: (svc: ServiceRecord, key: string, o: { iteration?: number }) => TaskRecord
  shutdown: (t: TaskRecord) => void
  kick: () => void
  closed: () => boolean
  /** A rolling update changed a service (its update state, or its spec on an automatic rollback): the event. */
  serviceChanged?: (svc: ServiceRecord, before: ServiceFacts) => void
}

export class RollingUpdates {
  private readonly h: RollingUpdatesHost
  private readonly updaters = new Map<string, Promise<void>>()

  constructor (h: RollingUpdatesHost) { this.h = h }

  /** Resolves once the updates running now have ended (the orchestrator closes: they end at its next 'task'). */
  async settled (): Promise<void> { await Promise.allSettled([...this.updaters.values()]) }

  /** Whether an update (or rollback) is running for a service. */
  running (serviceId: string): boolean { return this.updaters.has(serviceId) }

  /** Starts the update (or the rollback, when the service's update state says rollback_started) of a service. */
  start (svc: ServiceRecord): void {
    const rollback = svc.updateStatus?.state === 'rollback_started'
    const p = this.runUpdate(svc, rollback).catch((err) => { ops.error('the %s of service %s failed: %s', rollback ? 'rollback' : 'update', svc.id, describeError(err)) }).finally(() => {
      this.updaters.delete(svc.id)
      this.h.kick()
    })
    this.updaters.set(svc.id, p)
  }

  /**
   * Waits until pred() holds after a task changed (false at the limit, when the orchestrator closes, or once the
   * update is overtaken: `stale()`, checked at each task change and each pass).
   */
  private async waitTask (pred: () => boolean, stale: () => boolean, ms = UPDATE_WAIT_MS): Promise<boolean> {
    if (pred()) return true
    if (stale()) return false
    return await new Promise<boolean>((resolve) => {
      const done = (v: boolean): void => { clearTimeout(timer); this.h.changes.off('task', check); resolve(v) }
      const check = (): void => { if (this.h.closed() || stale()) done(false); else if (pred()) done(true) }
      const timer = setTimeout(() => { done(pred()) }, ms)
      timer.unref()
      this.h.changes.on('task', check)
    })
  }

  /** Records a service's update status; a new state (or spec) is an event, as dockerd's store updates are. */
  private setUpdateStatus (svc: ServiceRecord, status: UpdateStatus, before = serviceFacts(svc)): void {
    svc.updateStatus = status
    this.h.store.touch(svc)
    const after = serviceFacts(svc)
    if (after.state !== before.state || after.image !== before.image || after.replicas !== before.replicas) this.h.serviceChanged?.(svc, before)
  }

  private async runUpdate (svc: ServiceRecord, rollback: boolean): Promise<void> {
    const pol: UpdatePolicy = rollback ? svc.spec.rollback : svc.spec.update
    const target = svc.spec.taskTemplate
    const startMs = Date.now()
    // a rollback keeps the time it was asked for (dockerd's StartedAt); an update starts now
    const startedAt = rollback ? svc.updateStatus?.startedAt ?? nowIso() : nowIso()
    if (!rollback) this.setUpdateStatus(svc, { state: 'updating', startedAt, message: 'update in progress' })
    else this.setUpdateStatus(svc, { ...svc.updateStatus as UpdateStatus, startedAt })
    await this.h.store.commit()
    const job = isJob(svc.spec.mode)
    const live = (t: TaskRecord): boolean => t.desiredState !== 'shutdown' && !isTerminal(t.status.state)
    const outdatedNow = (): TaskRecord[] => this.h.tasksOf(svc.id).filter((t) => live(t) && !sameTaskSpec(t.spec, target))
    const total = Math.max(1, outdatedNow().length)
    // The monitor reads the task records, so a failure is seen whenever it happened: a task of the new spec made
    // during this update that failed (or ended early) before running, or within Monitor of starting to run, counts.
    const counted = new Set<string>()
    const failedTask = (): TaskRecord | undefined => this.h.tasksOf(svc.id).find((t) =>
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
    // overtaken: the service went, or its task spec changed again (a later update or rollback takes over, as
    // swarmkit's supervisor cancels a service's running updater when a newer spec comes)
    const stale = (): boolean => this.h.closed() || this.h.store.state.services[svc.id] !== svc || !sameTaskSpec(svc.spec.taskTemplate, target)
    for (;;) {
      if (stale()) return
      if (check()) return
      const outdated = outdatedNow()
      if (outdated.length === 0) break
      const batch = outdated.slice(0, pol.parallelism === 0 ? outdated.length : pol.parallelism)
      const fresh = await Promise.all(batch.map(async (t) => await this.replaceOne(svc, t, pol, stale)))
      if (stale()) return
      // the monitor period of this batch
      await this.waitTask(() => failedTask() !== undefined, stale, pol.monitorMs)
      if (stale()) return
      if (check()) return
      const lost = fresh.indexOf(undefined)
      if (lost >= 0 && onFailure((batch[lost] as TaskRecord).id)) return
      // the delay between batches (cut short by a close or a newer spec)
      if (pol.delayMs > 0) await this.waitTask(() => false, stale, pol.delayMs)
    }
    this.setUpdateStatus(svc, rollback
      ? { state: 'rollback_completed', startedAt, completedAt: nowIso(), message: 'rollback completed' }
      : { state: 'completed', startedAt, completedAt: nowIso(), message: 'update completed' })
    await this.h.store.commit()
  }

  /**
   * Replaces one outdated task in its slot (stop-first or start-first); returns the new task once it runs or ended,
   * 'gone' when the slot is no longer wanted (a scale down meanwhile: nothing to replace, not a failure).
   */
  private async replaceOne (svc: ServiceRecord, old: TaskRecord, pol: UpdatePolicy, overtaken: () => boolean): Promise<TaskRecord | undefined | 'gone'> {
    const key = slotKey(old)
    const slotGone = (): boolean => { const m = svc.spec.mode; return m.kind === 'replicated' && Number(key) > m.replicas }
    const stale = (): boolean => overtaken() || slotGone()
    if (slotGone()) return 'gone'
    const newest = (): TaskRecord | undefined => this.h.tasksOf(svc.id).filter((t) => slotKey(t) === key && t.createdMs >= old.createdMs && t.id !== old.id).pop()
    if (pol.order === 'start-first') {
      const t = this.h.newTask(svc, key, isJob(svc.spec.mode) && svc.jobStatus !== undefined ? { iteration: svc.jobStatus.jobIteration } : {})
      this.h.store.touch(t)
      this.h.kick()
      await this.waitTask(() => t.status.state === 'running' || isTerminal(t.status.state), stale)
      if (slotGone()) return 'gone'
      // the old task stays while its replacement does not run
      if (t.status.state === 'running') { this.h.shutdown(old); this.h.kick() }
      return t
    }
    this.h.shutdown(old)
    this.h.kick()
    await this.waitTask(() => isTerminal(old.status.state), stale)
    await this.waitTask(() => { const n = newest(); return n !== undefined && (n.status.state === 'running' || isTerminal(n.status.state)) }, stale)
    return slotGone() ? 'gone' : newest()
  }


}
