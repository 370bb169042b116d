// The Dockerfile text → a list of instruction nodes (pure). Follows the reference parser's rules: parser directives
// (`escape`, `syntax`) only at the very top, `#` comment lines (also inside continuations), the escape character at
// a line's end continues the instruction, instruction keywords are case-insensitive, flags (`--x=y`) lead the
// arguments, and each instruction's arguments are split by its own rule (JSON or shell form, name=value pairs, words).
// Errors carry the line number in dockerd's wording: `dockerfile parse error on line N: ...`.
import { invalidArgument, type EngineError } from '../errors.js'
import { parseJson } from '../util/json-depth.js'

export interface DockerfileNode {
  /** Lower-case keyword: `from`, `run`, `copy`… */
  name: string
  /** The instruction as written, continuations joined (what `Step n/m :` prints). */
  original: string
  /** First and last physical line (1-based). */
  startLine: number
  endLine: number
  /** Leading `--name=value` flags, as written (without the dashes split off). */
  flags: string[]
  /** The arguments after the instruction's own split rule. */
  args: string[]
  /** True when the arguments came from a JSON array (exec form). */
  json: boolean
  /** ONBUILD's instruction. */
  next?: DockerfileNode
}

export interface Dockerfile {
  nodes: DockerfileNode[]
  escapeToken: string
  /** The `syntax` directive's value when present. */
  syntax?: string
  warnings: string[]
}

export function parseError (line: number, message: string): EngineError {
  return invalidArgument(`dockerfile parse error on line ${line}: ${message}`)
}

const DIRECTIVE = /^#[ \t]*([a-zA-Z][a-zA-Z0-9]*)[ \t]*=[ \t]*(.+?)[ \t]*$/
const KNOWN_DIRECTIVES = new Set(['escape', 'syntax', 'check'])

/** The instructions and their argument rules. */
type Rule = 'json-or-shell' | 'json-or-list' | 'name-val' | 'name-or-name-val' | 'words' | 'string' | 'healthcheck' | 'sub'
const RULES: Readonly<Record<string, Rule>> = {
  from: 'words',
  run: 'json-or-shell',
  cmd: 'json-or-shell',
  entrypoint: 'json-or-shell',
  shell: 'json-or-shell',
  copy: 'json-or-list',
  add: 'json-or-list',
  volume: 'json-or-list',
  env: 'name-val',
  label: 'name-val',
  arg: 'name-or-name-val',
  expose: 'words',
  workdir: 'string',
  user: 'string',
  maintainer: 'string',
  stopsignal: 'string',
  healthcheck: 'healthcheck',
  onbuild: 'sub'
}

/** Strips a trailing escape token (plus trailing blanks); reports whether the line continues. */
function continues (line: string, escape: string): { text: string, more: boolean } {
  const trimmed = line.replace(/[ \t\r]+$/, '')
  if (trimmed.endsWith(escape)) return { text: trimmed.slice(0, -1), more: true }
  return { text: line.replace(/\r$/, ''), more: false }
}

export function parseDockerfile (text: string): Dockerfile {
  const lines = text.replace(/^\uFEFF/, '').split('\n')
  let escapeToken = '\\'
  let syntax: string | undefined
  const warnings: string[] = []
  const seen = new Set<string>()
  let i = 0
  // parser directives: comment lines of the form `# key=value` at the very top
  for (; i < lines.length; i++) {
    const m = DIRECTIVE.exec((lines[i] as string).replace(/\r$/, ''))
    if (m === null) break
    const key = (m[1] as string).toLowerCase()
    if (!KNOWN_DIRECTIVES.has(key)) break
    if (seen.has(key)) throw parseError(i + 1, `only one ${key} parser directive can be used`)
    seen.add(key)
    const value = m[2] as string
    if (key === 'escape') {
      if (value !== '\\' && value !== '`') throw parseError(i + 1, `invalid escape token '${value}' does not match ` + '` or \\')
      escapeToken = value
    } else if (key === 'syntax') syntax = value
  }
  const nodes: DockerfileNode[] = []
  while (i < lines.length) {
    const raw = (lines[i] as string).replace(/\r$/, '')
    const lead = raw.replace(/^[ \t]+/, '')
    if (lead === '' || lead.startsWith('#')) { i++; continue }
    const startLine = i + 1
    let { text, more } = continues(lead, escapeToken)
    let logical = text
    i++
    while (more && i < lines.length) {
      const next = (lines[i] as string).replace(/\r$/, '')
      i++
      const nlead = next.replace(/^[ \t]+/, '')
      if (nlead.startsWith('#')) continue
      if (nlead === '') { warnings.push(`Empty continuation line found in: ${logical}`); continue }
      ;({ text, more } = continues(next, escapeToken))
      logical += text
    }
    nodes.push(parseLine(logical, startLine, i, escapeToken))
  }
  return { nodes, escapeToken, ...(syntax !== undefined ? { syntax } : {}), warnings }
}

/** One logical line → a node. */
export function parseLine (logical: string, startLine: number, endLine: number, escapeToken: string): DockerfileNode {
  const m = /^[ \t]*(\S+)[ \t]*(.*)$/s.exec(logical)
  if (m === null) throw parseError(startLine, 'empty instruction')
  const word = m[1] as string
  const name = word.toLowerCase()
  const rule = RULES[name]
  if (rule === undefined) throw parseError(startLine, `unknown instruction: ${word.toUpperCase()}`)
  let rest = (m[2] as string).replace(/[ \t]+$/, '')
  const flags: string[] = []
  // flags: leading `--name[=value]` words
  for (;;) {
    const f = /^--([^\s=]+(?:=\S*)?)(?:[ \t]+|$)/.exec(rest)
    if (f === null || name === 'onbuild') break
    flags.push(f[1] as string)
    rest = rest.slice(f[0].length)
  }
  const node: DockerfileNode = { name, original: logical.replace(/^[ \t]+/, '').replace(/[ \t]+$/, ''), startLine, endLine, flags, args: [], json: false }
  if (/^(run|copy|add)$/.test(name) && /<<-?["']?[A-Za-z_]/.test(rest)) {
    throw parseError(startLine, `heredocs are not supported by the classic builder (${word.toUpperCase()} <<…); write the content to a file in the build context instead`)
  }
  switch (rule) {
    case 'json-or-shell': {
      const arr = jsonArray(rest)
      if (arr !== null) { node.args = arr; node.json = true } else node.args = rest === '' ? [] : [rest]
      break
    }
    case 'json-or-list': {
      const arr = jsonArray(rest)
      if (arr !== null) { node.args = arr; node.json = true } else node.args = splitWords(rest, escapeToken)
      break
    }
    case 'name-val': node.args = parseNameVal(rest, name, startLine, escapeToken); break
    case 'name-or-name-val': node.args = splitWords(rest, escapeToken); break
    case 'words': node.args = rest.split(/[ \t]+/).filter((w) => w !== ''); break
    case 'string': node.args = rest === '' ? [] : [rest]; break
    case 'healthcheck': {
      const sub = /^(\S+)[ \t]*(.*)$/s.exec(rest)
      const kind = sub?.[1]?.toUpperCase() ?? ''
      if (kind === 'NONE') { node.args = ['NONE']; if ((sub?.[2] ?? '') !== '') throw parseError(startLine, 'HEALTHCHECK NONE takes no arguments') } else if (kind === 'CMD') {
        const body = sub?.[2] ?? ''
        const arr = jsonArray(body)
        if (arr !== null) { node.args = ['CMD', ...arr]; node.json = true } else node.args = ['CMD', body]
      } else if (rest === '') node.args = []
      else throw parseError(startLine, `Unknown type "${kind}" in HEALTHCHECK (try CMD)`)
      break
    }
    case 'sub': {
      if (rest === '') throw parseError(startLine, 'ONBUILD requires at least one argument')
      const child = parseLine(rest, startLine, endLine, escapeToken)
      if (child.name === 'onbuild') throw parseError(startLine, 'Chaining ONBUILD via `ONBUILD ONBUILD` isn\'t allowed')
      if (child.name === 'from' || child.name === 'maintainer') throw parseError(startLine, `${child.name.toUpperCase()} isn't allowed as an ONBUILD trigger`)
      node.next = child
      node.args = [rest]
      break
    }
  }
  return node
}

/** A JSON array of strings, or null (then the text is shell form). */
function jsonArray (text: string): string[] | null {
  if (!text.startsWith('[')) return null
  let v: unknown
  try { v = parseJson(text) } catch { return null }
  if (!Array.isArray(v) || !v.every((x) => typeof x === 'string')) return null
  return v as string[]
}

/** Splits on blanks outside quotes; quotes and escapes are kept (the substitution step removes them). */
export function splitWords (text: string, escapeToken: string): string[] {
  const out: string[] = []
  let word = ''
  let quote = ''
  let inWord = false
  for (let i = 0; i < text.length; i++) {
    const ch = text[i] as string
    if (quote === '' && (ch === ' ' || ch === '\t')) {
      if (inWord) { out.push(word); word = ''; inWord = false }
      continue
    }
    inWord = true
    if (ch === escapeToken && i + 1 < text.length && quote !== "'") {
      word += ch + (text[i + 1] as string)
      i++
      continue
    }
    if (quote === '' && (ch === '"' || ch === "'")) quote = ch
    else if (ch === quote) quote = ''
    word += ch
  }
  if (inWord) out.push(word)
  return out
}

/** ENV/LABEL: `k=v k2="v 2"` pairs, or the legacy `ENV key value with blanks`. Returns [k, v, k, v…]. */
function parseNameVal (rest: string, name: string, line: number, escapeToken: string): string[] {
  const words = splitWords(rest, escapeToken)
  if (words.length === 0) throw parseError(line, `${name.toUpperCase()} requires at least one argument`)
  if (!(words[0] as string).includes('=')) {
    // legacy form: the first word is the key, the rest of the line the value
    const m = /^(\S+)[ \t]+(.*)$/s.exec(rest)
    if (m === null) throw parseError(line, `${name.toUpperCase()} must have two arguments`)
    return [m[1] as string, m[2] as string]
  }
  const out: string[] = []
  for (const w of words) {
    const eq = w.indexOf('=')
    if (eq === 0) throw parseError(line, `${name.toUpperCase()} names can not be blank`)
    if (eq < 0) throw parseError(line, `Syntax error - can't find = in "${w}". Must be of the form: name=value`)
    out.push(w.slice(0, eq), w.slice(eq + 1))
  }
  return out
}
