// Synchronous bind + listen, so EventHttp.bind() can return a real boolean.
//
// Why: callers write `if (!http.bind(addr, port)) …` (a Promise would always be truthy), but net.Server#listen()
// resolves the host and reports EADDRINUSE & co. a tick later, through an 'error' event. libuv's bind() and
// listen() are synchronous underneath, and Node's TCP handle (the `tcp_wrap` binding, the object net.Server
// itself wraps) returns their error codes synchronously: bind()/bind6() report EADDRNOTAVAIL, EACCES, EINVAL
// at once, and listen() reports EADDRINUSE (libuv defers that one from bind to listen). The handle, bound and
// listening, then accepts connections itself (see handle-transport.ts). The binding is reached through
// process.binding() (uv-binding.ts). If a runtime refuses it, bind() returns false and says why under
// DEBUG=berth:evhttp rather than pretending to have listened.
//
// Address rules follow evhttp_bind_socket() without a resolver: an IPv4 dotted quad, an IPv6 literal (no
// brackets: getaddrinfo rejects "[::1]" too), or "localhost" (127.0.0.1, the first address glibc returns here);
// any other name would need DNS, which cannot be synchronous, so it fails like an unresolvable name. The empty
// string fails (getaddrinfo: "nodename nor servname provided"). The port is cast to uint16 as PHP does
// (65536 → 0, ephemeral).

import { isIPv4, isIPv6 } from 'node:net'
import { getSystemErrorName } from 'node:util'
import { tcpBinding, type TcpHandle } from './uv-binding.js'

export interface BoundAddress {
  address: string
  family: string
  port: number
}

export type ListenResult =
  | { ok: true, handle: TcpHandle, bound: BoundAddress }
  | { ok: false, error: Error }

function failure (message: string, code: string, errno?: number, syscall?: string): ListenResult {
  const error = Object.assign(new Error(message), { code, errno, syscall })
  return { ok: false, error }
}

function uvFailure (err: number, syscall: string, host: string, port: number): ListenResult {
  const code = getSystemErrorName(err)
  return failure(`${syscall} ${code} ${host}:${port}`, code, err, syscall)
}

/** Resolves `address` without I/O: an IP literal or localhost, else null. */
export function literalAddress (address: string): { host: string, v6: boolean } | null {
  if (isIPv4(address)) return { host: address, v6: false }
  if (isIPv6(address)) return { host: address, v6: true }
  if (address.toLowerCase() === 'localhost') return { host: '127.0.0.1', v6: false }
  return null
}

export function listenSync (address: string, port: number, backlog: number): ListenResult {
  if (typeof address !== 'string' || address === '') {
    return failure('getaddrinfo: nodename nor servname provided, or not known', 'EAI_NONAME', undefined, 'getaddrinfo')
  }
  if (typeof port !== 'number' || !Number.isInteger(port)) {
    return failure(`invalid port ${String(port)}`, 'ERR_INVALID_ARG_VALUE')
  }
  const p = port & 0xffff
  const literal = literalAddress(address)
  if (literal === null) {
    return failure(`getaddrinfo ${address}: not an IP address or localhost (names are not resolved synchronously)`,
      'EAI_NONAME', undefined, 'getaddrinfo')
  }
  const tcp = tcpBinding()
  if (tcp === null) {
    return failure('synchronous listen unavailable: process.binding("tcp_wrap") refused by this runtime',
      'ERR_UNAVAILABLE')
  }
  const handle = new tcp.TCP(tcp.constants.SERVER)
  let err = literal.v6 ? handle.bind6(literal.host, p, 0) : handle.bind(literal.host, p)
  if (err !== 0) {
    handle.close()
    return uvFailure(err, 'bind', literal.host, p)
  }
  err = handle.listen(backlog)
  if (err !== 0) {
    handle.close()
    return uvFailure(err, 'listen', literal.host, p)
  }
  const name: Record<string, unknown> = {}
  handle.getsockname(name)
  const bound = { address: String(name.address), family: String(name.family), port: Number(name.port) }
  return { ok: true, handle, bound }
}
