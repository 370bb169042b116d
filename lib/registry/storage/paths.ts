// The registry's on-disk tree, in one place. The blob half is the engine's content store (lib/image/content-store.ts):
// the same layout serves both products, so one data root could be shared and tools read either.
//
//   <data-root>/
//   ├── blobs/sha256/<hex>                        every blob: layers, configs and manifests, named by sha256;
//   │                                             written only by rename after digest (and size) matched
//   ├── ingest/<random>                           uploads in progress, hashed while written; wiped at start
//   ├── auth/token.key                            HMAC key for tokens (token auth only, 0600, made on first start)
//   └── repositories/<namespace>/<repository…>/   one directory per repository (deeper names nest: a/b/c)
//       ├── _repository.json                      id, description, privacy, creation and modification times
//       ├── _stats.json                           pull counts and last-pulled times (flushed lazily, ~1 s)
//       ├── _manifests/<hex>.json                 a manifest of this repository: media type, size, subject,
//       │                                         referenced blobs, platform and layer summary for the Hub API
//       ├── _tags/<tag>.json                      {digest, id, pushed time, pusher}
//       └── _layers/<hex>                         link: blob <hex> may be read through this repository
//
// Names inside repositories/ come from validated repository names (lowercase alphanumerics and separators, never
// starting with '_' or '.'), so `_`-prefixed entries cannot collide with a nested repository. Every key is checked
// again here (segment grammar) and by the filesystem driver (resolved path inside the root).
import { invalidArgument } from '../../errors.js'

export const REPOSITORIES_PREFIX = 'repositories/'
const SEGMENT = /^[A-Za-z0-9_][A-Za-z0-9._-]*$/
const HEX = /^[0-9a-f]{64}$/

/** Throws unless every segment of a key is a plain name (no '', '.', '..', no leading '.' or '-'). */
export function checkKey (key: string): string[] {
  const parts = key.split('/')
  for (const p of parts) {
    if (!SEGMENT.test(p)) throw invalidArgument(`invalid storage key ${JSON.stringify(key)}`)
  }
  return parts
}

function hexOf (digest: string): string {
  const hex = digest.startsWith('sha256:') ? digest.slice(7) : ''
  if (!HEX.test(hex)) throw invalidArgument(`invalid digest ${digest}`)
  return hex
}

export function repositoryDir (name: string): string { return `${REPOSITORIES_PREFIX}${name}/` }
export function repositoryKey (name: string): string { return `${repositoryDir(name)}_repository.json` }
export function statsKey (name: string): string { return `${repositoryDir(name)}_stats.json` }
export function manifestKey (name: string, digest: string): string { return `${repositoryDir(name)}_manifests/${hexOf(digest)}.json` }
export function tagKey (name: string, tag: string): string { return `${repositoryDir(name)}_tags/${tag}.json` }
export function layerLinkKey (name: string, digest: string): string { return `${repositoryDir(name)}_layers/${hexOf(digest)}` }

export type ParsedKey =
  | { kind: 'repository', name: string }
  | { kind: 'stats', name: string }
  | { kind: 'manifest', name: string, digest: string }
  | { kind: 'tag', name: string, tag: string }
  | { kind: 'layer', name: string, digest: string }

/** The inverse of the key builders, for loading the index at start; null for anything else. */
export function parseKey (key: string): ParsedKey | null {
  if (!key.startsWith(REPOSITORIES_PREFIX)) return null
  const parts = key.slice(REPOSITORIES_PREFIX.length).split('/')
  const last = parts[parts.length - 1] as string
  if (last === '_repository.json' && parts.length >= 2) return { kind: 'repository', name: parts.slice(0, -1).join('/') }
  if (last === '_stats.json' && parts.length >= 2) return { kind: 'stats', name: parts.slice(0, -1).join('/') }
  if (parts.length < 3) return null
  const dir = parts[parts.length - 2]
  const name = parts.slice(0, -2).join('/')
  if (dir === '_manifests' && /^[0-9a-f]{64}\.json$/.test(last)) return { kind: 'manifest', name, digest: `sha256:${last.slice(0, 64)}` }
  if (dir === '_tags' && last.endsWith('.json')) return { kind: 'tag', name, tag: last.slice(0, -5) }
  if (dir === '_layers' && HEX.test(last)) return { kind: 'layer', name, digest: `sha256:${last}` }
  return null
}
