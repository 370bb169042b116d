// berth/evhttp: an embedded HTTP server with the API of PHP's `event` extension (EventBase, EventHttp,
// EventHttpRequest, EventBuffer) and the wire behaviour of libevent 2.1's evhttp, on node:net.

export { EventBase } from './event-base.js'
export { EventHttp } from './event-http.js'
export type { HttpCallback } from './event-http-request.js'
export { EventHttpRequest } from './event-http-request.js'
export { EventBuffer, type BufferData, type CopyoutTarget } from './event-buffer.js'
export { CMD, CMD_UNKNOWN, EOL, HEADER_TYPE, LOOP } from './constants.js'
export type { BoundAddress } from './sync-listen.js'
