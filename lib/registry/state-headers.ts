// Deprecation and removal headers, computed from the route's entry in the deprecation table.
import type { RegistryContext } from './context.js'
import { DEPRECATIONS_PATH, deprecationValue, fillTemplate, logEntry, successorsOf } from './deprecation.js'

/**
 * Deprecation and removal headers from the route's state (RFC 9745 Deprecation, RFC 8288 Link with RFC 5829
 * successor-version and RFC 9745 deprecation relations). Called again by handlers that learn a parameter of the
 * successor late (POST /v2/repositories reads the namespace from its body).
 */
export function setStateHeaders (ctx: RegistryContext): void {
  const states = ctx.route.states ?? []
  const method = ctx.req.method ?? 'GET'
  const st = states.find((s) => s.method === method) ?? states.find((s) => s.method === '*') ??
    (method === 'HEAD' ? states.find((s) => s.method === 'GET') : undefined)
  if (st === undefined) return
  const entry = logEntry(st.log)
  const links: string[] = []
  if (st.state === 'deprecated' && st.replacement !== null) {
    links.push(`<${ctx.base}${fillTemplate(st.replacement.path, ctx.params)}>; rel="successor-version"`)
  } else if (st.state === 'removed') {
    const first = successorsOf(st, ctx.params).find((p) => !p.includes('{'))
    if (first !== undefined) links.push(`<${ctx.base}${first}>; rel="successor-version"`)
  }
  links.push(`<${ctx.base}${DEPRECATIONS_PATH}#${entry.id}>; rel="deprecation"; type="application/json"`)
  ctx.res.setHeader('Deprecation', deprecationValue(entry.date))
  ctx.res.setHeader('Link', links.join(', '))
}
