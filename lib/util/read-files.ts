// Reads many small files (a store's records at start) several at a time rather than one after another: a daemon's
// restart answers /_ping only once its records are read, and each readFile is four trips through libuv's thread pool
// (open, fstat, read, close) that a loaded machine makes slow one by one. Bounded, so a data root with thousands of
// records never holds thousands of descriptors at once.
import { readFile } from 'node:fs/promises'

/** Each file's text or the error reading it, in the order of `paths`. */
export async function readTexts (paths: readonly string[], parallel = 16): Promise<Array<PromiseSettledResult<string>>> {
  const out: Array<PromiseSettledResult<string>> = new Array(paths.length)
  let next = 0
  await Promise.all(Array.from({ length: Math.min(parallel, paths.length) }, async () => {
    for (let i = next++; i < paths.length; i = next++) {
      try {
        out[i] = { status: 'fulfilled', value: await readFile(paths[i] as string, 'utf8') }
      } catch (err) {
        out[i] = { status: 'rejected', reason: err }
      }
    }
  }))
  return out
}
