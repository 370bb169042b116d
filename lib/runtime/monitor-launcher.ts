// Starting monitors without forking the daemon on the start path. A monitor started ahead of need (`berth-shim
// --prepared SOCKET`, see lib/runtime/shim/prepared.c: its network namespace already made) connects to the daemon's
// socket and waits; a start hands it its command line there and reads its sync line back on the same connection.
// Each prepared monitor that gets a command line forks the next one (a small process, a cheap fork), so a run of
// starts never forks the daemon (a large process: page tables copied, the event loop blocked until the exec). The
// daemon spawns a monitor itself when none is ready (the first start, starts at the same moment) and then seeds the
// chain again. A prepared monitor waiting longer than IDLE_MS is let go: an idle daemon keeps no process.
import { spawn } from 'node:child_process'
import net from 'node:net'
import { chmod, rm } from 'node:fs/promises'
import { logger } from '../log.js'
import { errorMessage } from '../errors.js'
import { launchDirect, readSyncLine, type LaunchedMonitor, type Launcher } from './shim-client.js'

const log = logger('engine:shim')

/** How long a prepared monitor waits for a start before it is let go. */
const IDLE_MS = 30_000
/** Room in a prepared monitor's argument area for the command line it is handed (berth-shim's prepared.c: the same). */
const PADDING = 8192
/** How long a prepared monitor on its way (forked by the last one, or seeded) is waited for before seeding again. */
const EXPECT_MS = 5_000

interface Prepared { socket: net.Socket, pid: number }

export class MonitorLauncher implements Launcher {
  private readonly shimPath: string
  private readonly socketPath: string
  private server: net.Server | null = null
  private listening: Promise<void> | null = null
  private ready: Prepared | null = null
  /** When a prepared monitor is expected to connect (0: none is on its way). */
  private expectedUntil = 0
  private idle: NodeJS.Timeout | null = null
  private closed = false

  constructor (shimPath: string, socketPath: string) {
    this.shimPath = shimPath
    this.socketPath = socketPath
  }

  prepared (): boolean { return this.ready !== null && !this.ready.socket.destroyed }

  /**
   * A monitor running with `args`: the prepared one if it is ready, else spawned now. `files` (the start's bundle
   * files, see shim-client's encodeStartFiles) follow the command line; only when prepared() said one is ready.
   */
  launch (args: string[], files?: Buffer): LaunchedMonitor {
    const p = this.ready
    this.ready = null
    if (p !== null && !p.socket.destroyed) {
      // it forks the next prepared monitor as soon as it has its command line
      this.expectedUntil = Date.now() + EXPECT_MS
      return this.handOver(p, args, files)
    }
    const launched = launchDirect(this.shimPath, args)
    this.seed()
    return launched
  }

  private handOver (p: Prepared, args: string[], files?: Buffer): LaunchedMonitor {
    const body = Buffer.from(args.map((a) => `${a}\0`).join(''))
    const head = Buffer.allocUnsafe(4)
    head.writeUInt32BE(body.length, 0)
    p.socket.removeAllListeners('data')
    p.socket.removeAllListeners('close')
    p.socket.write(files !== undefined ? Buffer.concat([head, body, files]) : Buffer.concat([head, body]))
    return { pid: p.pid, syncLine: readSyncLine(p.socket) }
  }

  /** The first prepared monitor of a chain (spawned by the daemon: off the start's path, while runc runs). */
  private seed (): void {
    if (this.closed || this.ready !== null || Date.now() < this.expectedUntil) return
    this.expectedUntil = Date.now() + EXPECT_MS
    void this.listen().then(() => {
      // (the padding is room for the command line it shows once it has one: ps then reads as for any monitor)
      const c = spawn(this.shimPath, ['--prepared', this.socketPath, ' '.repeat(PADDING)], { detached: true, stdio: 'ignore' })
      c.on('error', (err) => { log('prepared monitor: %s', err.message) })
      c.unref()
    }, (err) => { log('monitors socket %s: %s', this.socketPath, errorMessage(err)) })
  }

  private async listen (): Promise<void> {
    this.listening ??= (async () => {
      await rm(this.socketPath, { force: true })
      const server = net.createServer((s) => { this.accept(s) })
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject)
        server.listen(this.socketPath, () => { server.off('error', reject); resolve() })
      })
      server.on('error', (err) => { log('monitors socket: %s', err.message) })
      server.unref()
      await chmod(this.socketPath, 0o600)
      this.server = server
    })()
    await this.listening
  }

  /** A prepared monitor introduces itself (`R <pid>`): it is the ready one, or let go when one is ready already. */
  private accept (s: net.Socket): void {
    s.unref()
    let hello = ''
    const onData = (d: Buffer): void => {
      hello += d.toString('latin1')
      const nl = hello.indexOf('\n')
      if (nl === -1) { if (hello.length > 64) s.destroy(); return }
      s.off('data', onData)
      s.pause()
      const pid = Number(/^R (\d+)$/.exec(hello.slice(0, nl))?.[1] ?? 0)
      if (this.closed || this.ready !== null || pid <= 0) { s.end(); return }
      this.expectedUntil = 0
      const p = { socket: s, pid }
      this.ready = p
      s.on('close', () => { if (this.ready === p) this.ready = null })
      this.armIdle()
    }
    s.on('data', onData)
    s.on('error', () => { s.destroy() })
  }

  private armIdle (): void {
    if (this.idle !== null) clearTimeout(this.idle)
    this.idle = setTimeout(() => { this.release() }, IDLE_MS)
    this.idle.unref()
  }

  /** Lets the prepared monitor go (EOF: it exits, its namespace with it). */
  private release (): void {
    if (this.idle !== null) { clearTimeout(this.idle); this.idle = null }
    this.ready?.socket.end()
    this.ready = null
  }

  close (): void {
    this.closed = true
    this.release()
    this.server?.close()
    this.server = null
  }
}
