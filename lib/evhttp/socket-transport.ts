// Transport over a net.Socket (used for servers handed to EventHttp.accept()).

import type { Socket } from 'node:net'
import type { Transport, TransportOwner } from './transport.js'

export class SocketTransport implements Transport {
  private readonly socket: Socket
  private readonly owner: TransportOwner

  constructor (socket: Socket, owner: TransportOwner) {
    this.socket = socket
    this.owner = owner
    socket.on('data', socketOnData.bind(null, owner))
    socket.on('end', socketOnEnd.bind(null, owner))
    socket.on('error', socketOnError.bind(null, owner))
    socket.on('close', socketOnClose.bind(null, owner))
  }

  get queued (): number {
    return this.socket.writableLength
  }

  get full (): boolean {
    return this.socket.writableNeedDrain
  }

  write (data: string | Buffer): boolean {
    return typeof data === 'string' ? this.socket.write(data, 'latin1') : this.socket.write(data)
  }

  notifyDrain (): void {
    this.socket.once('drain', socketOnDrain.bind(null, this.owner))
  }

  pause (): void {
    this.socket.pause()
  }

  resume (): void {
    this.socket.resume()
  }

  end (): void {
    this.socket.end()
  }

  destroyAfterEnd (): void {
    if (this.socket.writableFinished) this.socket.destroy()
    else this.socket.once('finish', socketOnFinish)
  }

  destroy (): void {
    this.socket.destroy()
  }

  setTimeout (ms: number): void {
    this.socket.setTimeout(ms)
    this.socket.on('timeout', socketOnTimeout.bind(null, this.owner))
  }
}

function socketOnData (owner: TransportOwner, chunk: Buffer): void {
  owner.receive(chunk, false)
}

function socketOnEnd (owner: TransportOwner): void {
  owner.peerEnd()
}

function socketOnError (owner: TransportOwner, err: Error): void {
  owner.transportError(err.message)
}

function socketOnClose (owner: TransportOwner): void {
  owner.onClose()
}

function socketOnTimeout (owner: TransportOwner): void {
  owner.timeout()
}

function socketOnDrain (owner: TransportOwner): void {
  owner.drained()
}

function socketOnFinish (this: Socket): void {
  this.destroy()
}
