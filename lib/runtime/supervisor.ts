// Supervision of containers' and execs' processes through their monitors (berth-shim): starting one, adopting one
// a previous daemon started, connecting to it (with retries while it comes up), reading how the process ended, and
// the runtime's records of container IDs that monitors leave behind. Exits are reported only through the
// `exited` promise of each supervised process.
import { stat } from 'node:fs/promises'
import { join } from 'node:path'
import { describeError } from '../errors.js'
import { levelLogger } from '../log.js'
import { nowNs } from '../util/time.js'
import type { Runc } from './runc.js'
import { MonitorLauncher } from './monitor-launcher.js'
import { processAlive, readExitStatus, readInitPid, readShimPid, ShimConnection, spawnShim, type ExitStatus, type ShimSpawnOptions } from './shim-client.js'

const ops = levelLogger('engine:supervisor')

/** What a monitor is asked to run: everything of ShimSpawnOptions but the binaries (the runtime is given apart). */
export type ProcessBundle = Omit<ShimSpawnOptions, 'shimPath' | 'runtime' | 'runtimeArgs' | 'runtimeRoot'>

/** How a supervised process ended; `error` is set (exit code 255) when its monitor died without recording it. */
export interface ProcessExit extends ExitStatus { error: string }

export const MONITOR_DIED = 'container monitor exited unexpectedly'

/** The runtime's record of a container that could not be deleted: a start of the same container refuses until it is. */
function leftRecord (id: string): (err: unknown) => void {
  return (err) => { ops.warn('container %s: the runtime\'s record was not deleted: %s', id.slice(0, 12), describeError(err)) }
}

export interface SupervisedProcess {
  /** The container's (or exec's) process (0 for one adopted after it ended, or whose runtime wrote no PID). */
  readonly pid: number
  /** Its monitor. */
  readonly monitorPid: number
  /** The monitor's attach connection (stdin, resize, output ticks), or null once the process is over. */
  readonly connection: Promise<ShimConnection | null>
  /** Settles when the process has ended (never once detach() was called). */
  readonly exited: Promise<ProcessExit>
  /**
   * Settles once the monitor is done with the container's root filesystem and network namespace file (it unmounts
   * them just after it has told the exit; at once when it is gone). A new start or a removal waits for it.
   */
  readonly released: Promise<void>
  /** Stops supervising (daemon close): the process keeps running and can be adopted again. */
  detach (): void
}

export interface SupervisorOptions {
  /** The monitor binary. */
  shimPath: string
  /** Where prepared monitors connect (a Unix socket path; the daemon's exec root keeps it private). */
  launcherSocket: string
}

const CONNECT_ATTEMPTS = 50
const CONNECT_RETRY_MS = 10

async function pathExists (p: string): Promise<boolean> {
  try { await stat(p); return true } catch { return false }
}

export class Supervisor {
  private readonly o: SupervisorOptions
  private readonly launcher: MonitorLauncher

  constructor (o: SupervisorOptions) {
    this.o = o
    this.launcher = new MonitorLauncher(o.shimPath, o.launcherSocket)
  }

  /** Lets the prepared monitor go (running monitors keep running). */
  close (): void { this.launcher.close() }

  /**
   * Spawns a monitor for the bundle, which runs it with `runc` (the container's runtime: its binary, options and
   * root); resolves once the runtime created (or started) the process.
   */
  async start (bundle: ProcessBundle, runc: Runc): Promise<SupervisedProcess> {
    const started = await spawnShim({ ...bundle, shimPath: this.o.shimPath, runtime: runc.binary, runtimeArgs: runc.args, runtimeRoot: runc.root }, this.launcher)
    // the process runs already and may even be over: a monitor that has finished has removed attach.sock, and its
    // exit.json tells the rest
    return this.watch(bundle.id, bundle.stateDir, started.pid, started.shimPid, this.connect(bundle.id, bundle.stateDir), bundle.execProcess === undefined, runc)
  }

  /**
   * Takes over the container process a previous daemon started (its monitor's state directory). A process that
   * ended meanwhile comes back with `connection` null and `exited` settled.
   */
  async adopt (id: string, stateDir: string, runc: Runc): Promise<SupervisedProcess> {
    let monitorPid = 0
    let pid = 0
    let conn: ShimConnection | null = null
    if ((await readExitStatus(stateDir)) === null) {
      const shimPid = await readShimPid(stateDir)
      if (shimPid !== null && processAlive(shimPid)) {
        try {
          conn = await ShimConnection.connect(stateDir)
          monitorPid = shimPid
          pid = await readInitPid(stateDir) ?? 0
        } catch (err) { ops.warn('container %s: its monitor (pid %d) runs but does not answer: %s', id.slice(0, 12), shimPid, describeError(err)) }
      }
    }
    return this.watch(id, stateDir, pid, monitorPid, Promise.resolve(conn), true, runc)
  }

  /**
   * A monitor reports an exit before it deletes the runtime's record of the ID (it takes several ms); starting the
   * same container again waits for that. A monitor that died leaves the record behind: it is deleted then.
   */
  async releaseRecord (id: string, monitorPid: number, runc: Runc): Promise<void> {
    const record = join(runc.root, id)
    for (let i = 0; i < 2500 && monitorPid !== 0 && processAlive(monitorPid) && await pathExists(record); i++) {
      await new Promise((resolve) => setTimeout(resolve, 2))
    }
    if (await pathExists(record)) await runc.delete(id).catch(leftRecord(id))
  }

  /** Deletes the runtime's record of a container being removed, unless its monitor still runs (it deletes it). */
  async removeRecord (id: string, monitorPid: number, runc: Runc): Promise<void> {
    const monitorBusy = monitorPid !== 0 && processAlive(monitorPid)
    if (!monitorBusy && await pathExists(join(runc.root, id))) await runc.delete(id).catch(leftRecord(id))
  }

  /** The monitor's attach.sock, or null once it is gone because the process is over (exit.json exists by then). */
  private async connect (id: string, stateDir: string): Promise<ShimConnection | null> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await ShimConnection.connect(stateDir)
      } catch (err) {
        if ((await readExitStatus(stateDir)) !== null) return null
        // no exit recorded: a refused connection is transient, unless it persists (the monitor died)
        if (attempt >= CONNECT_ATTEMPTS) { ops.warn('container %s: its monitor does not answer (taken as dead): %s', id.slice(0, 12), describeError(err)); return null }
        await new Promise((resolve) => setTimeout(resolve, CONNECT_RETRY_MS))
      }
    }
  }

  private watch (id: string, stateDir: string, pid: number, monitorPid: number, connection: Promise<ShimConnection | null>, ownsRecord: boolean, runc: Runc): SupervisedProcess {
    let detached = false
    let conn: ShimConnection | null = null
    const exited = (async (): Promise<ProcessExit> => {
      conn = await connection
      if (conn !== null) await conn.waitClosed()
      if (detached) return await new Promise<never>(() => {})
      // the monitor's last message, or its file (a monitor of an earlier version, a message lost)
      const exit = conn?.exitStatus ?? await readExitStatus(stateDir)
      if (exit !== null) return { ...exit, error: '' }
      // the monitor died without recording the exit; it cannot delete the runtime's record either
      if (ownsRecord) await runc.delete(id).catch(leftRecord(id))
      return { exitCode: 255, exitedAtNs: nowNs(), signal: 0, oomKilled: false, error: MONITOR_DIED }
    })()
    return {
      pid,
      monitorPid,
      connection,
      exited,
      released: connection.then(async (c) => { await c?.released }),
      detach () {
        detached = true
        void connection.then((c) => { c?.destroy() })
        ;(conn as ShimConnection | null)?.destroy()
      }
    }
  }
}
