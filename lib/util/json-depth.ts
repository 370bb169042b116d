// JSON from outside (request bodies, query parameters, headers, pushed manifests and configs) is parsed with a bound on
// nesting: V8's parser copes with any depth, but every walk of the value afterwards (type checks, copies, String())
// recurses, and a body nested 100,000 deep ran the stack out ("Maximum call stack size exceeded", a 500). Go's
// decoder, dockerd's, stops at 10,000 levels with "exceeded max depth"; no Docker, registry or OCI document needs
// more than a few dozen.

/** Arrays and objects nested deeper than this are refused. */
export const MAX_JSON_DEPTH = 512

const OPEN_BRACE = 0x7b
const OPEN_BRACKET = 0x5b
const CLOSE_BRACE = 0x7d
const CLOSE_BRACKET = 0x5d
const QUOTE = 0x22
const BACKSLASH = 0x5c

/** The deepest nesting of arrays and objects in JSON text (strings skipped); stops counting once past `stop`. */
export function jsonDepth (text: string | Buffer, stop = Infinity): number {
  const at = typeof text === 'string' ? (i: number): number => text.charCodeAt(i) : (i: number): number => text[i] as number
  let depth = 0
  let max = 0
  let inString = false
  for (let i = 0; i < text.length; i++) {
    const c = at(i)
    if (inString) {
      if (c === BACKSLASH) i++
      else if (c === QUOTE) inString = false
      continue
    }
    if (c === QUOTE) inString = true
    else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      if (++depth > max) {
        max = depth
        if (max > stop) return max
      }
    } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) depth--
  }
  return max
}

/**
 * JSON.parse with the nesting bound: a deeper document throws a SyntaxError ("exceeded max depth", Go's words) that
 * callers report as they report any malformed JSON (a 400).
 */
export function parseJson (text: string | Buffer, maxDepth = MAX_JSON_DEPTH): unknown {
  // a document cannot nest deeper than it is long: most bodies need no scan
  if (text.length > maxDepth && jsonDepth(text, maxDepth) > maxDepth) {
    throw new SyntaxError(`exceeded max depth (arrays and objects nest at most ${maxDepth} levels)`)
  }
  return JSON.parse(typeof text === 'string' ? text : text.toString('utf8'))
}
