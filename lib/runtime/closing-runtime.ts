// A container runtime that ends with its engine: once close() is called every operation is refused (503 "the engine
// is shutting down"), and close() resolves when the operations under way have ended, so that nothing of a closed engine
// runs the runtime afterwards. (A stop waiting out its grace period when an embedding program closed the engine and
// removed its exec root ran `runc kill` later, and runc 1.1 makes its --root, parents included, at any command.)
import { unavailable } from '../errors.js'
import { levelLogger } from '../log.js'
import { MonitoredRuntime, type ContainerRuntime, type MonitoredRuntimeOptions } from './container-runtime.js'
import type { HostFacts } from './host-facts.js'
import type { ResourceUpdate } from './cgroups.js'
import type { RootfsKind, RootfsPaths } from './rootfs.js'
import type { DeviceMapping, ExecSpec, RootfsRequest, RunSpec } from './run-spec.js'
import type { RuntimeBinary } from './runtimes.js'
import type { ProcessExit, SupervisedProcess } from './supervisor.js'

const ops = levelLogger('engine:runtime')

/** How long close() waits for the operations under way (runtime commands end within 30 s; a stuck start may not). */
const CLOSE_WAIT_MS = 30_000

export class ClosingRuntime implements ContainerRuntime {
  private readonly inner: ContainerRuntime
  /** The operations under way: runtime commands, monitor launches, root filesystem mounts. */
  private readonly underWay = new Set<Promise<unknown>>()
  private closed = false

  constructor (inner: ContainerRuntime) { this.inner = inner }

  private async op<T> (fn: () => Promise<T>): Promise<T> {
    if (this.closed) throw unavailable('the engine is shutting down')
    const p = fn()
    this.underWay.add(p)
    try { return await p } finally { this.underWay.delete(p) }
  }

  get host (): HostFacts { return this.inner.host }
  async init (): Promise<void> { await this.op(async () => { await this.inner.init() }) }
  async checkDevice (d: DeviceMapping): Promise<void> { await this.inner.checkDevice(d) }
  async prepareRootfs (r: RootfsRequest, withTree?: (merged: string) => Promise<void>): Promise<RootfsKind> { return await this.op(async () => await this.inner.prepareRootfs(r, withTree)) }
  async mountRootfs (r: RootfsRequest): Promise<void> { await this.op(async () => { await this.inner.mountRootfs(r) }) }
  async rootfsMounted (p: RootfsPaths): Promise<boolean> { return await this.inner.rootfsMounted(p) }
  async unmountRootfs (p: RootfsPaths): Promise<void> { await this.op(async () => { await this.inner.unmountRootfs(p) }) }
  async start (spec: RunSpec): Promise<SupervisedProcess> { return await this.op(async () => await this.inner.start(spec)) }
  async abortStart (id: string, cgroupParent: string): Promise<void> { await this.op(async () => { await this.inner.abortStart(id, cgroupParent) }) }
  async adopt (id: string, stateDir: string, runtime: RuntimeBinary): Promise<SupervisedProcess> { return await this.op(async () => await this.inner.adopt(id, stateDir, runtime)) }
  async reap (id: string, stateDir: string, runtime: RuntimeBinary): Promise<ProcessExit | null> { return await this.op(async () => await this.inner.reap(id, stateDir, runtime)) }
  async exec (spec: ExecSpec): Promise<SupervisedProcess> { return await this.op(async () => await this.inner.exec(spec)) }
  async kill (id: string, signal: string | number, all?: boolean): Promise<void> { await this.op(async () => { await this.inner.kill(id, signal, all) }) }
  async pause (id: string): Promise<void> { await this.op(async () => { await this.inner.pause(id) }) }
  async resume (id: string): Promise<void> { await this.op(async () => { await this.inner.resume(id) }) }
  async update (id: string, u: ResourceUpdate): Promise<void> { await this.op(async () => { await this.inner.update(id, u) }) }
  async processes (id: string): Promise<number[]> { return await this.op(async () => await this.inner.processes(id)) }
  async delete (id: string, dir: string, rootfs: RootfsPaths, runtime?: RuntimeBinary): Promise<void> { await this.op(async () => { await this.inner.delete(id, dir, rootfs, runtime) }) }
  watchOom (id: string, cgroupParent: string, onKill: () => void, seen: number): void { this.inner.watchOom(id, cgroupParent, onKill, seen) }
  unwatchOom (id: string): number { return this.inner.unwatchOom(id) }
  async oomKills (id: string, cgroupParent: string): Promise<number> { return await this.inner.oomKills(id, cgroupParent) }

  /** Refuses every operation from now on, waits for those under way (bounded), then closes the runtime. */
  async close (): Promise<void> {
    this.closed = true
    if (this.underWay.size > 0) {
      let timer: NodeJS.Timeout | undefined
      const ended = await Promise.race([
        Promise.allSettled([...this.underWay]).then(() => true),
        new Promise<false>((resolve) => { timer = setTimeout(() => { resolve(false) }, CLOSE_WAIT_MS) })
      ])
      clearTimeout(timer)
      if (!ended) ops.warn('the engine closes with %d runtime operations under way after %d ms (a start whose runtime is stuck)', this.underWay.size, CLOSE_WAIT_MS)
    }
    await this.inner.close()
  }
}

/** The engine's runtime: the monitored one (runc and berth-shim), ending with the engine. */
export function closingMonitoredRuntime (o: MonitoredRuntimeOptions): ClosingRuntime { return new ClosingRuntime(new MonitoredRuntime(o)) }
