// One `berth daemon` process a spec file runs its tests against, and what those tests do with it: start it (and
// start it again after a kill -9) in a temp dir of its own with networking of its own, keep the end of its stderr for
// failure messages, call its API with a bound (no reply, a dropped connection or a 5xx fails the test), check that it
// is still alive, and remove everything of it after the file. Each file makes its own instance (daemonProcessOfFile,
// on the file's before and after hooks).
import { before, after } from 'node:test'
import assert from 'node:assert/strict'
import type { ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { join } from 'node:path'
import {
  cleanupDaemon, daemonNetworkArgs, importBusybox, request, startDaemonProcess, tmpDir, uniqueNetworkOptions, type Reply
} from './engine.js'

export interface DaemonProcessOptions {
  /** How much of the daemon's stderr is kept: its last `stderrLimit` characters (60,000 unless told). */
  stderrLimit?: number
  /** `call` also fails on an error reply (4xx) without a `{"message": ...}`. */
  errorsCarryMessage?: boolean
}

export class DaemonProcess {
  /** The temp dir holding the socket (b.sock), the data root (data) and the exec root (run); '' before the first start. */
  dir = ''
  sock = ''
  /** The end of the daemon's stderr, of every start in turn. */
  stderr = ''
  readonly netOpts = uniqueNetworkOptions()
  private proc: ChildProcess | undefined
  private readonly stderrLimit: number
  private readonly errorsCarryMessage: boolean

  constructor (opts: DaemonProcessOptions = {}) {
    this.stderrLimit = opts.stderrLimit ?? 60_000
    this.errorsCarryMessage = opts.errorsCarryMessage ?? false
  }

  /** The daemon process started last. */
  get child (): ChildProcess {
    if (this.proc === undefined) throw new Error('the daemon was never started')
    return this.proc
  }

  /** Starts the daemon (the first time in a new temp dir, then again in the same one), once it answers. */
  async start (): Promise<void> {
    if (this.dir === '') {
      this.dir = tmpDir()
      this.sock = join(this.dir, 'b.sock')
    }
    this.proc = await startDaemonProcess(this.dir, daemonNetworkArgs(this.netOpts))
    this.proc.stderr?.on('data', (d: Buffer) => { this.stderr = (this.stderr + d.toString()).slice(-this.stderrLimit) })
  }

  /** Kills the daemon with SIGKILL and waits for its exit. */
  async kill9 (): Promise<void> {
    const d = this.child
    const exited = once(d, 'exit')
    d.kill('SIGKILL')
    await exited
  }

  /** The end of the file: the daemon killed if it runs, its networking purged, its dir removed. */
  async cleanup (): Promise<void> {
    if (this.dir !== '') await cleanupDaemon(this.proc, this.dir, this.netOpts)
  }

  /**
   * One call, bounded: no reply within `ms`, a dropped connection (unless `tolerateDrop`: then a reply of status 0
   * whose text is the error) or a 5xx fails the test. A Buffer body is sent as it is, as a tar. Bound to its
   * instance, so `const { call } = daemon` works.
   */
  readonly call = async (method: string, path: string, body?: unknown, ms = 30_000, tolerateDrop = false): Promise<Reply> => {
    let timer: NodeJS.Timeout | undefined
    const bounded = new Promise<never>((_resolve, reject) => { timer = setTimeout(() => { reject(new Error(`${method} ${path}: no reply within ${ms} ms`)) }, ms) })
    try {
      const opts = body === undefined ? {} : Buffer.isBuffer(body) ? { raw: body, headers: { 'Content-Type': 'application/x-tar' } } : { body }
      const r = await Promise.race([request(this.sock, method, path, opts), bounded]).catch((err: Error) => {
        if (tolerateDrop && !err.message.includes('no reply within')) return { status: 0, text: err.message, headers: {}, body: Buffer.alloc(0), json: () => null }
        throw new Error(`${method} ${path}: ${err.message} (daemon: ${this.stderr.slice(-2000)})`)
      })
      assert.ok(r.status < 500, `${method} ${path}: ${r.status} ${r.text}`)
      if (this.errorsCarryMessage && r.status >= 400) assert.match(r.text, /"message":"[^"]+"/, `${method} ${path}`)
      return r
    } finally { clearTimeout(timer) }
  }

  /** The daemon process has neither exited nor been killed. */
  assertRunning (what: string): void {
    const d = this.child
    assert.equal(d.exitCode, null, `${what}: the daemon exited: ${this.stderr}`)
    assert.equal(d.signalCode, null, `${what}: the daemon was killed: ${this.stderr}`)
  }

  /** The daemon process runs and answers /_ping. Bound to its instance, as `call`. */
  readonly assertAlive = async (what: string): Promise<void> => {
    this.assertRunning(what)
    assert.equal((await this.call('GET', '/_ping')).text, 'OK')
  }
}

/**
 * The daemon process of a whole spec file, on the file's hooks: started before its tests (busybox imported, then
 * `ready`), cleaned up after them; never started when its tests are skipped (`skip` holds the reason).
 */
export function daemonProcessOfFile (skip: string | null, opts: DaemonProcessOptions & { ready?: (daemon: DaemonProcess) => Promise<void> } = {}): DaemonProcess {
  const daemon = new DaemonProcess(opts)
  before(async () => {
    if (skip !== null) return
    await daemon.start()
    await importBusybox(daemon.sock)
    await opts.ready?.(daemon)
  })
  after(async () => { await daemon.cleanup() })
  return daemon
}
