// The daemon's side of the container monitor (lib/runtime/shim/berth-shim.c).
// spawnShim() starts one (detached, own session) and waits for its sync line; ShimConnection talks to its
// attach.sock: output ticks in, stdin/close/resize messages out, EOF when the process has exited and exit.json exists.
import { spawn } from 'node:child_process'
import net from 'node:net'
import { EventEmitter } from 'node:events'
import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { invalidArgument, internal } from '../errors.js'
import { logger } from '../log.js'
import type { PublishSpec, VethSpec } from './run-spec.js'

const log = logger('engine:shim')

export const MSG_STDIN = 1
export const MSG_CLOSE_STDIN = 2
export const MSG_RESIZE = 3

export interface ShimSpawnOptions {
  shimPath: string
  id: string
  bundle: string
  stateDir: string
  runtime: string
  /** Options the runtime gets before each of its commands (daemon.json's runtimeArgs). */
  runtimeArgs?: readonly string[]
  runtimeRoot: string
  logPath: string
  tty: boolean
  stdin: boolean
  /** exec mode: path of a process.json */
  execProcess?: string
  /** container mode: start the process too (`run --detach` rather than `create`) */
  start?: boolean
  /** container mode: the root filesystem mount, detached by the shim once the process has exited */
  rootfs?: string
  /** container mode, with `rootfs`: overlay mount options; the shim mounts the root filesystem itself (mount(2)) */
  overlay?: string
  /** container mode: the cgroup's OOM counter file (memory.oom_control or memory.events), read at the exit */
  oomFile?: string
  /** container mode: rotate the log at this many bytes, keeping logMaxFiles files (the live one included) */
  logMaxSize?: number
  logMaxFiles?: number
  /** container mode: the network namespace the monitor serves the container's embedded DNS resolver in */
  resolver?: string
  /** Told the monitor's pid as soon as it is spawned (before the runtime has created anything). */
  onSpawn?: (shimPid: number) => void
  /** container mode: a new network namespace the shim makes (loopback up) and bind-mounts on this file */
  netns?: string
  /** with `netns`: the veth pairs the shim wires into it */
  veths?: VethSpec[]
  /** container mode: host ports the monitor binds before the process starts and relays to the target until it exits */
  publish?: PublishSpec[]
  /** container mode, with `rootfs`: trees the monitor deletes after the exit, once the root filesystem is unmounted */
  removeTrees?: string[]
  /** with `removeTrees`: they stay when this file exists at the exit (a manual restart) */
  keepTreesIf?: string
  /**
   * container mode: the bundle's files of this start (config.json, the /etc files): a prepared monitor writes them
   * (they follow its command line on its connection, never on the command line, which ps shows); written here before
   * a monitor is spawned.
   */
  files?: StartFile[]
}

/** A file of a start's bundle, directly in the bundle directory. */
export interface StartFile { path: string, mode: number, data: string }

/** The records a prepared monitor reads after its command line (lib/runtime/shim/start-files.c). */
export function encodeStartFiles (files: StartFile[]): Buffer {
  const parts: Buffer[] = []
  for (const f of files) {
    const path = Buffer.from(f.path)
    const data = Buffer.from(f.data)
    const h = Buffer.allocUnsafe(8)
    h.writeUInt32BE(f.mode, 0)
    h.writeUInt32BE(path.length, 4)
    const n = Buffer.allocUnsafe(4)
    n.writeUInt32BE(data.length, 0)
    parts.push(h, path, n, data)
  }
  return Buffer.concat(parts)
}

/** The files written by the daemon (a monitor it spawns itself). */
async function writeStartFiles (files: StartFile[]): Promise<void> {
  await Promise.all(files.map(async (f) => { await writeFile(f.path, f.data, { mode: f.mode }) }))
}

/** A --veth argument (see lib/runtime/shim/shim.h). */
export function vethArg (v: VethSpec): string {
  return [`host=${v.hostName}`, `peer=${v.ifName}`, `bridge=${v.bridge}`, `mac=${v.mac}`, `mtu=${v.mtu}`,
    ...v.addresses.map((a) => `addr=${a}`), ...v.gateways.map((g) => `gw=${g}`)].join(',')
}

export interface ShimStarted {
  /** the container (or exec) process */
  pid: number
  /** the monitor itself */
  shimPid: number
}

export interface ExitStatus { exitCode: number, exitedAtNs: bigint, signal: number, oomKilled: boolean }

/** A monitor on its way: its pid (0 when unknown) and its sync line (all it writes to its sync fd, until EOF). */
export interface LaunchedMonitor { pid: number, syncLine: Promise<string> }

/**
 * What starts a monitor from its arguments: a prepared one handed them (monitor-launcher.ts), or a spawn. `files`:
 * the start's bundle files, for a prepared monitor to write (only when `prepared()` said one is ready).
 */
export interface Launcher {
  launch (args: string[], files?: Buffer): LaunchedMonitor
  /** Whether a prepared monitor is ready (launch() in the same tick hands it the command line). */
  prepared (): boolean
}

/**
 * The monitor's one line on its sync stream, as soon as its newline came (the monitor writes nothing after it), or what
 * came until the stream's end (nothing when it died first).
 */
export async function readSyncLine (sync: NodeJS.ReadableStream): Promise<string> {
  return await new Promise<string>((resolve, reject) => {
    let text = ''
    sync.setEncoding('utf8')
    sync.on('data', (d: string) => { text += d; if (text.includes('\n')) resolve(text) })
    sync.on('end', () => { resolve(text) })
    sync.on('close', () => { resolve(text) })
    sync.on('error', reject)
    sync.resume() // (a prepared monitor's connection was paused while it waited)
  }).finally(() => { (sync as unknown as net.Socket).destroy?.() })
}

/** Spawns a monitor from the daemon (its sync fd a pipe), detached in its own session. */
export function launchDirect (shimPath: string, args: string[]): LaunchedMonitor {
  const child = spawn(shimPath, args, { detached: true, stdio: ['ignore', 'ignore', 'ignore', 'pipe'] })
  const sync = child.stdio[3] as NodeJS.ReadableStream | null
  if (sync === null) return { pid: child.pid ?? 0, syncLine: Promise.reject(internal('shim: no sync pipe')) }
  const syncLine = new Promise<string>((resolve, reject) => {
    child.once('error', reject)
    readSyncLine(sync).then(resolve, reject)
  }).finally(() => { child.unref() })
  return { pid: child.pid ?? 0, syncLine }
}

/**
 * Starts a shim (through `launcher` when given: a prepared one); resolves with the process's and the shim's pids once
 * the runtime created (or started) it.
 */
export async function spawnShim (o: ShimSpawnOptions, launcher?: Launcher): Promise<ShimStarted> {
  const args = ['--id', o.id, '--bundle', o.bundle, '--state', o.stateDir, '--runtime', o.runtime,
    '--runtime-root', o.runtimeRoot, '--log', o.logPath]
  for (const a of o.runtimeArgs ?? []) args.push('--runtime-arg', a)
  if (o.tty) args.push('--tty')
  if (o.stdin) args.push('--stdin')
  if (o.start === true) args.push('--start')
  if (o.rootfs !== undefined) args.push('--rootfs', o.rootfs)
  if (o.overlay !== undefined) args.push('--overlay', o.overlay)
  if (o.oomFile !== undefined) args.push('--oom-file', o.oomFile)
  if (o.logMaxSize !== undefined && o.logMaxSize > 0) args.push('--log-max-size', String(o.logMaxSize), '--log-max-files', String(o.logMaxFiles ?? 1))
  if (o.resolver !== undefined) args.push('--resolver', o.resolver)
  if (o.netns !== undefined) args.push('--netns', o.netns)
  for (const v of o.veths ?? []) args.push('--veth', vethArg(v))
  if (o.execProcess !== undefined) args.push('--exec', o.execProcess)
  for (const p of o.publish ?? []) args.push('--publish', `${p.proto},${p.hostIp},${p.hostPort},${p.targetIp},${p.targetPort}`)
  for (const t of o.removeTrees ?? []) args.push('--remove-tree', t)
  if (o.keepTreesIf !== undefined && (o.removeTrees ?? []).length > 0) args.push('--keep-trees-if', o.keepTreesIf)
  // the bundle's files: a prepared monitor writes them (no thread-pool round trips here), else they are written now
  let files: Buffer | undefined
  if (o.files !== undefined && o.files.length > 0) {
    if (launcher?.prepared() === true) files = encodeStartFiles(o.files)
    else await writeStartFiles(o.files)
  }
  if (files !== undefined) args.push('--files', String(files.length))
  log('spawn %s %s', o.shimPath, args.join(' '))
  // (no await between the check above and the launch: the prepared monitor is still the ready one)
  const launched = launcher !== undefined ? launcher.launch(args, files) : launchDirect(o.shimPath, args)
  if (launched.pid > 0) o.onSpawn?.(launched.pid)
  const line = await launched.syncLine
  let msg: { pid?: number, error?: string }
  try { msg = JSON.parse(line.trim()) as typeof msg } catch {
    throw internal(`shim failed to start${line === '' ? '' : ': ' + line.trim()}`)
  }
  if (typeof msg.pid === 'number') return { pid: msg.pid, shimPid: launched.pid }
  throw invalidArgument(`failed to create task: OCI runtime create failed: ${msg.error ?? 'unknown error'}`)
}

/** exit.json's text (the file, or the monitor's last message on attach.sock); null when it is not a whole one. */
export function parseExitStatus (text: string): ExitStatus | null {
  try {
    const j = JSON.parse(text) as { exitCode: number, exitedAtNs: string, signal?: number, oomKilled?: boolean }
    if (typeof j.exitCode !== 'number' || typeof j.exitedAtNs !== 'string') return null
    return { exitCode: j.exitCode, exitedAtNs: BigInt(j.exitedAtNs), signal: j.signal ?? 0, oomKilled: j.oomKilled === true }
  } catch { return null }
}

export async function readExitStatus (stateDir: string): Promise<ExitStatus | null> {
  try { return parseExitStatus(await readFile(join(stateDir, 'exit.json'), 'utf8')) } catch { return null }
}

export async function readShimPid (stateDir: string): Promise<number | null> {
  try {
    const n = Number.parseInt(await readFile(join(stateDir, 'shim.pid'), 'utf8'), 10)
    return Number.isFinite(n) && n > 0 ? n : null
  } catch { return null }
}

/** The container's (or exec's) process, as the runtime recorded it in the monitor's state directory. */
export async function readInitPid (stateDir: string): Promise<number | null> {
  try {
    const n = Number.parseInt(await readFile(join(stateDir, 'init.pid'), 'utf8'), 10)
    return Number.isFinite(n) && n > 0 ? n : null
  } catch { return null }
}

export function processAlive (pid: number): boolean {
  try { process.kill(pid, 0); return true } catch (err) { return (err as NodeJS.ErrnoException).code === 'EPERM' }
}

/** The longest exit message a monitor sends (its exit.json, well under it). */
const EXIT_MESSAGE_MAX = 512

/**
 * A connection to a shim's attach.sock. Events: 'output' (new log data may be available), 'exit' (the process
 * exited: the monitor said so, or closed the connection, or died). Stdin writes respect backpressure through
 * write()'s boolean and 'drain'. At the exit the monitor sends `x` and exit.json's text (`exitStatus` then has it, and
 * the file need not be read), then unmounts the root filesystem and the namespace file, writes exit.json and closes
 * the connection: `released` settles then.
 */
export class ShimConnection extends EventEmitter {
  private readonly socket: net.Socket
  private closed = false
  /** How many output notifications came (a follower compares it to know it missed none). */
  outputs = 0
  /** The exit status the monitor sent before closing (null: none came, as from a monitor of an earlier version). */
  exitStatus: ExitStatus | null = null
  /** The exit message so far, from its `x` on (null until one begins). */
  private exitText: string | null = null
  /** Settles when the connection has closed: the monitor is done with the container's root filesystem and namespace. */
  readonly released: Promise<void>

  private constructor (socket: net.Socket) {
    super()
    this.socket = socket
    this.released = new Promise((resolve) => { socket.once('close', () => { resolve() }) })
    socket.on('data', (d: Buffer) => {
      if (this.exitText === null) {
        const x = d.indexOf(0x78) // 'x': what follows is exit.json's text; the output ticks before it still count
        if (x === -1) { this.outputs++; this.emit('output'); return }
        if (x > 0) { this.outputs++; this.emit('output') }
        this.exitText = ''
        d = d.subarray(x + 1)
      }
      if (this.exitText.length + d.length > EXIT_MESSAGE_MAX) return
      this.exitText += d.toString('latin1')
      if (!this.exitText.endsWith('\n')) return
      this.exitStatus = parseExitStatus(this.exitText)
      // the monitor's last words: it unmounts and closes the connection next (released)
      if (this.exitStatus !== null) this.ended()
    })
    socket.on('drain', () => { this.emit('drain') })
    socket.on('error', (err) => { log('attach.sock error: %s', err.message) })
    socket.on('close', () => { this.ended() })
  }

  private ended (): void {
    if (this.closed) return
    this.closed = true
    this.emit('exit')
  }

  static async connect (stateDir: string): Promise<ShimConnection> {
    const path = join(stateDir, 'attach.sock')
    const socket = await new Promise<net.Socket>((resolve, reject) => {
      const s = net.connect(path)
      s.once('connect', () => { s.off('error', reject); resolve(s) })
      s.once('error', reject)
    })
    socket.unref()
    return new ShimConnection(socket)
  }

  get isClosed (): boolean { return this.closed }

  private send (type: number, payload: Buffer): boolean {
    if (this.closed) return true
    const h = Buffer.allocUnsafe(5)
    h[0] = type
    h.writeUInt32BE(payload.length, 1)
    this.socket.cork()
    this.socket.write(h)
    const ok = this.socket.write(payload)
    this.socket.uncork()
    return ok
  }

  writeStdin (data: Buffer): boolean {
    let ok = true
    for (let off = 0; off < data.length; off += 65536) ok = this.send(MSG_STDIN, data.subarray(off, off + 65536))
    return ok
  }

  closeStdin (): void { this.send(MSG_CLOSE_STDIN, Buffer.alloc(0)) }

  resize (rows: number, cols: number): void {
    const p = Buffer.allocUnsafe(4)
    p.writeUInt16BE(rows & 0xffff, 0)
    p.writeUInt16BE(cols & 0xffff, 2)
    this.send(MSG_RESIZE, p)
  }

  /** Waits for the connection to close (the process exited). */
  async waitClosed (): Promise<void> {
    if (this.closed) return
    await new Promise<void>((resolve) => { this.once('exit', resolve) })
  }

  destroy (): void { this.socket.destroy() }
}
