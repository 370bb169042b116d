// An ordered list of header fields with libevent evkeyvalq semantics: append without replacing, lookups and
// removals by case-insensitive (ASCII) name, first match wins. Two parallel arrays keep it cheap on the hot path.

function sameName (a: string, b: string): boolean {
  return a.length === b.length && (a === b || a.toLowerCase() === b.toLowerCase())
}

export class HeaderList {
  readonly keys: string[] = []
  readonly values: string[] = []

  get length (): number {
    return this.keys.length
  }

  /** Appends as evhttp_add_header_internal does (no validation). */
  push (key: string, value: string): void {
    this.keys.push(key)
    this.values.push(value)
  }

  indexOf (name: string): number {
    const keys = this.keys
    for (let i = 0; i < keys.length; i++) {
      if (sameName(keys[i]!, name)) return i
    }
    return -1
  }

  find (name: string): string | undefined {
    const i = this.indexOf(name)
    return i === -1 ? undefined : this.values[i]
  }

  has (name: string): boolean {
    return this.indexOf(name) !== -1
  }

  /** Removes the first match; false when there is none (evhttp_remove_header). */
  remove (name: string): boolean {
    const i = this.indexOf(name)
    if (i === -1) return false
    this.keys.splice(i, 1)
    this.values.splice(i, 1)
    return true
  }

  clear (): void {
    this.keys.length = 0
    this.values.length = 0
  }

  /** PHP array semantics: names as sent, an exactly repeated name keeps the last value. */
  toRecord (): Record<string, string> {
    const out: Record<string, string> = Object.create(null)
    for (let i = 0; i < this.keys.length; i++) out[this.keys[i]!] = this.values[i]!
    return out
  }
}
