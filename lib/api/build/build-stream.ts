// POST /build's reply: dockerd's JSON progress records, with the quiet mode's holding back.
import type { ServerResponse } from 'node:http'
import { ProgressStream, type ProgressRecord } from '../../distribution/progress.js'
import type { BuildProgress } from '../../build/backend.js'

/** What a quiet build keeps of its output (for its error) at most. */
const QUIET_HELD_BYTES = 1024 * 1024

/**
 * The build's progress stream: `{"stream": …}`, `{"aux": …}` and pull records on one reply. With q=1 every record
 * but `aux` is held back (bounded) and written only if the build fails, before its error, as dockerd's quiet mode.
 */
export class BuildStream extends ProgressStream implements BuildProgress {
  private held: ProgressRecord[] | null = null
  private heldBytes = 0
  private truncated = false

  constructor (res: ServerResponse, quiet: boolean) {
    super(res)
    if (quiet) this.held = []
  }

  stream (text: string): void { this.record({ stream: text }) }
  override aux (value: unknown): void { this.held === null ? this.record({ aux: value }) : super.write({ aux: value }) }

  protected override write (rec: ProgressRecord): void {
    if (this.held === null) { super.write(rec); return }
    const size = (rec.stream?.length ?? 0) + (rec.status?.length ?? 0) + 64
    if (this.heldBytes + size > QUIET_HELD_BYTES) { this.truncated = true; return }
    this.held.push(rec)
    this.heldBytes += size
  }

  /** A quiet build's one line: the image ID. */
  result (imageId: string): void { super.write({ stream: `${imageId}\n` }) }

  /** Writes what a quiet build held back (its error follows). */
  release (): void {
    const held = this.held
    if (held === null) return
    this.held = null
    for (const rec of held) super.write(rec)
    if (this.truncated) super.write({ stream: `(the quiet build's output was cut at ${QUIET_HELD_BYTES} bytes)\n` })
  }
}
