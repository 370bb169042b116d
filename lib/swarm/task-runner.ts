// Running tasks: a task is launched when this node can take it (placement, resources, availability), its container is
// created from the task spec (task-container-spec.ts) with its secret and config files and started, then watched
// (its exit, its health) until it ends; a task to stop has its container stopped with its grace period. After a
// daemon restart the running task containers are adopted, the ends that happened meanwhile recorded, strays removed.
// Once the orchestrator closes, the runner starts nothing new, and settled() resolves when what it had under way
// (starts, stops, removals) has ended: a start cut by the close stops before its next container operation, and the
// next daemon start finishes it from the state on disk (a container left created is made again).
import { describeError, errorMessage } from '../errors.js'
import { levelLogger, logger } from '../log.js'
import { isTerminal, type SwarmRecord, type TaskRecord, type TaskState } from './model.js'
import { constraintsMet, stopTimeoutOf } from './spec.js'
import type { SwarmStore } from './store.js'
import { taskContainerRequest, taskName, type TaskFile } from './task-container-spec.js'
import type { TaskContainers, TaskContainerState, TaskNetworks } from './task-containers.js'

const log = logger('swarm:orchestrator')
const ops = levelLogger('swarm:orchestrator')

const TASK_LABEL = 'com.docker.swarm.task.id'

/** Whether the task is to stop: shut down, or its service removed (read afresh: it may be asked for while a start is
 *  under way). */
function shuttingDown (t: TaskRecord): boolean { return t.desiredState === 'shutdown' || t.desiredState === 'remove' }

export interface TaskRunnerHost {
  store: SwarmStore
  containers: TaskContainers
  networks: TaskNetworks
  /** Writes a task's secret and config files (on a tmpfs) and returns them. */
  taskFiles: (t: TaskRecord) => Promise<TaskFile[]>
  /** This node's attributes for placement constraints (node.id, node.hostname, node.role, node.labels.*, ...). */
  nodeAttributes: () => Record<string, string>
  nodeResources: { nanoCpus: number, memoryBytes: number }
  /** Moves a task to a state (forward only), with its message and error. */
  setState: (t: TaskRecord, state: TaskState, message: string, err?: string) => void
  /** Asks the orchestrator for a pass. */
  kick: () => void
  closed: () => boolean
}

export class TaskRunner {
  private readonly h: TaskRunnerHost
  /** Tasks whose container is being made and started, being stopped, and watched (running). */
  private readonly starting = new Set<string>()
  /** The starts under way (a swarm leave waits for them before it removes the task containers). */
  private readonly runs = new Set<Promise<void>>()
  private readonly stopping = new Set<string>()
  /** The stops under way and the health watches (settled() waits for them). */
  private readonly tracked = new Set<Promise<void>>()
  /** Task containers being removed (a task forgotten, a stray), by container ID: one removal each. */
  private readonly removing = new Map<string, Promise<void>>()
  private readonly watching = new Map<string, AbortController>()

  constructor (h: TaskRunnerHost) { this.h = h }

  private get st (): SwarmStore['state'] { return this.h.store.state }
  private get swarm (): SwarmRecord { return this.st.swarm as SwarmRecord }

  /** Whether the runner has the task in hand: starting it, or watching its running container. */
  busy (taskId: string): boolean { return this.starting.has(taskId) || this.watching.has(taskId) }

  isStarting (taskId: string): boolean { return this.starting.has(taskId) }

  isStopping (taskId: string): boolean { return this.stopping.has(taskId) }

  /** Stops watching a task (it is forgotten). */
  unwatch (taskId: string): void {
    this.watching.get(taskId)?.abort()
    this.watching.delete(taskId)
  }

  /** Stops watching every task (the orchestrator closes: the runner takes no new work). */
  close (): void {
    for (const ac of this.watching.values()) ac.abort()
    this.watching.clear()
  }

  /** Resolves once the starts, stops and removals under way have ended (after close(): none begins meanwhile). */
  async settled (): Promise<void> {
    for (;;) {
      const all = [...this.runs, ...this.tracked, ...this.removing.values()]
      if (all.length === 0) return
      await Promise.allSettled(all)
    }
  }

  /** A failure worth the operator's attention; once closed, the engine shutting down is the cause: debug detail. */
  private warn (format: string, ...args: unknown[]): void {
    if (this.h.closed()) log(format, ...args)
    else ops.warn(format, ...args)
  }

  /** Tracks a stop or a health watch under way (settled() waits for it). */
  private track (p: Promise<void>): void {
    this.tracked.add(p)
    void p.finally(() => { this.tracked.delete(p) })
  }

  /** Why this node cannot take the task now, or '' when it can. */
  private unschedulable (t: TaskRecord): string {
    if (this.swarm.node.spec.availability !== 'active') return 'no suitable node (1 node not available for new tasks)'
    if (!constraintsMet(t.spec.placement.constraints, this.h.nodeAttributes())) return 'no suitable node (scheduling constraints not satisfied on 1 node)'
    const r = t.spec.resources.reservations
    if ((r.nanoCpus !== undefined && r.nanoCpus > this.h.nodeResources.nanoCpus) ||
        (r.memoryBytes !== undefined && r.memoryBytes > this.h.nodeResources.memoryBytes)) return 'no suitable node (insufficient resources on 1 node)'
    return ''
  }

  /** Starts a task that is to run: pending while this node cannot take it, else its container made and started. */
  launch (t: TaskRecord): void {
    if (this.h.closed()) return
    const why = this.unschedulable(t)
    if (why !== '') {
      if (t.status.state !== 'pending' || t.status.err !== why) this.h.setState(t, 'pending', 'pending task scheduling', why)
      return
    }
    this.starting.add(t.id)
    const p: Promise<void> = this.run(t).catch((err) => { this.warn('task %s: %s', t.id, describeError(err)) }).finally(() => {
      this.starting.delete(t.id)
      this.runs.delete(p)
      this.h.kick()
    })
    this.runs.add(p)
  }

  /** Resolves once the starts under way now have ended (their containers made and started, or not). */
  async startsSettled (): Promise<void> { await Promise.all([...this.runs]) }

  private async run (t: TaskRecord): Promise<void> {
    const svc = this.st.services[t.serviceId]
    if (svc === undefined) return
    const image = t.spec.containerSpec.image
    // a container of this task may exist already: created before a crash, its ID not yet recorded
    const existing = this.findContainer(t)
    if (existing !== undefined && existing.status !== 'created') { this.adopt(t, existing); return }
    // created and never started (a crash in between): made again from the spec
    if (existing !== undefined) await this.h.containers.remove(existing.id, true)
    // (the orchestrator closed meanwhile: the next daemon start runs the task)
    if (this.h.closed()) return
    this.h.setState(t, 'assigned', 'scheduler assigned task to node')
    this.h.setState(t, 'accepted', 'accepted')
    if (!this.h.containers.hasImage(image)) {
      this.h.setState(t, 'rejected', 'preparing', `No such image: ${image}`)
      return
    }
    this.h.setState(t, 'preparing', 'preparing')
    let id: string
    try {
      const networks: Array<{ name: string, aliases: string[] }> = []
      for (const n of t.spec.networks) {
        const found = this.h.networks.find(n.target)
        if (found === undefined) throw new Error(`network ${n.target} not found`)
        networks.push({ name: found.name, aliases: [...n.aliases] })
      }
      const files = await this.h.taskFiles(t)
      if (this.h.closed()) return
      this.h.setState(t, 'ready', 'prepared')
      const req = taskContainerRequest({ service: svc, task: t, nodeId: this.swarm.node.id, files, networks })
      log('task %s: creating its container', t.id)
      id = (await this.h.containers.create(taskName(svc.spec.name, t), req)).id
      log('task %s: container %s created', t.id, id.slice(0, 12))
    } catch (err) {
      if (!this.h.closed()) this.h.setState(t, 'rejected', 'preparing', errorMessage(err))
      return
    }
    // closed meanwhile: the container stays created, and the next daemon start makes it again (recover(), run())
    if (this.h.closed()) return
    // the task was forgotten while its container was made (its service removed, or its slot's history pruned): the
    // container goes with it, never started
    if (this.st.tasks[t.id] !== t) { await this.removeContainer(id); return }
    t.status.containerStatus = { containerId: id, pid: 0, exitCode: 0 }
    this.h.setState(t, 'starting', 'starting')
    if (shuttingDown(t)) {
      this.h.setState(t, 'shutdown', 'shutdown')
      return
    }
    try {
      await this.h.containers.start(id)
    } catch (err) {
      if (this.h.closed()) return
      const st = this.h.containers.inspect(id)
      if (t.status.containerStatus !== undefined) t.status.containerStatus.exitCode = st?.exitCode ?? 128
      this.h.setState(t, 'failed', 'starting', errorMessage(err))
      return
    }
    // started as the orchestrator closed: the next daemon start adopts the running container
    if (this.h.closed()) return
    const st = this.h.containers.inspect(id)
    if (st !== undefined) t.status.containerStatus = { containerId: id, pid: st.pid, exitCode: 0 }
    // with a health check the task stays starting until its container is healthy (as dockerd's executor)
    if (st?.health === undefined || st.health === '') this.h.setState(t, 'running', 'started')
    log('task %s: %s', t.id, t.status.state)
    this.watch(t, id)
    // (asked while it started)
    if (shuttingDown(t)) this.stop(t)
  }

  /** The container of a task, by its recorded ID or else by its label (made before a crash, the ID not recorded). */
  findContainer (t: TaskRecord): TaskContainerState | undefined {
    const cid = t.status.containerStatus?.containerId
    if (cid !== undefined && cid !== '') { const c = this.h.containers.inspect(cid); if (c !== undefined) return c }
    return this.h.containers.withLabel(TASK_LABEL).find((c) => c.labels[TASK_LABEL] === t.id)
  }

  /** Takes over a task's existing container (after a daemon restart): watch it if it runs, record its end if not. */
  private adopt (t: TaskRecord, c: TaskContainerState): void {
    t.status.containerStatus = { containerId: c.id, pid: c.pid, exitCode: c.running ? 0 : c.exitCode }
    if (c.running) {
      if (t.status.state !== 'running' && (c.health === '' || c.health === 'healthy')) this.h.setState(t, 'running', 'started')
      this.watch(t, c.id)
      if (shuttingDown(t)) this.stop(t)
    } else this.ended(t, c)
  }

  private watch (t: TaskRecord, id: string): void {
    this.watching.get(t.id)?.abort()
    const ac = new AbortController()
    this.watching.set(t.id, ac)
    void this.h.containers.waitExit(id, ac.signal).then((st) => {
      if (this.watching.get(t.id) === ac) this.watching.delete(t.id)
      if (this.h.closed() || ac.signal.aborted) return
      this.ended(t, st)
      this.h.kick()
    }, () => { if (this.watching.get(t.id) === ac) this.watching.delete(t.id) })
    if (this.h.containers.inspect(id)?.health !== '') this.track(this.watchHealth(t, id, ac.signal).catch((err) => { this.warn('following the health of task %s: %s', t.id, describeError(err)) }))
  }

  /** Follows a task container's health: healthy makes a starting task running; unhealthy stops the container, and
   *  the task fails (dockerd's "dockerexec: unhealthy container") to be replaced by the restart policy. */
  private async watchHealth (t: TaskRecord, id: string, signal: AbortSignal): Promise<void> {
    let known = 'none'
    for (let i = 0; i < 1_000_000 && !signal.aborted && !this.h.closed(); i++) {
      known = await this.h.containers.waitHealth(id, known, signal)
      if (known === '' || signal.aborted || this.h.closed() || isTerminal(t.status.state)) return
      if (known === 'healthy' && t.status.state === 'starting') { this.h.setState(t, 'running', 'started'); this.h.kick() }
      if (known === 'unhealthy' && t.desiredState !== 'shutdown') {
        log('task %s: container unhealthy, stopping it', t.id)
        t.unhealthy = true
        this.h.store.touch(t)
        await this.h.containers.stop(id, stopTimeoutOf(t.spec))
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
    if (t.desiredState === 'shutdown' || t.desiredState === 'remove') this.h.setState(t, 'shutdown', 'shutdown')
    else if (st === undefined) this.h.setState(t, 'failed', phase, 'task: container removed')
    else if (t.unhealthy === true) this.h.setState(t, 'failed', phase, `task: non-zero exit (${code}): dockerexec: unhealthy container`)
    else if (code === 0) this.h.setState(t, 'complete', 'finished')
    else this.h.setState(t, 'failed', phase, `task: non-zero exit (${code})${st.oomKilled ? ': OOM killed' : ''}`)
  }

  /** Stops a task's container (its grace period); the task is shut down once it has ended. */
  stop (t: TaskRecord): void {
    if (this.h.closed() || this.stopping.has(t.id) || isTerminal(t.status.state)) return
    const cid = t.status.containerStatus?.containerId
    const c = cid === undefined ? undefined : this.h.containers.inspect(cid)
    if (c === undefined || !c.running) {
      this.h.setState(t, 'shutdown', 'shutdown')
      if (c !== undefined && t.status.containerStatus !== undefined) t.status.containerStatus.exitCode = c.exitCode
      // another pass prunes it (a removed service's task goes then, with a container made but never started)
      this.h.kick()
      return
    }
    this.stopping.add(t.id)
    this.track(this.h.containers.stop(c.id, stopTimeoutOf(t.spec)).catch((err) => { this.warn('stopping container %s of task %s: %s', c.id.slice(0, 12), t.id, describeError(err)) }).finally(() => {
      this.stopping.delete(t.id)
      // (a stop the engine's close cut short: the container runs on, and the next daemon start stops it)
      if (this.h.closed()) return
      if (!this.watching.has(t.id)) this.ended(t, this.h.containers.inspect(c.id))
      this.h.kick()
    }))
  }

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
    // (a task whose service went, the daemon killed during its removal, is gone with it)
    for (const c of this.h.containers.withLabel(TASK_LABEL)) {
      const t = this.st.tasks[c.labels[TASK_LABEL] as string]
      if (t !== undefined && this.st.services[t.serviceId] === undefined) void this.removeContainer(c.id)
    }
    this.removeStrays()
  }

  /**
   * Removes (forced) every task container whose task is gone, unless that task is being started (its start sees it was
   * forgotten and removes what it made): a container made before a crash, its ID not recorded, whose task was then
   * shut down and forgotten. Each pass runs it: the containers are looked at in memory, no file is read.
   */
  removeStrays (): void {
    if (this.h.closed()) return
    for (const c of this.h.containers.withLabel(TASK_LABEL)) {
      const taskId = c.labels[TASK_LABEL] as string
      const t = this.st.tasks[taskId]
      if (t === undefined && !this.starting.has(taskId)) void this.removeContainer(c.id)
    }
  }

  /** Removes (forced) a task's container once, whatever asks for it meanwhile; never rejects. */
  async removeContainer (id: string): Promise<void> {
    const under = this.removing.get(id)
    if (under !== undefined) { await under; return }
    if (this.h.closed() || this.h.containers.inspect(id) === undefined) return
    const p = this.h.containers.remove(id, true).catch((err) => { this.warn('removing container %s of a task that is gone: %s', id.slice(0, 12), describeError(err)) })
      .finally(() => { this.removing.delete(id) })
    this.removing.set(id, p)
    await p
  }
}
