// Node's own libuv wrappers (the objects net.Server and net.Socket are built on), reached through
// process.binding(): still allowed for tcp_wrap, stream_wrap and uv in Node 20–24 (DEP0111 is documentation-only,
// a warning only under --pending-deprecation). Everything that touches them is in this file's callers:
// sync-listen.ts (bind + listen with synchronous errors) and handle-transport.ts (connections without
// net.Socket). If a runtime refuses them, bind() fails and says so, and accept() keeps working on net.

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

interface Bindings {
  tcp: TcpBinding
  stream: StreamBinding
  UV_EOF: number
}

let cached: Bindings | null | undefined

/** The bindings, or null when this runtime does not give them out. */
export function uvBindings (): Bindings | null {
  if (cached === undefined) {
    try {
      const proc = process as unknown as { binding (name: string): unknown }
      const tcp = proc.binding('tcp_wrap') as TcpBinding
      const stream = proc.binding('stream_wrap') as StreamBinding
      const uv = proc.binding('uv') as { UV_EOF: number }
      const complete = typeof tcp.TCP === 'function' && typeof stream.WriteWrap === 'function' &&
        typeof stream.ShutdownWrap === 'function' && stream.streamBaseState instanceof Int32Array &&
        typeof uv.UV_EOF === 'number'
      cached = complete ? { tcp, stream, UV_EOF: uv.UV_EOF } : null
    } catch {
      cached = null
    }
  }
  return cached
}
