import { randomBytes } from 'node:crypto'
import { invalidArgument } from '../errors.js'

/** A new 64-hex identifier. */
export function newId (): string {
  return randomBytes(32).toString('hex')
}

export const FULL_ID = /^[0-9a-f]{64}$/

/**
 * Resolves a reference against a set of IDs by exact ID or unique prefix. Returns undefined when nothing matches;
 * throws invalid-argument for an ambiguous prefix (dockerd: "multiple IDs found with provided prefix").
 */
export function resolvePrefix (ids: Iterable<string>, ref: string): string | undefined {
  if (!/^[0-9a-f]+$/.test(ref)) return undefined
  let found: string | undefined
  for (const id of ids) {
    if (id === ref) return id
    if (id.startsWith(ref)) {
      if (found !== undefined) throw invalidArgument(`multiple IDs found with provided prefix: ${ref}`)
      found = id
    }
  }
  return found
}
