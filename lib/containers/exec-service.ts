// Exec instances: a process started inside a running container through its own shim (exec mode), attached like a
// container, with its exit code kept for GET /exec/{id}/json. Exec instances live in memory only, as in dockerd.
import { readFile, rm } from 'node:fs/promises'
import { join } from 'node:path'
import { EventEmitter } from 'node:events'
import type { Duplex, Readable } from 'node:stream'
import { conflict, invalidArgument, notFound, errorMessage } from '../errors.js'
import { newId, resolvePrefix } from '../util/ids.js'
import { eventAttributes, isRunning } from './container.js'
import type { ContainerHandle } from './container-handle.js'
import type { ContainerService } from './container-service.js'
import type { ShimConnection } from '../runtime/shim-client.js'
import type { SupervisedProcess } from '../runtime/supervisor.js'
import type { ContainerRuntime } from '../runtime/container-runtime.js'
import type { ExecSpec } from '../runtime/run-spec.js'
import { countedWaiter, streamLog } from './log-reader.js'
import type { EventBus } from '../events/event-bus.js'
import { logger } from '../log.js'
import { RecordDecoder } from '../stream/log-record.js'
import { DetachDetector } from '../stream/detach-keys.js'

const log = logger('engine:exec')

export interface ExecConfig {
  cmd: string[]
  env: string[]
  user: string
  workingDir: string
  tty: boolean
  attachStdin: boolean
  attachStdout: boolean
  attachStderr: boolean
  privileged: boolean
  consoleSize: [number, number] | null
  /** The detach keys of a TTY exec's input (empty: dockerd's default ctrl-p ctrl-q). */
  detachKeys: Buffer
}

/** The command in an exec event's action as dockerd writes it: the entrypoint, a space, the arguments (`true `). */
function actionCommand (cmd: readonly string[]): string {
  return `${cmd[0] ?? ''} ${cmd.slice(1).join(' ')}`
}

export class ExecInstance extends EventEmitter {
  readonly id: string
  readonly container: ContainerHandle
  readonly config: ExecConfig
  running = false
  started = false
  exitCode: number | null = null
  pid = 0
  conn: ShimConnection | null = null
  constructor (id: string, container: ContainerHandle, config: ExecConfig) {
    super()
    this.id = id
    this.container = container
    this.config = config
  }

  get stateDir (): string { return join(this.container.stateDir, `x-${this.id.slice(0, 12)}`) }
}

export interface ExecServiceOptions {
  containers: ContainerService
  /** Runs the exec'd processes (through monitors, as it does the containers). */
  runtime: Pick<ContainerRuntime, 'exec'>
  events: EventBus
}

/** How an exec starts: its output's framing and terminal size, detached or on the client's connection. */
export interface ExecStartOptions {
  rawOutput: boolean
  consoleSize?: [number, number] | null
  detach: boolean
  io: { out: Duplex, input: Readable | null } | null
  signal: AbortSignal
}

export class ExecService {
  private readonly execs = new Map<string, ExecInstance>()
  private readonly o: ExecServiceOptions
  constructor (o: ExecServiceOptions) { this.o = o }

  /** A new exec instance in a running container (its request decoded by the route: lib/api/exec/wire.ts). */
  create (c: ContainerHandle, config: ExecConfig): ExecInstance {
    if (c.rec.state.status === 'paused') throw conflict(`Container ${c.id} is paused, unpause the container before exec`)
    if (!isRunning(c.rec) || c.conn === null) throw conflict(`Container ${c.id} is not running`)
    const inst = new ExecInstance(newId(), c, config)
    if (![...this.execs.values()].some((x) => x.container === c)) c.once('removed', () => { this.forget(c.id) })
    this.execs.set(inst.id, inst)
    this.emitExec(inst, `exec_create: ${actionCommand(config.cmd)}`)
    return inst
  }

  /** An exec's event (exec_create, exec_start, exec_die), with dockerd's actor attributes (the labels too). */
  private emitExec (e: ExecInstance, action: string, extra: Record<string, string> = {}): void {
    const c = e.container
    this.o.events.emit('container', action, c.id, eventAttributes(c.rec, { execID: e.id, ...extra }))
  }

  /** The container an exec is created in. */
  container (ref: string): ContainerHandle {
    return this.o.containers.get(ref)
  }

  get (ref: string): ExecInstance {
    const e = this.execs.get(ref) ?? (() => { const id = resolvePrefix(this.execs.keys(), ref); return id === undefined ? undefined : this.execs.get(id) })()
    if (e === undefined) throw notFound(`No such exec instance: ${ref}`)
    return e
  }

  /** Drops exec instances of a removed container (however it was removed: API, auto-remove, prune). */
  forget (containerId: string): void {
    for (const [id, e] of this.execs) if (e.container.id === containerId) this.execs.delete(id)
  }

  /** What the runtime runs for an exec: its command, environment, directory and user over the container's. */
  private execSpec (e: ExecInstance, o: { tty: boolean, stdin: boolean, logPath: string, consoleSize?: [number, number] | null }): ExecSpec {
    const c = e.container
    const cs = o.consoleSize ?? e.config.consoleSize
    return {
      containerId: c.id,
      dir: c.dir,
      // as the container sees its files (its mounts included)
      rootfs: `/proc/${c.rec.state.pid}/root`,
      stateDir: e.stateDir,
      logPath: o.logPath,
      args: e.config.cmd,
      env: e.config.env,
      cwd: e.config.workingDir,
      user: e.config.user,
      groupAdd: c.rec.run.groupAdd,
      privileged: e.config.privileged,
      tty: o.tty,
      stdin: o.stdin,
      consoleSize: cs === null ? null : { height: cs[0], width: cs[1] }
    }
  }

  /**
   * Runs `cmd` in the container as a health probe does: its exit code and its output (the first `maxOutput` bytes of
   * stdout and stderr together); a probe that outlives `timeoutMs` is killed and reported as exit code -1.
   */
  async probe (c: ContainerHandle, cmd: string[], timeoutMs: number, maxOutput = 4096): Promise<{ exitCode: number, output: string, timedOut: boolean }> {
    if (cmd.length === 0) throw invalidArgument('No exec command specified')
    const e = this.create(c, { cmd, env: [], user: '', workingDir: '', tty: false, attachStdin: false, attachStdout: true, attachStderr: true, privileged: false, consoleSize: null, detachKeys: Buffer.alloc(0) })
    e.started = true
    const dir = e.stateDir
    try {
      const logPath = join(dir, 'output.log')
      const proc = await this.o.runtime.exec(this.execSpec(e, { tty: false, stdin: false, logPath }))
      e.pid = proc.pid
      e.running = true
      // a probe is an exec like any other: dockerd reports its start and its end
      this.emitExec(e, `exec_start: ${actionCommand(cmd)}`)
      let timer: NodeJS.Timeout | undefined
      const timedOut = await Promise.race([
        proc.exited.then(() => false),
        new Promise<boolean>((resolve) => { timer = setTimeout(() => { resolve(true) }, timeoutMs); timer.unref() })
      ])
      if (timer !== undefined) clearTimeout(timer)
      if (timedOut) { try { process.kill(proc.pid, 'SIGKILL') } catch { /* gone */ } }
      const exit = await proc.exited
      e.running = false
      this.emitExec(e, 'exec_die', { exitCode: String(exit.exitCode) })
      e.exitCode = timedOut ? -1 : exit.exitCode
      const records = new RecordDecoder().feed(await readFile(logPath).catch(() => Buffer.alloc(0)))
      const output = Buffer.concat(records.map((r) => r.payload)).subarray(0, maxOutput).toString('utf8')
      return { exitCode: e.exitCode, output, timedOut }
    } finally {
      this.execs.delete(e.id)
      await rm(dir, { recursive: true, force: true }).catch(() => {}) // best effort: the next start clears it
    }
  }

  /**
   * Starts the process; with `io`, streams it and resolves when the output is over (or the client typed the detach
   * keys: the process goes on). The process has a terminal when the exec was created with Tty; the output is raw
   * bytes when the start request asked for Tty (`rawOutput`), stdcopy frames otherwise, as dockerd frames it.
   * `consoleSize`: the start request's, else the create's.
   */
  async start (e: ExecInstance, opts: ExecStartOptions): Promise<void> {
    if (e.running) throw conflict(`Error: Exec command ${e.id} is already running`)
    if (e.started) throw conflict(`Error: Exec command ${e.id} has already run`)
    const c = e.container
    if (!isRunning(c.rec) || c.conn === null) throw conflict(`Container ${c.id} is not running`)
    // as dockerd does, the exec counts as running from the start request on (inspect never shows it neither
    // running nor exited while its process is being set up)
    e.started = true
    e.running = true
    const dir = e.stateDir
    const tty = e.config.tty
    const logPath = join(dir, 'output.log')
    let proc: SupervisedProcess
    try {
      proc = await this.o.runtime.exec(this.execSpec(e, { tty, stdin: e.config.attachStdin && !opts.detach, logPath, consoleSize: opts.consoleSize ?? null }))
    } catch (err) {
      e.exitCode = 126
      e.running = false
      e.emit('exit')
      await rm(dir, { recursive: true, force: true }).catch(() => {}) // best effort: the next start clears it
      // the container stopped (or went) between the check above and the runtime's exec: the check's answer
      if (await stoppedMeanwhile(c, errorMessage(err))) throw conflict(`Container ${c.id} is not running`, { cause: err })
      throw err
    }
    e.pid = proc.pid
    // the process starts at once and may be over (and its monitor gone) before we connect: then only its exit
    // status and its log are left, and the same path below serves them
    const conn = await proc.connection
    e.conn = conn
    this.emitExec(e, `exec_start: ${actionCommand(e.config.cmd)}`)
    const finished = (async () => {
      const exit = await proc.exited
      // a monitor that died without recording the exit: the exec counts as never run properly
      e.exitCode = exit.error !== '' ? 126 : exit.exitCode
      e.running = false
      e.conn = null
      this.emitExec(e, 'exec_die', { exitCode: String(e.exitCode) })
      e.emit('exit')
    })()
    const io = opts.io
    if (io === null) {
      void finished.then(async () => { await rm(dir, { recursive: true, force: true }) }).catch((err) => { log('exec %s: %s', e.id, errorMessage(err)) })
      return
    }
    // the detach keys of a TTY exec: the output ends, the process goes on (dockerd's exec_detach)
    const detached = new AbortController()
    const signal = AbortSignal.any([opts.signal, detached.signal])
    if (io.input !== null && e.config.attachStdin && conn !== null) {
      const input = io.input
      const detector = tty ? new DetachDetector(e.config.detachKeys) : null
      const onData = (chunk: Buffer): void => {
        let d = chunk
        let detach = false
        if (detector !== null) ({ data: d, detached: detach } = detector.push(chunk))
        if (d.length > 0 && !conn.writeStdin(d) && !detach) { input.pause(); conn.once('drain', () => input.resume()) }
        if (detach) {
          input.off('data', onData)
          detached.abort()
          this.emitExec(e, 'exec_detach')
        }
      }
      input.on('data', onData)
      // the process's stdin closes when the client's input ends, however it ends (as dockerd closes an exec's stdin),
      // except a terminal's: dockerd never closes it for a client that goes
      let closed = false
      const close = (): void => { if (!closed && !tty && !detached.signal.aborted) { closed = true; conn.closeStdin() } }
      input.once('end', close)
      input.once('close', close)
      // a client that left while the process was being set up: its input is already over
      if (input.destroyed || input.readableEnded) close()
      // reading the start body may have paused the socket explicitly; a 'data' listener alone does not resume it then
      input.resume()
    } else io.input?.resume()
    await streamLog(io.out, {
      path: logPath,
      unit: 'pieces',
      startOffset: 0,
      stdout: e.config.attachStdout || !e.config.attachStderr,
      // raw output carries stdout only: dockerd gives a start with Tty no stderr writer
      stderr: !opts.rawOutput && (e.config.attachStderr || !e.config.attachStdout),
      tty: opts.rawOutput,
      timestamps: false,
      follow: true,
      done: () => !e.running,
      waitMore: countedWaiter(() => conn?.outputs ?? 0, async () => {
        if (signal.aborted) return
        await new Promise<void>((resolve) => {
          const fin = (): void => { conn?.off('output', fin); e.off('exit', fin); signal.removeEventListener('abort', fin); resolve() }
          conn?.on('output', fin); e.on('exit', fin); signal.addEventListener('abort', fin)
        })
      }),
      signal
    })
    if (!io.out.destroyed) io.out.end()
    // `finished` records the exec's own end; the state directory's removal is best effort (the next start clears it)
    const cleanup = finished.catch(() => {}).then(async () => { await rm(dir, { recursive: true, force: true }).catch(() => {}) })
    // a client that detached or went away does not wait for the process (a terminal's goes on without it)
    if (!signal.aborted) await cleanup
  }

  resize (e: ExecInstance, h: number, w: number): void {
    if (e.conn === null) throw conflict(`Exec ${e.id} is not running`)
    e.conn.resize(h, w)
  }
}

/** The runtime's words when the container's processes were gone as it entered them. */
const GONE_WORDS = /cannot exec in a stopped container|container does not exist/
/** Words of an exec that found the container's namespaces going: its exit may not be applied yet. */
const GOING_WORDS = /error executing setns process|no such process|broken pipe/

/**
 * Whether an exec's failure was the container stopping under it. When the runtime found its namespaces going while the
 * container is still recorded running (a kill whose exit the monitor has not told yet), the exit is waited for, up to
 * a second; any other failure is the exec's own (a command not found) and answers at once.
 */
async function stoppedMeanwhile (c: ContainerHandle, message: string): Promise<boolean> {
  if (!isRunning(c.rec) || c.conn === null || c.removed || GONE_WORDS.test(message)) return true
  if (!GOING_WORDS.test(message)) return false
  return await new Promise<boolean>((resolve) => {
    const timer = setTimeout(() => { c.off('exit', onExit); resolve(!isRunning(c.rec)) }, 1000)
    const onExit = (): void => { clearTimeout(timer); resolve(true) }
    c.once('exit', onExit)
  })
}
