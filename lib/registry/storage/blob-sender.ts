// Large blob bodies through sendfile(2): the filesystem driver hands a reply's connection to berth-blob-sender
// (blob-sender.c, one helper process per registry, started at the first large blob served and kept until close),
// which sends the file's range from the page cache to the socket with no copy through this process. Node writes the
// reply's headers, then passes the socket's descriptor over the child's IPC channel (Node's own handle passing) and
// writes nothing to that socket until the helper says how it went; the reply is then ended (or destroyed: a client
// that went away, a file that ended early). Where the helper cannot serve (no binary, TLS, a socket without a
// descriptor), the caller serves through its buffers as before.
import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync } from 'node:fs'
import type { ServerResponse } from 'node:http'
import { join } from 'node:path'
import { internal } from '../../errors.js'
import { logger } from '../../log.js'

const log = logger('registry:sendfile')

/** Ranges below this go through the caller's buffers: one IPC round trip costs more than copying them. */
export const SENDFILE_MIN_BYTES = 256 * 1024

/** The helper built with the package (tools/build-blob-sender.mjs) under `packageRoot`, when there is one. */
export function builtBlobSender (packageRoot: string): string | null {
  const bin = join(packageRoot, 'dist', 'berth-blob-sender')
  return existsSync(bin) ? bin : null
}

/** On a reply the helper served: the body bytes it sent (the socket's own count has only what Node wrote). */
export const HELPER_BYTES = Symbol('berth.blobSenderBytes')

interface Waiter { resolve: (sent: number) => void, reject: (err: Error) => void }
interface Reply { id: number, sent: number, error?: string }

/** The native handle of a plain (not TLS) connection, which the helper can write to. */
function handleOf (res: ServerResponse): object | null {
  const socket = res.socket as (NonNullable<ServerResponse['socket']> & { _handle?: object | null, encrypted?: boolean }) | null
  if (socket === null || socket.encrypted === true || socket.destroyed) return null
  return socket._handle ?? null
}

export class BlobSender {
  private readonly binary: string
  private readonly blobDir: string
  private child: ChildProcess | null = null
  /** Set once the helper could not start or died: every later reply goes the caller's way. */
  private broken = false
  private nextId = 1
  private readonly waiting = new Map<number, Waiter>()

  constructor (binary: string, blobDir: string) {
    this.binary = binary
    this.blobDir = blobDir
  }

  /** Whether `res` can be served by the helper (else the caller serves it). */
  accepts (res: ServerResponse, length: number): boolean {
    return !this.broken && length >= SENDFILE_MIN_BYTES && handleOf(res) !== null
  }

  private helper (): ChildProcess {
    if (this.child !== null) return this.child
    const child = spawn(this.binary, [this.blobDir], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] })
    child.on('message', (m: Reply) => { this.settle(m) })
    child.on('error', (err) => { log('helper: %s', err.message); this.fail(err) })
    child.on('exit', (code, signal) => {
      if (this.child === child) this.child = null
      log('helper exited (%s)', signal ?? code)
      this.fail(internal(`blob sender exited (${signal ?? String(code)})`))
    })
    child.unref()
    child.channel?.unref()
    this.child = child
    log('helper started, pid %d', child.pid)
    return child
  }

  private settle (m: Reply): void {
    const w = this.waiting.get(m.id)
    if (w === undefined) return
    this.waiting.delete(m.id)
    if (m.error === undefined) w.resolve(m.sent)
    else w.reject(internal(`blob sender: ${m.error} after ${m.sent} bytes`))
  }

  private fail (err: Error): void {
    this.broken = true
    for (const w of this.waiting.values()) w.reject(err)
    this.waiting.clear()
  }

  /**
   * Sends `length` bytes of the blob file `name` (in the blob directory) from `start` as the body of `res`, whose
   * status and headers are set, then ends `res`. Rejects (with `res` destroyed) when the client goes away or the
   * file ends early.
   */
  async send (res: ServerResponse, name: string, start: number, length: number): Promise<void> {
    const child = this.helper()
    const socket = res.socket as NonNullable<ServerResponse['socket']>
    res.flushHeaders()
    // the headers must be in the kernel before the helper's first byte
    if (socket.writableLength > 0) {
      await new Promise<void>((resolve) => {
        const done = (): void => { socket.off('drain', done); socket.off('close', done); resolve() }
        socket.on('drain', done)
        socket.on('close', done)
      })
    }
    const handle = handleOf(res)
    if (handle === null) { res.destroy(); throw internal('destination closed') }
    const id = this.nextId++
    const sent = new Promise<number>((resolve, reject) => { this.waiting.set(id, { resolve, reject }) })
    const onClose = (): void => {
      if (!this.waiting.has(id)) return
      this.waiting.get(id)?.reject(internal('destination closed'))
      this.waiting.delete(id)
      if (child.connected) child.send({ abort: id })
    }
    res.once('close', onClose)
    try {
      child.send({ id, file: name, start, length }, handle as Parameters<ChildProcess['send']>[1])
      const out: ServerResponse & { [HELPER_BYTES]?: number } = res
      out[HELPER_BYTES] = await sent
    } catch (err) {
      res.destroy()
      throw err
    } finally {
      res.off('close', onClose)
    }
    res.end()
  }

  async close (): Promise<void> {
    const child = this.child
    this.broken = true
    if (child === null) return
    this.child = null
    const exited = new Promise<void>((resolve) => { child.once('exit', () => { resolve() }) })
    child.ref() // until it has exited
    if (child.connected) child.disconnect() // the helper ends at the end of its channel, dropping its transfers
    if (child.exitCode === null && child.signalCode === null) await exited
  }
}
