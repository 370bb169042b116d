// Writing replies: JSON with exactly `Content-Type: application/json`, empty replies, NDJSON streams.
import type { ServerResponse } from 'node:http'
import { isEngineError, statusOf, errorMessage } from '../errors.js'

export function sendJson (res: ServerResponse, status: number, value: unknown): void {
  sendJsonText(res, status, JSON.stringify(value))
}

/** Sends JSON that is already text (a cached or joined encoding). */
export function sendJsonText (res: ServerResponse, status: number, json: string): void {
  const body = Buffer.from(json + '\n', 'utf8')
  res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': body.length })
  res.end(body)
}

/** A JSON reply whose bytes are ready (with their trailing newline). */
export function sendJsonBytes (res: ServerResponse, status: number, body: Buffer): void {
  res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': body.length })
  res.end(body)
}

/** A reply without a body (201 tag, 204 start/stop, 304). */
export function sendEmpty (res: ServerResponse, status: number): void {
  res.writeHead(status, status === 204 || status === 304 ? {} : { 'Content-Length': 0 })
  res.end()
}

/**
 * The Engine API's error writer: `{"message": ...}` with the status of the error's kind; 304 without a body.
 * Once headers are out, the only honest signal left is to cut the connection.
 */
export function sendApiError (res: ServerResponse, err: unknown): void {
  if (res.headersSent) {
    res.destroy(err instanceof Error ? err : undefined)
    return
  }
  const status = statusOf(err)
  if (status === 304) { sendEmpty(res, 304); return }
  const message = isEngineError(err) ? err.message : errorMessage(err)
  sendJson(res, status, { message })
}

/** Starts a streamed JSON reply (chunked, headers flushed at once). */
export function startStream (res: ServerResponse, contentType = 'application/json'): void {
  res.writeHead(200, { 'Content-Type': contentType })
  res.flushHeaders()
}

/** Writes one JSON record plus the line ending dockerd uses for progress streams. Returns write()'s boolean. */
export function writeRecord (res: ServerResponse, value: unknown, eol = '\r\n'): boolean {
  return res.write(JSON.stringify(value) + eol)
}
