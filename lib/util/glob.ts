// Go's path.Match without regular expressions: `*` (any run of characters but `/`), `?` (one character but `/`),
// `[...]`/`[^...]` classes with ranges, `\` escapes. The pattern is compiled to a list of tokens and matched by
// advancing the set of reachable token positions one input character at a time, so a match costs at most
// pattern length x name length steps whatever the pattern (a backtracking regex of 18 stars never finishes).
import { invalidArgument } from '../errors.js'

type Token =
  | { kind: 'star' }
  | { kind: 'any' }
  | { kind: 'char', c: string }
  | { kind: 'class', negated: boolean, ranges: Array<[string, string]> }

/** A compiled pattern; `match` is linear in the name for a given pattern. */
export interface Glob { match: (name: string) => boolean }

/** Longest pattern accepted: a filter value is a name, not a document. */
export const MAX_GLOB_LENGTH = 1024

function badPattern (pattern: string): Error {
  return invalidArgument(`invalid reference pattern ${JSON.stringify(pattern.length > 80 ? pattern.slice(0, 80) + '…' : pattern)}: syntax error in pattern`)
}

export function compileGlob (pattern: string): Glob {
  if (pattern.length > MAX_GLOB_LENGTH) throw invalidArgument(`reference pattern longer than ${MAX_GLOB_LENGTH} characters`)
  const chars = [...pattern]
  const tokens: Token[] = []
  let i = 0
  const classChar = (): string => {
    let c = chars[i]
    if (c === undefined || c === ']' || c === '-') throw badPattern(pattern)
    if (c === '\\') { i++; c = chars[i]; if (c === undefined) throw badPattern(pattern) }
    i++
    return c
  }
  while (i < chars.length) {
    const c = chars[i] as string
    if (c === '*') {
      // runs of stars are one star
      if (tokens[tokens.length - 1]?.kind !== 'star') tokens.push({ kind: 'star' })
      i++
    } else if (c === '?') {
      tokens.push({ kind: 'any' }); i++
    } else if (c === '\\') {
      const n = chars[i + 1]
      if (n === undefined) throw badPattern(pattern)
      tokens.push({ kind: 'char', c: n }); i += 2
    } else if (c === '[') {
      i++
      const negated = chars[i] === '^'
      if (negated) i++
      const ranges: Array<[string, string]> = []
      do {
        const lo = classChar()
        let hi = lo
        if (chars[i] === '-') { i++; hi = classChar() }
        ranges.push([lo, hi])
      } while (i < chars.length && chars[i] !== ']')
      if (chars[i] !== ']') throw badPattern(pattern)
      i++
      tokens.push({ kind: 'class', negated, ranges })
    } else {
      tokens.push({ kind: 'char', c }); i++
    }
  }
  const accepts = (t: Token, ch: string): boolean => {
    switch (t.kind) {
      case 'star': case 'any': return ch !== '/'
      case 'char': return t.c === ch
      case 'class': return t.ranges.some(([lo, hi]) => lo <= ch && ch <= hi) !== t.negated
    }
  }
  return {
    match (name: string): boolean {
      // positions in `tokens` reachable after the input so far; a star also lets its successor start
      let cur = new Uint8Array(tokens.length + 1)
      let next = new Uint8Array(tokens.length + 1)
      const close = (set: Uint8Array): void => {
        for (let p = 0; p < tokens.length; p++) if (set[p] === 1 && tokens[p]?.kind === 'star') set[p + 1] = 1
      }
      cur[0] = 1
      close(cur)
      for (const ch of name) {
        next.fill(0)
        let any = false
        for (let p = 0; p < tokens.length; p++) {
          if (cur[p] !== 1) continue
          const t = tokens[p] as Token
          if (!accepts(t, ch)) continue
          // a star stays where it is; anything else moves on
          next[t.kind === 'star' ? p : p + 1] = 1
          any = true
        }
        if (!any) return false
        close(next)
        const tmp = cur; cur = next; next = tmp
      }
      return cur[tokens.length] === 1
    }
  }
}
