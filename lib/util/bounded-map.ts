// A Map that keeps at most `limit` entries: setting a new key past the limit drops the least recently set one. For
// caches keyed by what a client names (a registry host, say), so that no request pattern grows the daemon for good.
export class BoundedMap<K, V> extends Map<K, V> {
  readonly limit: number

  constructor (limit: number) {
    super()
    this.limit = limit
  }

  override set (key: K, value: V): this {
    // a key set again moves to the back (the most recent)
    super.delete(key)
    super.set(key, value)
    while (this.size > this.limit) super.delete(this.keys().next().value as K)
    return this
  }
}
