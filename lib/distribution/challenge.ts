// WWW-Authenticate challenges (RFC 7235): `Bearer realm="…",service="…",scope="…"`, `Basic realm="…"`, several
// challenges in one header or across headers. Scheme names and parameter names are lower-cased. Pure.

export interface Challenge {
  scheme: string
  params: Record<string, string>
}

const TOKEN = /[!#$%&'*+\-.^_`|~0-9A-Za-z]/

function skipSpaceAndCommas (s: string, i: number): number {
  while (i < s.length && (s[i] === ' ' || s[i] === '\t' || s[i] === ',')) i++
  return i
}

function readToken (s: string, i: number): [string, number] {
  const start = i
  while (i < s.length && TOKEN.test(s[i] as string)) i++
  return [s.slice(start, i), i]
}

function readQuoted (s: string, i: number): [string, number] {
  let out = ''
  i++ // opening quote
  while (i < s.length && s[i] !== '"') {
    if (s[i] === '\\' && i + 1 < s.length) i++
    out += s[i] as string
    i++
  }
  return [out, i + 1]
}

function parseOne (header: string, out: Challenge[]): void {
  let i = 0
  let current: Challenge | null = null
  while (i < header.length) {
    i = skipSpaceAndCommas(header, i)
    if (i >= header.length) break
    const [token, after] = readToken(header, i)
    if (token === '') { i++; continue }
    let j = after
    while (j < header.length && header[j] === ' ') j++
    if (header[j] === '=' && current !== null) {
      // key=value or key="value"
      j++
      while (j < header.length && header[j] === ' ') j++
      let value: string
      if (header[j] === '"') [value, j] = readQuoted(header, j)
      else {
        const start = j
        while (j < header.length && header[j] !== ',' && header[j] !== ' ') j++
        value = header.slice(start, j)
      }
      current.params[token.toLowerCase()] = value
      i = j
      continue
    }
    if (header[j] === '=' && current === null) {
      // token68 without a scheme: ignore
      i = j + 1
      continue
    }
    current = { scheme: token.toLowerCase(), params: {} }
    out.push(current)
    i = after
  }
}

export function parseChallenges (header: string | string[] | undefined): Challenge[] {
  if (header === undefined) return []
  const out: Challenge[] = []
  for (const h of Array.isArray(header) ? header : [header]) parseOne(h, out)
  return out
}
