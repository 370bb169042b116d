// Exec routes: create, start (hijacked like attach), resize, inspect; over the ExecBackend declared beside them.
import type { Route } from '../../http/router.js'
import type { ApiContext, ApiHandler } from '../../http/api-context.js'
import type { ExecBackend } from './backend.js'
import { decodeExecConfig, toExecInspect } from './wire.js'
import { sendJson } from '../../http/reply.js'
import { readJsonObject, readJson, readBody, mediaType } from '../../http/body.js'
import { intValue } from '../../http/query.js'
import { hijack, RAW_STREAM, MULTIPLEXED_STREAM } from '../../http/hijack.js'
import { canonicalKeys } from '../../containers/create-config.js'
import { versionAtLeast, API_VERSION, SERVER_HEADER } from '../api-version.js'
import { invalidArgument } from '../../errors.js'
import { parseJson } from '../../util/json-depth.js'

/** Reads exactly `n` bytes of a JSON body from an upgraded socket (exec start sends its config there). */
async function readUpgradeBody (ctx: ApiContext): Promise<Record<string, unknown>> {
  const n = Number(ctx.req.headers['content-length'] ?? 0)
  if (ctx.upgrade === null || n <= 0) return {}
  const { socket } = ctx.upgrade
  let buf = ctx.upgrade.head
  while (buf.length < n) {
    const chunk = await new Promise<Buffer | null>((resolve) => {
      const onData = (d: Buffer): void => { cleanup(); resolve(d) }
      const onEnd = (): void => { cleanup(); resolve(null) }
      const cleanup = (): void => { socket.off('data', onData); socket.off('end', onEnd); socket.pause() }
      socket.on('data', onData); socket.once('end', onEnd)
    })
    if (chunk === null) break
    buf = Buffer.concat([buf, chunk])
  }
  ctx.upgrade.head = buf.subarray(n)
  if (mediaType(ctx.req.headers['content-type']) !== 'application/json' && buf.length === 0) return {}
  try { return parseJson(buf.subarray(0, n)) as Record<string, unknown> } catch (err) {
    throw invalidArgument(`invalid JSON: ${(err as Error).message}`)
  }
}

/**
 * Whether an exec start sent without an Upgrade header takes its connection over: dockerd does unless its body asks
 * for Detach. A body not all there yet (null) is taken over too (its Detach then answers on the connection, closed
 * after); an unreadable one is an ordinary request (its 400 comes from the route).
 */
function attachedStart (body: Buffer | null): boolean {
  if (body === null || body.length === 0) return true
  let v: unknown
  try { v = parseJson(body) } catch { return false }
  return typeof v !== 'object' || v === null || Array.isArray(v) || canonicalKeys(v as Record<string, unknown>, ['Detach']).Detach !== true
}

export function execRoutes (b: ExecBackend): Array<Route<ApiHandler>> {
  async function postContainerExec (ctx: ApiContext): Promise<void> {
    const c = b.container(ctx.params.name as string)
    const e = b.create(c, decodeExecConfig(await readJsonObject(ctx.req)))
    sendJson(ctx.res, 201, { Id: e.id })
  }

  async function postExecStart (ctx: ApiContext): Promise<void> {
    const e = b.get(ctx.params.id as string)
    const raw = ctx.upgrade !== null ? await readUpgradeBody(ctx) : ((await readJson(ctx.req)) ?? {}) as Record<string, unknown>
    const body = canonicalKeys(raw, ['Detach', 'Tty', 'ConsoleSize'])
    // the framing follows this request's Tty (the process's terminal, the create's), as dockerd does
    const rawOutput = body.Tty === true
    // ConsoleSize: API 1.42 on, with Tty only; else the create's
    const cs = body.ConsoleSize
    const consoleSize: [number, number] | null = rawOutput && versionAtLeast(ctx.version, '1.42') && Array.isArray(cs) && cs.length === 2 ? [Number(cs[0]), Number(cs[1])] : null
    const how = { rawOutput, ...(consoleSize !== null ? { consoleSize } : {}) }
    if (body.Detach === true) {
      // best effort: only drains what is left of the request (its JSON was read above)
      if (ctx.upgrade === null) await readBody(ctx.req, 1024).catch(() => {})
      await b.start(e, { ...how, detach: true, io: null, signal: ctx.signal })
      ctx.res.writeHead(200, { 'Content-Length': 0 })
      ctx.res.end()
      return
    }
    const contentType = !rawOutput && versionAtLeast(ctx.version, '1.42') ? MULTIPLEXED_STREAM : RAW_STREAM
    // validate before taking the connection over, so errors are ordinary JSON replies
    if (e.started) await b.start(e, { ...how, detach: true, io: null, signal: ctx.signal })
    const h = hijack(ctx, contentType, { 'Api-Version': API_VERSION, 'Docker-Experimental': 'false', Ostype: 'linux', Server: SERVER_HEADER })
    try {
      await b.start(e, { ...how, detach: false, io: { out: h.out, input: h.input }, signal: ctx.signal })
    } catch (err) {
      h.out.end(`${(err as Error).message}\r\n`)
    }
  }

  async function postExecResize (ctx: ApiContext): Promise<void> {
    const e = b.get(ctx.params.id as string)
    b.resize(e, intValue(ctx.query, 'h') ?? 0, intValue(ctx.query, 'w') ?? 0)
    ctx.res.writeHead(200, { 'Content-Length': 0 })
    ctx.res.end()
  }

  async function getExecJson (ctx: ApiContext): Promise<void> {
    sendJson(ctx.res, 200, toExecInspect(b.get(ctx.params.id as string)))
  }

  return [
    { method: 'POST', path: '/containers/{name:.*}/exec', handler: postContainerExec },
    { method: 'POST', path: '/exec/{id}/start', handler: postExecStart, takesOver: attachedStart },
    { method: 'POST', path: '/exec/{id}/resize', handler: postExecResize },
    { method: 'GET', path: '/exec/{id}/json', handler: getExecJson }
  ]
}
