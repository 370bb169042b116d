// GET /v2/ (API version check) and GET /v2/_catalog (distribution's extension, n/last pagination).
import type { Route } from '../../http/router.js'
import { requireToken } from '../access.js'
import { grants } from '../auth/scope.js'
import { registryError } from '../codes.js'
import type { RegistryContext, RegistryRoute } from '../context.js'
import { onSurface } from '../context.js'
import { parseRepoName } from '../names.js'
import { nextLink, replyJson } from './reply.js'

async function getBase (ctx: RegistryContext): Promise<void> {
  requireToken(ctx)
  replyJson(ctx.res, 200, {})
}

/** Parses `n` (≥ 0) for n/last pagination; undefined when absent. */
export function pageSize (q: URLSearchParams): number | undefined {
  const v = q.get('n')
  if (v === null || v === '') return undefined
  if (!/^\d{1,9}$/.test(v)) throw registryError('PAGINATION_NUMBER_INVALID', { detail: { n: v } })
  return Number(v)
}

/** One page of a sorted list after `last`, and the Link header when more follow. */
export function paginate (all: string[], q: URLSearchParams, path: string): { page: string[], link?: string } {
  const n = pageSize(q)
  const last = q.get('last')
  const after = last === null || last === '' ? all : all.filter((x) => x > last)
  if (n === undefined) return { page: after }
  const page = after.slice(0, n)
  if (n > 0 && after.length > n) return { page, link: nextLink(path, n, page[page.length - 1] as string) }
  return { page }
}

async function getCatalog (ctx: RegistryContext): Promise<void> {
  requireToken(ctx)
  const { identity, core } = ctx
  if (identity.grants !== null && !grants(identity.grants, 'registry', 'catalog', '*')) {
    throw registryError('UNAUTHORIZED', { detail: [{ Type: 'registry', Name: 'catalog', Action: '*' }] })
  }
  const names = core.store.list().map((r) => r.name).filter((n) => core.authority.canList(identity, parseRepoName(n))).sort()
  const { page, link } = paginate(names, ctx.query, '/v2/_catalog')
  replyJson(ctx.res, 200, { repositories: page }, link === undefined ? {} : { Link: link })
}

const route = onSurface('distribution')

export const BASE_ROUTES: ReadonlyArray<Route<RegistryRoute>> = [
  { method: 'GET', path: '/v2/', handler: route(getBase) },
  { method: 'GET', path: '/v2', handler: route(getBase) },
  { method: 'GET', path: '/v2/_catalog', handler: route(getCatalog) }
]
