// Request bodies: bounded JSON reads with the Engine API's Content-Type rule.
import type { IncomingMessage, ServerResponse } from 'node:http'
import { PassThrough, type Readable } from 'node:stream'
import { invalidArgument, tooLarge } from '../errors.js'
import { parseJson } from '../util/json-depth.js'
import { bodyCutShort } from './cut-body.js'
import { LINGER_MS } from './linger.js'

export const DEFAULT_JSON_LIMIT = 4 * 1024 * 1024

/** The media type of a Content-Type header, lower-cased and without parameters. */
export function mediaType (header: string | undefined): string {
  if (header === undefined) return ''
  return (header.split(';')[0] ?? '').trim().toLowerCase()
}

/** Reads the whole body, refusing more than `limit` bytes. */
export async function readBody (req: IncomingMessage, limit: number): Promise<Buffer> {
  const declared = req.headers['content-length']
  if (declared !== undefined && Number(declared) > limit) {
    throw tooLarge(`request body too large: ${declared} bytes (limit ${limit})`)
  }
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length
    if (size > limit) throw tooLarge(`request body too large (limit ${limit} bytes)`)
    chunks.push(chunk)
  }
  return chunks.length === 1 ? chunks[0] as Buffer : Buffer.concat(chunks, size)
}

/**
 * Reads an optional JSON body. An absent Content-Type with an empty body is allowed; otherwise the media type must
 * be application/json (dockerd's CheckForJSON). Returns undefined for an empty body.
 */
export async function readJson (req: IncomingMessage, limit = DEFAULT_JSON_LIMIT): Promise<unknown> {
  const type = req.headers['content-type']
  // a body its client stopped sending (a FIN before the declared end) is JSON cut short, in Go's words as dockerd's
  const body = await readBody(req, limit).catch((err) => { throw bodyCutShort(req) ? invalidArgument('invalid JSON: unexpected EOF', { cause: err }) : err })
  if (body.length === 0) return undefined
  if (mediaType(type) !== 'application/json') {
    throw invalidArgument(`unsupported Content-Type header (${type ?? ''}): must be 'application/json'`)
  }
  try {
    return parseJson(body)
  } catch (err) {
    throw invalidArgument(`invalid JSON: ${(err as Error).message}`)
  }
}

/** Like readJson, but a JSON object is required. */
export async function readJsonObject (req: IncomingMessage, limit = DEFAULT_JSON_LIMIT): Promise<Record<string, unknown>> {
  const v = await readJson(req, limit)
  if (v === undefined) throw invalidArgument('invalid JSON: got EOF while reading request body')
  if (v === null || typeof v !== 'object' || Array.isArray(v)) throw invalidArgument('invalid JSON: expected an object')
  return v as Record<string, unknown>
}

/** What is read and dropped of a body the route left unread once its reply is out; beyond it the connection closes. */
export const DISCARD_LIMIT = 1024 * 1024

/**
 * The request body as a stream whose destruction does not destroy the request: when extraction fails half way the
 * rest of the body is still read (and dropped), so the client gets the error reply instead of a reset connection.
 * Once `res` is finished, what the route left unread is read and dropped up to DISCARD_LIMIT (Go's server, and so
 * dockerd, reads up to 256 KiB for the same reason), and beyond it the connection is closed after a FIN and a linger:
 * a route that answered before reading (an error, a refusal) never leaves the connection paused with its client's
 * upload stuck.
 */
export function readableBody (req: IncomingMessage, res?: ServerResponse): Readable {
  const out = new PassThrough()
  function reqOnData (chunk: Buffer): void { if (!out.write(chunk)) req.pause() }
  function outOnDrain (): void { req.resume() }
  function outOnClose (): void { req.off('data', reqOnData); req.resume() }
  req.on('data', reqOnData)
  req.once('end', () => { out.end() })
  req.once('error', (err) => { out.destroy(err) })
  // a client gone before the route consumes the body (it may still be awaiting a lock or a directory) destroys
  // `out` with nobody listening: without a listener that error would be thrown and stop the process. The consumer
  // still gets it: a pipeline or an iterator over a destroyed stream reports its `errored`
  out.on('error', () => {})
  out.on('drain', outOnDrain)
  out.once('close', outOnClose)
  res?.once('finish', () => {
    if (req.complete) return
    let left = DISCARD_LIMIT
    req.on('data', (chunk: Buffer) => {
      left -= chunk.length
      if (left >= 0 || left + chunk.length < 0) return
      // a FIN, not a reset: a client still sending reads the reply before it sees the close (lib/http/linger.ts)
      const socket = req.socket
      socket.end()
      const timer = setTimeout(() => { socket.destroy() }, LINGER_MS)
      timer.unref()
      socket.once('close', () => { clearTimeout(timer) })
    })
    out.destroy()
  })
  return out
}
