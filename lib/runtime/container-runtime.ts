// The container runtime the engine drives: one interface (ContainerRuntime) for a container's root filesystem, its
// start from a typed RunSpec, the signals, pause, resume and resource updates of a running one, its deletion, the
// adoption of one a previous daemon started, exec'd processes and the OOM kills. MonitoredRuntime implements it over
// the OCI runtime's CLI (runc or crun), the per-container monitor (berth-shim), overlay root filesystems, cgroups and
// the OOM watch.
import { mkdir, rm, stat } from 'node:fs/promises'
import { join } from 'node:path'
import { describeError } from '../errors.js'
import { levelLogger, logger } from '../log.js'
import { writeFileAtomic } from '../util/atomic.js'
import { ociJson } from './oci-spec.js'
import { PRIVATE_DIR, PRIVATE_FILE } from '../util/private-modes.js'
import { etcFiles, execProcess, ociSpec, type BundleHost } from './bundle.js'
import { containerCgroupPath, isCgroup2, killCgroup, oomCounterFile, updateResources, type ResourceUpdate } from './cgroups.js'
import { deviceNode, readHostFacts, type HostFacts } from './host-facts.js'
import { OomWatch } from './oom-watch.js'
import { copyLayers, isMountPoint, mountRootfs, mountShm, overlayOptions, prepareOverlay, removeRootfs, unmountRootfs, unmountShm, type RootfsKind, type RootfsPaths } from './rootfs.js'
import { Runc } from './runc.js'
import type { RuntimeBinary } from './runtimes.js'
import { KEEP_TREES_FILE, type DeviceMapping, type ExecSpec, type RootfsRequest, type RunSpec } from './run-spec.js'
import { StartError, toStartError } from './start-error.js'
import type { ProcessExit, SupervisedProcess, Supervisor } from './supervisor.js'
import { processAlive, readExitStatus, readShimPid } from './shim-client.js'
import { readUserFiles, type UserFiles } from './user.js'

const log = logger('engine:runtime')
const ops = levelLogger('engine:runtime')

export interface ContainerRuntime {
  /** The host's cpusets, block I/O controllers and init binary (read by init()). */
  readonly host: HostFacts
  init (): Promise<void>
  /** Throws as a start would when a --device's node is not there (checked at create). */
  checkDevice (d: DeviceMapping): Promise<void>
  /**
   * At create: the root filesystem's directories, an overlay (mounted at each start) or a copy of the layers where
   * overlay fails. `withTree` runs with the tree mounted (a volume's copy-up). Returns how it is made.
   */
  prepareRootfs (r: RootfsRequest, withTree?: (merged: string) => Promise<void>): Promise<RootfsKind>
  /** Mounts the root filesystem of a container that does not run, for file operations (cp, export, commit, diff). */
  mountRootfs (r: RootfsRequest): Promise<void>
  rootfsMounted (p: RootfsPaths): Promise<boolean>
  unmountRootfs (p: RootfsPaths): Promise<void>
  /** Starts the container; resolves once its process runs (it may even have ended). Throws a StartError. */
  start (spec: RunSpec): Promise<SupervisedProcess>
  /**
   * Ends a start under way (for a kill, stop or forced removal while the runtime is stuck, `runc init` blocked): the
   * container's cgroup is killed, then the monitor's process group if the start has not ended 2 s later; resolves
   * once the start has ended (failed with exit code 137, or started a process that was killed). No start: nothing.
   */
  abortStart (id: string, cgroupParent: string): Promise<void>
  /**
   * Takes over the container process a previous daemon started with `runtime` (its `exited` is settled if it ended
   * meanwhile).
   */
  adopt (id: string, stateDir: string, runtime: RuntimeBinary): Promise<SupervisedProcess>
  /**
   * After a crash, for a container the engine does not record as running: a monitor a killed daemon left starting it
   * is made to end (its process killed, its exit waited for, so its namespace and veths go). Resolves with how it
   * ended, or null when no monitor ran.
   */
  reap (id: string, stateDir: string, runtime: RuntimeBinary): Promise<ProcessExit | null>
  /** Runs a process in a running container (with the runtime it was started with). */
  exec (spec: ExecSpec): Promise<SupervisedProcess>
  kill (id: string, signal: string | number, all?: boolean): Promise<void>
  pause (id: string): Promise<void>
  resume (id: string): Promise<void>
  /** A running container's cgroup limits, changed at once. */
  update (id: string, u: ResourceUpdate): Promise<void>
  /** The host PIDs of a running container's processes. */
  processes (id: string): Promise<number[]>
  /**
   * What a removed container leaves of the runtime: its record, its root filesystem and /dev/shm mount. `runtime`:
   * the one it last ran with (default: the one this daemon started or adopted it with, else the default).
   */
  delete (id: string, dir: string, rootfs: RootfsPaths, runtime?: RuntimeBinary): Promise<void>
  /** Calls `onKill` for each OOM kill in a running container's memory cgroup; `seen`: kills already known. */
  watchOom (id: string, cgroupParent: string, onKill: () => void, seen: number): void
  /** Stops watching; returns how many kills were reported meanwhile. */
  unwatchOom (id: string): number
  /** The OOM kills counted in the container's memory cgroup now. */
  oomKills (id: string, cgroupParent: string): Promise<number>
  /** Stops watching (containers keep running); resolves once the operations under way have ended (ClosingRuntime). */
  close (): Promise<void>
}

export interface MonitoredRuntimeOptions {
  /** The runtimes' state directory (their --root: one for every runtime, as dockerd's). */
  runtimeRoot: string
  /** For a container this daemon has neither started nor adopted: the default runtime at the daemon's start. */
  defaultRuntime: RuntimeBinary
  supervisor: Supervisor
  hostNofileHard: number
  allCaps: readonly string[]
  /** The init binary `--init` runs (the daemon's --init-path); default: found in PATH. */
  initPath?: string
  /**
   * Whether the kernel has overlayfs (the start checks read /proc/filesystems). false: every root filesystem is a
   * copy of its image's layers, no mount tried (a mount(8) spawn per create that could only fail).
   */
  overlay?: boolean
}

/** How long reap() kills and waits for a monitor a crashed daemon left (its process may not exist yet at first). */
const REAP_MS = 10_000

/** What one mount(2) data page holds, with room for the terminating NUL. */
const MOUNT_DATA_MAX = 4000

/** A container's own /dev/shm when its IPC is shareable (a tmpfs its peers bind): in its directory. */
export function shareableShmDir (containerDir: string): string { return join(containerDir, 'shm') }

/** An empty directory at `dir`: made at once (one call when it is new), or emptied first when a previous run left one. */
async function freshDir (dir: string): Promise<void> {
  try {
    await mkdir(dir, { mode: PRIVATE_DIR })
    return
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code
    if (code !== 'EEXIST' && code !== 'ENOENT') throw err
  }
  await rm(dir, { recursive: true, force: true })
  await mkdir(dir, { recursive: true, mode: PRIVATE_DIR })
}

async function pathExists (p: string): Promise<boolean> {
  try { await stat(p); return true } catch { return false }
}

export class MonitoredRuntime implements ContainerRuntime {
  private readonly o: MonitoredRuntimeOptions
  host: HostFacts = { cpus: '0', mems: '0', cpuCount: 1, blkioWeight: false, blkioThrottle: false }
  private bundleHost: BundleHost
  private cgroupV2 = false
  private readonly oomWatch = new OomWatch()
  /** The starts under way: their monitor once spawned, whether they were aborted, and when they end. */
  private readonly starting = new Map<string, { monitorPid: number, aborted: boolean, ended: Promise<void> }>()
  /** Aborts of a start still sweeping the container's cgroup: the next start of that container waits for them. */
  private readonly aborting = new Map<string, Promise<void>>()
  /** The monitor of each container's last start (it deletes the runtime's record a few ms after the exit). */
  private readonly monitors = new Map<string, number>()
  /** The runtime each container was last started (or adopted) with: its signals, execs and updates go through it. */
  private readonly inUse = new Map<string, Runc>()
  /** The runtime CLIs by binary and options (a few objects: one per runtime ever used). */
  private readonly runcs = new Map<string, Runc>()
  private readonly defaultRunc: Runc
  /** Whether an overlay mount has worked here (known after the first create that mounted one). */
  private overlayWorks = false
  /** Whether the operator was told that overlay mounts fail here (once per daemon run). */
  private overlayFailureTold = false
  /**
   * /etc/passwd and /etc/group of images as a fresh container sees them, read when a container of the image was
   * first mounted: a start whose writable layer has no /etc resolves its user from these and lets the monitor
   * mount the root filesystem (one mount(2)) instead of a mount(8) by the daemon.
   */
  private readonly imageUserFiles = new Map<string, UserFiles>()

  constructor (o: MonitoredRuntimeOptions) {
    this.o = o
    this.bundleHost = { hostNofileHard: o.hostNofileHard, allCaps: o.allCaps }
    this.defaultRunc = this.runcFor(o.defaultRuntime)
  }

  private runcFor (r: RuntimeBinary): Runc {
    const key = JSON.stringify([r.path, r.args])
    let runc = this.runcs.get(key)
    if (runc === undefined) {
      runc = new Runc({ binary: r.path, args: r.args, root: this.o.runtimeRoot })
      this.runcs.set(key, runc)
    }
    return runc
  }

  /** The runtime a container runs with. */
  private runcOf (id: string): Runc { return this.inUse.get(id) ?? this.defaultRunc }

  async init (): Promise<void> {
    const [host, v2] = await Promise.all([readHostFacts(this.o.initPath), isCgroup2()])
    this.host = host
    this.cgroupV2 = v2
    this.bundleHost = { ...this.bundleHost, ...(host.initPath !== undefined ? { initPath: host.initPath } : {}) }
  }

  async checkDevice (d: DeviceMapping): Promise<void> { await deviceNode(d.pathOnHost, d.pathInContainer) }

  // ---- root filesystems -----------------------------------------------------------------------------------------

  async prepareRootfs (r: RootfsRequest, withTree?: (merged: string) => Promise<void>): Promise<RootfsKind> {
    if (this.overlayWorks && r.layers.length > 0 && this.imageUserFiles.has(r.imageId) && withTree === undefined) {
      // nothing needs the tree before the start, and the monitor mounts it then
      await prepareOverlay(r.paths)
      return 'overlay'
    }
    const kind = await mountRootfs(r.paths, r.layers, this.o.overlay === false ? 'copy' : 'overlay', (cause) => {
      if (this.overlayFailureTold) return
      this.overlayFailureTold = true
      ops.warn('an overlay mount failed: root filesystems are made by copying their image\'s layers (slower creates, more disk) while it does: %s', cause)
    })
    if (kind === 'copy') await copyLayers(r.paths, r.layers)
    else {
      this.overlayWorks = true
      this.rememberUserFiles(r.imageId, await readUserFiles(r.paths.merged))
    }
    if (withTree !== undefined) await withTree(r.paths.merged)
    // mounted at start like every container (the monitor mounts it then), not from create on
    if (kind === 'overlay') await unmountRootfs(r.paths)
    return kind
  }

  private rememberUserFiles (imageId: string, files: UserFiles): void {
    this.imageUserFiles.delete(imageId)
    this.imageUserFiles.set(imageId, files)
    // a bounded cache: the oldest image goes first
    if (this.imageUserFiles.size > 64) this.imageUserFiles.delete(this.imageUserFiles.keys().next().value as string)
  }

  async mountRootfs (r: RootfsRequest): Promise<void> { await mountRootfs(r.paths, r.layers, 'overlay') }
  async rootfsMounted (p: RootfsPaths): Promise<boolean> { return await isMountPoint(p.merged) }
  async unmountRootfs (p: RootfsPaths): Promise<void> { await unmountRootfs(p) }

  /**
   * At start: the root filesystem mounted, or the overlay options the monitor mounts it with (`overlay`; then
   * `userFiles` are the image's, which the user is resolved from).
   */
  private async mountForStart (r: RootfsRequest): Promise<{ overlay?: string, userFiles?: UserFiles }> {
    if (r.kind !== 'overlay') return {}
    let userFiles = this.imageUserFiles.get(r.imageId)
    // the image's user files are the container's while its writable layer has no /etc of its own
    const options = overlayOptions(r.paths, r.layers)
    // mount(2) takes the options as one page; mount(8) passes long lower lists through libmount's newer API
    if (userFiles !== undefined && r.layers.length > 0 && options.length < MOUNT_DATA_MAX) {
      // (both asked at once: two thread-pool round trips on every start otherwise)
      const [mounted, ownEtc] = await Promise.all([isMountPoint(r.paths.merged), pathExists(join(r.paths.upper, 'etc'))])
      if (!mounted && !ownEtc) return { overlay: options, userFiles }
    }
    userFiles = undefined
    await mountRootfs(r.paths, r.layers, 'overlay')
    return {}
  }

  // ---- processes ------------------------------------------------------------------------------------------------

  async start (spec: RunSpec): Promise<SupervisedProcess> {
    // an abort of the previous start sweeps the cgroup once more after that start ended: this start's runtime init
    // must not be in it then (it was killed mid-way: "error during container init", for a restart racing a kill)
    await this.aborting.get(spec.id)
    const runc = this.runcFor(spec.runtime)
    let ended!: () => void
    const under = { monitorPid: 0, aborted: false, ended: new Promise<void>((resolve) => { ended = resolve }) }
    this.starting.set(spec.id, under)
    try {
      const { overlay, userFiles } = await this.mountForStart(spec.rootfs)
      if (spec.shareableShm !== undefined) await mountShm(spec.shareableShm.dir, spec.shareableShm.size)
      const config = ociJson(await ociSpec(spec, this.bundleHost, userFiles))
      // the monitor's fresh state directory and the previous run's record side by side; the bundle's files go to the
      // monitor, which writes them (or are written before one is spawned: shim-client's spawnShim)
      const files = [{ path: join(spec.dir, 'config.json'), mode: PRIVATE_FILE, data: config }, ...etcFiles(spec)]
      await Promise.all([
        freshDir(spec.stateDir),
        // (the previous run's record goes with the runtime that made it)
        this.o.supervisor.releaseRecord(spec.id, this.monitors.get(spec.id) ?? 0, this.inUse.get(spec.id) ?? runc)
      ])
      const proc = await this.o.supervisor.start({
        id: spec.id,
        bundle: spec.dir,
        stateDir: spec.stateDir,
        logPath: spec.log.path,
        tty: spec.process.tty,
        stdin: spec.process.openStdin,
        start: true,
        ...(spec.rootfs.kind === 'overlay' ? { rootfs: spec.rootfs.paths.merged } : {}),
        ...(overlay !== undefined ? { overlay } : {}),
        oomFile: this.oomFile(spec.id, spec.cgroupParent),
        onSpawn: (pid) => { under.monitorPid = pid },
        logMaxSize: spec.log.maxSize,
        logMaxFiles: spec.log.maxFiles,
        ...(spec.namespaces.net.kind === 'create' ? { netns: spec.namespaces.net.path, veths: spec.namespaces.net.veths } : {}),
        ...(spec.resolver !== undefined ? { resolver: spec.resolver } : {}),
        ...(spec.publish !== undefined && spec.publish.length > 0 ? { publish: spec.publish } : {}),
        // an auto-removed container's trees go with its monitor's exit (the removal deletes what is left)
        // (unless the container's directory holds KEEP_TREES_FILE then: a docker restart stops and starts it again)
        ...(spec.removeAtExit === true && spec.rootfs.kind === 'overlay' ? { removeTrees: [spec.rootfs.paths.upper, spec.rootfs.paths.work, spec.rootfs.paths.merged], keepTreesIf: join(spec.dir, KEEP_TREES_FILE) } : {}),
        files
      }, runc)
      this.monitors.set(spec.id, proc.monitorPid)
      this.inUse.set(spec.id, runc)
      return proc
    } catch (err) {
      if (under.aborted) throw new StartError('conflict', `container ${spec.id} was killed while its runtime was starting it`, 137, err)
      throw toStartError(err)
    } finally {
      this.starting.delete(spec.id)
      ended()
    }
  }

  async abortStart (id: string, cgroupParent: string): Promise<void> {
    const under = this.starting.get(id)
    if (under === undefined) return
    if (under.aborted) { await this.aborting.get(id); return }
    const sweep = this.abortUnder(id, under, cgroupParent)
    this.aborting.set(id, sweep)
    try { await sweep } finally { if (this.aborting.get(id) === sweep) this.aborting.delete(id) }
  }

  private async abortUnder (id: string, under: { monitorPid: number, aborted: boolean, ended: Promise<void> }, cgroupParent: string): Promise<void> {
    under.aborted = true
    // the runtime's init (in the container's cgroup) first: the runtime then fails the start and the monitor reports
    // it; if it does not, the monitor's process group (the monitor, the runtime) goes too
    const cgroup = containerCgroupPath(id, cgroupParent)
    await killCgroup(cgroup, this.cgroupV2)
    const t = setTimeout(() => { if (under.monitorPid > 0) { try { process.kill(-under.monitorPid, 'SIGKILL') } catch { /* gone */ } } }, 2000)
    await under.ended
    clearTimeout(t)
    await killCgroup(cgroup, this.cgroupV2)
  }

  async adopt (id: string, stateDir: string, runtime: RuntimeBinary): Promise<SupervisedProcess> {
    const runc = this.runcFor(runtime)
    this.inUse.set(id, runc)
    const proc = await this.o.supervisor.adopt(id, stateDir, runc)
    if (proc.monitorPid !== 0) this.monitors.set(id, proc.monitorPid)
    return proc
  }

  async reap (id: string, stateDir: string, runtime: RuntimeBinary): Promise<ProcessExit | null> {
    if ((await readExitStatus(stateDir)) !== null) return null
    const shimPid = await readShimPid(stateDir)
    if (shimPid === null || !processAlive(shimPid)) return null
    log('a monitor runs container %s, which is not recorded as running: stopping it', id)
    const proc = await this.adopt(id, stateDir, runtime)
    const runc = this.runcOf(id)
    let ended: ProcessExit | null = null
    void proc.exited.then((e) => { ended = e })
    for (const deadline = Date.now() + REAP_MS; ended === null && Date.now() < deadline;) {
      // fails until the runtime has made the container, and once it is gone: tried again until the monitor ends
      await runc.kill(id, 'KILL', true).catch(() => {})
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
    if (ended === null) { ops.warn('container %s: its monitor (pid %d) did not end after %d ms of kills; left running', id.slice(0, 12), proc.monitorPid, REAP_MS); proc.detach() }
    return ended
  }

  async exec (e: ExecSpec): Promise<SupervisedProcess> {
    await rm(e.stateDir, { recursive: true, force: true })
    await mkdir(e.stateDir, { recursive: true, mode: PRIVATE_DIR })
    const procPath = join(e.stateDir, 'process.json')
    await writeFileAtomic(procPath, ociJson(await execProcess(e, this.o.allCaps)))
    return await this.o.supervisor.start({ id: e.containerId, bundle: e.dir, stateDir: e.stateDir, logPath: e.logPath, tty: e.tty, stdin: e.stdin, execProcess: procPath }, this.runcOf(e.containerId))
  }

  async kill (id: string, signal: string | number, all = false): Promise<void> { await this.runcOf(id).kill(id, signal, all) }
  async pause (id: string): Promise<void> { await this.runcOf(id).pause(id) }
  async resume (id: string): Promise<void> { await this.runcOf(id).resume(id) }
  async update (id: string, u: ResourceUpdate): Promise<void> { await updateResources(this.runcOf(id), id, u) }
  async processes (id: string): Promise<number[]> { return await this.runcOf(id).ps(id) }

  async delete (id: string, dir: string, rootfs: RootfsPaths, runtime?: RuntimeBinary): Promise<void> {
    // a monitor still running deletes the runtime's record itself (just after reporting the exit)
    await this.o.supervisor.removeRecord(id, this.monitors.get(id) ?? 0, this.inUse.get(id) ?? (runtime !== undefined ? this.runcFor(runtime) : this.defaultRunc))
    this.monitors.delete(id)
    this.inUse.delete(id)
    await removeRootfs(rootfs)
    await unmountShm(shareableShmDir(dir)).catch((err) => { ops.warn('container %s: its /dev/shm stays mounted: %s', id.slice(0, 12), describeError(err)) })
  }

  // ---- OOM kills ------------------------------------------------------------------------------------------------

  private oomFile (id: string, cgroupParent: string): string {
    return oomCounterFile(containerCgroupPath(id, cgroupParent), this.cgroupV2)
  }

  watchOom (id: string, cgroupParent: string, onKill: () => void, seen: number): void {
    this.oomWatch.watch(id, this.oomFile(id, cgroupParent), onKill, seen)
  }

  unwatchOom (id: string): number { return this.oomWatch.unwatch(id) }

  async oomKills (id: string, cgroupParent: string): Promise<number> { return await OomWatch.count(this.oomFile(id, cgroupParent)) }

  async close (): Promise<void> {
    this.oomWatch.close()
    this.o.supervisor.close()
  }
}
