// Node's own libuv wrappers (the objects net.Server and net.Socket are built on), reached through
// process.binding(): still allowed for tcp_wrap, stream_wrap and uv in Node 20–24 (DEP0111 is documentation-only,
// a warning only under --pending-deprecation). Everything that touches them is in this file's callers:
// sync-listen.ts (bind + listen with synchronous errors) and handle-transport.ts (connections without
// net.Socket). Without stream_wrap, bind() hands its handle to a net.Server instead; without tcp_wrap, bind()
// fails and says so, and accept() keeps working on net alone.

/** The subset of a libuv TCP handle (tcp_wrap TCP) used here. */
export interface TcpHandle {
  bind (address: string, port: number): number
  bind6 (address: string, port: number, flags: number): number
  listen (backlog: number): number
  getsockname (out: Record<string, unknown>): number
  close (callback?: (this: TcpHandle) => void): void
  ref (): void
  unref (): void
  readStart (): number
  readStop (): number
  /** Reads go into this buffer from then on (onread gets no ArrayBuffer; the bytes are at its start). */
  useUserBuffer? (buf: Uint8Array): void
  writeLatin1String (req: object, data: string): number
  writeBuffer (req: object, data: Uint8Array): number
  shutdown (req: object): number
  readonly writeQueueSize: number
  onconnection: (this: TcpHandle, status: number, client?: TcpHandle) => void
  /** A native accessor: it takes functions only. */
  onread: (this: TcpHandle, arrayBuffer?: ArrayBuffer) => void
}

export interface TcpBinding {
  TCP: new (type: number) => TcpHandle
  constants: { SERVER: number }
}

export interface StreamBinding {
  WriteWrap: new () => Record<string, unknown>
  ShutdownWrap: new () => Record<string, unknown>
  streamBaseState: Int32Array
  kReadBytesOrError: number
  kArrayBufferOffset: number
}

let tcp: TcpBinding | null | undefined
let stream: { binding: StreamBinding, eof: number } | null | undefined

function binding (name: string): unknown {
  try {
    return (process as unknown as { binding (name: string): unknown }).binding(name)
  } catch {
    return null
  }
}

/** tcp_wrap, needed by bind(); null when this runtime does not give it out. */
export function tcpBinding (): TcpBinding | null {
  if (tcp === undefined) {
    const b = binding('tcp_wrap') as TcpBinding | null
    tcp = b !== null && typeof b.TCP === 'function' ? b : null
  }
  return tcp
}

/** stream_wrap and UV_EOF, needed by handle-transport.ts; without them bind() listeners fall back to net.Server. */
export function streamBinding (): { binding: StreamBinding, eof: number } | null {
  if (stream === undefined) {
    const b = binding('stream_wrap') as StreamBinding | null
    const uv = binding('uv') as { UV_EOF?: number } | null
    const complete = b !== null && uv !== null && typeof b.WriteWrap === 'function' &&
      typeof b.ShutdownWrap === 'function' && b.streamBaseState instanceof Int32Array &&
      typeof b.kReadBytesOrError === 'number' && typeof b.kArrayBufferOffset === 'number' &&
      typeof uv.UV_EOF === 'number'
    stream = complete ? { binding: b, eof: uv.UV_EOF! } : null
  }
  return stream
}
