// Bounded polling for specs: what is awaited is named in the error when it does not come.

/** Polls fn every `every` ms until it returns something other than undefined, false or null (at most `ms`); returns it. */
export async function until<T> (what: string, fn: () => Promise<T | undefined | false | null>, ms = 60_000, every = 50): Promise<T> {
  const end = Date.now() + ms
  for (;;) {
    const v = await fn()
    if (v !== undefined && v !== false && v !== null) return v
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, every))
  }
}
