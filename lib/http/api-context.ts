import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Duplex } from 'node:stream'

/** Everything a route handler gets for one request. */
export interface ApiContext {
  req: IncomingMessage
  res: ServerResponse
  params: Record<string, string>
  query: URLSearchParams
  /** The API version of the request: its /vN.NN prefix, or the newest for bare paths. */
  version: string
  /** Set for requests that arrived with `Upgrade:` (hijack candidates): the raw socket and bytes read past the headers. */
  upgrade: { socket: Duplex, head: Buffer } | null
  /** Aborted when the client goes away before the reply is finished. */
  signal: AbortSignal
}

export type ApiHandler = (ctx: ApiContext) => Promise<void>
