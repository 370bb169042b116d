// The attributes a container's log messages carry (dockerd's logger.Info.ExtraAttributes and the `tag` of its
// json-file and local drivers): the log options `labels`, `labels-regex`, `env`, `env-regex` pick them from the
// container's labels and environment, and `tag` adds one made from a template. They are the same for every message of
// the container's life, so the monitor's log does not repeat them in each record: `docker logs --details` puts them
// before each line as dockerd does (keys sorted, query-escaped, `k=v,k2=v2 `). Pure.
import { invalidArgument } from '../errors.js'
import { compileRegexp, RegexpSyntaxError } from '../util/linear-regexp.js'

/** What a tag template may name of its container (dockerd's logger.Info fields and methods). */
export interface LogTagInfo {
  id: string
  /** With its leading slash, as records keep it. */
  name: string
  imageId: string
  imageName: string
  /** The process: entrypoint (path) and its arguments. */
  path: string
  args: readonly string[]
  hostname: string
}

/** The attribute options, taken by the drivers that keep attributes (json-file, local). */
export const ATTRIBUTE_OPTIONS = ['labels', 'labels-regex', 'env', 'env-regex', 'tag'] as const

function regexpOf (option: string, pattern: string): { test: (s: string) => boolean } {
  try { return compileRegexp(pattern) } catch (err) {
    if (err instanceof RegexpSyntaxError) throw invalidArgument(`log-opt ${option}: ${err.message}`)
    throw err
  }
}

const shortId = (id: string): string => id.slice(id.indexOf(':') + 1, id.indexOf(':') + 13)

/** A template's field as dockerd's Info gives it; undefined for a name it does not have. */
function tagField (field: string, i: LogTagInfo): string | undefined {
  switch (field) {
    case 'ID': return shortId(i.id)
    case 'FullID': case 'ContainerID': return i.id
    case 'Name': return i.name.replace(/^\//, '')
    case 'ContainerName': return i.name
    case 'ImageID': return shortId(i.imageId)
    case 'ImageFullID': case 'ContainerImageID': return i.imageId
    case 'ImageName': case 'ContainerImageName': return i.imageName
    case 'Command': return [i.path, ...i.args].join(' ')
    case 'ContainerEntrypoint': return i.path
    case 'Hostname': return i.hostname
    case 'DaemonName': return 'docker'
    default: return undefined
  }
}

/**
 * A `tag` template: text with `{{.Field}}` actions (`{{ .Name }}` too). Go's other template actions and functions
 * are refused out loud rather than printed as text.
 */
export function renderLogTag (template: string, info: LogTagInfo): string {
  return template.replace(/\{\{-?\s*(.*?)\s*-?\}\}|\{\{/g, (whole, action: string | undefined) => {
    const m = action === undefined ? null : /^\.([A-Za-z]+)$/.exec(action)
    const value = m === null ? undefined : tagField(m[1] as string, info)
    if (value === undefined) {
      throw invalidArgument(`log-opt tag: ${whole} is not a field Berth's log tags have (they take {{.ID}}, {{.FullID}}, {{.Name}}, {{.Command}}, {{.ImageID}}, {{.ImageFullID}}, {{.ImageName}}, {{.Hostname}}, {{.DaemonName}}): ${template}`)
    }
    return value
  })
}

/** Checks the attribute options of a create's log config (the patterns and the tag), as they will be read. */
export function checkLogAttributeOptions (options: Readonly<Record<string, string>>): void {
  for (const o of ['labels-regex', 'env-regex']) {
    const v = options[o]
    if (v !== undefined && v !== '') regexpOf(o, v)
  }
  const tag = options.tag
  if (tag !== undefined && tag !== '') renderLogTag(tag, { id: '0'.repeat(64), name: '/x', imageId: 'sha256:' + '0'.repeat(64), imageName: 'x', path: 'x', args: [], hostname: 'x' })
}

/** The attributes of a container's messages, as dockerd computes them when its logger starts. */
export function logAttributes (options: Readonly<Record<string, string>>, labels: Readonly<Record<string, string>>, env: readonly string[], info: LogTagInfo): Map<string, string> {
  const extra = new Map<string, string>()
  const byList = (list: string | undefined, from: ReadonlyMap<string, string>): void => {
    if (list === undefined || list === '') return
    for (const k of list.split(',')) { const v = from.get(k); if (v !== undefined) extra.set(k, v) }
  }
  const byRegexp = (option: string, from: ReadonlyMap<string, string>): void => {
    const pattern = options[option]
    if (pattern === undefined || pattern === '') return
    const re = regexpOf(option, pattern)
    for (const [k, v] of from) if (re.test(k)) extra.set(k, v)
  }
  const labelMap = new Map(Object.entries(labels))
  byList(options.labels, labelMap)
  byRegexp('labels-regex', labelMap)
  const envMap = new Map<string, string>()
  for (const e of env) { const eq = e.indexOf('='); if (eq >= 0) envMap.set(e.slice(0, eq), e.slice(eq + 1)) }
  if (envMap.size > 0) {
    byList(options.env, envMap)
    byRegexp('env-regex', envMap)
  }
  const tag = options.tag
  if (tag !== undefined && tag !== '') {
    const t = renderLogTag(tag, info)
    if (t !== '') extra.set('tag', t)
  }
  return extra
}

/** Go's url.QueryEscape. */
function queryEscape (s: string): string {
  return encodeURIComponent(s).replace(/%20/g, '+').replace(/[!'()*]/g, (c) => '%' + (c.charCodeAt(0).toString(16).toUpperCase()))
}

/** What `details` puts before each line: the attributes sorted by key, `k=v` joined by commas, then a space. */
export function detailsPrefix (attrs: ReadonlyMap<string, string>): Buffer {
  const keys = [...attrs.keys()].sort()
  return Buffer.from(keys.map((k) => `${queryEscape(k)}=${queryEscape(attrs.get(k) as string)}`).join(',') + ' ')
}
