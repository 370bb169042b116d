// The fs that tar-fs writes an extraction through, with its calls counted. tar-fs chains its file calls from callback
// to callback (stat, mkdir, chown, chmod, then a write stream, then utimes), and destroying its stream does not stop a
// chain already running: an extraction that failed would go on making directories and files after its caller had
// been told, racing the caller's removal of the half-made tree (the tree came back, or the removal failed with
// ENOTEMPTY in place of the extraction's own error). With this, a failed extraction stops new calls and waits for the
// ones in flight before it rejects.
import fs from 'node:fs'
import { PassThrough, type Writable } from 'node:stream'

type Callback = (...results: unknown[]) => void
type Call = (...args: unknown[]) => void

/** The callback-style calls tar-fs's extractor makes (lchmod does not exist on Linux, and stays absent). */
const CALLS = ['stat', 'lstat', 'mkdir', 'chmod', 'chown', 'lchown', 'utimes', 'unlink', 'symlink', 'link', 'realpath', 'readlink'] as const

export interface TrackedFs {
  /** The fs object to hand to tar-fs. */
  fs: typeof fs
  /** From now on every call fails at once with `err`; none starts. */
  stop: (err: Error) => void
  /** Resolves when no call or write stream is in flight. */
  idle: () => Promise<void>
}

/** `overrides` replace calls of `base` (they are counted too). */
export function trackedFs (overrides: Partial<Record<typeof CALLS[number], Call>> = {}): TrackedFs {
  let pending = 0
  let stopped: Error | null = null
  const waiters: Array<() => void> = []
  const settle = (): void => {
    pending--
    if (pending === 0) for (const wake of waiters.splice(0)) wake()
  }
  const props: PropertyDescriptorMap = {}
  for (const name of CALLS) {
    const call = (overrides[name] ?? (fs as unknown as Record<string, Call>)[name]) as Call
    props[name] = {
      value (...args: unknown[]) {
        const cb = args.pop() as Callback
        if (stopped !== null) { process.nextTick(cb, stopped); return }
        pending++
        call(...args, (...results: unknown[]) => {
          try { cb(...results) } finally { settle() }
        })
      }
    }
  }
  props.createWriteStream = {
    value (path: string): Writable {
      if (stopped !== null) {
        const refused = new PassThrough()
        process.nextTick(() => { refused.destroy(stopped ?? undefined) })
        return refused
      }
      pending++
      const ws = fs.createWriteStream(path)
      ws.once('close', settle)
      return ws
    }
  }
  return {
    fs: Object.create(fs, props) as typeof fs,
    stop (err) { stopped ??= err },
    async idle () {
      if (pending === 0) return
      await new Promise<void>((resolve) => { waiters.push(resolve) })
    }
  }
}
