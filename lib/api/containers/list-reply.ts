// GET /containers/json's bytes: each item's JSON cached until its container changes in a way the item shows, the
// Status text (which changes with the clock) spliced in, so a list is a concatenation of cached buffers.
import type { ContainerHandle } from '../../containers/container-handle.js'
import { nsToMs, statusString, toContainerSummary } from './wire.js'

const LIST_OPEN = Buffer.from('[')
const LIST_COMMA = Buffer.from(',')
const LIST_CLOSE = Buffer.from(']\n')

const STATUS_MARK = '\u0000status\u0000'

/** What a list item's bytes were built from, and the bytes around its Status. */
interface SummaryCache {
  status: string
  exitCode: number
  startedAt: string
  finishedAt: string
  name: string
  /** The network service's change counter when the item was built (connect, disconnect). */
  netSeq: number
  /** The time the Status text counts from, in ms. */
  refMs: number
  before: Buffer
  after: Buffer
  statusText: string
  statusBytes: Buffer
}

export class ContainerListReply {
  private readonly items = new WeakMap<ContainerHandle, SummaryCache>()

  /** The list as JSON bytes (with the trailing newline dockerd's encoder writes). */
  bytes (list: readonly ContainerHandle[], nowMs: number): Buffer {
    const parts: Buffer[] = [LIST_OPEN]
    for (let i = 0; i < list.length; i++) {
      if (i > 0) parts.push(LIST_COMMA)
      this.parts(list[i] as ContainerHandle, nowMs, parts)
    }
    parts.push(LIST_CLOSE)
    return Buffer.concat(parts)
  }

  /**
   * Appends the list item's JSON bytes to `out`. Everything but Status is cached per container until its record
   * changes in a way the item shows, and Status only costs new bytes when its text changes.
   */
  private parts (c: ContainerHandle, nowMs: number, out: Buffer[]): void {
    const r = c.rec
    const st = r.state
    let cache = this.items.get(c) ?? null
    if (cache === null || cache.status !== st.status || cache.exitCode !== st.exitCode || cache.startedAt !== st.startedAt ||
        cache.finishedAt !== st.finishedAt || cache.name !== r.name || cache.netSeq !== (c.networkSeq?.() ?? 0)) {
      const text = JSON.stringify({ ...toContainerSummary(c, { size: false }), Status: STATUS_MARK })
      const at = text.indexOf(JSON.stringify(STATUS_MARK))
      const ref = st.status === 'running' || st.status === 'paused' ? st.startedAt : st.finishedAt
      cache = {
        status: st.status,
        exitCode: st.exitCode,
        startedAt: st.startedAt,
        finishedAt: st.finishedAt,
        name: r.name,
        netSeq: c.networkSeq?.() ?? 0,
        refMs: nsToMs(ref),
        before: Buffer.from(text.slice(0, at)),
        after: Buffer.from(text.slice(at + JSON.stringify(STATUS_MARK).length)),
        statusText: '',
        statusBytes: Buffer.alloc(0)
      }
      this.items.set(c, cache)
    }
    const status = statusString(c, nowMs, cache.refMs)
    if (status !== cache.statusText) {
      cache.statusText = status
      cache.statusBytes = Buffer.from(JSON.stringify(status))
    }
    out.push(cache.before, cache.statusBytes, cache.after)
  }
}
