// The byte stream under a connection. Two implementations: a net.Socket (servers handed to accept()), and a
// bare libuv TCP handle (listeners made by bind()), which skips net.Socket's stream machinery, the largest
// per-connection cost left when every request opens a connection.

/** What a connection asks of its transport. */
export interface Transport {
  /** Bytes accepted by write() and not yet handed to the kernel. */
  readonly queued: number
  /** Queued bytes reached the high-water mark: stop producing until the owner's drained() is called. */
  readonly full: boolean
  /** Writes a latin1 string or bytes; false once the queue is full. */
  write (data: string | Buffer): boolean
  /** Arms one drained() call for when the queue falls below the high-water mark. */
  notifyDrain (): void
  pause (): void
  resume (): void
  /** Half-closes (FIN) after every queued byte. */
  end (): void
  /** Closes once end() has completed. */
  destroyAfterEnd (): void
  /** Closes now; queued bytes are dropped. */
  destroy (): void
  /** Read/write inactivity timeout (0: none); expiry calls the owner's timeout(). */
  setTimeout (ms: number): void
}

/** What a transport reports to its connection. */
export interface TransportOwner {
  /** `borrowed`: the bytes are valid only during this call (a read buffer shared by the server's connections). */
  receive (chunk: Buffer, borrowed: boolean): void
  peerEnd (): void
  timeout (): void
  drained (): void
  transportError (message: string): void
  onClose (): void
}
