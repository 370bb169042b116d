// Wire-independent constants with the PHP `event` extension's names and values (libevent's EVHTTP_REQ_*,
// EVBUFFER_EOL_*, EVLOOP_*). Plain `as const` objects, no enums (erasable TypeScript only).

/** Request commands, `EventHttpRequest::CMD_*` (libevent `EVHTTP_REQ_*`). */
export const CMD = {
  GET: 1,
  POST: 2,
  HEAD: 4,
  PUT: 8,
  DELETE: 16,
  OPTIONS: 32,
  TRACE: 64,
  CONNECT: 128,
  PATCH: 256,
} as const

/** libevent's internal EVHTTP_REQ_UNKNOWN_ (1 << 15): the command of a request whose method is not in CMD. */
export const CMD_UNKNOWN = 32768

/** `EventHttpRequest::INPUT_HEADER` / `OUTPUT_HEADER`. */
export const HEADER_TYPE = {
  INPUT: 1,
  OUTPUT: 2,
} as const

/** `EventBuffer::EOL_*` (libevent `EVBUFFER_EOL_*`). */
export const EOL = {
  ANY: 0,
  CRLF: 1,
  CRLF_STRICT: 2,
  LF: 3,
} as const

/** `EventBase::LOOP_*` (libevent `EVLOOP_*`). */
export const LOOP = {
  ONCE: 1,
  NONBLOCK: 2,
} as const

/** Methods evhttp allows unless setAllowedMethods() says otherwise. */
export const DEFAULT_ALLOWED_METHODS = CMD.GET | CMD.POST | CMD.HEAD | CMD.PUT | CMD.DELETE

/** evhttp_new()'s default content type, added to every reply that needs a body and has no Content-Type. */
export const DEFAULT_CONTENT_TYPE = 'text/html; charset=ISO-8859-1'

/**
 * Safety caps used while the embedder has set no limit (evhttp itself is unlimited by default). They keep a
 * client from making the server hold unbounded memory: the body is only handed to a callback once complete, so
 * without a cap a single request could grow it forever. An explicit setMaxHeadersSize / setMaxBodySize
 * replaces the cap (use a large value to lift it).
 */
export const SAFETY_MAX_HEADERS_SIZE = 1024 * 1024
export const SAFETY_MAX_BODY_SIZE = 16 * 1024 * 1024

/** Longest chunk-size line accepted in a chunked body (libevent has no bound; the error is evhttp's chunk error). */
export const MAX_CHUNK_LINE = 4096

/** Listen backlog evhttp_bind_socket uses. */
export const LISTEN_BACKLOG = 128
