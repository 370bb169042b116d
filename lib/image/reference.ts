// Image references: parse, validate and normalise `name[:tag][@digest]` as the Docker distribution rules do. Pure.
import { invalidArgument } from '../errors.js'

export const DEFAULT_DOMAIN = 'docker.io'
export const DEFAULT_TAG = 'latest'
const COMPONENT = /^[a-z0-9]+(?:(?:[._]|__|[-]+)[a-z0-9]+)*$/
const TAG = /^[\w][\w.-]{0,127}$/
const DIGEST = /^[a-z0-9]+(?:[.+_-][a-z0-9]+)*:[a-zA-Z0-9=_-]{32,}$/
const DOMAIN = /^(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)*|\[[0-9a-fA-F:]+\])(?::[0-9]+)?$/

export interface Reference {
  /** Registry host, e.g. docker.io, localhost:5000 */
  domain: string
  /** Repository path, e.g. library/busybox */
  path: string
  tag?: string
  digest?: string
}

function splitDomain (name: string): [string, string] {
  const i = name.indexOf('/')
  if (i === -1) return [DEFAULT_DOMAIN, name]
  const first = name.slice(0, i)
  if (first.includes('.') || first.includes(':') || first === 'localhost' || first !== first.toLowerCase()) {
    return [first, name.slice(i + 1)]
  }
  return [DEFAULT_DOMAIN, name]
}

/** Parses a reference; throws invalid-argument `invalid reference format` as dockerd does. */
export function parseReference (ref: string): Reference {
  if (ref === '' || ref.length > 512) throw invalidArgument('invalid reference format')
  let rest = ref
  let digest: string | undefined
  const at = rest.indexOf('@')
  if (at !== -1) {
    digest = rest.slice(at + 1)
    rest = rest.slice(0, at)
    if (!DIGEST.test(digest)) throw invalidArgument('invalid reference format')
  }
  let tag: string | undefined
  const lastColon = rest.lastIndexOf(':')
  if (lastColon > rest.lastIndexOf('/')) {
    tag = rest.slice(lastColon + 1)
    rest = rest.slice(0, lastColon)
    if (!TAG.test(tag)) throw invalidArgument('invalid reference format')
  }
  let [domain, path] = splitDomain(rest)
  if (!DOMAIN.test(domain)) throw invalidArgument('invalid reference format')
  if (path === '' || path.split('/').some((c) => !COMPONENT.test(c))) {
    // the repository's name as distribution's ParseNormalizedNamed names it (docker.io's official ones under library/)
    const remote = domain === DEFAULT_DOMAIN && !path.includes('/') ? `library/${path}` : path
    if (path.toLowerCase() !== path) throw invalidArgument(`invalid reference format: repository name (${remote}) must be lowercase`)
    throw invalidArgument('invalid reference format')
  }
  if (domain === 'index.docker.io') domain = DEFAULT_DOMAIN
  if (domain === DEFAULT_DOMAIN && !path.includes('/')) path = `library/${path}`
  if ((domain + '/' + path).length > 255) throw invalidArgument('invalid reference format: repository name must not be more than 255 characters')
  const out: Reference = { domain, path }
  if (tag !== undefined) out.tag = tag
  if (digest !== undefined) out.digest = digest
  return out
}

/** Adds the default tag when neither a tag nor a digest is given. */
export function withDefaultTag (r: Reference): Reference {
  return r.tag === undefined && r.digest === undefined ? { ...r, tag: DEFAULT_TAG } : r
}

/** The repository in familiar form: `busybox`, `user/app`, `localhost:5000/x`. */
export function familiarName (r: Reference): string {
  if (r.domain !== DEFAULT_DOMAIN) return `${r.domain}/${r.path}`
  return r.path.startsWith('library/') && r.path.split('/').length === 2 ? r.path.slice('library/'.length) : r.path
}

export function fullName (r: Reference): string { return `${r.domain}/${r.path}` }

/** Familiar string with tag and/or digest: `busybox:latest`, `busybox@sha256:…`. */
export function familiarString (r: Reference): string {
  let s = familiarName(r)
  if (r.tag !== undefined) s += `:${r.tag}`
  if (r.digest !== undefined) s += `@${r.digest}`
  return s
}

/** Is this a (possibly short) image ID rather than a name? */
export function looksLikeId (ref: string): boolean {
  return /^sha256:[0-9a-f]{1,64}$/.test(ref) || /^[0-9a-f]{12,64}$/.test(ref)
}
