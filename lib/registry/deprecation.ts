// The Hub API's deprecation state as data (seed: registry-deprecation.md). This one table drives the behaviour
// (headers on deprecated routes, 410 on removed ones), the docs (GET /v2/deprecations, deprecationMarkdown()) and
// the tests (spec/registry/deprecation.test.ts walks it).

export const DEPRECATION_LOG = [
  { id: 'undocumented-repository-routes', status: 'Deprecated', feature: 'Undocumented create and get repository routes', date: '2025-09-19' },
  { id: 'list-by-namespace', status: 'Deprecated', feature: 'List-by-namespace route', date: '2025-06-27' },
  { id: 'api-v1', status: 'Removed', feature: 'Version 1 of the API', date: '2022-08-23' }
] as const

export type LogEntry = typeof DEPRECATION_LOG[number]
export type LogId = LogEntry['id']

export interface Replacement {
  /** operationId in Docker's Hub API reference. */
  operation: string
  method: string
  path: string
}

export interface RouteState {
  /** HTTP method, or '*' for any. */
  method: string
  /** Path template, spelled as in the reference. */
  path: string
  state: 'deprecated' | 'removed'
  log: LogId
  replacement: Replacement | null
}

const CREATE: Replacement = { operation: 'CreateRepository', method: 'POST', path: '/v2/namespaces/{namespace}/repositories' }

/** Deprecated routes: still served with their old shapes, plus Deprecation and Link headers. */
export const DEPRECATED_ROUTES: readonly RouteState[] = [
  { method: 'POST', path: '/v2/repositories', state: 'deprecated', log: 'undocumented-repository-routes', replacement: CREATE },
  { method: 'POST', path: '/v2/repositories/{namespace}', state: 'deprecated', log: 'undocumented-repository-routes', replacement: CREATE },
  { method: 'GET', path: '/v2/repositories/{namespace}/{repository}', state: 'deprecated', log: 'undocumented-repository-routes', replacement: { operation: 'GetRepository', method: 'GET', path: '/v2/namespaces/{namespace}/repositories/{repository}' } },
  { method: 'HEAD', path: '/v2/repositories/{namespace}/{repository}', state: 'deprecated', log: 'undocumented-repository-routes', replacement: { operation: 'CheckRepository', method: 'HEAD', path: '/v2/namespaces/{namespace}/repositories/{repository}' } },
  { method: 'GET', path: '/v2/repositories/{namespace}', state: 'deprecated', log: 'list-by-namespace', replacement: { operation: 'listNamespaceRepositories', method: 'GET', path: '/v2/namespaces/{namespace}/repositories' } }
]

/** Removed routes: any method answers 410 Gone. Their successors come from MIGRATION. */
export const REMOVED_ROUTES: readonly RouteState[] = [
  '/v1/repositories/{name}/images',
  '/v1/repositories/{name}/tags',
  '/v1/repositories/{name}/tags/{tag_name}',
  '/v1/repositories/{namespace}/{name}/images',
  '/v1/repositories/{namespace}/{name}/tags',
  '/v1/repositories/{namespace}/{name}/tags/{tag_name}'
].map((path) => ({ method: '*', path, state: 'removed' as const, log: 'api-v1' as const, replacement: null }))

/** Migration from version 1 to version 2, verbatim from the seed (one old path may have several new ones). */
export const MIGRATION: ReadonlyArray<{ from: string, to: string }> = [
  { from: '/v1/repositories/{name}/tags', to: '/v2/namespaces/{namespace}/repositories/{repository}/tags' },
  { from: '/v1/repositories/{namespace}/{name}/tags', to: '/v2/namespaces/{namespace}/repositories/{repository}/tags' },
  { from: '/v1/repositories/{namespace}/{name}/tags', to: '/v2/namespaces/{namespace}/repositories/{repository}/tags/{tag}' },
  { from: '/v1/repositories/{namespace}/{name}/tags/{tag_name}', to: '/v2/namespaces/{namespace}/repositories/{repository}/tags/{tag}' }
]

export const DEPRECATIONS_PATH = '/v2/deprecations'

export function logEntry (id: LogId): LogEntry {
  return DEPRECATION_LOG.find((e) => e.id === id) as LogEntry
}

/** RFC 9745 Deprecation header value: an RFC 9651 Date, `@<epoch seconds>` of the log date (UTC midnight). */
export function deprecationValue (date: string): string {
  return `@${Date.parse(`${date}T00:00:00Z`) / 1000}`
}

/** Fills `{param}` placeholders that have a value; others stay as they are. */
export function fillTemplate (template: string, params: Readonly<Record<string, string | undefined>>): string {
  return template.replace(/\{([a-z_]+)\}/g, (whole, name: string) => {
    const v = params[name]
    return v === undefined ? whole : encodeURIComponent(v)
  })
}

/** v1 parameters in v2 terms: {name} is the repository, {tag_name} the tag; a bare name lives in `library`. */
export function v2ParamsOf (v1: Readonly<Record<string, string>>): Record<string, string | undefined> {
  return { namespace: v1.namespace ?? 'library', repository: v1.name, tag: v1.tag_name }
}

/** Successor paths of a removed route from the migration table, filled in; fully filled ones first. */
export function successorsOf (route: RouteState, params: Readonly<Record<string, string>>): string[] {
  const v2 = v2ParamsOf(params)
  const filled = MIGRATION.filter((m) => m.from === route.path).map((m) => fillTemplate(m.to, v2))
  return [...filled.filter((p) => !p.includes('{')), ...filled.filter((p) => p.includes('{'))]
}

/** The log and both route tables as JSON (GET /v2/deprecations). */
export function deprecationDocument (): unknown {
  const route = (r: RouteState): unknown => {
    const e = logEntry(r.log)
    return {
      method: r.method,
      path: r.path,
      state: r.state,
      date: e.date,
      feature: e.feature,
      deprecation: deprecationValue(e.date),
      replacement: r.state === 'removed'
        ? (MIGRATION.some((m) => m.from === r.path) ? { operation: null, method: 'GET', paths: MIGRATION.filter((m) => m.from === r.path).map((m) => m.to) } : null)
        : r.replacement
    }
  }
  return {
    log: DEPRECATION_LOG.map((e) => ({ id: e.id, status: e.status, feature: e.feature, date: e.date, deprecation: deprecationValue(e.date) })),
    routes: [...DEPRECATED_ROUTES, ...REMOVED_ROUTES].map(route),
    migration: MIGRATION
  }
}

/** The same data as a Markdown page (README, GET /v2/deprecations?format=markdown). */
export function deprecationMarkdown (): string {
  const lines = ['| Method | Route | State | Since | Replacement |', '|---|---|---|---|---|']
  for (const r of DEPRECATED_ROUTES) {
    const rep = r.replacement
    lines.push(`| ${r.method} | \`${r.path}\` | Deprecated | ${logEntry(r.log).date} | ${rep === null ? '—' : `${rep.operation}: \`${rep.method} ${rep.path}\``} |`)
  }
  for (const r of REMOVED_ROUTES) {
    const to = MIGRATION.filter((m) => m.from === r.path).map((m) => `\`${m.to}\``)
    const none = r.path.endsWith('/images') ? 'none (use the CLI)' : 'none in the migration table'
    lines.push(`| any | \`${r.path}\` | Removed (410) | ${logEntry(r.log).date} | ${to.length === 0 ? none : to.join(' or ')} |`)
  }
  return lines.join('\n') + '\n'
}
