// Regular expressions in linear time, for patterns clients send (the containers/json `name` filter, which dockerd
// runs through Go's RE2). V8's engine backtracks: `(\w|\w)*-` against a 27-character name takes half a minute. This
// compiles the RE2 syntax a filter needs (literals, `.`, classes, `\d\w\s` and their negations, `^ $ \A \z \b \B`,
// groups, alternation, `* + ? {n,m}` greedy or lazy, `(?i)`) to a small program and runs it as a Thompson/Pike
// simulation: every input character advances a set of at most `program length` threads, so a search costs
// O(pattern x text) whatever the pattern. Programs are capped in size; anything else (back references, look-around,
// which RE2 refuses too) is a syntax error.

/** Largest program (instructions) a pattern may compile to; RE2 caps repetition counts at 1000 likewise. */
export const MAX_PROGRAM = 20_000
export const MAX_PATTERN_LENGTH = 4096
const MAX_REPEAT = 1000

type CharTest = (c: number) => boolean
type Inst =
  | { op: 'char', test: CharTest }
  | { op: 'split', x: number, y: number }
  | { op: 'jmp', x: number }
  | { op: 'assert', kind: 'bol' | 'eol' | 'word' | 'nonword' }
  | { op: 'match' }

type Node =
  | { t: 'char', test: CharTest }
  | { t: 'assert', kind: 'bol' | 'eol' | 'word' | 'nonword' }
  | { t: 'cat', items: Node[] }
  | { t: 'alt', items: Node[] }
  | { t: 'repeat', node: Node, min: number, max: number }
  | { t: 'empty' }

export class RegexpSyntaxError extends Error {}

const isWord = (c: number): boolean => (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 95
const isDigit = (c: number): boolean => c >= 48 && c <= 57
const isSpace = (c: number): boolean => c === 32 || (c >= 9 && c <= 13)
const fold = (c: number): number => (c >= 65 && c <= 90 ? c + 32 : c)

class Parser {
  private i = 0
  private caseless = false
  private readonly src: string
  constructor (src: string) { this.src = src }

  fail (why: string): never { throw new RegexpSyntaxError(`error parsing regexp: ${why}: \`${this.src}\``) }
  peek (): string | undefined { return this.src[this.i] }
  eof (): boolean { return this.i >= this.src.length }

  parse (): Node {
    const n = this.alternation()
    if (!this.eof()) this.fail('unexpected )')
    return n
  }

  alternation (): Node {
    const items = [this.concatenation()]
    while (this.peek() === '|') { this.i++; items.push(this.concatenation()) }
    return items.length === 1 ? items[0] as Node : { t: 'alt', items }
  }

  concatenation (): Node {
    const items: Node[] = []
    while (!this.eof() && this.peek() !== '|' && this.peek() !== ')') {
      const atom = this.atom()
      if (atom === null) continue
      items.push(this.quantified(atom))
    }
    return items.length === 1 ? items[0] as Node : items.length === 0 ? { t: 'empty' } : { t: 'cat', items }
  }

  quantified (atom: Node): Node {
    let node = atom
    let repeated = false
    for (;;) {
      const c = this.peek()
      let min: number; let max: number
      if (c === '*') { min = 0; max = -1; this.i++ } else if (c === '+') { min = 1; max = -1; this.i++ } else if (c === '?') { min = 0; max = 1; this.i++ } else if (c === '{') {
        const m = /^\{(\d+)(,(\d*))?\}/.exec(this.src.slice(this.i, this.i + 16))
        if (m === null) return node // a literal brace, as in RE2
        min = Number(m[1]); max = m[2] === undefined ? min : m[3] === '' ? -1 : Number(m[3])
        if (min > MAX_REPEAT || max > MAX_REPEAT || (max !== -1 && max < min)) this.fail(`invalid repeat count: ${m[0]}`)
        this.i += m[0].length
      } else return node
      // RE2 refuses `a**` (a group around the inner repetition is fine)
      if (repeated) this.fail(`invalid nested repetition operator: ${this.src.slice(this.i - 2, this.i)}`)
      repeated = true
      if (this.peek() === '?') this.i++ // lazy: the same language, so the same yes/no answer
      node = { t: 'repeat', node, min, max }
    }
  }

  atom (): Node | null {
    const c = this.src[this.i++] as string
    switch (c) {
      case '.': return { t: 'char', test: (x) => x !== 10 }
      case '^': return { t: 'assert', kind: 'bol' }
      case '$': return { t: 'assert', kind: 'eol' }
      case '[': return this.charClass()
      case '\\': return this.escape(false) as Node
      case '(': return this.group()
      case ')': return this.fail('unexpected )')
      case '*': case '+': case '?': return this.fail(`missing argument to repetition operator: ${c}`)
      default: return this.literal(c.charCodeAt(0))
    }
  }

  literal (code: number): Node {
    if (this.caseless) { const f = fold(code); return { t: 'char', test: (x) => fold(x) === f } }
    return { t: 'char', test: (x) => x === code }
  }

  group (): Node | null {
    if (this.peek() === '?') {
      const rest = this.src.slice(this.i)
      const named = /^\?P?<([A-Za-z_][A-Za-z0-9_]*)>/.exec(rest)
      if (named !== null) { this.i += named[0].length } else if (rest.startsWith('?:')) { this.i += 2 } else {
        const flags = /^\?([imsU-]*)(:|\))/.exec(rest)
        if (flags === null) this.fail('invalid or unsupported Perl syntax')
        this.i += flags[0].length
        const on = (flags[1] as string).split('-')[0] as string
        if (on.includes('i')) this.caseless = true
        if (flags[2] === ')') return null
      }
    }
    const inner = this.alternation()
    if (this.peek() !== ')') this.fail('missing closing )')
    this.i++
    return { t: 'cat', items: [inner] }
  }

  /** An escape after `\`; in a class, assertions are not allowed and a class test is returned. */
  escape (inClass: boolean): Node {
    const c = this.src[this.i++]
    if (c === undefined) this.fail('trailing backslash at end of expression')
    const cls = (test: CharTest): Node => ({ t: 'char', test })
    switch (c) {
      case 'd': return cls(isDigit)
      case 'D': return cls((x) => !isDigit(x))
      case 'w': return cls(isWord)
      case 'W': return cls((x) => !isWord(x))
      case 's': return cls(isSpace)
      case 'S': return cls((x) => !isSpace(x))
      case 'n': return this.literal(10)
      case 't': return this.literal(9)
      case 'r': return this.literal(13)
      case 'f': return this.literal(12)
      case 'v': return this.literal(11)
      case 'x': {
        const m = /^(?:\{([0-9A-Fa-f]{1,6})\}|([0-9A-Fa-f]{2}))/.exec(this.src.slice(this.i))
        if (m === null) this.fail('invalid escape sequence: \\x')
        this.i += m[0].length
        return this.literal(parseInt(m[1] ?? m[2] as string, 16))
      }
    }
    if (!inClass) {
      if (c === 'A') return { t: 'assert', kind: 'bol' }
      if (c === 'z') return { t: 'assert', kind: 'eol' }
      if (c === 'b') return { t: 'assert', kind: 'word' }
      if (c === 'B') return { t: 'assert', kind: 'nonword' }
    }
    // RE2: only punctuation may be escaped to stand for itself
    if (/[A-Za-z0-9]/.test(c)) this.fail(`invalid escape sequence: \\${c}`)
    return this.literal(c.charCodeAt(0))
  }

  charClass (): Node {
    const negated = this.peek() === '^'
    if (negated) this.i++
    const tests: CharTest[] = []
    let first = true
    for (;;) {
      if (this.eof()) this.fail('missing closing ]')
      let c = this.src[this.i] as string
      if (c === ']' && !first) { this.i++; break }
      first = false
      const posix = /^\[:(\^?)(alnum|alpha|digit|lower|upper|space|word|punct|xdigit):\]/.exec(this.src.slice(this.i))
      if (posix !== null) {
        this.i += posix[0].length
        const re = { alnum: /[A-Za-z0-9]/, alpha: /[A-Za-z]/, digit: /[0-9]/, lower: /[a-z]/, upper: /[A-Z]/, space: /\s/, word: /\w/, punct: /[!-/:-@[-`{-~]/, xdigit: /[0-9A-Fa-f]/ }[posix[2] as 'alnum']
        const neg = posix[1] === '^'
        tests.push((x) => re.test(String.fromCharCode(x)) !== neg)
        continue
      }
      this.i++
      let lo: number
      if (c === '\\') {
        const esc = this.escape(true)
        if (esc.t !== 'char') this.fail('invalid escape in class')
        // a one-character escape may start a range; a class escape (\d) may not
        const probe = esc.test
        const single = [...Array(128).keys()].filter((k) => probe(k))
        if (single.length !== 1 || this.peek() !== '-' || this.src[this.i + 1] === ']') { tests.push(probe); continue }
        lo = single[0] as number
      } else lo = c.charCodeAt(0)
      let hi = lo
      if (this.peek() === '-' && this.src[this.i + 1] !== ']' && this.src[this.i + 1] !== undefined) {
        this.i++
        c = this.src[this.i++] as string
        if (c === '\\') {
          const esc = this.escape(true)
          const single = esc.t === 'char' ? [...Array(128).keys()].filter((k) => esc.test(k)) : []
          if (single.length !== 1) this.fail('invalid character class range')
          hi = single[0] as number
        } else hi = c.charCodeAt(0)
        if (hi < lo) this.fail(`invalid character class range: ${String.fromCharCode(lo)}-${String.fromCharCode(hi)}`)
      }
      const caseless = this.caseless
      tests.push(caseless
        ? (x) => (x >= lo && x <= hi) || (fold(x) >= lo && fold(x) <= hi) || (x >= 97 && x <= 122 && x - 32 >= lo && x - 32 <= hi)
        : (x) => x >= lo && x <= hi)
    }
    return { t: 'char', test: (x) => tests.some((f) => f(x)) !== negated }
  }
}

function compile (node: Node, prog: Inst[]): void {
  if (prog.length > MAX_PROGRAM) throw new RegexpSyntaxError('error parsing regexp: expression too large')
  switch (node.t) {
    case 'empty': return
    case 'char': prog.push({ op: 'char', test: node.test }); return
    case 'assert': prog.push({ op: 'assert', kind: node.kind }); return
    case 'cat': for (const n of node.items) compile(n, prog); return
    case 'alt': {
      // split L1, next; L1: a; jmp end; next: split ... ; last alternative falls through
      const jumps: number[] = []
      node.items.forEach((n, k) => {
        if (k < node.items.length - 1) {
          const split = prog.length
          prog.push({ op: 'split', x: split + 1, y: -1 })
          compile(n, prog)
          jumps.push(prog.length)
          prog.push({ op: 'jmp', x: -1 })
          ;(prog[split] as { y: number }).y = prog.length
        } else compile(n, prog)
      })
      for (const j of jumps) (prog[j] as { x: number }).x = prog.length
      return
    }
    case 'repeat': {
      for (let k = 0; k < node.min; k++) compile(node.node, prog)
      if (node.max === -1) {
        const split = prog.length
        prog.push({ op: 'split', x: split + 1, y: -1 })
        compile(node.node, prog)
        prog.push({ op: 'jmp', x: split })
        ;(prog[split] as { y: number }).y = prog.length
        return
      }
      const ends: number[] = []
      for (let k = node.min; k < node.max; k++) {
        ends.push(prog.length)
        prog.push({ op: 'split', x: prog.length + 1, y: -1 })
        compile(node.node, prog)
        if (prog.length > MAX_PROGRAM) throw new RegexpSyntaxError('error parsing regexp: expression too large')
      }
      for (const e of ends) (prog[e] as { y: number }).y = prog.length
    }
  }
}

export interface LinearRegexp { test: (text: string) => boolean }

/** Compiles an RE2-syntax pattern; throws RegexpSyntaxError for what RE2 refuses or what is too large. */
export function compileRegexp (pattern: string): LinearRegexp {
  if (pattern.length > MAX_PATTERN_LENGTH) throw new RegexpSyntaxError('error parsing regexp: expression too large')
  const prog: Inst[] = []
  compile(new Parser(pattern).parse(), prog)
  prog.push({ op: 'match' })
  if (prog.length > MAX_PROGRAM) throw new RegexpSyntaxError('error parsing regexp: expression too large')
  return {
    /** Unanchored search, as Go's MatchString. */
    test (text: string): boolean {
      const n = prog.length
      let clist: number[] = []
      let nlist: number[] = []
      const mark = new Int32Array(n).fill(-1)
      let gen = 0
      const add = (list: number[], pc: number, pos: number): boolean => {
        // iterative closure over jmp/split/assert; returns true when `match` is reachable
        const stack = [pc]
        let matched = false
        while (stack.length > 0) {
          const p = stack.pop() as number
          if (mark[p] === gen) continue
          mark[p] = gen
          const ins = prog[p] as Inst
          switch (ins.op) {
            case 'jmp': stack.push(ins.x); break
            case 'split': stack.push(ins.y, ins.x); break
            case 'assert': {
              const prev = pos > 0 ? text.charCodeAt(pos - 1) : -1
              const next = pos < text.length ? text.charCodeAt(pos) : -1
              const boundary = (prev !== -1 && isWord(prev)) !== (next !== -1 && isWord(next))
              const ok = ins.kind === 'bol' ? pos === 0 : ins.kind === 'eol' ? pos === text.length : ins.kind === 'word' ? boundary : !boundary
              if (ok) stack.push(p + 1)
              break
            }
            case 'match': matched = true; break
            case 'char': list.push(p)
          }
        }
        return matched
      }
      for (let pos = 0; pos <= text.length; pos++) {
        // a new thread starts at every position (an unanchored search); threads already here are kept
        if (add(clist, 0, pos)) return true
        if (pos === text.length) break
        gen++
        nlist = []
        const c = text.charCodeAt(pos)
        for (const p of clist) {
          const ins = prog[p] as Extract<Inst, { op: 'char' }>
          if (ins.test(c) && add(nlist, p + 1, pos + 1)) return true
        }
        const tmp = clist; clist = nlist; nlist = tmp
      }
      return false
    }
  }
}
