// .dockerignore (pure): one pattern per line, `#` comments, `!` exceptions, Go filepath.Match syntax plus `**`
// for any number of directories; a path is excluded when the last pattern matching it (or one of its parent
// directories) is not an exception.
import { posix } from 'node:path'

export interface IgnorePattern { negate: boolean, re: RegExp, text: string }

export function parseDockerignore (text: string): IgnorePattern[] {
  const out: IgnorePattern[] = []
  for (let line of text.split('\n')) {
    line = line.replace(/\r$/, '')
    if (line.startsWith('#')) continue
    line = line.trim()
    if (line === '') continue
    let negate = false
    if (line.startsWith('!')) { negate = true; line = line.slice(1).trim() }
    let p = posix.normalize(line)
    p = p.replace(/^\/+/, '').replace(/\/+$/, '')
    if (p === '' || p === '.') p = '.'
    out.push({ negate, re: compile(p), text: line })
  }
  return out
}

function compile (pattern: string): RegExp {
  let re = '^'
  for (let i = 0; i < pattern.length; i++) {
    const ch = pattern[i] as string
    if (ch === '*') {
      if (pattern[i + 1] === '*') {
        i++
        // `**/` also matches no directory at all
        if (pattern[i + 1] === '/') { i++; re += '(?:.*/)?' } else re += '.*'
      } else re += '[^/]*'
    } else if (ch === '?') re += '[^/]'
    else if (ch === '[') {
      const end = pattern.indexOf(']', i + 1)
      if (end === -1) { re += '\\['; continue }
      let cls = pattern.slice(i + 1, end)
      if (cls.startsWith('^') || cls.startsWith('!')) cls = '^' + cls.slice(1)
      re += '[' + cls.replace(/\\/g, '\\\\') + ']'
      i = end
    } else if (ch === '\\' && i + 1 < pattern.length) {
      i++
      re += escapeRe(pattern[i] as string)
    } else re += escapeRe(ch)
  }
  return new RegExp(re + '$')
}

function escapeRe (s: string): string { return s.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&') }

/** Whether a context-relative path (`a/b/c`) is excluded. */
export function isIgnored (patterns: readonly IgnorePattern[], rel: string): boolean {
  if (patterns.length === 0) return false
  const parents: string[] = []
  const parts = rel.split('/')
  for (let i = 1; i < parts.length; i++) parents.push(parts.slice(0, i).join('/'))
  let ignored = false
  for (const p of patterns) {
    if (p.negate === ignored) {
      // only a pattern that can flip the state needs testing
      if (p.re.test(rel) || parents.some((d) => p.re.test(d))) ignored = !p.negate
    }
  }
  return ignored
}
