// Large blob bodies through sendfile(2): the filesystem driver hands a reply's connection to berth-blob-sender
// (blob-sender.c, one helper process per registry, started at the first large blob served and kept until close),
// which sends the file's range from the page cache to the socket with no copy through this process. Node writes the
// reply's headers, then passes the socket's descriptor over the child's IPC channel (Node's own handle passing) and
// writes nothing to that socket until the helper says how it went; the reply is then ended (or destroyed: a client
// that went away, a file that ended early). Where the helper cannot serve (no binary, TLS, a socket without a
// descriptor), the caller serves through its buffers as before.
//
// The same helper receives large upload bodies (blob-receiver.c): `receive()` hands over a connection whose body
// it reads, hashes and appends to an upload file; upload-handover.ts stops Node reading the connection first.
import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync } from 'node:fs'
import type { ServerResponse } from 'node:http'
import type { Socket } from 'node:net'
import { join } from 'node:path'
import { internal } from '../../errors.js'
import type { ChunkedAt } from './upload-handover.js'
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

/** Upload bodies below this are read by the registry process: handing a connection over costs more. */
export const RECEIVE_MIN_BYTES = 1024 * 1024
/** How long a new helper has to say whether it receives. */
const HELLO_MS = 5000
/** Bodies received by the helper at once (each holds a 256 KiB buffer there); beyond, the registry reads them. */
const RECEIVES_AT_ONCE = 16

/** What the helper says when a receive ends. */
export interface ReceiveReport {
  /** Bytes appended to the file (and hashed). */
  received: number
  /** The sha256 state after the whole file (hex, opaque: given back to the next receive), absent when none was. */
  state?: string
  /** The sha256 (hex) of the whole file so far. */
  digest?: string
  /** Why it stopped early (an errno name): ENODATA the body ended early, ETIMEDOUT it stopped moving. */
  error?: string
}

/** What the next receive appends to: the upload file (a name in the ingest directory) and its hash so far. */
export interface ReceiveTarget {
  file: string
  /** Bytes in the file. */
  at: number
  /** The state a previous receive reported, after the file's first `hashed` bytes; none: `hashed` is 0. */
  state?: string
  /** The helper reads the file's bytes from here to `at` back and hashes them before it appends. */
  hashed: number
}

interface Waiter { settle: (m: Reply) => void, reject: (err: Error) => void }
interface Reply { id: number, sent?: number, received?: number, state?: string, digest?: string, error?: string, hello?: number, receive?: number }

/** The native handle of a plain (not TLS) connection, which the helper can write to. */
function handleOf (res: ServerResponse): object | null {
  const socket = res.socket as (NonNullable<ServerResponse['socket']> & { _handle?: object | null, encrypted?: boolean }) | null
  if (socket === null || socket.encrypted === true || socket.destroyed) return null
  return socket._handle ?? null
}

export class BlobSender {
  private readonly binary: string
  private readonly blobDir: string
  private readonly ingestDir: string | null
  private child: ChildProcess | null = null
  /** Whether the running helper receives upload bodies (its first line says); null until it has said. */
  private hello: Promise<boolean> | null = null
  private receiving = 0
  /** Set once the helper could not start or died: every later reply goes the caller's way. */
  private broken = false
  private nextId = 1
  private readonly waiting = new Map<number, Waiter>()

  /** `ingestDir`: where upload files are (the helper receives bodies into them); null: it only sends. */
  constructor (binary: string, blobDir: string, ingestDir: string | null = null) {
    this.binary = binary
    this.blobDir = blobDir
    this.ingestDir = ingestDir
  }

  /** Whether `res` can be served by the helper (else the caller serves it). */
  accepts (res: ServerResponse, length: number): boolean {
    return !this.broken && length >= SENDFILE_MIN_BYTES && handleOf(res) !== null
  }

  private helper (): ChildProcess {
    if (this.child !== null) return this.child
    const child = spawn(this.binary, this.ingestDir === null ? [this.blobDir] : [this.blobDir, this.ingestDir], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] })
    let said: (receives: boolean) => void = () => {}
    this.hello = new Promise((resolve) => { said = resolve })
    child.on('message', (m: Reply) => { if (m.hello !== undefined) said(m.receive === 1); else this.settle(m) })
    child.once('exit', () => { said(false) })
    setTimeout(() => { said(false) }, HELLO_MS).unref() // a helper that does not say what it can only sends
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
    w.settle(m)
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
    const sent = new Promise<number>((resolve, reject) => {
      const settle = (m: Reply): void => {
        if (m.error === undefined) resolve(m.sent ?? 0)
        else reject(internal(`blob sender: ${m.error} after ${m.sent ?? 0} bytes`))
      }
      this.waiting.set(id, { settle, reject })
    })
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

  /** Whether the helper may take an upload body of `length` bytes now (it is started to know). */
  async receives (length: number): Promise<boolean> {
    if (this.broken || this.ingestDir === null || length < RECEIVE_MIN_BYTES || this.receiving >= RECEIVES_AT_ONCE) return false
    this.helper()
    return await (this.hello ?? false) && !this.broken && this.receiving < RECEIVES_AT_ONCE
  }

  /**
   * Hands the connection `socket` (its native handle: Node must have stopped reading it) to the helper, which appends
   * its next `length` bytes to `target` (with `chunked`, the data of the rest of a chunked body, at most `length`
   * bytes, whose framing stands there) and reports (an early stop too: see ReceiveReport.error). Rejects when the
   * helper went away without a report (the file's length and hash are then unknown). `socket` closing meanwhile
   * aborts the receive.
   */
  async receive (socket: Socket, handle: object, length: number, idleMs: number, target: ReceiveTarget, chunked?: ChunkedAt): Promise<ReceiveReport> {
    if (this.broken) throw internal('blob helper: gone')
    const child = this.helper()
    const id = this.nextId++
    this.receiving++
    const report = new Promise<ReceiveReport>((resolve, reject) => {
      const settle = (m: Reply): void => {
        resolve({ received: m.received ?? 0, ...(m.state !== undefined ? { state: m.state } : {}), ...(m.digest !== undefined ? { digest: m.digest } : {}), ...(m.error !== undefined ? { error: m.error } : {}) })
      }
      this.waiting.set(id, { settle, reject })
    })
    const onClose = (): void => { if (this.waiting.has(id) && child.connected) child.send({ abort: id }) }
    socket.once('close', onClose)
    try {
      const msg = {
        id, recv: target.file, at: target.at, hashed: target.hashed, length, idle: idleMs,
        ...(target.state !== undefined ? { state: target.state } : {}),
        ...(chunked !== undefined ? { chunked: 1, phase: chunked.phase, chunk: chunked.chunk } : {})
      }
      child.send(msg, handle as Parameters<ChildProcess['send']>[1])
      return await report
    } finally {
      this.receiving--
      socket.off('close', onClose)
    }
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
