// Garbage collection: deletes blobs no manifest of any repository references (mark and sweep over the in-memory
// index), and the repository links to them. Blobs younger than the grace period are spared, so layers of a push
// whose manifest has not arrived yet survive an online run.
import { logger } from '../log.js'
import type { RegistryStore } from './storage/registry-store.js'

const log = logger('registry:storage')

export interface GcOptions {
  /** Report only; delete nothing. */
  dryRun?: boolean
  /** Spare blobs committed less than this many milliseconds ago (default one hour). */
  gracePeriod?: number
}

export interface GcResult {
  /** Blobs kept because a manifest references them. */
  marked: number
  /** Blobs deleted (or that would be, with dryRun). */
  deleted: string[]
  /** Bytes freed (or that would be). */
  freedBytes: number
  /** Unreferenced blobs spared by the grace period. */
  spared: number
}

export const DEFAULT_GC_GRACE_MS = 3600 * 1000

export async function garbageCollect (store: RegistryStore, opts: GcOptions = {}): Promise<GcResult> {
  return await store.gcLock.exclusive(async () => await collect(store, opts))
}

async function collect (store: RegistryStore, opts: GcOptions): Promise<GcResult> {
  const grace = opts.gracePeriod ?? DEFAULT_GC_GRACE_MS
  const marked = new Set<string>()
  for (const repo of store.list()) {
    for (const m of repo.manifests.values()) {
      marked.add(m.digest)
      for (const r of m.references) marked.add(r.digest)
    }
  }
  const result: GcResult = { marked: 0, deleted: [], freedBytes: 0, spared: 0 }
  const cutoff = Date.now() - grace
  for (const digest of await store.driver.listBlobs()) {
    if (marked.has(digest)) { result.marked++; continue }
    const st = await store.driver.statBlob(digest)
    if (st === null) continue
    if (st.modified > cutoff) { result.spared++; continue }
    result.deleted.push(digest)
    result.freedBytes += st.size
    if (opts.dryRun === true) continue
    for (const name of [...store.linkedFrom(digest)]) {
      const repo = store.get(name)
      if (repo !== undefined) await store.unlinkBlob(repo, digest)
    }
    await store.driver.deleteBlob(digest)
    store.forgetCached(digest)
    log('gc: deleted %s (%d bytes)', digest, st.size)
  }
  return result
}
