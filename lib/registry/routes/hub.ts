// The Hub API's current routes: create, get and check a repository, list a namespace's repositories, list and read
// tags (plus the legacy /v2/repositories/{ns}/{repo}/tags aliases clients still call). Pagination with absolute
// next/previous URLs; `ordering` as the reference lists it.
import type { Route } from '../../http/router.js'
import { readJsonObject } from '../../http/body.js'
import { conflict, forbidden, invalidArgument, notFound } from '../../errors.js'
import { requireRepoAccess, requireUser } from '../access.js'
import type { RegistryContext, RegistryRoute } from '../context.js'
import { onSurface } from '../context.js'
import { toRepositoryInfo, toRepositoryListEntry, toTag } from '../hub-wire.js'
import { HUB_NAME_RE, RESERVED_NAMESPACES, isValidComponent, parseRepoName, TAG_RE, type RepoName } from '../names.js'
import type { Repository, TagRecord } from '../storage/registry-store.js'
import { setStateHeaders } from '../state-headers.js'
import { replyJson, reply } from './reply.js'

export const REPOSITORY_ORDERINGS = ['name', '-name', 'last_updated', '-last_updated', 'pull_count', '-pull_count'] as const
export const TAG_ORDERINGS = ['last_updated', '-last_updated', 'name', '-name'] as const
export const MAX_PAGE_SIZE = 100
const DEFAULT_PAGE_SIZE = 10

function fieldError (field: string, message: string, text = message): Error {
  return invalidArgument(text, { detail: { fields: { [field]: [message] } } })
}

/** A namespace from a path: a valid, unreserved name component (400 otherwise). */
export function checkNamespace (ns: string | undefined): string {
  if (ns === undefined || !isValidComponent(ns) || RESERVED_NAMESPACES.has(ns)) throw fieldError('namespace', `invalid namespace ${JSON.stringify(ns ?? '')}`)
  return ns
}

/** The repository addressed by {namespace}/{repository} path parameters. */
export function hubRepoName (ctx: RegistryContext): RepoName {
  const namespace = checkNamespace(ctx.params.namespace)
  const repository = ctx.params.repository ?? ''
  if (!isValidComponent(repository)) throw fieldError('repository', `invalid repository name ${JSON.stringify(repository)}`)
  return parseRepoName(`${namespace}/${repository}`)
}

function requireRepository (ctx: RegistryContext, rn: RepoName): Repository {
  requireRepoAccess(ctx, rn, 'pull')
  const repo = ctx.core.store.get(rn.name)
  if (repo === undefined) throw notFound('object not found', { detail: { detail: `repository ${rn.name} not found` } })
  return repo
}

interface Page { page: number, pageSize: number }

function intParam (q: URLSearchParams, key: string, dflt: number): number {
  const v = q.get(key)
  if (v === null || v === '') return dflt
  if (!/^\d{1,9}$/.test(v) || Number(v) < 1) throw fieldError(key, `${key} must be a positive integer`, `Invalid ${key} value`)
  return Number(v)
}

export function pageParams (q: URLSearchParams): Page {
  return { page: intParam(q, 'page', 1), pageSize: Math.min(intParam(q, 'page_size', DEFAULT_PAGE_SIZE), MAX_PAGE_SIZE) }
}

function orderingParam<T extends string> (q: URLSearchParams, allowed: readonly T[], dflt: T): T {
  const v = q.get('ordering')
  if (v === null || v === '') return dflt
  if (!(allowed as readonly string[]).includes(v)) {
    throw fieldError('ordering', `Invalid ordering value. Must be one of: ${allowed.join(', ')}`, 'Invalid ordering value')
  }
  return v as T
}

/** One page with absolute next/previous URLs that keep the other query parameters. 404 past the end (page > 1). */
export function pageOf<T> (ctx: RegistryContext, all: T[], p: Page): { count: number, next: string | null, previous: string | null, results: T[] } {
  const start = (p.page - 1) * p.pageSize
  if (p.page > 1 && start >= all.length) throw notFound('object not found', { detail: { detail: `page ${p.page} is past the end` } })
  const link = (page: number): string => {
    const q = new URLSearchParams(ctx.query)
    q.set('page', String(page))
    q.set('page_size', String(p.pageSize))
    return `${ctx.base}${ctx.path}?${q.toString()}`
  }
  return {
    count: all.length,
    next: start + p.pageSize < all.length ? link(p.page + 1) : null,
    previous: p.page > 1 ? link(p.page - 1) : null,
    results: all.slice(start, start + p.pageSize)
  }
}

function compareNullable (a: string | null, b: string | null): number {
  if (a === b) return 0
  if (a === null) return -1
  if (b === null) return 1
  return a < b ? -1 : 1
}

function permissionsOf (ctx: RegistryContext, rn: RepoName): { read: boolean, write: boolean, admin: boolean } {
  const { authority } = ctx.core
  const write = authority.mode === 'none' ? true : authority.allows(ctx.identity, rn, 'push')
  return { read: authority.allows(ctx.identity, rn, 'pull'), write, admin: write }
}

// ---- repositories

export async function createRepository (ctx: RegistryContext, pathNamespace: string | undefined): Promise<RegistryContext> {
  requireUser(ctx)
  const body = await readJsonObject(ctx.req)
  const { name, namespace, description, full_description: fullDescription, is_private: isPrivate, registry } = body
  const ns = pathNamespace ?? namespace
  if (typeof ns !== 'string' || ns === '') throw fieldError('namespace', 'This field is required.', 'namespace is required')
  checkNamespace(ns)
  if (namespace !== undefined && namespace !== ns) throw fieldError('namespace', `namespace ${JSON.stringify(namespace)} does not match the path's ${ns}`)
  ctx.params.namespace = ns
  if (ctx.route.states !== undefined) setStateHeaders(ctx) // the successor link needs the namespace from the body
  if (typeof name !== 'string' || name === '') throw fieldError('name', 'This field is required.', 'name is required')
  if (name.length < 2 || name.length > 255 || !HUB_NAME_RE.test(name)) {
    throw fieldError('name', 'Repository names must be 2 to 255 characters of lowercase letters, digits and single separators (._-), starting and ending with a letter or digit.', 'invalid repository name')
  }
  if (description !== undefined && description !== null && (typeof description !== 'string' || description.length > 100)) throw fieldError('description', 'Ensure this field has no more than 100 characters.')
  if (fullDescription !== undefined && fullDescription !== null && (typeof fullDescription !== 'string' || fullDescription.length > 25000)) throw fieldError('full_description', 'Ensure this field has no more than 25000 characters.')
  if (isPrivate !== undefined && typeof isPrivate !== 'boolean') throw fieldError('is_private', 'Must be a valid boolean.')
  if (registry !== undefined && typeof registry !== 'string') throw fieldError('registry', 'Not a valid string.')
  const rn = parseRepoName(`${ns}/${name}`)
  const { store, authority } = ctx.core
  if (!authority.canWriteNamespace(ctx.identity.user, ns)) throw forbidden(`${ctx.identity.user ?? 'anonymous'} may not create repositories in ${ns}`)
  const fields: { description?: string, fullDescription?: string, isPrivate?: boolean } = {}
  if (typeof description === 'string') fields.description = description
  if (typeof fullDescription === 'string') fields.fullDescription = fullDescription
  if (typeof isPrivate === 'boolean') fields.isPrivate = isPrivate
  const repo = await store.create(rn, fields, ctx.identity.user)
  if (repo === null) throw conflict('Repository with this Name and Namespace already exists.', { detail: { detail: `${rn.name} exists` } })
  replyJson(ctx.res, 201, toRepositoryInfo(repo, permissionsOf(ctx, rn)))
  return ctx
}

async function postRepository (ctx: RegistryContext): Promise<void> {
  await createRepository(ctx, checkNamespace(ctx.params.namespace))
}

export async function getRepository (ctx: RegistryContext): Promise<void> {
  const rn = hubRepoName(ctx)
  const repo = requireRepository(ctx, rn)
  const info = toRepositoryInfo(repo, permissionsOf(ctx, rn))
  if (ctx.req.method === 'HEAD') {
    // HEAD answers with GET's headers and no body
    ctx.res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(JSON.stringify(info) + '\n') })
    ctx.res.end()
    return
  }
  replyJson(ctx.res, 200, info)
}

export async function listRepositories (ctx: RegistryContext): Promise<void> {
  const namespace = checkNamespace(ctx.params.namespace)
  const p = pageParams(ctx.query)
  const ordering = orderingParam(ctx.query, REPOSITORY_ORDERINGS, '-last_updated')
  const filter = (ctx.query.get('name') ?? '').toLowerCase()
  const { store, authority } = ctx.core
  const repos = store.list().filter((r) =>
    r.meta.namespace === namespace && r.meta.repository.includes(filter) && authority.canList(ctx.identity, parseRepoName(r.name)))
  const desc = ordering.startsWith('-')
  const key = desc ? ordering.slice(1) : ordering
  const byName = (a: Repository, b: Repository): number => a.meta.repository < b.meta.repository ? -1 : a.meta.repository > b.meta.repository ? 1 : 0
  repos.sort((a, b) => {
    let c = key === 'name'
      ? byName(a, b)
      : key === 'pull_count'
        ? a.stats.pullCount - b.stats.pullCount
        : compareNullable(a.lastUpdated ?? a.meta.dateRegistered, b.lastUpdated ?? b.meta.dateRegistered)
    if (desc) c = -c
    return c !== 0 ? c : byName(a, b)
  })
  replyJson(ctx.res, 200, pageOf(ctx, repos.map(toRepositoryListEntry), p))
}

// ---- tags

function sortedTags (ctx: RegistryContext, repo: Repository): TagRecord[] {
  const ordering = orderingParam(ctx.query, TAG_ORDERINGS, '-last_updated')
  const filter = ctx.query.get('name') ?? ''
  const tags = [...repo.tags.values()].filter((t) => t.name.includes(filter))
  const desc = ordering.startsWith('-')
  const byName = (a: TagRecord, b: TagRecord): number => a.name < b.name ? -1 : a.name > b.name ? 1 : 0
  tags.sort((a, b) => {
    const c = ordering.endsWith('name') ? byName(a, b) : (a.pushedAt < b.pushedAt ? -1 : a.pushedAt > b.pushedAt ? 1 : byName(a, b))
    return desc ? -c : c
  })
  return tags
}

export async function listTags (ctx: RegistryContext): Promise<void> {
  const rn = hubRepoName(ctx)
  const repo = requireRepository(ctx, rn)
  const p = pageParams(ctx.query)
  const tags = sortedTags(ctx, repo)
  if (ctx.req.method === 'HEAD') {
    if (tags.length === 0) throw notFound('repository has no tags')
    reply(ctx.res, 200)
    return
  }
  const userId = (n: string | null): number => ctx.core.authority.userId(n)
  replyJson(ctx.res, 200, pageOf(ctx, tags.map((t) => toTag(repo, t, userId)), p))
}

export async function getTag (ctx: RegistryContext): Promise<void> {
  const rn = hubRepoName(ctx)
  const repo = requireRepository(ctx, rn)
  const name = ctx.params.tag ?? ''
  const tag = TAG_RE.test(name) ? repo.tags.get(name) : undefined
  if (tag === undefined) throw notFound('object not found', { detail: { detail: `tag ${name} not found in ${rn.name}` } })
  if (ctx.req.method === 'HEAD') { reply(ctx.res, 200); return }
  replyJson(ctx.res, 200, toTag(repo, tag, (n) => ctx.core.authority.userId(n)))
}

const route = onSurface('hub')

export const HUB_ROUTES: ReadonlyArray<Route<RegistryRoute>> = [
  { method: 'POST', path: '/v2/namespaces/{namespace}/repositories', handler: route(postRepository) },
  { method: 'GET', path: '/v2/namespaces/{namespace}/repositories', handler: route(listRepositories) },
  { method: 'GET', path: '/v2/namespaces/{namespace}/repositories/{repository}', handler: route(getRepository) },
  { method: 'GET', path: '/v2/namespaces/{namespace}/repositories/{repository}/tags', handler: route(listTags) },
  { method: 'GET', path: '/v2/namespaces/{namespace}/repositories/{repository}/tags/{tag}', handler: route(getTag) },
  // legacy tag routes: not in the deprecation log, still called in the wild with the same payloads
  { method: 'GET', path: '/v2/repositories/{namespace}/{repository}/tags', handler: route(listTags) },
  { method: 'GET', path: '/v2/repositories/{namespace}/{repository}/tags/{tag}', handler: route(getTag) }
]
