// Small reply helpers shared by the registry routes (headers first, then an empty or JSON body).
import type { ServerResponse } from 'node:http'
import { sendEmpty, sendJson } from '../../http/reply.js'

export function reply (res: ServerResponse, status: number, headers: Record<string, string | number | string[]> = {}): void {
  for (const [k, v] of Object.entries(headers)) res.setHeader(k, v)
  sendEmpty(res, status)
}

export function replyJson (res: ServerResponse, status: number, value: unknown, headers: Record<string, string | number | string[]> = {}): void {
  for (const [k, v] of Object.entries(headers)) res.setHeader(k, v)
  sendJson(res, status, value)
}

/** RFC 8288 next link for `n`/`last` pagination (tags/list, _catalog), relative like distribution's. */
export function nextLink (path: string, n: number, last: string): string {
  return `<${path}?n=${n}&last=${encodeURIComponent(last)}>; rel="next"`
}
