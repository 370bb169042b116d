// The daemon's end of a container's embedded DNS resolver (lib/runtime/shim/resolver.h): a connection to the
// monitor's attach.sock that declared itself the resolver's peer. Queries come in as 'query' events; each is
// answered (answer) or handed back for the monitor to forward (forward). A thin adapter over resolver-wire.ts.
import net from 'node:net'
import { EventEmitter } from 'node:events'
import { join } from 'node:path'
import { conflict, errorMessage, internal } from '../errors.js'
import { logger } from '../log.js'
import { FRAME, FrameDecoder, MSG_RESOLVER, decodeQuery, frame, tokenPayload, upstreamsPayload, type Query, type UpstreamServer } from './resolver-wire.js'

export type { Query, UpstreamServer }

const log = logger('engine:resolver')
const START_TIMEOUT_MS = 5000

const MONITOR_GONE = 'the container\'s monitor is gone'

/** Events: 'query' (Query), 'close' (the monitor is gone: the container exited, or the connection broke). */
export class ResolverPeer extends EventEmitter {
  private readonly socket: net.Socket
  private readonly decoder = new FrameDecoder()
  private starts: Array<(err: string) => void> = []
  closed = false

  private constructor (socket: net.Socket) {
    super()
    this.socket = socket
    socket.on('data', (chunk: Buffer) => { this.onData(chunk) })
    socket.on('error', (err) => { log('resolver connection: %s', err.message) })
    socket.on('close', () => {
      this.closed = true
      for (const done of this.starts) done(MONITOR_GONE)
      this.starts = []
      this.emit('close')
    })
  }

  /** Connects to the monitor whose state directory is `stateDir`. */
  static async connect (stateDir: string): Promise<ResolverPeer> {
    const socket = await new Promise<net.Socket>((resolve, reject) => {
      const s = net.connect(join(stateDir, 'attach.sock'))
      s.once('connect', () => { s.off('error', reject); resolve(s) })
      s.once('error', reject)
    })
    socket.unref()
    const h = Buffer.alloc(5)
    h[0] = MSG_RESOLVER
    socket.write(h)
    return new ResolverPeer(socket)
  }

  private onData (chunk: Buffer): void {
    let frames
    try { frames = this.decoder.push(chunk) } catch (err) {
      log('resolver connection: %s', errorMessage(err))
      this.socket.destroy()
      return
    }
    for (const f of frames) {
      if (f.type === FRAME.query) {
        const q = decodeQuery(f.payload)
        if (q !== null) this.emit('query', q)
      } else if (f.type === FRAME.started) {
        this.starts.shift()?.(f.payload.toString())
      }
    }
  }

  private send (type: number, payload: Buffer): void {
    if (this.closed) return
    const [h, p] = frame(type, payload)
    this.socket.cork()
    this.socket.write(h)
    this.socket.write(p)
    this.socket.uncork()
  }

  /** Opens the resolver in the namespace at `netns` (a container started without one); throws the monitor's error. */
  async start (netns: string): Promise<void> {
    const err = this.closed ? MONITOR_GONE : await new Promise<string>((resolve) => {
      const timer = setTimeout(() => { resolve('the container\'s monitor did not answer') }, START_TIMEOUT_MS)
      timer.unref()
      this.starts.push((e) => { clearTimeout(timer); resolve(e) })
      this.send(FRAME.start, Buffer.from(netns))
    })
    // a monitor gone is a container that exited meanwhile: its state, not the daemon's failure
    if (err === MONITOR_GONE) throw conflict(`embedded DNS resolver: ${err}`)
    if (err !== '') throw internal(`embedded DNS resolver: ${err}`)
  }

  setUpstreams (list: UpstreamServer[]): void { this.send(FRAME.upstreams, upstreamsPayload(list)) }

  answer (token: number, message: Buffer): void { this.send(FRAME.answer, tokenPayload(token, message)) }

  forward (token: number): void { this.send(FRAME.forward, tokenPayload(token)) }

  close (): void { this.socket.destroy() }
}
