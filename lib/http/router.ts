// A table-driven router: method + path template → handler. No logic beyond lookup.
// Templates spell paths as the Engine API docs do: `/containers/{id}/json`; `{name:.*}` is greedy (image names
// contain `/` and `:`). Routes are tried in insertion order, so more specific templates go first.

export interface Route<H> {
  method: string
  path: string
  handler: H
  /**
   * The route takes its connection over (attach, exec start) also when the request carries no `Upgrade` header, as
   * dockerd does: asked as the head is parsed, with the request's declared body when the read that ended the head
   * held all of it (null when it did not); true has Node's parser hand the connection over right after the head
   * (lib/http/hijack.ts), so that bytes sent after the request are the stream's, not a next request.
   */
  takesOver?: (body: Buffer | null) => boolean
}

interface CompiledRoute<H> {
  method: string
  path: string
  regex: RegExp
  names: string[]
  handler: H
  takesOver: ((body: Buffer | null) => boolean) | undefined
}

export interface RouteMatch<H> {
  handler: H
  params: Record<string, string>
}

function escapeRegex (s: string): string {
  return s.replace(/[.*+?^$()|[\]\\]/g, '\\$&')
}

export function compileTemplate (path: string): { regex: RegExp, names: string[] } {
  const names: string[] = []
  let src = '^'
  let i = 0
  while (i < path.length) {
    const open = path.indexOf('{', i)
    if (open === -1) { src += escapeRegex(path.slice(i)); break }
    src += escapeRegex(path.slice(i, open))
    const close = path.indexOf('}', open)
    if (close === -1) throw new Error(`bad route template ${path}`)
    const [name, pattern] = path.slice(open + 1, close).split(':') as [string, string | undefined]
    names.push(name)
    src += pattern === '.*' ? '(.+)' : '([^/]+)'
    i = close + 1
  }
  return { regex: new RegExp(src + '$'), names }
}

export class Router<H> {
  private readonly routes: Array<CompiledRoute<H>> = []
  /** The routes that have a takesOver (every request's head asks takesOverOf: only these are looked at first). */
  private readonly takeOvers: Array<CompiledRoute<H>> = []

  add (routes: ReadonlyArray<Route<H>>): this {
    for (const r of routes) {
      const { regex, names } = compileTemplate(r.path)
      const compiled = { method: r.method, path: r.path, regex, names, handler: r.handler, takesOver: r.takesOver }
      this.routes.push(compiled)
      if (r.takesOver !== undefined) this.takeOvers.push(compiled)
    }
    return this
  }

  /**
   * The takesOver of the route a method and path go to, undefined when that route has none. Cheap for the requests
   * of every other route (a method comparison or a regex per route that has one): asked as each request's head is
   * parsed.
   */
  takesOverOf (method: string, path: string): ((body: Buffer | null) => boolean) | undefined {
    for (const r of this.takeOvers) {
      if (r.method !== method || !r.regex.test(path)) continue
      // the route the path goes to (an earlier route may take the same path)
      return this.routes.find((x) => (x.method === method) && x.regex.test(path))?.takesOver
    }
    return undefined
  }

  /** The method and path template of every route, in the order they were added (for docs and sweeps). */
  list (): Array<{ method: string, path: string }> {
    return this.routes.map((r) => ({ method: r.method, path: r.path }))
  }

  /** Finds the route for a method and a path (already stripped of any version prefix, not yet %-decoded). */
  match (method: string, path: string): RouteMatch<H> | null {
    const m = method === 'HEAD' ? 'GET' : method
    for (const r of this.routes) {
      if (r.method !== method && r.method !== m) continue
      const found = r.regex.exec(path)
      if (found === null) continue
      const params: Record<string, string> = {}
      for (let k = 0; k < r.names.length; k++) {
        const raw = found[k + 1] as string
        let value: string
        try { value = decodeURIComponent(raw) } catch { value = raw }
        params[r.names[k] as string] = value
      }
      return { handler: r.handler, params }
    }
    return null
  }
}
