// Variable substitution in Dockerfile words, as the reference builder does it (pure): `$VAR`, `${VAR}`,
// `${VAR:-word}`, `${VAR-word}`, `${VAR:+word}`, `${VAR+word}`, `${VAR:?msg}`, single quotes literal, double quotes
// expanding, the escape token protecting the next character. Quotes are removed from the result.
import { invalidArgument } from '../errors.js'

export type Env = ReadonlyMap<string, string>

/** `K=V` strings → a map (later entries win). */
export function envMap (list: readonly string[] | null | undefined): Map<string, string> {
  const m = new Map<string, string>()
  for (const kv of list ?? []) {
    const eq = kv.indexOf('=')
    if (eq === -1) m.set(kv, ''); else m.set(kv.slice(0, eq), kv.slice(eq + 1))
  }
  return m
}

/** Longest result of substitution in one word (more could never fit in an image config: step-config.ts). */
export const MAX_EXPANDED_WORD = 1024 * 1024

export function expandedTooLong (): Error {
  return invalidArgument(`the words of this instruction are longer than ${MAX_EXPANDED_WORD} characters (1 MiB) once their variables are substituted`)
}

class Lexer {
  private readonly s: string
  private i = 0
  private readonly env: Env
  private readonly esc: string

  constructor (s: string, env: Env, esc: string) { this.s = s; this.env = env; this.esc = esc }

  private peek (): string { return this.s[this.i] ?? '' }
  private next (): string { return this.s[this.i++] ?? '' }

  /** Reads until `stop` (not consumed) or the end. */
  word (stop: string): string {
    let out = ''
    while (this.i < this.s.length) {
      const ch = this.peek()
      if (stop !== '' && ch === stop) break
      if (ch === "'") out += this.single()
      else if (ch === '"') out += this.double()
      else if (ch === '$') out += this.dollar()
      else if (ch === this.esc) {
        this.next()
        if (this.i < this.s.length) out += this.next()
      } else out += this.next()
      if (out.length > MAX_EXPANDED_WORD) throw expandedTooLong()
    }
    return out
  }

  private single (): string {
    this.next()
    let out = ''
    for (;;) {
      if (this.i >= this.s.length) throw invalidArgument('unexpected end of statement while looking for matching single-quote')
      const ch = this.next()
      if (ch === "'") return out
      out += ch
    }
  }

  private double (): string {
    this.next()
    let out = ''
    for (;;) {
      if (this.i >= this.s.length) throw invalidArgument('unexpected end of statement while looking for matching double-quote')
      const ch = this.peek()
      if (ch === '"') { this.next(); return out }
      if (ch === '$') {
        out += this.dollar()
        if (out.length > MAX_EXPANDED_WORD) throw expandedTooLong()
        continue
      }
      this.next()
      if (ch === this.esc) {
        const n = this.peek()
        if (n === '"' || n === '$' || n === this.esc) { out += this.next(); continue }
      }
      out += ch
    }
  }

  private name (): string {
    let n = ''
    while (/[A-Za-z0-9_]/.test(this.peek()) && this.peek() !== '') n += this.next()
    return n
  }

  private lookup (name: string): string | undefined {
    return this.env.get(name)
  }

  private dollar (): string {
    this.next()
    if (this.peek() !== '{') {
      const n = this.name()
      if (n === '') return '$'
      return this.lookup(n) ?? ''
    }
    this.next()
    const n = this.name()
    if (n === '') throw invalidArgument(`bad substitution: missing name in \${${this.s.slice(this.i)}`)
    const ch = this.next()
    if (ch === '}') return this.lookup(n) ?? ''
    let colon = false
    let mod = ch
    if (ch === ':') { colon = true; mod = this.next() }
    if (mod !== '-' && mod !== '+' && mod !== '?') {
      if (mod === '') throw invalidArgument(`missing '}' in \${${n}`)
      throw invalidArgument(`unsupported modifier (${mod}) in substitution`)
    }
    const arg = this.word('}')
    if (this.next() !== '}') throw invalidArgument(`missing '}' in \${${n}`)
    const v = this.lookup(n)
    const set = colon ? v !== undefined && v !== '' : v !== undefined
    switch (mod) {
      case '-': return set ? v as string : arg
      case '+': return set ? arg : ''
      default:
        if (!set) throw invalidArgument(`${n}: ${arg === '' ? 'parameter null or not set' : arg}`)
        return v as string
    }
  }
}

/** Expands one word (quotes removed). */
export function expandWord (word: string, env: Env, escapeToken = '\\'): string {
  return new Lexer(word, env, escapeToken).word('')
}
